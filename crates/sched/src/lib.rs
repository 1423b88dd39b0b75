//! I/O schedulers ("elevators") as pure state machines.
//!
//! The [`Scheduler`] trait is cut like the kernel's `struct elevator_mq_ops`
//! (`include/linux/elevator.h`): the block layer offers each new request for a merge
//! ([`Scheduler::try_merge`], the kernel's `bio_merge`), inserts it if no merge happened
//! ([`Scheduler::insert`], `insert_requests`), *pulls* requests while the device has room
//! ([`Scheduler::dispatch`], `dispatch_request`), and reports completions
//! ([`Scheduler::completed`], `finish_request`). A scheduler that wants to hold the device idle
//! (CFQ's idling, AS's anticipation) answers a dispatch with [`Dispatch::WaitUntil`]: the driver
//! calls again at that time, or earlier if a request arrives or completes.
//!
//! **Architecture invariant:** a scheduler never reads a clock, sleeps, spawns or does I/O. Time
//! comes in as `now_ns`. The simulator and the io_uring server drive the very same code.

pub mod anticipatory;
pub mod bfq;
pub mod cfq;
pub mod deadline;
pub mod kyber;
pub mod noop;
pub mod trace;
pub mod tunables;

use elevator_core::{Cgroup, Nanos, Owner, Request, RequestId};
pub use tunables::{TunableError, TunableInfo, TunableSpec};

/// The answer to [`Scheduler::dispatch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Send this request to the device now.
    Request(Request),
    /// Requests are queued (or the scheduler is idling for one it expects), but none should go
    /// now: call `dispatch` again at `until_ns`, or as soon as a request is inserted or
    /// completes, whichever comes first.
    WaitUntil { until_ns: Nanos },
    /// Nothing to do until something is inserted or completes.
    Empty,
}

/// A successful merge: the offered request's range now belongs to request `into`, which the
/// scheduler has grown in place. The offered request no longer exists on its own; whoever
/// tracks its submitters must hang them on `into`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Merged {
    pub into: RequestId,
    /// True if the range was added in front of `into` (its start sector moved down).
    pub front: bool,
}

/// An I/O scheduler.
///
/// Contract with the driver (simulator or server), checked by property tests:
/// - every request passed to `insert` is handed out by `dispatch` exactly once, either itself or
///   as part of a request it was merged into;
/// - `completed` is called exactly once for each dispatched request, with that request;
/// - `try_merge` never grows a request past `max_len_bytes`.
pub trait Scheduler: Send {
    /// The name as `/sys/block/<dev>/queue/scheduler` shows it.
    fn name(&self) -> &'static str;

    /// Offers `rq` for a merge into a request already queued (not yet dispatched) that is
    /// contiguous with it, same operation and sync-ness, without exceeding `max_len_bytes`.
    /// Returns `None` if the scheduler declines; the driver then calls `insert`.
    fn try_merge(&mut self, rq: &Request, max_len_bytes: u64, now_ns: Nanos) -> Option<Merged>;

    /// Queues a request.
    fn insert(&mut self, rq: Request, now_ns: Nanos);

    /// Hands out the next request for the device, if any should go now.
    fn dispatch(&mut self, now_ns: Nanos) -> Dispatch;

    /// The device finished `rq` (as it was dispatched) at `now_ns`.
    fn completed(&mut self, rq: &Request, now_ns: Nanos);

    /// The last task of I/O context `io_context` exited at `now_ns` (`exit_io_context`,
    /// the elevator's `exit` hook): a scheduler idling or anticipating for it stops, as
    /// CFQ's and BFQ's `exit_cfqq`/`exit_bfqq` end its queue's slice and AS learns the
    /// process is gone. Requests of it still queued are served as before. Returns whether
    /// the queue should run now. Default: nothing changes.
    fn exited(&mut self, _io_context: u32, _now_ns: Nanos) -> bool {
        false
    }

    /// `elv_may_queue` (`elevator_may_queue_fn`, 2.6): true if a request of `owner`'s (sync or
    /// not) at `now_ns` must get a request slot even when the pool is full (`ELV_MQUEUE_MUST`; the block
    /// layer then allows up to half as many again over `nr_requests`). The anticipatory
    /// scheduler says so for the process it waits on, CFQ once per slice for a queue it idles
    /// for: otherwise the request it waits for could sit behind a full pool of others'.
    fn must_queue(&mut self, _owner: &Owner, _sync: bool, _now_ns: Nanos) -> bool {
        false
    }

    /// True once after an `insert` of the request the scheduler was idling for: it runs
    /// the queue at once, plugged or not (CFQ's `cfq_rq_enqueued` → `blk_start_queueing`,
    /// AS's `as_antic_stop` → `as_work_handler`). Matters only where the block layer plugs
    /// whole queues (kernels before 2.6.39).
    fn take_queue_run(&mut self) -> bool {
        false
    }

    /// Declares a control group before requests of it arrive (the root, id 0, is implicit).
    /// Schedulers without group scheduling ignore this.
    fn set_group(&mut self, _group: &Cgroup) {}

    /// Whether requests are scheduled per control group now. The block layer then gives each
    /// group its own request descriptors (`nr_requests` per group and class, as the IO
    /// controller patches and, since 3.6, blk-cgroup's per-group request lists do), so one
    /// group's flood of requests cannot put another's submitters to sleep.
    fn groups_active(&self) -> bool {
        false
    }

    /// Tells the scheduler whether the device is rotational (`queue/rotational`,
    /// `blk_queue_nonrot`), before its first request. Default: rotational, as a scheduler that
    /// is never told assumes.
    fn set_rotational(&mut self, _rotational: bool) {}

    /// Why the request `dispatch` last handed out went then: a short, stable phrase in the
    /// scheduler's own terms ("batch continues", "fifo expired", "slice expired", "budget
    /// exhausted", ...), for `--trace-decisions` and the server's `ctl trace`. Schedulers with
    /// a single rule answer what it is.
    fn last_decision(&self) -> &'static str {
        "fifo order"
    }

    /// Number of requests inserted and not yet dispatched.
    fn queued(&self) -> usize;

    /// Tunables as `/sys/block/<dev>/queue/iosched/` lists them, with current values.
    fn tunables(&self) -> Vec<TunableInfo>;

    /// Sets a tunable from its sysfs text form; range-checked.
    fn set_tunable(&mut self, name: &str, value: &str) -> Result<(), TunableError>;

    /// Reads one tunable in its sysfs text form.
    fn tunable(&self, name: &str) -> Result<String, TunableError> {
        self.tunables()
            .into_iter()
            .find(|t| t.name == name)
            .map(|t| t.value)
            .ok_or_else(|| TunableError::unknown(self.name(), name, &self.tunables()))
    }
}

/// Merges `rq` onto the back or front of the first of `queued` that is contiguous with it, of
/// the same operation and sync-ness, without growing past `max_len_bytes`: the software-queue
/// merge (`blk_bio_list_merge`) of the schedulers that keep plain lists. Flushes never merge.
pub fn merge_into_list<'a>(
    queued: impl Iterator<Item = &'a mut Request>,
    rq: &Request,
    max_len_bytes: u64,
) -> Option<Merged> {
    if rq.op == elevator_core::Op::Flush {
        return None;
    }
    for q in queued {
        if q.op != rq.op || q.sync != rq.sync || q.len_bytes + rq.len_bytes > max_len_bytes {
            continue;
        }
        if q.end_bytes() == rq.offset_bytes {
            q.len_bytes += rq.len_bytes;
            return Some(Merged { into: q.id, front: false });
        }
        if rq.end_bytes() == q.offset_bytes {
            q.offset_bytes = rq.offset_bytes;
            q.len_bytes += rq.len_bytes;
            return Some(Merged { into: q.id, front: true });
        }
    }
    None
}

/// Every scheduler elevator has, by name, with its aliases.
pub const SCHEDULERS: &[(&str, &[&str], &str)] = &[
    ("none", &["noop"], "FIFO dispatch with merging of contiguous requests (blk-mq `none`)."),
    (
        "mq-deadline",
        &["deadline"],
        "Sector-sorted per direction with read/write FIFO deadlines (block/mq-deadline.c).",
    ),
    (
        "cfq",
        &[],
        "Completely Fair Queueing with blkio groups, Linux 2.6.33-2.6.38 (block/cfq-iosched.c).",
    ),
    (
        "anticipatory",
        &["as"],
        "Anticipatory scheduling: deadline batches plus waiting for the last reader (as-iosched.c).",
    ),
    (
        "bfq",
        &[],
        "Budget Fair Queueing: B-WF2Q+ over sector budgets, groups, weight raising (bfq-iosched.c).",
    ),
    (
        "kyber",
        &[],
        "Token depths per domain scaled to keep read/write latency near target (kyber-iosched.c).",
    ),
];

/// A scheduler's own name for its name or one of its aliases (`deadline` → `mq-deadline`);
/// `None` for a name no scheduler has.
pub fn canonical_name(name: &str) -> Option<&'static str> {
    SCHEDULERS.iter().find(|(n, aliases, _)| *n == name || aliases.contains(&name)).map(|s| s.0)
}

/// Builds a scheduler by its name or alias, with its default tunables.
pub fn by_name(name: &str) -> Result<Box<dyn Scheduler>, String> {
    match name {
        "none" | "noop" => Ok(Box::new(noop::Noop::new())),
        "mq-deadline" | "deadline" => Ok(Box::new(deadline::Deadline::new())),
        "cfq" => Ok(Box::new(cfq::Cfq::new())),
        "anticipatory" | "as" => Ok(Box::new(anticipatory::Anticipatory::new())),
        "kyber" => Ok(Box::new(kyber::Kyber::new())),
        "bfq" => Ok(Box::new(bfq::Bfq::new())),
        _ => {
            let known: Vec<&str> = SCHEDULERS.iter().map(|(n, _, _)| *n).collect();
            Err(format!("unknown scheduler `{name}`; known schedulers: {}", known.join(", ")))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_name_is_the_name_the_scheduler_gives_itself() {
        for (name, aliases, _) in SCHEDULERS {
            for n in std::iter::once(name).chain(aliases.iter()) {
                assert_eq!(canonical_name(n), Some(by_name(n).unwrap().name()), "{n}");
            }
        }
        assert_eq!(canonical_name("cfq-v2"), None);
    }
}

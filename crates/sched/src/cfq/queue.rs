//! A CFQ queue (`struct cfq_queue`) and the per-process I/O context statistics
//! (`struct cfq_io_context`) it consults, plus `cfq_choose_req`.

use std::collections::BTreeMap;

use elevator_core::{Nanos, Request};

/// Priority class index (`enum wl_prio_t`).
pub const RT: usize = 0;
pub const BE: usize = 1;
pub const IDLE: usize = 2;

/// Workload type (`enum wl_type_t`).
pub const WL_ASYNC: usize = 0;
pub const WL_SYNC_NOIDLE: usize = 1;
pub const WL_SYNC: usize = 2;

/// `CFQQ_SEEK_THR`: a request farther than this many sectors from the previous one is a seek.
pub const SEEK_THR_SECTORS: u64 = 8 * 100;
/// `CFQQ_CLOSE_THR`: a request this close to the head counts as "close" (for preemption and
/// close cooperators).
pub const CLOSE_THR_SECTORS: u64 = 8 * 1024;

/// Key of a queued request in the sector-sorted tree: (sector, request id).
pub type SortKey = (u64, u64);

#[derive(Debug)]
pub struct Queued {
    pub rq: Request,
    pub insert_ns: Nanos,
    /// Key in the FIFO: (fifo expiry time, request id).
    pub fifo_key: (Nanos, u64),
}

#[derive(Debug)]
pub struct Queue {
    pub group: usize,
    pub sync: bool,
    pub class: usize,
    /// 0 (highest) ..= 7.
    pub prio: u8,
    pub sort: BTreeMap<SortKey, Queued>,
    pub fifo: BTreeMap<(Nanos, u64), SortKey>,
    pub next_rq: Option<SortKey>,
    pub on_rr: bool,
    /// Which service tree of its group the queue sits on, and its key there.
    pub st: Option<(usize, (i64, u64))>,
    pub slice_start: Option<Nanos>,
    pub slice_end: Nanos,
    pub allocated_slice: Nanos,
    pub dispatch_start: Nanos,
    pub slice_resid: i64,
    pub slice_dispatch: u32,
    pub dispatched: u32,
    pub idle_window: bool,
    pub slice_new: bool,
    pub wait_request: bool,
    /// `cfq_cfqq_must_alloc_slice`: it was let past a full request pool this slice.
    pub must_alloc_slice: bool,
    pub must_dispatch: bool,
    pub fifo_expire: bool,
    pub wait_busy: bool,
    pub deep: bool,
    pub seek_history: u32,
    pub last_request_pos: Option<u64>,
    pub io_context: u32,
    /// Close cooperators: where the queue is filed in its priority's tree, the queue it will
    /// merge into, whether it is a merged queue, whether it must split, and how many
    /// processes' I/O contexts point at it.
    pub p_key: Option<u64>,
    pub new_cfqq: Option<usize>,
    pub coop: bool,
    pub split_coop: bool,
    /// 2.6.30–31 (`CFQ_CFQQ_FLAG_coop`): the queue was last made active by a cooperator
    /// jump; it is not jumped to again until the service tree gives it a slice.
    pub jumped_to: bool,
    /// v2.6.32 (`CFQ_CFQQ_FLAG_coop_preempt`): the queue preempted an idling queue with a
    /// close request and was marked `jumped_to`; its next slice from the tree keeps the mark.
    pub coop_preempt: bool,
    pub process_refs: u32,
    /// Queued requests marked `REQ_META` (2.6.x `meta_pending`; 3.1+ `prio_pending`, for
    /// `REQ_PRIO`, which ext3 sets on the same reads).
    pub meta_pending: u32,
}

impl Queue {
    pub fn new(group: usize, sync: bool, class: usize, prio: u8, io_context: u32) -> Queue {
        Queue {
            group,
            sync,
            class,
            prio,
            sort: BTreeMap::new(),
            fifo: BTreeMap::new(),
            next_rq: None,
            on_rr: false,
            st: None,
            slice_start: None,
            slice_end: 0,
            allocated_slice: 0,
            dispatch_start: 0,
            slice_resid: 0,
            slice_dispatch: 0,
            dispatched: 0,
            // cfq_init_cfqq: sync queues (not of the idle class) start with an idle window.
            idle_window: sync && class != IDLE,
            slice_new: false,
            wait_request: false,
            must_alloc_slice: false,
            must_dispatch: false,
            fifo_expire: false,
            wait_busy: false,
            deep: false,
            seek_history: 0,
            last_request_pos: None,
            io_context,
            p_key: None,
            new_cfqq: None,
            coop: false,
            split_coop: false,
            jumped_to: false,
            coop_preempt: false,
            process_refs: 0,
            meta_pending: 0,
        }
    }

    /// `cfqq_type`.
    pub fn workload(&self) -> usize {
        if !self.sync {
            WL_ASYNC
        } else if !self.idle_window {
            WL_SYNC_NOIDLE
        } else {
            WL_SYNC
        }
    }

    /// `CFQQ_SEEKY`: more than 4 of the last 32 requests were seeks.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 32 / 8
    }

    /// `cfq_update_io_seektime` (rotational variant).
    pub fn update_seek(&mut self, rq: &Request) {
        let sdist = match self.last_request_pos {
            Some(last) => last.abs_diff(rq.sector()),
            None => 0,
        };
        self.seek_history <<= 1;
        self.seek_history |= u32::from(sdist > SEEK_THR_SECTORS);
        self.last_request_pos = Some(rq.end_sector());
    }
}

/// `struct cfq_io_context`'s think-time statistics, fixed point as the kernel keeps them.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cic {
    pub ttime_samples: u64,
    pub ttime_total: u64,
    pub ttime_mean: u64,
    pub last_end_request: Option<Nanos>,
    /// 2.6.31's seek statistics (`seek_samples`, `seek_total`, `seek_mean`: a 7/8 decaying
    /// mean distance in sectors) and where this context's last request ended
    /// (`last_request_pos`, 0 for none).
    pub seek_samples: u64,
    pub seek_total: u64,
    pub seek_mean: u64,
    pub last_request_pos: u64,
    /// `cic->cfqq[BLK_RW_ASYNC]`: the async queue the context's last async request went to.
    pub async_queue: Option<usize>,
}

/// 2.6.31's `CIC_SEEK_THR`: a context whose mean seek is longer than this many sectors is
/// seeky (`CIC_SEEKY`), and a request this close to the head is close when the active
/// context has no seek mean yet (`cfq_rq_close`).
pub const CIC_SEEK_THR_SECTORS: u64 = 8 * 1024;

/// `__cfq_update_io_thinktime`'s arithmetic, shared by a process's think time and 3.2's tree
/// and group ones: one sample of `elapsed_ns` joins the 7/8 decaying mean (fixed point, 256
/// per sample).
fn add_think_sample(samples: &mut u64, total: &mut u64, mean: &mut u64, elapsed_ns: Nanos) {
    *samples = (7 * *samples + 256) / 8;
    *total = (7 * *total + 256 * elapsed_ns) / 8;
    *mean = (*total + 128) / (*samples).max(1);
}

/// `sample_valid`: a decaying mean is trusted once its sample weight passes 80 (after three
/// samples).
fn sample_valid(samples: u64) -> bool {
    samples > 80
}

impl Cic {
    /// `sample_valid(cic->ttime_samples)`.
    pub fn sample_valid(&self) -> bool {
        sample_valid(self.ttime_samples)
    }

    /// 2.6.31's `cfq_update_io_seektime` then `last_request_pos` (`cfq_rq_enqueued`): the
    /// distance from this context's last request, clamped against odd fragments to four times
    /// the mean plus 1 GiB (for the first samples) or 32 MiB, joins a 7/8 decaying mean.
    pub fn update_seek_2631(&mut self, rq: &Request) {
        let sdist = match self.last_request_pos {
            0 => 0,
            last => last.abs_diff(rq.sector()),
        };
        let slack = if self.seek_samples <= 60 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
        let sdist = sdist.min(self.seek_mean.saturating_mul(4).saturating_add(slack));
        self.seek_samples = (7 * self.seek_samples + 256) / 8;
        self.seek_total = (7 * self.seek_total + 256 * sdist) / 8;
        self.seek_mean = (self.seek_total + self.seek_samples / 2) / self.seek_samples.max(1);
        self.last_request_pos = rq.end_sector();
    }

    /// 2.6.31's `CIC_SEEKY`.
    pub fn seeky_2631(&self) -> bool {
        self.seek_mean > CIC_SEEK_THR_SECTORS
    }

    /// `sample_valid(cic->seek_samples)`.
    pub fn seek_sample_valid(&self) -> bool {
        sample_valid(self.seek_samples)
    }

    /// `cfq_update_io_thinktime`: exponentially weighted (7/8) mean of the time between the
    /// completion of this context's last sync request and its next request, capped at
    /// `2 * slice_idle`. Before any completion the kernel counts from the context's
    /// allocation (`cfq_alloc_io_context` sets `last_end_request = jiffies`), which comes with
    /// its first request: that request is a sample of about 0.
    pub fn update_thinktime(&mut self, now: Nanos, slice_idle_ns: Nanos) {
        let last = self.last_end_request.unwrap_or(now);
        let ttime = now.saturating_sub(last).min(2 * slice_idle_ns);
        add_think_sample(
            &mut self.ttime_samples,
            &mut self.ttime_total,
            &mut self.ttime_mean,
            ttime,
        );
    }
}

/// 3.2's `struct cfq_ttime` kept for a service tree and for a group (`rules_3_2`): the 7/8
/// decaying mean of the time from the last completion to the next request, each sample capped
/// at twice the idle time it is compared with.
#[derive(Clone, Copy, Debug, Default)]
pub struct ThinkTime {
    pub samples: u64,
    pub total: u64,
    pub mean: u64,
    /// The last completion, or when the tree or group was created.
    pub last_end: Nanos,
}

impl ThinkTime {
    pub fn new(created_ns: Nanos) -> ThinkTime {
        ThinkTime { last_end: created_ns, ..ThinkTime::default() }
    }

    /// `__cfq_update_io_thinktime`.
    pub fn update(&mut self, now: Nanos, idle_ns: Nanos) {
        let elapsed = now.saturating_sub(self.last_end).min(2 * idle_ns);
        add_think_sample(&mut self.samples, &mut self.total, &mut self.mean, elapsed);
    }

    /// `cfq_io_thinktime_big`: a valid mean longer than `idle_ns`.
    pub fn big(&self, idle_ns: Nanos) -> bool {
        sample_valid(self.samples) && self.mean > idle_ns
    }
}

/// `cfq_choose_req`: of two candidate requests, the one the head should go to next from
/// `last` (sector): sync before async, metadata (`REQ_META`; 3.1+ `REQ_PRIO`) before other
/// I/O, then the shorter distance, where going backwards by at most `back_max` sectors costs
/// `penalty` times the distance, and farther back "wraps".
pub fn choose_req(
    a: Option<&Request>,
    b: Option<&Request>,
    last: u64,
    back_max: u64,
    penalty: u64,
) -> Option<bool> {
    // Returns Some(true) to pick `a`, Some(false) for `b`, None if both are absent.
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (Some(_), None) => return Some(true),
        (None, Some(_)) => return Some(false),
        (Some(a), Some(b)) => (a, b),
    };
    if a.id == b.id {
        return Some(true);
    }
    if a.sync != b.sync {
        return Some(a.sync);
    }
    if a.meta != b.meta {
        return Some(a.meta);
    }
    let dist = |s: u64| -> Option<u64> {
        if s >= last {
            Some(s - last)
        } else if s + back_max >= last {
            Some((last - s) * penalty)
        } else {
            None
        }
    };
    let (s1, s2) = (a.sector(), b.sector());
    match (dist(s1), dist(s2)) {
        (Some(d1), Some(d2)) => {
            if d1 != d2 {
                Some(d1 < d2)
            } else {
                Some(s1 >= s2)
            }
        }
        (Some(_), None) => Some(true),
        (None, Some(_)) => Some(false),
        // Both wrapped: start from the lowest sector.
        (None, None) => Some(s1 <= s2),
    }
}

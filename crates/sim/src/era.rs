//! What a named kernel's I/O schedulers are. A topology that names its machine's kernel
//! (`[machine] kernel`) gets CFQ as that release shipped it: the rules switches that stand
//! for the release (`rules_2_6_29`, `workload_trees` 0, `rules_2_6_32`, `rules_3_2`), its
//! `quantum`, no blkio groups before 2.6.33 and no `low_latency` before 2.6.32; and deadline
//! with the `next_rq` pointers it had before 6.5 (`next_rq_pointers`). They are set
//! before the topology's own tunables and `--iosched`, which win. A topology that names no
//! kernel runs each scheduler with its own defaults (CFQ: 2.6.38's rules, `quantum` 4).
//!
//! Releases the rules do not model are run with the nearest ones: CFQ before 2.6.29 with
//! 2.6.29's, 2.6.33–2.6.37 with 2.6.38's, after 3.5 with 3.2's (the CFQ module says what
//! differs). A scheduler the release did not have is run all the same, with a warning.

use elevator_mm::Kernel;

const fn k(major: u32, minor: u32, patch: u32) -> Kernel {
    Kernel { major, minor, patch }
}

/// The tunables `scheduler` had on `kernel`, where they differ from elevator's defaults.
pub fn scheduler_defaults(scheduler: &str, kernel: Kernel) -> Vec<(&'static str, &'static str)> {
    if scheduler == "mq-deadline" {
        // A batch went on with the `next_rq` pointer until 6.5 ("Track the dispatch
        // position"), in the legacy deadline too.
        return if kernel < k(6, 5, 0) { vec![("next_rq_pointers", "1")] } else { Vec::new() };
    }
    if scheduler != "cfq" {
        return Vec::new();
    }
    let mut t = Vec::new();
    if kernel < k(2, 6, 33) {
        // blkio group scheduling came with 2.6.33 (the IO controller patches before it were
        // out of tree: seed 000 turns it on by hand).
        t.extend([("workload_trees", "0"), ("group_scheduling", "0")]);
        if kernel < k(2, 6, 30) {
            // 2.6.29: no close cooperators (Jeff Moyer's switch is 2.6.30's).
            t.extend([("rules_2_6_29", "1"), ("queue_merging", "0"), ("low_latency", "0")]);
        } else if kernel < k(2, 6, 32) {
            t.push(("low_latency", "0"));
        } else {
            t.push(("rules_2_6_32", "1"));
        }
    } else if kernel >= k(2, 6, 34) {
        // `cfq_quantum` is 8 from 2.6.34 (4 in 2.6.33 and before).
        t.push(("quantum", "8"));
        if kernel >= k(3, 2, 0) {
            t.push(("rules_3_2", "1"));
        }
    }
    t
}

/// Whether a named kernel sets writeback throttling (blk-wbt) up on a device: from 4.10 on
/// blk-mq devices (`CONFIG_BLK_WBT_MQ`, on by default; NVMe), from 5.0 on every device (SCSI
/// and SATA went blk-mq only), unless io.cost is enabled there. BFQ and CFQ turn it off while
/// they run ([`wbt_off_under`]).
pub fn wbt_set_up(kernel: Kernel, blk_mq: bool, io_cost: bool) -> bool {
    (kernel >= k(5, 0, 0) || (blk_mq && kernel >= k(4, 10, 0))) && !io_cost
}

/// Schedulers that turn writeback throttling off while they run (`wbt_disable_default`).
pub fn wbt_off_under(scheduler: &str) -> bool {
    matches!(scheduler, "bfq" | "cfq")
}

/// The first release with writeback throttling.
pub const WBT_FIRST: Kernel = k(4, 10, 0);

/// Why `wbt_lat_usec` cannot be set on `kernel`, if it cannot: a release before 4.10.
pub fn wbt_missing(kernel: Kernel) -> Option<String> {
    (kernel < WBT_FIRST)
        .then(|| format!("Linux {kernel} has no writeback throttling (it came with 4.10)"))
}

/// Why `scheduler` is not what `kernel` had, if it is not.
pub fn scheduler_missing(scheduler: &str, kernel: Kernel) -> Option<String> {
    let (from, until) = match scheduler {
        "anticipatory" | "as" => (None, Some(k(2, 6, 33))),
        "cfq" => (Some(k(2, 6, 6)), Some(k(5, 0, 0))),
        "bfq" | "kyber" => (Some(k(4, 12, 0)), None),
        _ => (None, None),
    };
    match (from, until) {
        (Some(f), _) if kernel < f => Some(format!(
            "scheduler `{scheduler}` came with Linux {f}, not in {kernel}; simulated all the same"
        )),
        (_, Some(u)) if kernel >= u => Some(format!(
            "scheduler `{scheduler}` was removed in Linux {u}, not in {kernel}; simulated all the same"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(release: &str) -> Vec<(&'static str, &'static str)> {
        scheduler_defaults("cfq", Kernel::parse(release).unwrap())
    }

    #[test]
    fn deadline_has_next_rq_pointers_before_6_5() {
        let deadline = |r| scheduler_defaults("mq-deadline", Kernel::parse(r).unwrap());
        assert_eq!(deadline("2.6.29"), [("next_rq_pointers", "1")]);
        assert_eq!(deadline("6.4"), [("next_rq_pointers", "1")]);
        assert!(deadline("6.5").is_empty());
        let mut s = elevator_sched::by_name("deadline").unwrap();
        for (k, v) in deadline("2.6.29") {
            s.set_tunable(k, v).unwrap();
        }
    }

    #[test]
    fn cfq_takes_the_rules_of_the_release() {
        assert!(at("2.6.29").contains(&("rules_2_6_29", "1")));
        assert!(at("2.6.31").contains(&("workload_trees", "0")));
        assert!(!at("2.6.31").contains(&("rules_2_6_29", "1")));
        assert!(at("2.6.32").contains(&("rules_2_6_32", "1")));
        assert!(at("2.6.33").is_empty());
        assert_eq!(at("2.6.38"), [("quantum", "8")]);
        assert_eq!(at("3.5"), [("quantum", "8"), ("rules_3_2", "1")]);
        assert!(scheduler_defaults("bfq", Kernel::parse("6.1").unwrap()).is_empty());
        // Every setting is one CFQ takes.
        for release in ["2.6.20", "2.6.30", "2.6.32", "3.0", "4.19"] {
            let mut cfq = elevator_sched::by_name("cfq").unwrap();
            for (key, value) in at(release) {
                cfq.set_tunable(key, value).unwrap();
            }
        }
    }

    #[test]
    fn writeback_throttling_is_on_by_default_from_5_0_and_4_10_on_blk_mq() {
        let on =
            |r, mq, s, cost| wbt_set_up(Kernel::parse(r).unwrap(), mq, cost) && !wbt_off_under(s);
        assert!(on("6.1", false, "mq-deadline", false));
        assert!(on("5.0", false, "none", false));
        assert!(!on("4.19", false, "mq-deadline", false), "SATA on the legacy queue");
        assert!(on("4.19", true, "none", false), "NVMe is blk-mq");
        assert!(!on("4.9", true, "none", false));
        assert!(!on("6.1", false, "bfq", false));
        assert!(!on("6.1", false, "mq-deadline", true), "io.cost turns it off");
    }

    #[test]
    fn schedulers_a_release_did_not_have_are_named() {
        let missing = |s, r| scheduler_missing(s, Kernel::parse(r).unwrap());
        assert!(missing("bfq", "2.6.32").unwrap().contains("4.12.0"));
        assert!(missing("anticipatory", "3.2").unwrap().contains("removed"));
        assert!(missing("cfq", "5.4").is_some());
        assert!(missing("cfq", "2.6.32").is_none());
        assert!(missing("anticipatory", "2.5.65").is_none());
        assert!(missing("mq-deadline", "2.5.65").is_none());
    }
}

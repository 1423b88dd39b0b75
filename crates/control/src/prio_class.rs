//! cgroup v2 `io.prio.class` (blk-ioprio, `block/blk-ioprio.c`): a cgroup's policy for the I/O
//! priority class of its requests, applied before any scheduler sees them (mq-deadline's and
//! BFQ's priority levels then act on the result):
//!
//! - `no-change`: as the task set it;
//! - `promote-to-rt` (and its deprecated alias `none-to-rt`): a request not of the RT class
//!   becomes RT at level 4; RT requests keep theirs;
//! - `restrict-to-be`: a request without a class or of the RT class becomes BE at level 0;
//!   IDLE requests stay IDLE;
//! - `idle`: every request becomes IDLE.

use elevator_core::{IoPrio, IoPrioClass};

/// An `io.prio.class` policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IoPrioClassPolicy {
    #[default]
    NoChange,
    PromoteToRt,
    RestrictToBe,
    Idle,
}

impl IoPrioClassPolicy {
    /// Parses what `io.prio.class` accepts; the error names the value.
    pub fn parse(value: &str) -> Result<IoPrioClassPolicy, String> {
        match value.trim() {
            "no-change" => Ok(IoPrioClassPolicy::NoChange),
            "promote-to-rt" | "none-to-rt" => Ok(IoPrioClassPolicy::PromoteToRt),
            "restrict-to-be" => Ok(IoPrioClassPolicy::RestrictToBe),
            "idle" => Ok(IoPrioClassPolicy::Idle),
            other => Err(format!(
                "io.prio.class: `{other}`: expected no-change, promote-to-rt, restrict-to-be or idle"
            )),
        }
    }

    /// The priority a request of priority `prio` gets in a cgroup with this policy.
    pub fn apply(self, prio: IoPrio) -> IoPrio {
        match self {
            IoPrioClassPolicy::NoChange => prio,
            IoPrioClassPolicy::PromoteToRt if prio.class == IoPrioClass::RealTime => prio,
            IoPrioClassPolicy::PromoteToRt => IoPrio { class: IoPrioClass::RealTime, level: 4 },
            IoPrioClassPolicy::RestrictToBe if prio.class == IoPrioClass::Idle => prio,
            IoPrioClassPolicy::RestrictToBe => {
                if matches!(prio.class, IoPrioClass::None | IoPrioClass::RealTime) {
                    IoPrio { class: IoPrioClass::BestEffort, level: 0 }
                } else {
                    prio
                }
            }
            IoPrioClassPolicy::Idle => IoPrio { class: IoPrioClass::Idle, level: 7 },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(class: IoPrioClass, level: u8) -> IoPrio {
        IoPrio { class, level }
    }

    #[test]
    fn policies_change_classes_as_blk_ioprio_does() {
        use IoPrioClass::*;
        let promote = IoPrioClassPolicy::parse("promote-to-rt").unwrap();
        assert_eq!(IoPrioClassPolicy::parse("none-to-rt").unwrap(), promote);
        assert_eq!(promote.apply(p(None, 4)), p(RealTime, 4));
        assert_eq!(promote.apply(p(BestEffort, 1)), p(RealTime, 4));
        assert_eq!(promote.apply(p(RealTime, 2)), p(RealTime, 2));
        let restrict = IoPrioClassPolicy::parse("restrict-to-be").unwrap();
        assert_eq!(restrict.apply(p(RealTime, 2)), p(BestEffort, 0));
        assert_eq!(restrict.apply(p(None, 4)), p(BestEffort, 0));
        assert_eq!(restrict.apply(p(BestEffort, 6)), p(BestEffort, 6));
        assert_eq!(restrict.apply(p(Idle, 7)), p(Idle, 7));
        assert_eq!(IoPrioClassPolicy::parse("idle").unwrap().apply(p(RealTime, 0)), p(Idle, 7));
        assert_eq!(IoPrioClassPolicy::NoChange.apply(p(RealTime, 3)), p(RealTime, 3));
        assert!(IoPrioClassPolicy::parse("rt").unwrap_err().contains("`rt`"));
    }
}

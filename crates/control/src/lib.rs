//! Group I/O controllers: layers that decide *when* a request may go down to the device below,
//! never in what order the device's scheduler serves it (Seastar's split of rate from order).
//!
//! A [`Controller`] sits above one or more block devices (dm-ioband is a device-mapper target
//! stacked on a partition, a striped LV, ...). Submitters hand it bios; it holds them per group
//! and releases them as its policy allows; the driver passes released bios down (remapped to
//! the device below) and reports their completions back.
//!
//! **Architecture invariant:** like the schedulers, a controller never reads a clock, sleeps
//! or does I/O. Time comes in as `now_ns`; when it needs to act without any arrival or
//! completion (a new token period) it says so through [`Controller::next_timer_ns`].

pub mod ioband;
pub mod iocost;
pub mod iolatency;
pub mod mclock;
pub mod prio_class;
pub mod stack;
pub mod throttle;
pub mod wbt;

use elevator_core::{Nanos, Owner, Request};

/// A bio as a controller sees it: the request fields, plus which controlled device it was
/// submitted to (one controller may govern several devices that share a device group, as
/// dm-ioband's devices on one disk do).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bio {
    /// Index of the controlled device (the ioband device) this bio was submitted to.
    pub device: u32,
    pub request: Request,
}

impl Bio {
    pub fn owner(&self) -> &Owner {
        &self.request.owner
    }
}

/// Per-group counters every controller reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GroupCounters {
    /// The group's name as configured (e.g. `ioband1`, `ioband1:uid=1000`).
    pub name: String,
    pub ios: u64,
    pub bytes: u64,
    /// Bios that had to wait in the controller.
    pub held: u64,
    /// A guaranteed minimum this group did not get although it kept I/O waiting (the
    /// minimums add up to more than the device delivers): its KB/s floor, else `None`.
    pub min_unmet_kbs: Option<u64>,
}

/// A group controller.
pub trait Controller: Send {
    fn name(&self) -> &'static str;

    /// A bio arrives. The controller either keeps it or makes it immediately releasable.
    fn submit(&mut self, bio: Bio, now_ns: Nanos);

    /// Appends every bio that may go down now, in the order they should go.
    fn release(&mut self, now_ns: Nanos, out: &mut Vec<Bio>);

    /// A released bio reached the driver (the block layer's `blk_mq_start_request`): the end
    /// of its wait in the scheduler. Controllers that do not measure it ignore it.
    fn dispatched(&mut self, _bio: &Bio, _now_ns: Nanos) {}

    /// A released bio completed below.
    fn completed(&mut self, bio: &Bio, now_ns: Nanos);

    /// When `release` should be called again even if nothing arrives or completes.
    fn next_timer_ns(&self) -> Option<Nanos>;

    /// Bios held (submitted, not yet released).
    fn held(&self) -> usize;

    fn counters(&self) -> Vec<GroupCounters>;

    /// A task was throttled in `balance_dirty_pages` for this device at `at_ns` (the
    /// writeback domain's `dirty_sleep`): writeback throttling reads it. Others ignore it.
    fn note_dirty_sleep(&mut self, _at_ns: Nanos) {}

    /// The device's I/O scheduler is now `name` (`elevator_switch`): writeback throttling
    /// turns itself off under BFQ and CFQ and on again after, unless set by hand.
    fn scheduler_switched(&mut self, _name: &str) {}
}

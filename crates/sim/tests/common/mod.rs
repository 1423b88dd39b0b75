//! What several integration tests share.

// Each test crate that includes this module uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use elevator_fio::blktrace::{records, Trace, TA_QUEUE, TC_NOTIFY, TC_SHIFT};
use elevator_sim::SimResult;

/// A topology of one 16 GiB RAM disk, `sda`: I/O that costs next to nothing, for tests of
/// what the jobs issue rather than how long it takes.
pub const RAM_DISK_16G: &str = r#"
[[device]]
name = "sda"
model = "ram"
[device.params]
capacity_bytes = 17179869184
"#;

/// The bios queued (blktrace's `Q`) on the run's first device, in order; the run must have
/// traced it (`SimOptions::blktrace`).
fn queued(r: &SimResult) -> Vec<Trace> {
    let d = &r.devices[0];
    let file = d.blktrace.as_ref().expect("a traced run");
    records(&file.bytes, &d.name)
        .unwrap()
        .into_iter()
        .filter(|(t, _)| t.action >> TC_SHIFT & TC_NOTIFY == 0 && t.action & 0xffff == TA_QUEUE)
        .map(|(t, _)| t)
        .collect()
}

/// The sectors of the bios queued on the run's first device, in order.
pub fn queued_sectors(r: &SimResult) -> Vec<u64> {
    queued(r).into_iter().map(|t| t.sector).collect()
}

/// When (ns) each bio was queued on the run's first device, in order.
pub fn queued_times_ns(r: &SimResult) -> Vec<u64> {
    queued(r).into_iter().map(|t| t.time_ns).collect()
}

/// How many bios the run queued at each sector of its first device.
pub fn queued_per_sector(r: &SimResult) -> BTreeMap<u64, u32> {
    let mut per = BTreeMap::new();
    for sector in queued_sectors(r) {
        *per.entry(sector).or_insert(0) += 1;
    }
    per
}

//! What several integration tests share.

// Each test crate that includes this module uses only part of it.
#![allow(dead_code)]

use std::collections::BTreeMap;

use elevator_fio::blktrace::{records, Trace, TA_QUEUE, TC_NOTIFY, TC_SHIFT};
use elevator_sim::{simulate, SimOptions, SimResult, Topology};

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

/// The default 7200 rpm disk, `sda`.
pub const HDD: &str = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n";

/// The process of a 2 s job over a 1 GiB region of [`HDD`] with `extra` options (which may
/// set `size=` again): what an engine test looks at.
pub fn engine_process(extra: &str) -> elevator_sim::workload::Process {
    let text = format!("[r]\nfilename=sda\nbs=4k\nsize=1g\nruntime=2\ntime_based\n{extra}\n");
    let jobs =
        elevator_fio::parse_str(&text, "t.fio", std::path::Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(HDD, "t.toml").unwrap();
    let mut r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    r.processes.swap_remove(0)
}

/// The index of the depth bucket (1, 2, 4, 8, 16, 32, >= 64) most of a process's I/Os
/// were issued at.
pub fn busiest_depth(p: &elevator_sim::workload::Process) -> usize {
    let depths = &p.depth_hist;
    (0..depths.len()).max_by_key(|&i| depths[i]).unwrap()
}

/// (I/Os, mean slat ns, mean clat ns, the busiest depth bucket) of [`engine_process`]'s job
/// (its reads, or a writer's writes): what an engine test compares.
pub fn engine_run(extra: &str) -> (u64, f64, f64, usize) {
    let p = engine_process(extra);
    let s = p.stats.iter().max_by_key(|s| s.total_ios).unwrap();
    (s.total_ios, s.slat_ns.mean(), s.clat_ns.mean(), busiest_depth(&p))
}

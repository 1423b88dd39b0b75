//! Properties of volume stacks, whatever the jobs: every bio a process issues to a volume
//! (striped, linear, guest, ioband — whose submitters sleep at `c_limit` —, iscsi, stacked on
//! one another) completes exactly once, the
//! bytes the jobs asked for are the bytes they got, and a run is the same on every repeat.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};
use proptest::prelude::*;

const TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "ram"
scheduler = "cfq"
[device.params]
capacity_bytes = 1073741824
queue_depth = 4
[[device]]
name = "sdb"
model = "ram"
scheduler = "mq-deadline"
[device.params]
capacity_bytes = 1073741824
[[partition]]
name = "sda1"
device = "sda"
start = "1MiB"
size = "256MiB"
[[partition]]
name = "sda2"
device = "sda"
start = "257MiB"
size = "256MiB"
[[volume]]
name = "lv"
target = "striped"
chunk = "64KiB"
over = ["sda2", "sdb"]
[[volume]]
name = "cat"
target = "linear"
over = ["sda1", "lv"]
[[volume]]
name = "vm"
target = "guest"
over = ["cat"]
limit = 3
pid = 900
[[ioband]]
name = "share"
policy = "weight"
# c_limit 3: deep jobs fall asleep in dm-ioband and must wake.
io_limit = 4
[[volume]]
name = "band"
target = "ioband"
over = ["lv"]
share = "share"
weight = 40
[[volume]]
name = "lun"
target = "iscsi"
over = ["vm"]
queue_depth = 4
threads = 2
[[volume]]
name = "lun2"
target = "iscsi"
over = ["band"]
io_context = "shared"
"#;

const TARGETS: &[&str] = &["lv", "cat", "vm", "band", "lun", "lun2", "sdb"];

#[derive(Clone, Debug)]
struct JobPlan {
    target: usize,
    rw: &'static str,
    bs_kib: u32,
    size_kib: u32,
    iodepth: u32,
}

fn jobs() -> impl Strategy<Value = Vec<JobPlan>> {
    prop::collection::vec(
        (
            0..TARGETS.len(),
            prop::sample::select(vec!["read", "write", "randread", "randwrite", "randrw"]),
            prop::sample::select(vec![4u32, 12, 64, 256, 1024]),
            1u32..64,
            1u32..16,
        )
            .prop_map(|(target, rw, bs_kib, blocks, iodepth)| JobPlan {
                target,
                rw,
                bs_kib,
                size_kib: bs_kib * blocks,
                iodepth,
            }),
        1..6,
    )
}

fn job_file(plan: &[JobPlan]) -> String {
    let mut text = String::from("[global]\nioengine=libaio\ndirect=1\n");
    for (i, j) in plan.iter().enumerate() {
        text += &format!(
            "[j{i}]\nfilename={}\nrw={}\nbs={}k\nsize={}k\niodepth={}\n",
            TARGETS[j.target], j.rw, j.bs_kib, j.size_kib, j.iodepth
        );
    }
    text
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn every_bio_through_a_stack_completes_once(plan in jobs(), seed in 0u64..1000) {
        let text = job_file(&plan);
        let jobs = elevator_fio::parse_str(&text, "p.fio", Path::new("."), &|_| None).unwrap();
        let topology = Topology::from_str(TOPOLOGY, "stack.toml").unwrap();
        let options = SimOptions { seed, ..SimOptions::default() };
        let a = simulate(&jobs, &topology, &options).unwrap();
        for (p, j) in a.processes.iter().zip(&plan) {
            let bytes: u64 = p.stats.iter().map(|s| s.io_bytes).sum();
            let ios: u64 = p.stats.iter().map(|s| s.total_ios).sum();
            prop_assert_eq!(bytes, u64::from(j.size_kib) * 1024, "{}", p.name);
            prop_assert_eq!(ios, u64::from(j.size_kib / j.bs_kib), "{}", p.name);
        }
        let b = simulate(&jobs, &topology, &options).unwrap();
        prop_assert_eq!(a.end_ns, b.end_ns);
        prop_assert_eq!(a.requests_completed, b.requests_completed);
    }
}

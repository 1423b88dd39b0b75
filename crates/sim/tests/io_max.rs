//! cgroup v2 `io.max` in the simulated block layer: each limited cgroup runs at its limit
//! (within 2 % over 10 s) while an unlimited one takes the rest of the disk; an HDD gets
//! blk-throttle's 100 ms slices, an SSD its 20 ms ones.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
direct=1
ioengine=libaio
iodepth=16
runtime=10
time_based
filename=sda
size=8G

[limited]
rw=randread
bs=4k
cgroup=batch

[free]
rw=randread
bs=4k

[writer]
rw=write
bs=64k
cgroup=capped/bw
";

/// (read IOPS of `limited`, read IOPS of `free`, write bytes/s of `writer`).
fn run(model: &str, io_max: &str) -> (f64, f64, f64) {
    let topo = format!(
        "[[device]]\nname = \"sda\"\n{model}\n[[cgroup]]\npath = \"batch\"\n\"io.max\" = \"8:0 {io_max}\"\n\
         [[cgroup]]\npath = \"/capped/bw/\"\n\"io.max\" = [\"sda wbps=4194304\", \"8:0 wiops=max\"]\n"
    );
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    assert_eq!(t.io_max.len(), 2);
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let per_s = |p: usize, dir: usize, bytes: bool| {
        let s = &r.processes[p].stats[dir];
        let n = if bytes { s.io_bytes } else { s.total_ios };
        n as f64 / (r.processes[p].runtime_ns() as f64 / 1e9)
    };
    (per_s(0, 0, false), per_s(1, 0, false), per_s(2, 1, true))
}

#[test]
fn limited_groups_run_at_their_limits_and_the_rest_takes_the_disk() {
    for (model, io_max, riops) in [
        ("model = \"hdd\"\npreset = \"sata-7200-2009\"", "riops=50", 50.0),
        ("model = \"nvme\"\npreset = \"nvme-pcie3-2018\"", "riops=2000 rbps=max", 2000.0),
    ] {
        let (limited, free, writer) = run(model, io_max);
        assert!((limited - riops).abs() / riops <= 0.02, "{model}: limited {limited} IOPS");
        assert!((writer - 4194304.0).abs() / 4194304.0 <= 0.02, "{model}: writer {writer} B/s");
        assert!(free > limited, "{model}: free {free} IOPS beside limited {limited}");
    }
}

#[test]
fn bad_io_max_lines_name_file_line_cgroup_and_key() {
    let e = |line: &str| {
        let topo = format!(
            "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n\n[[cgroup]]\npath = \"a\"\n\"io.max\" = {line}\n"
        );
        Topology::from_str(&topo, "t.toml").unwrap_err()
    };
    assert_eq!(
        e("\"8:0 rbps=abc\""),
        "t.toml:7: cgroup `a`: io.max: `rbps=abc`: expected an integer or `max`"
    );
    assert!(e("\"8:16 riops=100\"").contains("`8:16`: no such device; devices are 8:0 (sda)"));
    assert!(e("\"8:0 bps=1\"").contains("`bps=1`: unknown key"));
    assert!(e("[\"8:0 riops=1\"]").contains("`riops=1`: must be at least 2"));
    let topo = "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n[[cgroup]]\npath = \"/\"\n\"io.max\" = \"8:0 riops=5\"\n";
    assert!(Topology::from_str(topo, "t.toml")
        .unwrap_err()
        .contains("the root cgroup has no io.max"));
    let topo = "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n[[cgroup]]\npath = \"a\"\nio_max = \"8:0 riops=5\"\n";
    assert!(Topology::from_str(topo, "t.toml").unwrap_err().contains("io_max"));
}

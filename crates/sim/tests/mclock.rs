//! mClock as a group controller in the simulated block layer (`mclock = "8:0 ..."` on a
//! `[[cgroup]]`): reservations are met while a heavier-weighted neighbour saturates the
//! device, and limits hold.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const NVME: &str = "model = \"ssd\"\npreset = \"nvme-pcie3-2018\"\nscheduler = \"none\"";
const HDD: &str = "model = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"mq-deadline\"";

const JOB: &str = "
[global]
direct=1
runtime=10
time_based
filename=sda
size=8G
rw=randread
bs=4k
ioengine=libaio
iodepth=32

[a]
cgroup=a

[b]
cgroup=b
";

fn iops(device: &str, a: &str, b: &str) -> Vec<f64> {
    let topo = format!(
        "[[device]]\nname = \"sda\"\n{device}\n[[cgroup]]\npath = \"a\"\nmclock = \"8:0 {a}\"\n[[cgroup]]\npath = \"b\"\nmclock = \"8:0 {b}\"\n"
    );
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let v: Vec<f64> = r
        .processes
        .iter()
        .map(|p| p.stats[0].total_ios as f64 / (p.runtime_ns() as f64 / 1e9))
        .collect();
    eprintln!("a [{a}] {:.0} IOPS, b [{b}] {:.0} IOPS", v[0], v[1]);
    v
}

#[test]
fn reservations_are_met_beside_a_heavier_neighbour() {
    // By weight alone `a` would get a thousandth of the device.
    let v = iops(NVME, "reservation_iops=50000 weight=1", "weight=1000");
    assert!(v[0] >= 0.95 * 50_000.0, "a got {:.0} of its 50,000", v[0]);
    assert!(v[1] > v[0], "b got {:.0}", v[1]);
    let v = iops(HDD, "reservation_iops=100 weight=1", "weight=1000");
    assert!(v[0] >= 95.0, "a got {:.0} of its 100 on the disk", v[0]);
}

#[test]
fn limits_hold() {
    let v = iops(NVME, "limit_iops=20000", "weight=100");
    assert!((v[0] - 20_000.0).abs() <= 400.0, "a ran {:.0} IOPS under a 20,000 limit", v[0]);
    let v = iops(HDD, "limit_iops=40", "weight=100");
    assert!((v[0] - 40.0).abs() <= 0.8, "a ran {:.0} IOPS under a 40 limit on the disk", v[0]);
}

#[test]
fn bad_mclock_lines_name_the_file_line_and_key() {
    let dev = "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n";
    for (line, want) in [
        (
            "8:0 reservation_iops=abc",
            "t.toml:6: cgroup `a`: mclock: `reservation_iops=abc`: expected an integer",
        ),
        ("8:0 speed=3", "t.toml:6: cgroup `a`: mclock: `speed=3`: unknown key"),
        ("8:0 weight=0", "t.toml:6: cgroup `a`: mclock: weight 0 is outside 1..=10000"),
        (
            "8:0 reservation_iops=10 limit_iops=5",
            "t.toml:6: cgroup `a`: mclock: reservation_iops 10 is above limit_iops 5",
        ),
    ] {
        let e = Topology::from_str(
            &format!("{dev}[[cgroup]]\npath = \"a\"\nmclock = \"{line}\"\n"),
            "t.toml",
        )
        .unwrap_err();
        assert!(e.starts_with(want), "{e}\nwanted {want}");
    }
}

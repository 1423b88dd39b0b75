//! cgroup v2 `io.prio.class` feeding mq-deadline's priority levels and BFQ's class trees: a
//! cgroup promoted to RT is served first, one set to idle last.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
direct=1
ioengine=libaio
iodepth=16
rw=randread
bs=4k
runtime=10
time_based
filename=sda
size=8G

[a]
cgroup=a

[b]
cgroup=b
";

/// I/Os of jobs a and b with `policy` on cgroup a.
fn ios(policy: Option<&str>) -> (u64, u64) {
    ios_under("mq-deadline", policy)
}

fn ios_under(scheduler: &str, policy: Option<&str>) -> (u64, u64) {
    let mut topo = format!("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"{scheduler}\"\n");
    if let Some(p) = policy {
        topo += &format!("[[cgroup]]\npath = \"/a\"\n\"io.prio.class\" = \"{p}\"\n");
    }
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    (r.processes[0].stats[0].total_ios, r.processes[1].stats[0].total_ios)
}

#[test]
fn promoted_cgroups_go_first_and_idle_ones_last() {
    let (a, b) = ios(None);
    assert!(a.abs_diff(b) * 10 < a + b, "equal classes share alike: {a} {b}");
    let (a, b) = ios(Some("promote-to-rt"));
    assert!(a > 4 * b, "RT cgroup {a} I/Os against BE {b}");
    let (a, b) = ios(Some("idle"));
    assert!(b > 4 * a, "idle cgroup {a} I/Os against BE {b}");
    let (a, b) = ios(Some("no-change"));
    assert!(a.abs_diff(b) * 10 < a + b, "{a} {b}");
}

#[test]
fn bfq_serves_the_classes_in_order_too() {
    let (a, b) = ios_under("bfq", None);
    assert!(a.abs_diff(b) * 10 < a + b, "equal classes share alike: {a} {b}");
    let (a, b) = ios_under("bfq", Some("promote-to-rt"));
    eprintln!("BFQ: RT cgroup {a} I/Os, BE {b}");
    let (c, d) = ios_under("bfq", Some("idle"));
    eprintln!("BFQ: idle cgroup {c} I/Os, BE {d}");
    // Each cgroup is a best-effort group entity of the root's tree (BFQ_DEFAULT_GRP_CLASS):
    // the class acts across cgroups through preemption only (bfq_bfqq_higher_class_or_weight).
    assert!(a > 2 * b, "RT cgroup {a} I/Os against BE {b}");
    assert!(d > 2 * c && c > 0, "idle cgroup {c} I/Os against BE {d}");
}

#[test]
fn an_unknown_policy_names_file_line_cgroup_and_value() {
    let topo = "[[device]]\nname = \"sda\"\nmodel = \"ram\"\n[[cgroup]]\npath = \"a\"\n\"io.prio.class\" = \"rt\"\n";
    let e = Topology::from_str(topo, "t.toml").unwrap_err();
    assert!(e.starts_with("t.toml:6: cgroup `a`: io.prio.class: `rt`"), "{e}");
}

//! Cgroup writeback (4.2+): a buffered writer's writeback goes down in its own cgroup, so
//! `io.max` on that cgroup holds the writer near its limit (its writeback domain's share of
//! the dirty threshold shrinks with what it writes back) while a writer in another cgroup
//! keeps the disk. Before 4.2 the flushers wrote everything in the root cgroup and `io.max`
//! did not touch buffered writes.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
rw=write
bs=1m
size=4g
runtime=120
time_based

[limited]
filename=sda1
cgroup=limited

[free]
filename=sda2
cgroup=free
";

/// Bytes per second each writer put into the page cache: (limited, free), with `control`
/// the `limited` cgroup's interface file and the disk under `scheduler`.
fn run(kernel: &str, scheduler: &str, control: &str) -> (f64, f64) {
    let topo = format!(
        "[machine]\nkernel = \"{kernel}\"\nmemory = \"4GiB\"\n\
         [[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n\
         scheduler = \"{scheduler}\"\n\
         [[partition]]\nname = \"sda1\"\ndevice = \"sda\"\nstart = \"1MiB\"\nsize = \"100GiB\"\n\
         [[partition]]\nname = \"sda2\"\ndevice = \"sda\"\nstart = \"101GiB\"\nsize = \"100GiB\"\n\
         [[cgroup]]\npath = \"limited\"\n{control}\n"
    );
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let rate = |p: usize| {
        let s = &r.processes[p].stats[1];
        s.io_bytes as f64 / (r.processes[p].runtime_ns() as f64 / 1e9)
    };
    (rate(0), rate(1))
}

#[test]
fn io_max_holds_a_buffered_writer_from_4_2_and_not_before() {
    let limit = 10485760.0;
    let io_max = "\"io.max\" = \"8:0 wbps=10485760\"";
    let (limited, free) = run("6.1", "mq-deadline", io_max);
    println!("6.1: limited {:.1} MB/s, free {:.1} MB/s", limited / 1e6, free / 1e6);
    // What went into the cache at first (up to the writer's share of the dirty threshold)
    // is written back at the limit too; over two minutes the writer stays near it.
    assert!(limited < 1.5 * limit, "6.1: limited writer {limited} B/s");
    assert!(limited > 0.5 * limit, "6.1: limited writer {limited} B/s");
    assert!(free > 5.0 * limited, "6.1: free writer {free} B/s against {limited}");
    let (limited, free) = run("4.1", "mq-deadline", io_max);
    println!("4.1: limited {:.1} MB/s, free {:.1} MB/s", limited / 1e6, free / 1e6);
    assert!(limited > 3.0 * limit, "4.1: io.max does not reach writeback: {limited} B/s");
    assert!((limited / free - 1.0).abs() < 0.2, "4.1: {limited} against {free} B/s");
}

/// BFQ's group weights reach buffered writers through their writeback: at weight 10 against
/// the default 100 a writer gets about a tenth of the disk (each cgroup draws on its own
/// request pool, so the light one's backlog does not take the other's slots).
#[test]
fn bfq_weights_share_the_disk_between_buffered_writers() {
    let (light, heavy) = run("6.1", "bfq", "\"io.bfq.weight\" = \"8:0 10\"");
    println!("6.1, bfq: weight 10 {:.1} MB/s, weight 100 {:.1} MB/s", light / 1e6, heavy / 1e6);
    assert!(heavy > 5.0 * light, "{light} against {heavy} B/s");
}

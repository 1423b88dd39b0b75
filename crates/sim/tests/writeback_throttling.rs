//! Writeback throttling (blk-wbt) on a named kernel: a buffered writer's writeback goes to
//! the disk a few requests at a time, fewer while the reads beside it are slow, so a random
//! reader gets several times what it gets with `wbt_lat_usec = 0`; on 4.19 a SATA disk (the
//! legacy queue) and under BFQ it is off.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
runtime=30
time_based

[writer]
filename=sda
rw=write
bs=1m
size=16g

[reader]
filename=sda
offset=100g
size=1g
rw=randread
bs=4k
direct=1
";

/// Bytes per second of (writer into the cache, reader).
fn run(kernel: &str, scheduler: &str, device: &str) -> (f64, f64) {
    let topo = format!(
        "[machine]\nkernel = \"{kernel}\"\nmemory = \"8GiB\"\n[[device]]\nname = \"sda\"\n\
         model = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"{scheduler}\"\n{device}"
    );
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    let rate = |p: usize, dir: usize| {
        let s = &r.processes[p].stats[dir];
        s.io_bytes as f64 / (r.processes[p].runtime_ns() as f64 / 1e9)
    };
    (rate(0, 1), rate(1, 0))
}

#[test]
fn wbt_gives_a_reader_back_what_writeback_took() {
    let (w_on, r_on) = run("6.1", "mq-deadline", "");
    let (w_off, r_off) = run("6.1", "mq-deadline", "wbt_lat_usec = 0\n");
    println!(
        "6.1 mq-deadline: wbt on: writer {:.1} MB/s, reader {:.1} KB/s; off: {:.1} MB/s, {:.1} KB/s",
        w_on / 1e6,
        r_on / 1e3,
        w_off / 1e6,
        r_off / 1e3
    );
    assert!(r_on > 3.0 * r_off, "reader {r_on} against {r_off} B/s");
    assert!(w_on > 0.5 * w_off, "the writer keeps most of its rate: {w_on} against {w_off}");
    // 4.19: the SATA disk is on the legacy queue, where wbt is off by default.
    assert_eq!(run("4.19", "mq-deadline", ""), run("4.19", "mq-deadline", "wbt_lat_usec = 0\n"));
    // BFQ turns it off; setting wbt_lat_usec turns it on again.
    let bfq = run("6.1", "bfq", "");
    assert_eq!(bfq, run("6.1", "bfq", "wbt_lat_usec = 0\n"));
    assert_ne!(bfq, run("6.1", "bfq", "wbt_lat_usec = 75000\n"));
}

#[test]
fn wbt_lat_usec_is_checked() {
    let topo = |kernel: &str, usec: &str| {
        format!(
            "[machine]\nkernel = \"{kernel}\"\n[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n\
             preset = \"sata-7200-2009\"\nwbt_lat_usec = {usec}\n"
        )
    };
    let e = Topology::from_str(&topo("6.1", "99999999999"), "t.toml").unwrap_err();
    assert!(e.contains("t.toml:") && e.contains("wbt_lat_usec"), "{e}");
    let e = Topology::from_str(&topo("2.6.32", "75000"), "t.toml").unwrap_err();
    assert!(e.starts_with("t.toml:7:") && e.contains("wbt_lat_usec") && e.contains("4.10"), "{e}");
    assert!(Topology::from_str(&topo("2.6.32", "0"), "t.toml").is_ok(), "0 is off anywhere");
}

/// The most writes the disk had in flight at once in the first 100 ms (wbt's first window,
/// before the depth can scale), from its blktrace (`D` to `C`). The disk takes 1280 KiB
/// requests (the default since `BLK_DEF_MAX_SECTORS` became 2560), so no writeback bio is
/// split; the flusher starts past 16 MiB of dirty data.
fn max_writes_in_flight(job: &str) -> u32 {
    use elevator_fio::blktrace::{records, TA_COMPLETE, TA_ISSUE, TC_NOTIFY, TC_SHIFT, TC_WRITE};
    let topo =
        "[machine]\nkernel = \"6.1\"\nmemory = \"8GiB\"\ndirty_background_bytes = \"16MiB\"\n\
                [[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n\
                scheduler = \"mq-deadline\"\nmax_sectors_kb = 1280\n";
    let t = Topology::from_str(topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() }).unwrap();
    let trace = r.devices[0].blktrace.as_ref().expect("traced");
    let (mut now, mut most) = (0u32, 0u32);
    for (rec, _) in records(&trace.bytes, "sda").unwrap() {
        let category = rec.action >> TC_SHIFT;
        if category & TC_NOTIFY != 0 || category & TC_WRITE == 0 || rec.time_ns >= 100_000_000 {
            continue;
        }
        match rec.action & 0xffff {
            TA_ISSUE => now += 1,
            TA_COMPLETE => now -= 1,
            _ => {}
        }
        most = most.max(now);
    }
    most
}

/// A task's own writeback (`sync_file_range(SYNC_FILE_RANGE_WRITE)`) carries no
/// `REQ_BACKGROUND`: with no read near, wbt lets `wb_normal` of them down at once (8 of the
/// SATA disk's 16), where the flusher's background writeback gets `wb_background` (4).
#[test]
fn a_task_s_own_writeback_gets_the_normal_depth_and_the_flusher_s_a_quarter() {
    let job = |extra: &str| {
        format!("[writer]\nfilename=sda\nrw=write\nbs=64k\nsize=1g\nruntime=1\n{extra}")
    };
    let task = max_writes_in_flight(&job("sync_file_range=write:16\n"));
    let flusher = max_writes_in_flight(&job(""));
    assert_eq!((task, flusher), (8, 4));
}

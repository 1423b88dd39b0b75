//! `SimOptions::blktrace`: each device's block-layer events as blktrace records. Tracing
//! changes nothing in the run (the JSON report is the same bytes), the traces are the same
//! bytes run after run, and they agree with the block layer's own counters: one `Q` per bio,
//! one `D` and one `C` per request, an `M`/`F` per merge, `X` where bios split at
//! `max_sectors_kb`, `S` where submitters slept for one of `nr_requests`; sequence numbers
//! count up from 1, time never goes back, and every pid that has events is named by a note.

use std::path::Path;

use elevator_fio::blktrace::{
    records, Trace, BLK_TN_PROCESS, TA_BACKMERGE, TA_COMPLETE, TA_FRONTMERGE, TA_ISSUE, TA_QUEUE,
    TA_SLEEPRQ, TA_SPLIT, TC_NOTIFY, TC_SHIFT,
};
use elevator_sim::{report, simulate, SimOptions, SimResult, Topology};

const TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
nr_requests = 4

[[device]]
name = "sdb"
model = "hdd"
preset = "sata-7200-2009"
max_sectors_kb = 64

[[cgroup]]
path = "capped"
"io.max" = "8:16 wbps=8388608"
"#;

const JOB: &str = "
[global]
direct=1
runtime=1
time_based
size=4G

[reader]
filename=sda
ioengine=libaio
iodepth=16
rw=randread
bs=4k

[writer]
filename=sdb
ioengine=libaio
iodepth=4
rw=write
bs=256k
cgroup=capped

[small-writer]
filename=sdb
offset=2G
ioengine=psync
rw=write
bs=4k
";

fn run(blktrace: bool) -> (SimResult, String) {
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(JOB, "j.fio", Path::new("."), &|_| None).unwrap();
    let r =
        simulate(&jobs, &t, &SimOptions { seed: 7, blktrace, ..SimOptions::default() }).unwrap();
    let json = report::json::render(&r, &jobs, 7, &t.source);
    (r, json)
}

fn what(t: &Trace) -> u32 {
    t.action & 0xffff
}

fn is_note(t: &Trace) -> bool {
    t.action >> TC_SHIFT & TC_NOTIFY != 0
}

#[test]
fn traces_change_nothing_and_agree_with_the_block_layer() {
    let (plain, plain_json) = run(false);
    let (traced, traced_json) = run(true);
    assert_eq!(plain_json, traced_json, "tracing changed the run");
    assert!(plain.devices.iter().all(|d| d.blktrace.is_none()));
    let (again, _) = run(true);

    for (i, d) in traced.devices.iter().enumerate() {
        let file = d.blktrace.as_ref().expect("a trace per device");
        assert_eq!(file.dropped, 0);
        assert_eq!(
            Some(&file.bytes),
            again.devices[i].blktrace.as_ref().map(|f| &f.bytes),
            "{}: the same bytes every run",
            d.name
        );
        let recs = records(&file.bytes, &d.name).unwrap();
        assert_eq!(recs.len() as u64, file.records);
        let count =
            |w: u32| recs.iter().filter(|(t, _)| !is_note(t) && what(t) == w).count() as u64;
        let c = &d.counters;
        // Bios: the processes on this device count theirs as I/Os.
        let bios: u64 = traced
            .processes
            .iter()
            .filter(|p| p.region.route == elevator_sim::topology::Route::Device(i))
            .map(|p| p.stats.iter().map(|s| s.total_ios).sum::<u64>())
            .sum();
        assert!(bios > 0);
        assert_eq!(count(TA_QUEUE), bios, "{}: a Q per bio", d.name);
        assert_eq!(count(TA_ISSUE), c.ios[0] + c.ios[1], "{}: a D per request", d.name);
        assert_eq!(count(TA_COMPLETE), c.ios[0] + c.ios[1], "{}: a C per request", d.name);
        assert_eq!(count(TA_BACKMERGE) + count(TA_FRONTMERGE), c.merges[0] + c.merges[1]);
        let mut last_ns = 0;
        let mut sequence = 0;
        let mut named = std::collections::BTreeSet::new();
        for (t, pdu) in &recs {
            let (major, minor) = elevator_sim::topology::device_number(i);
            assert_eq!(t.device, major << 20 | minor);
            assert!(t.time_ns >= last_ns, "{}: time went back at {t:?}", d.name);
            last_ns = t.time_ns;
            if is_note(t) {
                assert_eq!(t.action, BLK_TN_PROCESS);
                assert_eq!(pdu.len(), 16);
                named.insert(t.pid);
                continue;
            }
            sequence += 1;
            assert_eq!(t.sequence, sequence);
            assert!(named.contains(&t.pid), "{}: pid {} has no note before {t:?}", d.name, t.pid);
        }
        match d.name.as_str() {
            // 16 reads in flight with 4 requests: the reader sleeps.
            "sda" => assert!(count(TA_SLEEPRQ) > 0, "sda: no S"),
            // 256 KiB writes at 64 KiB: three splits per bio.
            "sdb" => {
                let writer = &traced.processes[1];
                assert_eq!(writer.name, "writer");
                assert_eq!(count(TA_SPLIT), 3 * writer.stats[1].total_ios);
                let notes: Vec<&[u8]> =
                    recs.iter().filter(|(t, _)| is_note(t)).map(|(_, pdu)| *pdu).collect();
                assert!(notes.contains(&&b"writer\0\0\0\0\0\0\0\0\0\0"[..]), "{notes:?}");
                assert!(notes.contains(&&b"small-writer\0\0\0\0"[..]), "{notes:?}");
            }
            other => panic!("unexpected device {other}"),
        }
    }
}

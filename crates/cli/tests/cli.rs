//! End-to-end tests: the real `elevator` binary on the checked-in examples.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("runs")
}

fn ok(args: &[&str]) -> String {
    let out = elevator(args);
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--output-format", "json"]);
    serde_json::from_str(&ok(&all)).expect("valid JSON")
}

/// A scratch directory of this test run: `elevator-NAME-PID` in the temporary directory.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = scratch_dir("cli").join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_example_runs_in_every_format() {
    for entry in std::fs::read_dir(repo().join("examples")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("fio") {
            continue;
        }
        let p = path.to_str().unwrap();
        let topology =
            if p.contains("ram-") { vec!["--topology", "examples/ram.toml"] } else { vec![] };
        for format in ["normal", "json", "table"] {
            let mut args = vec!["run", p, "--output-format", format];
            args.extend(&topology);
            let out = ok(&args);
            assert!(!out.is_empty(), "{p} {format}: empty output");
        }
    }
}

#[test]
fn json_has_fio_layout() {
    let v = json(&["run", "examples/seq-vs-random.fio"]);
    assert!(v["fio version"].as_str().unwrap().starts_with("elevator-"));
    let jobs = v["jobs"].as_array().unwrap();
    // 4 sequential readers reported one by one, the random reader's group merged.
    assert_eq!(jobs.len(), 5);
    let seq = &jobs[0];
    assert_eq!(seq["jobname"], "seqread");
    assert_eq!(seq["groupid"], 0);
    assert_eq!(seq["job options"]["rw"], "read");
    let read = &seq["read"];
    for key in ["io_bytes", "io_kbytes", "bw", "iops", "runtime", "total_ios"] {
        assert!(read[key].is_number(), "read.{key} missing");
    }
    for lat in ["lat_ns", "clat_ns", "slat_ns"] {
        for key in ["min", "max", "mean", "stddev"] {
            assert!(read[lat][key].is_number(), "read.{lat}.{key} missing");
        }
    }
    assert!(read["clat_ns"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
    assert!(read["runtime"].as_u64().unwrap() >= 29_000, "30 s runtime");
    assert_eq!(jobs[4]["groupid"], 1);
    assert_eq!(jobs[4]["jobname"], "randread");
}

#[test]
fn same_seed_same_bytes_different_seed_differs() {
    let a = ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json", "--seed", "7"]);
    let b = ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json", "--seed", "7"]);
    let c = ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json", "--seed", "8"]);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn output_file_is_written() {
    let path = std::env::temp_dir().join(format!("elevator-out-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    assert!(ok(&["run", "examples/randread-qd1.fio", "--output-format", "json", "--output", p])
        .is_empty());
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(v["jobs"][0]["jobname"], "randread");
}

#[test]
fn errors_name_the_file_line_and_option() {
    let bad = temp_file("bad.fio", "[global]\nbs=4k\n[job]\nrw=read\nfrobnicate=1\n");
    let out = elevator(&["run", bad.to_str().unwrap()]);
    let err = refusal(&out);
    assert!(err.contains("bad.fio:5") && err.contains("frobnicate"), "{err}");

    let out = elevator(&["run", "examples/randread-qd1.fio", "--scheduler", "bogus"]);
    assert!(refusal(&out).contains("unknown scheduler `bogus`"));

    let out = elevator(&["run", "examples/randread-qd1.fio", "--iosched", "read_expire=-3"]);
    assert!(refusal(&out).contains("read_expire"));

    let out = elevator(&["run", "/nonexistent.fio"]);
    assert!(refusal(&out).contains("/nonexistent.fio"));

    let topo = temp_file("bad.toml", "[[device]]\nname = \"x\"\nmodel = \"tape\"\n");
    let out = elevator(&["run", "examples/randread-qd1.fio", "--topology", topo.to_str().unwrap()]);
    let err = refusal(&out);
    assert!(err.contains("bad.toml:3") && err.contains("unknown model `tape`"), "{err}");
}

#[test]
fn schedulers_lists_names_and_tunables() {
    let list = ok(&["schedulers"]);
    assert!(list.contains("mq-deadline") && list.contains("none"));
    let tunables = ok(&["schedulers", "deadline"]);
    for name in ["read_expire", "write_expire", "fifo_batch", "writes_starved", "front_merges"] {
        assert!(tunables.contains(name), "{name} missing from\n{tunables}");
    }
}

/// The default disk behaves like a 7200 rpm disk: QD1 random 4 KiB reads give
/// 1 / (average seek + half a rotation + transfer), about 70–100 IOPS.
#[test]
fn default_hdd_random_reads_at_qd1() {
    let v = json(&["run", "examples/randread-qd1.fio"]);
    let iops = v["jobs"][0]["read"]["iops"].as_f64().unwrap();
    assert!((70.0..=100.0).contains(&iops), "QD1 random read IOPS {iops}");
}

/// Sequential 1 MiB reads reach the outer zone's media rate (> 100 MB/s on a 2009 SATA disk).
#[test]
fn default_hdd_sequential_reads_reach_media_rate() {
    let v = json(&["run", "examples/seqread-1m.fio"]);
    let bw = v["jobs"][0]["read"]["bw_bytes"].as_f64().unwrap();
    assert!(bw > 100e6 && bw < 160e6, "sequential 1 MiB read bandwidth {bw} B/s");
}

/// The SSD presets under fio: a SATA drive's 4 KiB random reads at QD32 come near its 100k
/// IOPS, an NVMe drive's QD1 writes land in its write buffer in microseconds, and the device
/// counters (write amplification) reach the JSON report.
#[test]
fn ssd_presets_under_fio() {
    let job = temp_file(
        "ssd.fio",
        "[global]\nioengine=libaio\ndirect=1\nbs=4k\nruntime=1\ntime_based\n\
         [sata-randread]\nfilename=sda\nrw=randread\niodepth=32\n\
         [nvme-randwrite]\nfilename=/dev/nvme0n1\nrw=randwrite\niodepth=1\n",
    );
    let v = json(&["run", job.to_str().unwrap(), "--topology", "examples/ssd.toml"]);
    let read = &v["jobs"][0]["read"];
    let iops = read["iops"].as_f64().unwrap();
    assert!((80_000.0..110_000.0).contains(&iops), "SATA QD32 random read IOPS {iops}");
    let lat_us = read["clat_ns"]["mean"].as_f64().unwrap() / 1e3;
    assert!((250.0..400.0).contains(&lat_us), "QD32 read latency {lat_us} µs (32 / IOPS)");
    let write = &v["jobs"][1]["write"];
    let lat_us = write["clat_ns"]["mean"].as_f64().unwrap() / 1e3;
    assert!((5.0..30.0).contains(&lat_us), "NVMe QD1 write latency {lat_us} µs");
    let ios = write["total_ios"].as_f64().unwrap();
    assert!(ios > 30_000.0, "{ios} writes in a second");
    let devices = v["elevator"]["devices"].as_array().unwrap();
    assert!(devices[0]["model"].as_str().unwrap().starts_with("SATA SSD, NCQ 32"));
    let stats = &devices[1]["stats"];
    assert_eq!(stats["host_units_written"].as_f64().unwrap(), ios);
    // No cleaning in a second of writes to a full drive with 9 % spare: WA ≈ 1 (the units
    // still in open pages at the end not yet counted).
    let wa = stats["write_amplification"].as_f64().unwrap();
    assert!((0.99..1.01).contains(&wa) && stats["gc_runs"] == 0.0, "{stats}");
}

/// `read_iolog=` replays a log with its recorded gaps, or without them, and names the log's
/// line when it is wrong.
#[test]
fn iolog_replay_keeps_recorded_timing() {
    let mut log = String::from("fio version 3 iolog\n0 /dev/sda add\n");
    for i in 0..10 {
        log += &format!("{} /dev/sda read {} 4096\n", i * 100_000, i * 1_048_576);
    }
    // Version 3 timestamps are microseconds, as fio 3.31+ writes them.
    log += "950000 /dev/sda write 0 8192\n960000 /dev/sda sync 0 0\n";
    temp_file("trace.log", &log);
    let timed = temp_file("timed.fio", "[replay]\nread_iolog=trace.log\nioengine=libaio\n");
    let v = json(&["run", timed.to_str().unwrap()]);
    let job = &v["jobs"][0];
    assert_eq!(job["read"]["total_ios"], 10);
    assert_eq!(job["write"]["total_ios"], 1);
    let ms = job["read"]["runtime"].as_f64().unwrap();
    assert!((950.0..1100.0).contains(&ms), "the log spans 960 ms: {ms}");
    let fast = temp_file(
        "fast.fio",
        "[replay]\nread_iolog=trace.log\nreplay_no_stall\nioengine=libaio\niodepth=4\n",
    );
    let ms = json(&["run", fast.to_str().unwrap()])["jobs"][0]["read"]["runtime"].as_f64().unwrap();
    assert!(ms < 200.0, "no stalls: {ms} ms");
    // replay_time_scale=200: twice the recorded rate, half the time.
    let double = temp_file(
        "double.fio",
        "[replay]\nreplay_time_scale=200\nread_iolog=trace.log\nioengine=libaio\n",
    );
    let ms =
        json(&["run", double.to_str().unwrap()])["jobs"][0]["read"]["runtime"].as_f64().unwrap();
    assert!((470.0..560.0).contains(&ms), "the log spans 960 ms, replayed at 200 %: {ms}");
    temp_file("bad.log", "fio version 2 iolog\n/dev/sda read 0 4096\n/dev/sda jump 0 512\n");
    let bad = temp_file("bad.fio", "[r]\nread_iolog=bad.log\n");
    let out = elevator(&["run", bad.to_str().unwrap()]);
    let err = refusal(&out);
    assert!(err.contains("bad.fio:2") && err.contains("bad.log:3: unknown action `jump`"), "{err}");
}

/// A log real fio (installed by setup.sh) wrote with `write_iolog` replays with fio's own
/// timing: 40 reads at 100 IOPS take about 390 ms again.
#[test]
fn a_log_real_fio_wrote_replays_in_its_time() {
    let dir = scratch_dir("iolog-rt");
    let log = dir.join("rt.log");
    let _ = std::fs::remove_file(&log); // fio appends to an existing log
    let record = dir.join("record.fio");
    std::fs::write(
        &record,
        format!(
            "[rec]\nioengine=null\nfilename=/dev/sda\nrw=randread\nbs=4k\nsize=64m\n\
             rate_iops=100\nnumber_ios=40\nwrite_iolog={}\n",
            log.display()
        ),
    )
    .unwrap();
    let out = run_under("fio", &record, "terse");
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let replay = dir.join("replay.fio");
    std::fs::write(&replay, format!("[replay]\nread_iolog={}\nioengine=libaio\n", log.display()))
        .unwrap();
    let v = json(&["run", replay.to_str().unwrap()]);
    let ms = v["jobs"][0]["read"]["runtime"].as_f64().unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 40);
    assert!((370.0..=450.0).contains(&ms), "40 reads at 100 IOPS replayed in {ms} ms");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `write_iolog=` records what a simulated job issued as a fio version 3 log, which elevator
/// and real fio (installed by setup.sh) replay with the same I/Os and timing.
#[test]
fn write_iolog_records_a_log_real_fio_replays() {
    let dir = scratch_dir("write-iolog");
    let log = dir.join("sim.log");
    let _ = std::fs::remove_file(&log); // appended to, as fio does
    let job = dir.join("record.fio");
    std::fs::write(
        &job,
        format!(
            "[rec]\nfilename=/dev/sda\ndirect=1\nrw=randrw\nbs=4k\nsize=64m\nrate_iops=200\n\
             number_ios=60\nfsync=10\nwrite_iolog={}\n",
            log.display()
        ),
    )
    .unwrap();
    let v = json(&["run", job.to_str().unwrap()]);
    let ios = |v: &Value, d: &str| v["jobs"][0][d]["total_ios"].as_u64().unwrap();
    let (reads, writes) = (ios(&v, "read"), ios(&v, "write"));
    assert_eq!(reads + writes, 60);
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "fio version 3 iolog");
    assert_eq!(&lines[1..3], ["0 /dev/sda add", "0 /dev/sda open"]);
    assert!(lines.last().unwrap().ends_with(" /dev/sda close"));
    let count = |a: &str| lines.iter().filter(|l| l.split(' ').nth(2) == Some(a)).count() as u64;
    assert_eq!((count("read"), count("write")), (reads, writes));
    assert!(count("sync") >= 2, "an fsync every 10 writes: {text}");
    // rate_iops=200 holds each direction to 200 I/Os a second (the random reads on the
    // disk take longer, and hold the job back further): the last I/O is issued no sooner
    // than the busier direction's rate allows.
    let last_us: u64 = lines[lines.len() - 2].split(' ').next().unwrap().parse().unwrap();
    let rated_us = (reads.max(writes) - 1) * 5_000;
    assert!((rated_us..=600_000).contains(&last_us), "{last_us} µs, rated {rated_us} µs");
    // Replayed by elevator: the same I/Os in the same time.
    let replay = dir.join("replay.fio");
    std::fs::write(&replay, format!("[replay]\nread_iolog={}\nioengine=libaio\n", log.display()))
        .unwrap();
    let r = json(&["run", replay.to_str().unwrap()]);
    assert_eq!((ios(&r, "read"), ios(&r, "write")), (reads, writes));
    // Replayed by real fio on its null engine: the same counts, and about the same time.
    let fio_job = dir.join("fio-replay.fio");
    std::fs::write(&fio_job, format!("[replay]\nioengine=null\nread_iolog={}\n", log.display()))
        .unwrap();
    let out = run_under("fio", &fio_job, "json");
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let f: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((ios(&f, "read"), ios(&f, "write")), (reads, writes));
    let ms = f["jobs"][0]["job_runtime"].as_u64().unwrap();
    let logged_ms = last_us / 1000;
    assert!(
        (logged_ms * 8 / 10..=logged_ms * 2 + 50).contains(&ms),
        "real fio replayed in {ms} ms what was logged over {logged_ms} ms"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rw=read:SIZE` and `rw=randread:N` (with `rw_sequencer=`): the offsets real fio (installed
/// by setup.sh) logs on its null engine, quirks included (a hole that wraps to the region's
/// offset counted twice, a step back that sticks at one block, a pass that ends short).
#[test]
fn rw_modifiers_place_ios_as_real_fio_does() {
    let dir = scratch_dir("rw-seq");
    // (direction, 4 KiB block) of each I/O in each tool's write_iolog.
    let logged = |tool: &str, extra: &str| -> Vec<(char, u64)> {
        let log = dir.join(format!("{tool}.log"));
        let text = format!(
            "[j]\nioengine=null\nfilename={}\nbs=4k\nsize=64k\n{extra}\nwrite_iolog={}\n",
            dir.join("nullf").display(),
            log.display()
        );
        let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
        ios.iter()
            .filter(|(_, a, _)| a == "read" || a == "write")
            .map(|(_, a, offset)| (a.chars().next().unwrap(), offset / 4096))
            .collect()
    };
    for extra in [
        "rw=read:4k",
        "rw=read:8k",
        "rw=read:-4k",
        "rw=read:-4k\noffset=16k\nsize=48k",
        "rw=read:4k\noffset=16k\nsize=48k",
        "rw=write:12k\noffset=8k\nsize=40k",
        "rw=read:-8k\noffset=8k\nsize=56k",
        "rw=read:4k\nloops=2",
        "rw=read:4k\nbs=8k\nsize=128k",
        "rw=read:4k\nio_size=200k",
    ] {
        let (fio, ours) = (logged("fio", extra), logged("elevator", extra));
        assert!(!fio.is_empty(), "{extra}");
        assert_eq!(ours, fio, "{extra:?}");
    }
    // Random: what happens between the random offsets is the same in both tools.
    for tool in ["fio", "elevator"] {
        // A new offset every 4th I/O (the first among them), the next block in between,
        // one drawn at random where the file's end stops a run.
        let ios = logged(tool, "rw=randread:4\nnorandommap");
        assert_eq!(ios.len(), 16, "{tool}");
        for (i, w) in ios.windows(2).enumerate() {
            let (prev, this) = (w[0].1, w[1].1);
            assert!((i + 1) % 4 == 0 || this == prev + 1 || prev == 15, "{tool}: {ios:?}");
        }
        // rw_sequencer=identical: the drawn offset four times.
        let ios = logged(tool, "rw=randread:4\nnorandommap\nrw_sequencer=identical");
        assert_eq!(ios.len(), 16, "{tool}");
        assert!(ios.chunks(4).all(|c| c.iter().all(|io| io == &c[0])), "{tool}: {ios:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `sync_file_range=FLAGS:N`: after every N writes a buffered job calls sync_file_range on
/// what it wrote since, as real fio (installed by setup.sh) does: the same calls at the
/// same places in both tools' write_iolog; and the page cache writes that span back (with
/// `wait_after` the writer waits for it), so the writer runs near the disk's speed instead
/// of memory's.
#[test]
fn sync_file_range_writes_back_what_real_fio_syncs() {
    let dir = scratch_dir("sfr");
    let logged = |tool: &str, sfr: &str| -> Vec<(String, u64)> {
        let log = dir.join(format!("{tool}.log"));
        let _ = std::fs::remove_file(dir.join("data"));
        let text = format!(
            "[w]\nfilename={}\nrw=write\nbs=4k\nsize=1m\nsync_file_range={sfr}\nwrite_iolog={}\n",
            dir.join("data").display(),
            log.display()
        );
        let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
        ios.into_iter().filter(|(_, a, _)| a != "write").map(|(_, a, offset)| (a, offset)).collect()
    };
    for sfr in ["write:32", "wait_before,write,wait_after:100", "wait_after"] {
        let (fio, ours) = (logged("fio", sfr), logged("elevator", sfr));
        assert!(!fio.is_empty() && fio.iter().all(|(a, _)| a == "sync_file_range"), "{fio:?}");
        assert_eq!(ours, fio, "{sfr}");
    }
    // What it does to a 64 MiB buffered writer on the built-in disk.
    let bw = |sfr: &str| {
        let job = temp_file(
            "sfr-bw.fio",
            &format!("[w]\nfilename=/tmp/sfr-data\nrw=write\nbs=4k\nsize=64m\n{sfr}\n"),
        );
        json(&["run", job.to_str().unwrap()])["jobs"][0]["write"]["bw"].as_f64().unwrap()
    };
    let (free, synced) = (bw(""), bw("sync_file_range=write,wait_after:32"));
    assert!(free > 500_000.0, "{free} KiB/s into the page cache");
    assert!((50_000.0..250_000.0).contains(&synced), "{synced} KiB/s at the disk's pace");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `verify=`: a job that writes reads its data back when its writes are done, as real fio
/// (installed by setup.sh) does: every block, in the order written for a random job with its
/// random map, by offset with rewrites counted once otherwise; reported as reads with their
/// own runtime.
#[test]
fn verify_reads_back_what_was_written_as_real_fio_does() {
    let dir = scratch_dir("verify");
    // (offsets written, offsets read) in each tool's write_iolog.
    let logged = |tool: &str, extra: &str| -> (Vec<u64>, Vec<u64>) {
        let log = dir.join(format!("{tool}.log"));
        let _ = std::fs::remove_file(dir.join("data"));
        let text = format!(
            "[v]\nfilename={}\nsize=256k\nbs=4k\nverify=crc32c\n{extra}\nwrite_iolog={}\n",
            dir.join("data").display(),
            log.display()
        );
        let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
        let of = |action: &str| -> Vec<u64> {
            ios.iter().filter(|(_, a, _)| a == action).map(|&(_, _, offset)| offset).collect()
        };
        (of("write"), of("read"))
    };
    for tool in ["fio", "elevator"] {
        // A random job with its map writes each block once and reads them back in order.
        let (w, r) = logged(tool, "rw=randwrite");
        assert_eq!(w.len(), 64, "{tool}");
        assert_eq!(r, w, "{tool}: read back in the order written");
        // Without the map, by offset, each rewritten block once.
        let (w, r) = logged(tool, "rw=randwrite\nnorandommap=1");
        let mut distinct = w.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(r, distinct, "{tool}: read back by offset");
        assert!(distinct.len() < 64, "{tool}: some blocks drawn twice");
        // do_verify=0: no read-back.
        let (w, r) = logged(tool, "rw=write\ndo_verify=0");
        assert_eq!((w.len(), r.len()), (64, 0), "{tool}");
    }
    // Elevator reports the reads with the verify phase's runtime, the writes with theirs.
    let job = temp_file(
        "verify.fio",
        "[v]\nfilename=sda\ndirect=1\nrw=randwrite\nbs=4k\nsize=1m\nverify=md5\n",
    );
    let v = json(&["run", job.to_str().unwrap()]);
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["total_ios"], 256);
    assert_eq!(j["write"]["total_ios"], 256);
    let (rt, wt) =
        (j["read"]["runtime"].as_u64().unwrap(), j["write"]["runtime"].as_u64().unwrap());
    assert!(rt > 0 && wt > 0 && rt + wt <= j["job_runtime"].as_u64().unwrap() + 1, "{j}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// One I/O line of a fio version 3 iolog: µs since the start, action, offset.
type LoggedIo = (u64, String, u64);

/// Runs job file `job` under `tool` (real fio, installed by setup.sh, or elevator) with
/// output `format`. Real fio runs in the job's directory, so what it leaves behind (the files
/// it lays out, a verify job's state file) stays beside the job, not in the source tree.
fn run_under(tool: &str, job: &Path, format: &str) -> Output {
    match tool {
        "fio" => Command::new("fio")
            .current_dir(job.parent().expect("a job in a directory"))
            .arg(format!("--output-format={format}"))
            .arg(job)
            .output()
            .unwrap(),
        _ => elevator(&["run", job.to_str().unwrap(), "--output-format", format]),
    }
}

/// Writes job file `job` with `text` (whose `write_iolog=` is `log`, in a fresh directory),
/// runs it under `tool` and returns the log's text.
fn write_iolog_text(tool: &str, job: &Path, text: &str, log: &Path) -> String {
    std::fs::write(job, text).unwrap();
    let out = run_under(tool, job, "terse");
    assert!(out.status.success(), "{tool} {text}: {}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(log).unwrap()
}

/// The `write_iolog` I/O lines (five fields each) of job `[j]` on a new regular file with
/// `body`, run by `tool` in a fresh directory `NAME-TOOL`.
fn file_iolog(tool: &str, name: &str, body: &str) -> Vec<Vec<String>> {
    let dir = scratch_dir(&format!("{name}-{tool}"));
    let (job, log) = (dir.join("j.fio"), dir.join("j.log"));
    let text = format!(
        "[j]\nfilename={}\n{body}\nwrite_iolog={}\n",
        dir.join("data").display(),
        log.display()
    );
    let (_, lines) = logged_run(tool, &job, &text, &log, "terse");
    let _ = std::fs::remove_dir_all(&dir);
    lines
}

/// Job `[j]` with `body` on a new file, run by real fio and by elevator (scratch directory
/// `NAME-TOOL`): the same I/O lines (action, offset, length) in the same order.
fn assert_file_io_as_fio(name: &str, body: &str) {
    let actions = |tool: &str| -> Vec<String> {
        file_iolog(tool, name, body).iter().map(|f| f[2..].join(" ")).collect()
    };
    assert_eq!(actions("elevator"), actions("fio"), "{body}");
}

/// Each of `shapes` after the lines `common`, on one file, run by real fio and by elevator:
/// the same I/O ([`assert_file_io_as_fio`], named `{name}-{i}`).
fn assert_file_shapes_as_fio(name: &str, common: &str, shapes: &[&str]) {
    for (i, shape) in shapes.iter().enumerate() {
        assert_file_io_as_fio(&format!("{name}-{i}"), &format!("{common}{shape}"));
    }
}

/// Each of `shapes` over [`tree_iolog`]'s tree, run by real fio and by elevator: the same
/// log lines, opens and closes included.
fn assert_tree_log_as_fio(name: &str, shapes: &[&str]) {
    for (i, shape) in shapes.iter().enumerate() {
        let lines = |tool: &str| tree_actions(tool, &format!("{name}-{i}"), shape);
        assert_eq!(lines("elevator"), lines("fio"), "{shape}");
    }
}

/// What a run that must fail says on stderr; it fails the test if the run succeeded.
fn refusal(out: &Output) -> String {
    assert!(!out.status.success(), "it ran: {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// [`file_iolog`]'s job, every line of its log after the header (opens and closes too),
/// times and the file's directory taken out.
fn file_actions(tool: &str, name: &str, body: &str) -> Vec<String> {
    let dir = scratch_dir(&format!("{name}-{tool}"));
    let (job, log) = (dir.join("j.fio"), dir.join("j.log"));
    let text = format!(
        "[j]\nfilename={}\n{body}\nwrite_iolog={}\n",
        dir.join("data").display(),
        log.display()
    );
    let text = write_iolog_text(tool, &job, &text, &log);
    let _ = std::fs::remove_dir_all(&dir);
    let prefix = format!("{}/", dir.display());
    text.lines()
        .skip(1)
        .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest).replace(&prefix, ""))
        .collect()
}

/// The `write_iolog` text of job `[t]` over a tree of three 8 KiB files (4 KiB blocks) and
/// `shape`, run by `tool` in a fresh directory `NAME-TOOL` (fio reads up to the size of a
/// file already there), with the tree's directory taken out of the file names (`t.0.1`).
fn tree_iolog(tool: &str, name: &str, shape: &str) -> String {
    let dir = scratch_dir(&format!("{name}-{tool}"));
    let tree = dir.join("t");
    std::fs::create_dir_all(&tree).unwrap();
    let (job, log) = (dir.join("t.fio"), dir.join("t.log"));
    let text = format!(
        "[t]\ndirectory={}\nnrfiles=3\nfilesize=8k\nbs=4k\n{shape}\nwrite_iolog={}\n",
        tree.display(),
        log.display()
    );
    let log = write_iolog_text(tool, &job, &text, &log);
    let _ = std::fs::remove_dir_all(&dir);
    log.replace(&format!("{}/", tree.display()), "")
}

/// [`tree_iolog`]'s lines after its header, times taken out: what each names and does.
fn tree_actions(tool: &str, name: &str, shape: &str) -> Vec<String> {
    tree_iolog(tool, name, shape)
        .lines()
        .skip(1)
        .map(|l| l.split_once(' ').map_or(l, |(_, rest)| rest).to_string())
        .collect()
}

/// Writes job file `job` with `text` (whose `write_iolog=` is `log`), runs it under `tool`
/// with output `format`, and returns its output and the log's I/O lines, split into their
/// five fields.
fn logged_run(
    tool: &str,
    job: &Path,
    text: &str,
    log: &Path,
    format: &str,
) -> (Output, Vec<Vec<String>>) {
    let _ = std::fs::remove_file(log); // appended to, as fio does
    std::fs::write(job, text).unwrap();
    let out = run_under(tool, job, format);
    assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    let lines = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| l.split(' ').map(str::to_string).collect::<Vec<_>>())
        .filter(|f| f.len() == 5)
        .collect();
    (out, lines)
}

/// [`logged_run`]'s I/O lines as (µs, action, offset).
fn iolog_of(tool: &str, job: &Path, text: &str, log: &Path) -> Vec<LoggedIo> {
    let (_, lines) = logged_run(tool, job, text, log, "terse");
    lines.iter().map(|f| (f[0].parse().unwrap(), f[2].clone(), f[3].parse().unwrap())).collect()
}

/// [`logged_run`]'s reads alone, with the file each names (fio names a job's files; elevator
/// its device).
fn file_reads_of(tool: &str, job: &Path, text: &str, log: &Path) -> Vec<(String, u64)> {
    let (_, lines) = logged_run(tool, job, text, log, "terse");
    lines.iter().filter(|f| f[2] == "read").map(|f| (f[1].clone(), f[3].parse().unwrap())).collect()
}

/// The JSON runs of one job file by real fio (installed by setup.sh) and by elevator.
fn fio_and_elevator_json(job: &Path) -> [Output; 2] {
    [run_under("fio", job, "json"), run_under("elevator", job, "json")]
}

/// The `sync` statistics: real fio (installed by setup.sh) times every `fsync=`,
/// `fdatasync=` and `sync_file_range=` call and counts the fsyncs (`total_ios`, the fourth
/// `issued rwts`); `end_fsync`, `fsync_on_close` and the verify phase's sync are not
/// accounted. Elevator reports the same counts, and the text block when there are any.
#[test]
fn sync_statistics_count_what_real_fio_counts() {
    let dir = scratch_dir("sync-stats");
    for extra in [
        "fsync=32",
        "fdatasync=32",
        "sync_file_range=write:32",
        "end_fsync=1",
        "fsync_on_close=1",
        "verify=crc32c",
        "direct=1\nfsync=32\nnumjobs=2\ngroup_reporting",
    ] {
        let _ = std::fs::remove_file(dir.join("data"));
        let job = dir.join("s.fio");
        let text = format!(
            "[w]\nfilename={}\nrw=write\nbs=4k\nsize=1m\n{extra}\n",
            dir.join("data").display()
        );
        std::fs::write(&job, text).unwrap();
        let counts = |out: &Output| {
            assert!(out.status.success(), "{extra}: {}", String::from_utf8_lossy(&out.stderr));
            let v = fio_json_of(&out.stdout);
            let s = &v["jobs"][0]["sync"];
            (s["total_ios"].as_u64().unwrap(), s["lat_ns"]["N"].as_u64().unwrap())
        };
        let [fio, ours] = fio_and_elevator_json(&job);
        let (theirs, mine) = (counts(&fio), counts(&ours));
        assert_eq!(mine, theirs, "{extra}: (fsyncs, syncs timed)");
        let text =
            String::from_utf8_lossy(&elevator(&["run", job.to_str().unwrap()]).stdout).into_owned();
        assert_eq!(text.contains("fsync/fdatasync/sync_file_range:"), mine.1 > 0, "{extra}");
        let issued = text.split("issued rwts: total=").nth(1).and_then(|t| t.split(' ').next());
        assert_eq!(issued.and_then(|t| t.split(',').nth(3)), Some(&*mine.0.to_string()), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `unified_rw_reporting=`: `mixed` reports a job's directions summed as one `mixed`
/// direction (JSON `mixed` in place of read, write, trim and sync; a `mixed:` block; a MIXED
/// group line; one direction's terse fields), `both` adds it to the others, as real fio
/// (installed by setup.sh) does.
#[test]
fn unified_rw_reporting_sums_directions_as_real_fio_does() {
    let dir = scratch_dir("unified");
    let job = |mode: &str| {
        let path = dir.join(format!("{mode}.fio"));
        let text = format!(
            "[m]\nfilename={}\nrw=randrw\nbs=4k\nsize=1m\nunified_rw_reporting={mode}\n",
            dir.join("data").display()
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let terse_fields = |tool: &str, path: &Path| {
        let out = run_under(tool, path, "terse");
        String::from_utf8_lossy(&out.stdout).lines().next().unwrap().split(';').count()
    };
    for mode in ["none", "mixed", "both"] {
        let path = job(mode);
        let [fio, ours] = fio_and_elevator_json(&path);
        let keys = |out: &Output| -> Vec<String> {
            let v = fio_json_of(&out.stdout);
            let j = v["jobs"][0].as_object().unwrap().clone();
            let dirs = ["read", "write", "trim", "sync", "mixed"];
            j.keys().filter(|k| dirs.contains(&k.as_str())).cloned().collect()
        };
        assert_eq!(keys(&ours), keys(&fio), "{mode}");
        if mode != "none" {
            let v = fio_json_of(&ours.stdout);
            assert_eq!(v["jobs"][0]["mixed"]["total_ios"], 256, "{mode}: 1 MiB of 4 KiB I/Os");
            let text = String::from_utf8_lossy(&elevator(&["run", path.to_str().unwrap()]).stdout)
                .into_owned();
            assert!(text.contains("  mixed: IOPS=") && text.contains("  MIXED: bw="), "{text}");
        }
    }
    // mixed drops the writes' terse fields, both adds none: as many as fio drops and adds.
    let split = (terse_fields("fio", &job("none")), terse_fields("elevator", &job("none")));
    for mode in ["mixed", "both"] {
        let p = job(mode);
        let fio = split.0 as i64 - terse_fields("fio", &p) as i64;
        let ours = split.1 as i64 - terse_fields("elevator", &p) as i64;
        assert_eq!(ours, fio, "{mode}: terse fields left out");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `thinktime_iotime=`: a job thinks once it has issued I/O for that long (counted, as fio
/// 3.33 counts it, from its last think's start), or after `thinktime_blocks` if that is
/// given, whichever first. Real fio (installed by setup.sh) and elevator pause at the same
/// instants in their write_iolog.
#[test]
fn thinktime_iotime_pauses_where_real_fio_does() {
    let dir = scratch_dir("iotime");
    // (ms of each pause's start, its length in ms) from a tool's log.
    let pauses = |tool: &str, extra: &str| -> Vec<(u64, u64)> {
        let log = dir.join(format!("{tool}.log"));
        let text = format!(
            "[t]\nioengine=null\nfilename={}\nrw=randread\nbs=4k\nsize=64m\ntime_based\n\
             runtime=1\nrate_iops=1000\nthinktime=100ms\nthinktime_iotime=200ms\n{extra}\n\
             write_iolog={}\n",
            dir.join("x").display(),
            log.display()
        );
        let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
        let us: Vec<u64> =
            ios.iter().filter(|(_, a, _)| a == "read").map(|&(us, _, _)| us).collect();
        us.windows(2)
            .filter(|w| w[1] - w[0] >= 50_000)
            .map(|w| ((w[0] + 500) / 1000, (w[1] - w[0] + 500) / 1000))
            .collect()
    };
    // Each pause as (ms of I/O since the previous pause ended, its length), within 5 ms and
    // 5 %: real fio's clock runs late by a few ms on a busy machine (once 102 ms for a 100 ms
    // think and 206 ms of I/O for 200), and absolute starts would add that up.
    let spans = |p: &[(u64, u64)]| -> Vec<(u64, u64)> {
        let mut end = 0;
        p.iter()
            .map(|&(start, len)| {
                let span = (start.saturating_sub(end), len);
                end = start + len;
                span
            })
            .collect()
    };
    for extra in ["", "thinktime_blocks=50"] {
        let (fio, ours) = (pauses("fio", extra), pauses("elevator", extra));
        assert!(!fio.is_empty(), "{extra}");
        assert_eq!(ours.len(), fio.len(), "{extra}: {ours:?} against fio's {fio:?}");
        let near = |x: u64, y: u64| x.abs_diff(y) <= 5 + y / 20;
        for (a, b) in spans(&ours).iter().zip(&spans(&fio)) {
            assert!(near(a.0, b.0) && near(a.1, b.1), "{ours:?} against {fio:?}");
        }
    }
    // iotime alone: a 100 ms think every 300 ms (iotime plus the think), at 300 and 600 ms.
    assert_eq!(pauses("elevator", "").iter().map(|p| p.0).collect::<Vec<_>>(), [300, 600]);
    let _ = std::fs::remove_dir_all(&dir);
}

/// `file_service_type=` (with `:N`): which of a job's files each I/O goes to. Real fio
/// (installed by setup.sh) and elevator name the file in their write_iolog; both serve them
/// in the same order.
#[test]
fn file_service_type_serves_files_in_real_fio_s_order() {
    let dir = scratch_dir("fst");
    let (job, log) = (dir.join("fst.fio"), dir.join("fst.log"));
    let files = |tool: &str, fst: &str| -> String {
        let text = format!(
            "[t]\nioengine=null\ndirectory={}\nnrfiles=4\nfilesize=64k\nrw=read\nbs=4k\n\
             file_service_type={fst}\nwrite_iolog={}\n",
            dir.display(),
            log.display()
        );
        let reads = file_reads_of(tool, &job, &text, &log);
        reads.iter().map(|(name, _)| name.rsplit('.').next().unwrap()).collect()
    };
    for fst in ["roundrobin", "roundrobin:3", "sequential", "roundrobin:5"] {
        let (fio, ours) = (files("fio", fst), files("elevator", fst));
        assert_eq!(fio.len(), 64, "{fst}: {fio}");
        assert_eq!(ours, fio, "{fst}");
    }
    // Random: the same runs of N.
    let ours = files("elevator", "random:4");
    let runs: Vec<usize> = ours.as_bytes().chunk_by(|a, b| a == b).map(<[u8]>::len).collect();
    assert!(runs.iter().filter(|&&r| r % 4 != 0).count() <= 4, "{ours}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A file tree as large as its `size=` (fio's `size=4m nrfiles=16 filesize=256k`), or smaller
/// than a block group's metadata: elevator lays its metadata beside the files, past the
/// region if need be, and reads what real fio (installed by setup.sh) reads.
#[test]
fn file_trees_of_any_size_run_as_under_real_fio() {
    for (i, tree) in [
        "nrfiles=16\nfilesize=256k\nsize=4m",
        "nrfiles=100\nfilesize=4k\nsize=400k",
        // Without filesize=, each file is size / nrfiles (10 KiB: 8 KiB in 4 KiB blocks).
        "nrfiles=3\nsize=30k",
    ]
    .into_iter()
    .enumerate()
    {
        // A fresh directory each: fio reads up to the size of a file already there.
        let dir = scratch_dir(&format!("tree-{i}"));
        let job = dir.join("tree.fio");
        let d = dir.display();
        let text = format!(
            "[t]\ndirectory={d}\n{tree}\nrw=read\nbs=4k\n\
             [u]\nstonewall\ndirectory={d}\n{tree}\nrw=read\nbs=2k\n"
        );
        std::fs::write(&job, text).unwrap();
        let [fio, ours] = fio_and_elevator_json(&job);
        let read = |tool: &str, out: &Output| -> Vec<u64> {
            assert!(
                out.status.success(),
                "{tool} {tree}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v = fio_json_of(&out.stdout);
            v["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|j| j["read"]["io_bytes"].as_u64().unwrap())
                .collect()
        };
        assert_eq!(read("elevator", &ours), read("fio", &fio), "{tree}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// fio issues no block past a file's end (`fill_io_u`): a file too small for the block is done
/// without I/O, a smaller block of `bsrange=` is drawn where one fits, and a pass over a file
/// whose size is no multiple of the block ends before its tail (another pass only for
/// `io_size=` with a whole block left, `keep_running`). Opening a file reads its inode, which
/// is no I/O of the job's. Real fio (installed by setup.sh) and elevator move the same bytes
/// in the same number of I/Os (`bsrange=`'s sizes aside: not fio's generator).
#[test]
fn no_block_goes_past_a_file_s_end_as_under_real_fio() {
    for (i, (shape, same_count)) in [
        ("nrfiles=100\nfilesize=4k\nsize=400k\nrw=read\nbs=8k", true),
        ("nrfiles=100\nfilesize=4k\nsize=400k\nrw=randwrite\nbs=8k", true),
        ("nrfiles=100\nfilesize=4k\nsize=400k\nrw=write\nbs=4k", true),
        ("nrfiles=8\nfilesize=16k\nsize=128k\nrw=read\nbs=4k", true),
        ("filename=data\nsize=10k\nrw=read\nbs=4k", true),
        ("filename=data\nsize=10k\nrw=read\nbs=4k\nio_size=18k", true),
        ("filename=data\nsize=10k\nrw=read\nbs=4k\nio_size=20k", true),
        ("filename=data\nsize=10k\nrw=write\nbs=4k\nloops=2", true),
        ("filename=data\nsize=10k\nrw=read\nbsrange=1k-4k", false),
    ]
    .into_iter()
    .enumerate()
    {
        // A fresh directory each: fio reads up to the size of a file already there.
        let dir = scratch_dir(&format!("eof-{i}"));
        let job = dir.join("eof.fio");
        let files = if shape.contains("filename") {
            String::new()
        } else {
            format!("directory={}\n", dir.display())
        };
        std::fs::write(&job, format!("[t]\n{files}{shape}\n")).unwrap();
        let [fio, ours] = fio_and_elevator_json(&job);
        let moved = |tool: &str, out: &Output| -> (u64, u64) {
            assert!(
                out.status.success(),
                "{tool} {shape}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v = fio_json_of(&out.stdout);
            let j = &v["jobs"][0];
            let sum =
                |key: &str| ["read", "write"].iter().map(|d| j[d][key].as_u64().unwrap()).sum();
            (sum("io_bytes"), sum("total_ios"))
        };
        let (theirs, mine) = (moved("fio", &fio), moved("elevator", &ours));
        assert_eq!(mine.0, theirs.0, "{shape}: bytes");
        if same_count {
            assert_eq!(mine.1, theirs.1, "{shape}: I/Os");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// `write_iolog=`'s file actions: fio closes the file after a pass and opens it for the next
/// (`loops=`, `io_size=` past `size=`) and for the verify phase, which follows each pass of a
/// verifying job. Real fio (installed by setup.sh) and elevator log the same sequence of
/// actions.
#[test]
fn write_iolog_closes_and_reopens_the_file_as_real_fio_does() {
    for (i, shape) in [
        "rw=write\nsize=16k\nverify=crc32c",
        "rw=write\nsize=16k\nverify=crc32c\nverify_backlog=2",
        "rw=read\nsize=8k\nloops=2",
        "rw=read\nsize=10k\nio_size=20k",
        // fio verifies each pass before the next.
        "rw=write\nsize=16k\nverify=crc32c\nloops=2",
    ]
    .into_iter()
    .enumerate()
    {
        let actions = |tool: &str| -> String {
            // A fresh directory each: fio reads up to the size of a file already there.
            let dir = scratch_dir(&format!("reopen-{i}-{tool}"));
            let (job, log) = (dir.join("r.fio"), dir.join("r.log"));
            let text =
                format!("[r]\nfilename=data\nbs=4k\n{shape}\nwrite_iolog={}\n", log.display());
            let log = write_iolog_text(tool, &job, &text, &log);
            let _ = std::fs::remove_dir_all(&dir);
            log.lines()
                .skip(1)
                .map(|l| l.split(' ').nth(2).unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(actions("elevator"), actions("fio"), "{shape}");
    }
}

/// A job with a tree of files (`nrfiles=`) logs each file under fio's name for it
/// (`DIRECTORY/JOB.CLONE.N`), with offsets in that file: every file `add`ed at the start,
/// `open`ed when the job first goes to it, `close`d when the job finds it done (at once under
/// `file_service_type=sequential`, at its turn under `roundrobin`), between passes (`loops=`,
/// `io_size=` past the files) and at the end; a file too small for a block is opened and
/// closed without I/O. Real fio (installed by setup.sh) writes the same lines, times aside.
/// `loops=2` over a tree also moves the tree twice, as real fio does (it once read on until
/// the run's bounds).
#[test]
fn write_iolog_of_a_file_tree_names_each_file_as_real_fio_does() {
    for (i, shape) in [
        "rw=read",
        "rw=write\nfile_service_type=sequential",
        "rw=read\nloops=2",
        "rw=read\nio_size=40k",
        "rw=read\nfile_service_type=roundrobin:2\nfilesize=16k",
        "rw=read\nbs=8k\nfilesize=4k",
        "rw=read\nnrfiles=2\nfilesize=12k\nbs=8k",
    ]
    .into_iter()
    .enumerate()
    {
        let lines = |tool: &str| tree_actions(tool, &format!("tree-log-{i}"), shape);
        let fio = lines("fio");
        assert!(fio.iter().any(|l| l == "t.0.1 add"), "{shape}: {fio:?}");
        assert_eq!(lines("elevator"), fio, "{shape}");
    }
}

/// `openfiles=N` keeps at most N of a job's files open: the job goes on with those it has
/// open, and opens the next when one it found done closes (a done file with I/O in flight
/// stays open until it completes). Real fio (installed by setup.sh) logs the same opens,
/// reads and closes, times aside; and an async job whose turn falls on a file it cannot open
/// reaps a completion first, so `openfiles=1` over files it never finishes runs at depth 1
/// in both, where `openfiles=3` keeps its 8 in flight.
#[test]
fn openfiles_keeps_that_many_files_open_as_real_fio_does() {
    for (i, shape) in [
        "rw=read\nopenfiles=2",
        "rw=read\nopenfiles=1",
        "rw=read\nopenfiles=2\nfile_service_type=sequential",
        "rw=read\nopenfiles=2\nfile_service_type=roundrobin:2\nfilesize=16k",
        "rw=read\nopenfiles=2\nloops=2",
        "rw=read\nopenfiles=1\nnrfiles=2\nfilesize=12k\nbs=8k",
    ]
    .into_iter()
    .enumerate()
    {
        let lines = |tool: &str| tree_actions(tool, &format!("openfiles-{i}"), shape);
        assert_eq!(lines("elevator"), lines("fio"), "{shape}");
    }
    let dir = scratch_dir("openfiles-depth");
    for (open, depth_key, at_least) in [(1, "1", 99.0), (3, "8", 95.0)] {
        let tree = dir.join(format!("t{open}"));
        std::fs::create_dir_all(&tree).unwrap();
        let job = dir.join(format!("d{open}.fio"));
        std::fs::write(
            &job,
            format!(
                "[t]\ndirectory={}\nnrfiles=3\nfilesize=16m\nio_size=3m\nbs=4k\nrw=randread\n\
                 ioengine=libaio\niodepth=8\ndirect=1\nopenfiles={open}\n",
                tree.display()
            ),
        )
        .unwrap();
        for out in fio_and_elevator_json(&job) {
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let j = &fio_json_of(&out.stdout)["jobs"][0];
            let share = j["iodepth_level"][depth_key].as_f64().unwrap();
            assert!(share >= at_least, "openfiles={open}: depth {depth_key} {share}%: {j}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The syncs of `fsync=`, `fdatasync=` and `sync_file_range=` in `write_iolog` are real
/// fio's: `sync`, `datasync` or `sync_file_range`, each with the offset its reused io_u
/// carried last (the last I/O's, for a sync engine); none after the job's last write; at a
/// pass's end and again as the next begins (`loops=`); `end_fsync`'s and
/// `fsync_on_close`'s at the end of every pass, one for each file of a tree, in file order
/// (a file fio closed is opened for its sync and closed again). In a mixed job fio syncs
/// before every I/O once the writes are a multiple of N until the next write
/// (`io_issues % N == 0 && !last_was_sync`), so a read after the Nth write brings another
/// sync, in both tools (that rule is checked on each log).
#[test]
fn syncs_are_logged_and_repeated_as_real_fio_does() {
    assert_file_shapes_as_fio(
        "syncs",
        "size=16k\nbs=4k\nrw=write\n",
        &[
            "fsync=1",
            "fdatasync=1",
            "sync_file_range=write:1",
            "end_fsync=1",
            "fsync_on_close=1",
            "fsync=2\nloops=2",
            "fsync=3\nloops=2",
            "fdatasync=1\nloops=3",
        ],
    );
    // In a file tree fio chooses the file before it finds the I/O is a sync: the sync takes
    // that file's turn (and goes to a file whose data is all out, not yet found done).
    assert_tree_log_as_fio(
        "tree-syncs",
        &[
            "rw=write\nfsync=1",
            "rw=write\nfdatasync=2",
            "rw=write\ndirect=0\nfsync=1",
            "rw=write\nfsync=1\nopenfiles=1",
            "rw=write\nfsync=2\nfile_service_type=roundrobin:2\nfilesize=16k",
            "rw=write\nfdatasync=2\nloops=2",
            "rw=write\nend_fsync=1",
            "rw=write\ndirect=0\nfsync_on_close=1",
            "rw=write\nend_fsync=1\nfsync=2",
            "rw=write\ndirect=1\nend_fsync=1",
            // A sync and a write issued in one nanosecond: each completion frees its own
            // io_u (the write's, not the sync's, releases its file; this panicked once).
            "rw=write\nnrfiles=2\nfilesize=16k\nioengine=libaio\niodepth=8\ndirect=1\nfsync=1",
            "rw=write\nend_fsync=1\nloops=2",
            "rw=write\nend_fsync=1\nloops=2\ndirect=1",
            "rw=write\nfsync_on_close=1\nloops=2",
            "rw=write\nend_fsync=1\nloops=2\nioengine=libaio\niodepth=2",
        ],
    );
    for (n, rw) in [(1, "randrw"), (3, "randrw"), (2, "readwrite")] {
        for tool in ["fio", "elevator"] {
            let body = format!("size=64k\nbs=4k\nrw={rw}\nfsync={n}");
            let lines = file_iolog(tool, &format!("syncs-mixed-{n}-{tool}"), &body);
            let (mut writes, mut last_was_sync, mut syncs) = (0, false, 0);
            for f in &lines {
                match f[2].as_str() {
                    "sync" => {
                        assert!(writes > 0 && writes % n == 0 && !last_was_sync, "{tool} {body}");
                        syncs += 1;
                        last_was_sync = true;
                    }
                    "read" | "write" => {
                        // Due before this I/O: the one before it must have been a sync.
                        let due = writes > 0 && writes % n == 0;
                        assert!(!due || last_was_sync, "{tool} {body}: {lines:?}");
                        writes += usize::from(f[2] == "write");
                        last_was_sync = false;
                    }
                    _ => {}
                }
            }
            assert!(syncs > 0, "{tool} {body}: no sync");
        }
    }
}

/// A mixed job's reads and writes come in fio's order: fio keeps a direction until the I/Os
/// issued in it reach a bar set at each switch, and draws the rest from its own generator,
/// seeded from `randseed` and the job's thread number; each pass starts the draws again.
/// Sequential shapes log exactly real fio 3.33's lines (offsets kept per direction), on one
/// file and over a file tree; each of three `randrw` jobs in one file (thread numbers 1 to 3)
/// reads and writes in the same order as under fio.
#[test]
fn mixed_jobs_read_and_write_in_real_fios_order() {
    assert_file_shapes_as_fio(
        "rwmix",
        "size=256k\nbs=4k\n",
        &[
            "rw=readwrite",
            "rw=readwrite\nrwmixread=70",
            "rw=rw\nrwmixwrite=80",
            "rw=readwrite\nrandseed=12345",
            "rw=readwrite\nloops=3\nsize=128k",
            "rw=readwrite\nioengine=libaio\niodepth=4",
            "rw=readwrite\nrwmixread=10\nfsync=3",
            // io_size= past size=: fio's keep_running passes restart both directions at 0, seed
            // the generators again and sync first.
            "rw=rw\nio_size=600k\nfsync=7",
            "rw=randrw\nio_size=600k\nfsync=7",
            "rw=randrw\nio_size=1m\nrwmixread=30",
            "rw=rw\nio_size=600k\nioengine=libaio\niodepth=4\ndirect=1",
        ],
    );
    for mix in ["", "rwmixread=30"] {
        let directions = |tool: &str| -> Vec<Vec<String>> {
            let dir = scratch_dir(&format!("rwmix-jobs-{tool}"));
            let job = |name: &str| {
                format!(
                    "[{name}]\nfilename={}\nwrite_iolog={}\n",
                    dir.join(name).display(),
                    dir.join(format!("{name}.log")).display()
                )
            };
            let text = format!(
                "[global]\nsize=128k\nbs=4k\nrw=randrw\n{mix}\n{}{}{}",
                job("a"),
                job("b"),
                job("c")
            );
            let ran = |name: &str| dir.join(format!("{name}.log"));
            write_iolog_text(tool, &dir.join("j.fio"), &text, &ran("a"));
            let logs = ["a", "b", "c"].map(|name| {
                let log = std::fs::read_to_string(ran(name)).unwrap();
                log.lines()
                    .filter_map(|l| l.split_whitespace().nth(2))
                    .filter(|a| matches!(*a, "read" | "write"))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            });
            let _ = std::fs::remove_dir_all(&dir);
            logs.to_vec()
        };
        let fio = directions("fio");
        assert!(fio.iter().all(|d| d.len() == 32), "{fio:?}");
        assert_eq!(directions("elevator"), fio, "{mix}");
    }
    // In a file tree each file has a position per direction, a file is done when the
    // direction drawn at its turn has no room, each file tried takes a draw, and the pass
    // stops at size=.
    assert_tree_log_as_fio(
        "rwmix-tree",
        &[
            "rw=readwrite",
            "rw=readwrite\nfilesize=16k\nrwmixread=70",
            "rw=readwrite\nfilesize=16k\nloops=2",
            "rw=readwrite\nnrfiles=4\nfilesize=16k\nfile_service_type=sequential",
            "rw=readwrite\nfilesize=16k\ndirect=1\nioengine=libaio\niodepth=4",
            "rw=readwrite\nfilesize=16k\nfsync=2",
            "rw=readwrite\nfilesize=16k\nopenfiles=1",
            "rw=readwrite\nfilesize=16k\nfile_service_type=roundrobin:2",
            "rw=readwrite\nfilesize=16k\nrwmixread=90\nloops=2\ndirect=1",
        ],
    );
}

/// A random job over a file tree draws each file's blocks from that file's own random map,
/// as fio does: per file, every block once a pass in a random order, and the file is done
/// when they are all done (fio's draw at a full file is spent). The draws are fio's own
/// (`random_state`, `next_file_state`, `file_size_state`, seeded as fio seeds them), so the
/// logs are real fio 3.33's line for line, offsets included.
#[test]
fn random_jobs_over_a_tree_take_each_files_blocks_from_its_own_map() {
    assert_tree_log_as_fio(
        "rand-tree",
        &[
            "rw=randread\nfilesize=32k\nfile_service_type=roundrobin",
            "rw=randwrite\nfilesize=32k\nfile_service_type=sequential\nloops=2",
            "rw=randread\nfilesize=32k\nfile_service_type=roundrobin:3\nloops=2",
            "rw=randread\nfilesize=32k\nfile_service_type=random",
            "rw=randrw\nrwmixread=70\nfilesize=32k\nfile_service_type=random",
            "rw=randread\nfilesize=64k\nbs=8k\nfile_service_type=roundrobin:2",
            "rw=randread\nfilesize=32k\nioengine=libaio\niodepth=4\ndirect=1",
            "rw=randwrite\nfilesize=32k\nfsync=3",
            "rw=randread\nfilesize=32k\nrandrepeat=0\nrandseed=5",
            "rw=randread\nfilesize=32k\nnorandommap",
            // Sizes drawn from a range are fio's too.
            "rw=randread\nfilesize=4k-32k\nnrfiles=4",
            "rw=read\nfilesize=4k-32k\nnrfiles=6\nfile_service_type=random",
        ],
    );
}

/// A random job's offsets on one file are fio's own draws (`random_state`, seeded at
/// `FIO_RANDSEED` times the thread number under `randrepeat`, else from `randseed`; its
/// random map, reset and drawn again as fio does): the logs are real fio 3.33's line for
/// line, across passes (`loops=`, `io_size=` past `size=`) and with `norandommap`.
#[test]
fn random_offsets_on_one_file_are_fios_own() {
    assert_file_shapes_as_fio(
        "rand-file",
        "size=256k\nbs=4k\n",
        &[
            "rw=randread",
            "rw=randwrite\nfsync=5",
            "rw=randrw\nrwmixread=30",
            "rw=randread\nloops=2",
            "rw=randread\nio_size=1m",
            "rw=randread\nbs=16k\nrandseed=9",
            "rw=randread\nrandrepeat=0\nrandseed=5",
            "rw=randread\nnorandommap",
            "rw=randread\nioengine=libaio\niodepth=8\ndirect=1",
            "rw=randread\noffset=64k\nsize=128k",
            // randseed= overrides randrepeat from the second pass on (fio's fixup_options):
            // the offsets and directions go on drawing instead of starting over.
            "rw=randread\nrandseed=42\nloops=2",
            "rw=randrw\nrandseed=42\nloops=3",
            "rw=readwrite\nrandseed=1234\nloops=2",
            // io_size= past size= without a map: an async engine's do_io stops at size= and
            // keep_running starts a pass; a sync engine's, or a job that writes, runs on.
            "rw=randread\nnorandommap\nio_size=384k\nioengine=libaio\niodepth=4",
            "rw=randread\nnorandommap\nio_size=384k",
            "rw=randrw\nnorandommap\nio_size=384k\nioengine=libaio\niodepth=4",
            // io_size= past size= with less than a block left when the map is full: fio's
            // keep_running starts no other pass (300k = 18 whole 16k blocks and 12k).
            "rw=randread\nsize=96k\nbs=16k\nio_size=300k",
            "rw=randread\nsize=96k\nbs=16k\nio_size=300k\nioengine=libaio\niodepth=4",
        ],
    );
}

/// `rw=randread:N` as fio 3.33 reads N, with atoi: `8k` is 8 I/Os per random offset, `0`
/// and `x` are 0 (the job never draws one and reads on from the file's start), `12abc` is 12
/// and `-2` wraps to 2^32 - 2. elevator took `8k` as 8192 and refused 0; now each logs
/// line for line what real fio logs.
#[test]
fn random_io_counts_are_read_as_fio_reads_them() {
    assert_file_shapes_as_fio(
        "rand-nr",
        "size=200k\nbs=4k\n",
        &[
            "rw=randread:8k",
            "rw=randread:0",
            "rw=randread:x",
            "rw=randread:12abc",
            "rw=randrw:-2",
            "rw=randread:2m\nioengine=libaio\niodepth=4",
        ],
    );
}

/// `fsync=` and `fdatasync=` together: fio 3.33's get_rw_ddir asks the fsync cadence first,
/// then the fdatasync one, each against the writes issued so far, and a sync due stays due
/// before each I/O until the next write unless the last I/O was a sync. Real fio and
/// elevator log the same calls.
#[test]
fn fsync_and_fdatasync_together_fall_where_real_fio_puts_them() {
    assert_file_shapes_as_fio(
        "fsync-fdatasync",
        "size=64k\nbs=4k\n",
        &[
            "rw=randwrite\nfsync=7\nfdatasync=2\nnorandommap",
            "rw=write\nfsync=3\nfdatasync=2\nloops=2",
            "rw=randwrite\nsize=200k\nfsync=3\nfdatasync=2\nloops=3\nio_size=100k",
            "rw=randrw\nfsync=4\nfdatasync=3",
        ],
    );
}

/// The job's limit (`size=` over all passes of a mixed job) ended a pass with `loops=` left:
/// fio runs one more pass, whose do_io issues nothing but still syncs the file for
/// end_fsync (or fsync_on_close), opening it for that (fio_file_fsync) after clear_io_state
/// closed it; a pass without I/O then ends the job. Each shape logs exactly real fio 3.33's
/// lines (elevator had stopped after the pass the limit ended).
#[test]
fn a_pass_with_nothing_left_to_do_still_syncs_as_real_fio_does() {
    assert_file_shapes_as_fio(
        "empty-pass",
        "size=32k\nbs=4k\n",
        &[
            "rw=rw\nloops=3\nend_fsync=1",
            "rw=rw\nloops=5\nend_fsync=1",
            "rw=rw\nloops=3\nfsync_on_close=1",
            "rw=rw\nloops=3\nend_fsync=1\ndirect=1",
            "rw=randrw\nloops=3\nend_fsync=1\nioengine=sync",
        ],
    );
}

/// `io_size=` past `size=` with `end_fsync` (or `fsync_on_close`) on a job that writes:
/// fio's keep_running runs a pass per file's worth and do_io syncs at the end of each (a sync
/// engine's file, found done and closed, opened for the sync and closed again); the last
/// pass, ended by its offsets with less than a block of io_size= left, syncs a closed file
/// too. elevator wrapped in one pass and synced once, and its last sync after running out of
/// offsets had no open and close (each shape failed before); now each logs exactly real fio
/// 3.33's lines.
#[test]
fn end_fsync_closes_every_io_size_pass_as_real_fio_does() {
    assert_file_shapes_as_fio(
        "io-size-sync",
        "size=32k\nbs=4k\n",
        &[
            "rw=write\nio_size=40k\nend_fsync=1",
            "rw=write\nio_size=40k\nend_fsync=1\nioengine=libaio\niodepth=4",
            "rw=write\nio_size=100k\nbs=8k\nfsync_on_close=1",
            "rw=randwrite\nio_size=100k\nbs=8k\nend_fsync=1",
            "rw=write\nio_size=40k\nloops=3\nend_fsync=1",
            "rw=write\nio_size=100k\nbs=8k\noffset=8k\nend_fsync=1\ndirect=1",
            // A random job without a map runs to io_size= in one pass: one sync at its end.
            "rw=randwrite\nio_size=100k\nend_fsync=1\nnorandommap\nioengine=libaio\niodepth=4",
        ],
    );
}

/// A percentage `offset=` of a file the job's own setup made: fio's first pass finds no file
/// (0 % of nothing) and lays it out, and each later pass finds its start again from the
/// file's length (10 % of 200k is 20k), reaching past the file's end, where fio's fill_io_u
/// ends the pass (a random pass at its first offset past the end). elevator started every
/// pass at 0 (each shape failed before); now each logs exactly real fio 3.33's lines.
#[test]
fn a_percentage_offset_moves_after_the_first_pass_as_in_real_fio() {
    assert_file_shapes_as_fio(
        "pct-offset",
        "size=200k\nbs=4k\noffset=10%\n",
        &[
            "rw=read\nloops=2",
            "rw=randread\nloops=2",
            "rw=write\nloops=3",
            "rw=read\nio_size=500k",
            "rw=randread\nio_size=500k\nioengine=libaio\niodepth=4",
            // Without a map a random job that writes runs to io_size= in one pass, whose
            // start never moves; with loops= each pass still starts anew.
            "rw=randrw\nio_size=500k\nnorandommap\nioengine=libaio\niodepth=2\ndirect=1",
            "rw=randread\nloops=2\nnorandommap\nioengine=libaio\niodepth=4",
        ],
    );
}

/// The same over a file tree: `io_size=` past the files' total with `end_fsync` or
/// `fsync_on_close` runs a pass per round of the files, each ending with every file synced
/// (a sync engine's, closed as done, opened for it and closed). elevator rewound the tree
/// within one pass and synced only at the end (the first shape logged 65 lines against real
/// fio's 107 in a two-file tree); now each logs exactly real fio 3.33's lines.
#[test]
fn end_fsync_closes_every_io_size_pass_over_a_tree_as_real_fio_does() {
    assert_tree_log_as_fio(
        "tree-io-size-sync",
        &[
            "rw=write\nio_size=100k\nfsync_on_close=1",
            "rw=write\nio_size=60k\nend_fsync=1",
            "rw=randwrite\nio_size=60k\nend_fsync=1",
            "rw=write\nio_size=60k\nend_fsync=1\nioengine=libaio\niodepth=4",
            "rw=write\nio_size=60k\nend_fsync=1\ndirect=1",
            "rw=write\nbs=8k\nio_size=100k\nfsync=7\nfsync_on_close=1\nfile_service_type=sequential",
        ],
    );
}

/// `number_ios=` does not stop a time-based job: fio 3.33's do_io goes on while
/// `time_based`, whatever `io_bytes_exceeded` says, and `keep_running` asks `time_based`
/// first. Real fio and elevator both go past 40 I/Os in a second, and elevator's first
/// lines are fio's.
#[test]
fn number_ios_does_not_stop_a_time_based_job() {
    let body = "rw=read\nbs=4k\nsize=64k\ntime_based\nruntime=1\nnumber_ios=40";
    let (fio, elevator) =
        (file_actions("fio", "nios-tb", body), file_actions("elevator", "nios-tb", body));
    let reads = |l: &[String]| l.iter().filter(|a| a.contains(" read ")).count();
    assert!(
        reads(&fio) > 40 && reads(&elevator) > 40,
        "fio {}, elevator {}",
        reads(&fio),
        reads(&elevator)
    );
    let n = fio.len().min(elevator.len()) - 2;
    assert_eq!(elevator[..n], fio[..n]);
}

/// `loops=` bounds `io_size=` (or `number_ios=`) over all passes together, as fio's
/// io_bytes_exceeded does (the limit times loops): a pass goes on past `io_size=` to where
/// its offsets run out, the next does the rest, and a pass left nothing to do ends the job;
/// `io_size=` past the passes asks for more. A sync engine's pass is not cut at `size=` (fio
/// counts only queued I/O there), an async one's is. A sync due since the last write comes
/// again as the next pass begins, also after `verify=`'s read-back. In a file tree the next
/// pass takes up the round robin where the last left it (fio never resets `td->next_file`),
/// and a pass with another after it closes its files in the round robin's order, as fio asks
/// for a file once more and finds each done; so does the last pass while the job has issued
/// less than `io_size=` times `loops=`.
/// Each shape logs exactly real fio 3.33's lines.
#[test]
fn loops_bound_io_size_over_all_passes_as_real_fio_does() {
    assert_file_shapes_as_fio(
        "loops",
        "size=16k\nbs=4k\nrw=write\n",
        &[
            "io_size=8k\nloops=2",
            "io_size=12k\nloops=2",
            "io_size=4k\nloops=3",
            "number_ios=3\nloops=2",
            "io_size=40k\nloops=2",
            "io_size=12k\nloops=2\nfsync=4",
            "io_size=12k\nloops=2\nfsync=4\nioengine=libaio",
            "fsync=4\nloops=2\nverify=crc32c",
        ],
    );
    assert_tree_log_as_fio(
        "tree-loops",
        &[
            "rw=write\nio_size=12k\nloops=2",
            "rw=write\nio_size=8k\nloops=2\nfsync=2",
            "rw=read\nnumber_ios=4\nloops=2",
            "rw=write\nio_size=36k\nloops=2",
            "rw=write\nio_size=12k\nloops=2\nioengine=libaio\niodepth=2",
            // A pass that ends mid-round: the next goes on with the round robin's next file.
            "rw=write\nloops=3\nfsync=2",
            "rw=write\nfsync=2\nloops=3\nioengine=libaio\niodepth=2",
            // A pass with another after it asks for a file once more: the round robin closes
            // the files it finds done in its order.
            "rw=write\nnrfiles=4\nloops=3\nfsync=3",
            "rw=write\nnrfiles=4\nloops=3\nfsync=3\ndirect=1",
            "rw=write\nnrfiles=4\nloops=2\nfdatasync=3\nend_fsync=1",
            // The last pass ends below io_size= times loops: fio asks for I/O once more, finds
            // the sync due, then each file done in turn.
            "rw=write\nio_size=40k\nloops=2\nfsync=3",
            "rw=write\nio_size=40k\nloops=2\nfsync=3\ndirect=1",
            "rw=readwrite\nio_size=40k\nloops=2\nfsync=3",
            // file_service_type=random draws from fio's own generator (next_file_state),
            // seeded again each pass.
            "rw=read\nfile_service_type=random",
            "rw=write\nfile_service_type=random\nfsync=2\nloops=2",
            "rw=readwrite\nfile_service_type=random:2\nnrfiles=5\nrandseed=42",
            "rw=read\nfile_service_type=random\nopenfiles=1",
        ],
    );
    // A random job's pass ends where its random map is full, and the next opens the file
    // again (reads, distinct blocks and opens compared).
    for (i, body) in ["io_size=6m", "io_size=2m\nloops=3", "io_size=2m\nloops=3\nioengine=libaio"]
        .into_iter()
        .enumerate()
    {
        let counts = |tool: &str| {
            let body = format!("rw=randread\ndirect=1\nbs=4k\nsize=4m\n{body}");
            let lines = file_actions(tool, &format!("loops-rand-{i}"), &body);
            let reads: Vec<&String> = lines.iter().filter(|l| l.contains(" read ")).collect();
            let distinct: std::collections::BTreeSet<&str> =
                reads.iter().filter_map(|l| l.split(' ').nth(2)).collect();
            let opens = lines.iter().filter(|l| l.ends_with(" open")).count();
            (reads.len(), distinct.len(), opens)
        };
        assert_eq!(counts("elevator"), counts("fio"), "{body}");
    }
}

/// `fill_device=1` (`fill_fs=1`) without `size=`: the job's new file grows until its file
/// system is full, and the job ends without error there (fio's ENOSPC); exactly that much
/// more than fits would not. Two jobs that fill one file system share it. Without the option
/// the job needs size=.
#[test]
fn fill_device_writes_until_the_file_system_is_full() {
    let topo = temp_file(
        "fill.toml",
        "[[device]]\nname = \"sdb\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n\n\
         [[partition]]\nname = \"sdb1\"\ndevice = \"sdb\"\nstart = \"1MiB\"\nsize = \"64MiB\"\n\n\
         [[filesystem]]\non = \"sdb1\"\njournal = \"4MiB\"\n",
    );
    let topo = topo.to_str().unwrap();
    let run = |name: &str, extra: &str| {
        let job =
            temp_file(name, &format!("[w]\ndirectory=sdb1\nrw=write\nbs=64k\ndirect=1\n{extra}\n"));
        elevator(&["run", job.to_str().unwrap(), "--topology", topo, "--output-format", "json"])
    };
    let written = |out: &Output| -> u64 {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v = fio_json_of(&out.stdout);
        assert_eq!(v["jobs"][0]["error"], 0);
        v["jobs"].as_array().unwrap().iter().map(|j| j["write"]["io_bytes"].as_u64().unwrap()).sum()
    };
    let full = written(&run("fill.fio", "fill_device=1"));
    assert!((48 << 20..64 << 20).contains(&full), "{full}");
    assert_eq!(written(&run("fill-size.fio", &format!("size={full}"))), full);
    assert!(!run("fill-over.fio", &format!("size={}", full + 65536)).status.success());
    let two = run("fill-two.fio", "fill_fs=1\nnumjobs=2");
    assert_eq!(written(&two), full, "two jobs share the file system");
    assert!(!run("fill-none.fio", "").status.success(), "without size= nor fill_device");
}

/// fio's JSON `elapsed` is the seconds since the run began when the stats are written, the
/// same for every job: a job of 1 s and a stonewalled one of 2 s both report the run's 3 s
/// or more, in real fio (installed by setup.sh) and elevator.
#[test]
fn json_elapsed_is_the_run_s_time_for_every_job_as_in_real_fio() {
    let dir = scratch_dir("elapsed");
    let job = dir.join("e.fio");
    let text = format!(
        "[global]\nfilename={}\nsize=1m\nbs=4k\nrw=read\ntime_based\n[a]\nruntime=1\n[b]\nstonewall\nruntime=2\n",
        dir.join("data").display()
    );
    std::fs::write(&job, text).unwrap();
    for (tool, out) in ["fio", "elevator"].into_iter().zip(fio_and_elevator_json(&job)) {
        let v = fio_json_of(&out.stdout);
        let elapsed: Vec<u64> = (0..2).map(|j| v["jobs"][j]["elapsed"].as_u64().unwrap()).collect();
        assert!(elapsed[0] == elapsed[1] && elapsed[0] >= 3, "{tool}: {elapsed:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A log of several files (real fio's log of an `nrfiles` job) replays where
/// `replay_redirect=` sends every file's I/O, at its recorded offsets, as under real fio
/// (installed by setup.sh); without it, elevator names the line of the second file.
#[test]
fn a_log_of_several_files_replays_under_replay_redirect_as_real_fio_does() {
    let dir = scratch_dir("multi-log");
    std::fs::create_dir_all(dir.join("t")).unwrap();
    let log = dir.join("tree.log");
    let recording = dir.join("record.fio");
    let text = format!(
        "[t]\ndirectory={}\nnrfiles=3\nfilesize=8k\nbs=4k\nrw=read\nwrite_iolog={}\n",
        dir.join("t").display(),
        log.display()
    );
    std::fs::write(&recording, text).unwrap();
    assert!(run_under("fio", &recording, "terse").status.success());
    // Real fio replays onto a file of its own; elevator onto the built-in disk.
    std::fs::write(dir.join("target.img"), vec![0u8; 1 << 20]).unwrap();
    let replay = |tool: &str, redirect: Option<&str>| -> Output {
        let job = dir.join(format!("replay-{tool}.fio"));
        let redirect = redirect.map(|r| format!("replay_redirect={r}\n")).unwrap_or_default();
        std::fs::write(&job, format!("[r]\nread_iolog={}\n{redirect}", log.display())).unwrap();
        run_under(tool, &job, "json")
    };
    let moved = |tool: &str, out: &Output| -> (u64, u64) {
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
        let read = &fio_json_of(&out.stdout)["jobs"][0]["read"];
        (read["io_bytes"].as_u64().unwrap(), read["total_ios"].as_u64().unwrap())
    };
    let fio = moved("fio", &replay("fio", Some("target.img")));
    assert_eq!(fio, (24576, 6));
    assert_eq!(moved("elevator", &replay("elevator", Some("sda"))), fio);
    let refused = replay("elevator", None);
    let e = refusal(&refused);
    assert!(e.contains("tree.log:3:") && e.contains("replay_redirect="), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `verify_backlog=` (and `verify_backlog_batch=`): a writing job verifies while it writes,
/// reading back the oldest (or lowest) pieces once the pieces kept reach a multiple of the
/// backlog, the rest after its writes. Real fio (installed by setup.sh) and elevator log the
/// same reads and writes at the same offsets (the random job's offsets aside: not fio's
/// generator), and neither logs the verify phase's sync.
#[test]
fn verify_backlog_reads_back_while_writing_as_real_fio_does() {
    let dir = scratch_dir("vbacklog");
    for (rw, extra) in [
        ("write", "verify_backlog=8"),
        ("write", "verify_backlog=8\nverify_backlog_batch=4"),
        ("write", "verify_backlog=5\nverify_backlog_batch=7"),
        ("randwrite", "verify_backlog=8\nverify_backlog_batch=4"),
    ] {
        let run = |tool: &str| -> Vec<(String, u64)> {
            let _ = std::fs::remove_file(dir.join("data"));
            let log = dir.join(format!("{tool}.log"));
            let text = format!(
                "[v]\nfilename={}\nrw={rw}\nbs=4k\nsize=128k\nverify=crc32c\n{extra}\n\
                 write_iolog={}\n",
                dir.join("data").display(),
                log.display()
            );
            let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
            ios.into_iter().map(|(_, action, offset)| (action, offset)).collect()
        };
        let (fio, ours) = (run("fio"), run("elevator"));
        assert_eq!(fio.len(), 64, "{rw} {extra}: {fio:?}");
        if rw == "write" {
            assert_eq!(ours, fio, "{rw} {extra}");
        } else {
            let actions = |ios: &[(String, u64)]| -> Vec<String> {
                ios.iter().map(|(a, _)| a.clone()).collect()
            };
            assert_eq!(actions(&ours), actions(&fio), "{rw} {extra}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A percentage `offset=` (or `offset_increment=`) is rounded up to `offset_align=`, else to
/// the job's smallest block (fio's `get_start_offset`, in its integer arithmetic). Real fio
/// (installed by setup.sh) reads a file that already has the job's size, so both take the
/// percentage of the same length; both start at the same offset.
#[test]
fn percentage_offsets_align_as_real_fio_aligns_them() {
    let dir = scratch_dir("oalign");
    let data = dir.join("data");
    for extra in [
        "offset=33%",
        "offset=33%\noffset_align=64k",
        "offset=10%\noffset_increment=7%",
        "offset=4k\noffset_increment=13%\nbs=8k",
        "offset=1m",
    ] {
        let first = |tool: &str| -> u64 {
            std::fs::write(&data, vec![0u8; 10 << 20]).unwrap();
            let log = dir.join(format!("{tool}.log"));
            let text = format!(
                "[o]\nfilename={}\nsize=10m\nrw=read\nbs=4k\nio_size=8k\n{extra}\n\
                 write_iolog={}\n",
                data.display(),
                log.display()
            );
            let ios = iolog_of(tool, &dir.join(format!("{tool}.fio")), &text, &log);
            ios.iter().filter(|(_, a, _)| a == "read").map(|&(_, _, o)| o).min().unwrap()
        };
        assert_eq!(first("elevator"), first("fio"), "{extra}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Clones sharing one regular file that does not exist yet: fio sets them up one after
/// another, each finding the file as the ones before left it (a percentage offset counts
/// from that length, 0 for the first) and extending it to its own region; it numbers the
/// clones after the first in reverse. Real fio (installed by setup.sh) and elevator do the
/// same I/O (their logs, all clones in one, sorted: the clones interleave in time).
#[test]
fn clones_sharing_a_new_file_grow_it_as_real_fio_does() {
    for (i, extra) in [
        "offset=10%",
        "offset=10%\nnumjobs=2",
        "offset_increment=64k\nnumjobs=2",
        "offset=4k\noffset_increment=10%\nnumjobs=3",
        "rw=randread\noffset_increment=64k\nnumjobs=3",
        "rw=write\nsize=32k\noffset_increment=40k\nnumjobs=4\nioengine=libaio\niodepth=4",
    ]
    .into_iter()
    .enumerate()
    {
        let body = format!("rw=read\nsize=64k\nbs=4k\n{extra}");
        let logged = |tool: &str| -> Vec<String> {
            let lines = file_iolog(tool, &format!("oshared-{i}"), &body);
            let mut ios: Vec<String> = lines.iter().map(|f| f[2..].join(" ")).collect();
            ios.sort();
            ios
        };
        let fio = logged("fio");
        assert!(!fio.is_empty(), "{extra}");
        assert_eq!(logged("elevator"), fio, "{extra}");
    }
}

/// `verify_only=1`: the job goes through its writes without I/O (fio's `do_dry_run`) and
/// reads back what they would have written. Real fio (installed by setup.sh) and elevator
/// log the same reads and no writes, and report the writes as done in no time.
#[test]
fn verify_only_reads_back_without_writing_as_real_fio_does() {
    let dir = scratch_dir("vonly");
    let data = dir.join("data");
    for rw in ["write", "randwrite"] {
        let run = |tool: &str| -> (Vec<(String, u64)>, Value) {
            // Real fio checks what it reads: the same job writes it first, unverified.
            let _ = std::fs::remove_file(&data);
            let write = dir.join("write.fio");
            std::fs::write(
                &write,
                format!(
                    "[v]\nfilename={}\nrw={rw}\nbs=4k\nsize=64k\nverify=crc32c\ndo_verify=0\n",
                    data.display()
                ),
            )
            .unwrap();
            let out = run_under("fio", &write, "terse");
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let log = dir.join(format!("{tool}.log"));
            let job = dir.join(format!("{tool}.fio"));
            let text = format!(
                "[v]\nfilename={}\nrw={rw}\nbs=4k\nsize=64k\nverify=crc32c\nverify_only=1\n\
                 write_iolog={}\n",
                data.display(),
                log.display()
            );
            let (out, lines) = logged_run(tool, &job, &text, &log, "json");
            let v = fio_json_of(&out.stdout)["jobs"][0].clone();
            (lines.iter().map(|f| (f[2].clone(), f[3].parse().unwrap())).collect(), v)
        };
        let (fio, ours) = (run("fio"), run("elevator"));
        assert_eq!(fio.0.len(), 16, "{rw}: {:?}", fio.0);
        assert!(fio.0.iter().all(|(a, _)| a == "read"), "{rw}: {:?}", fio.0);
        if rw == "write" {
            assert_eq!(ours.0, fio.0, "{rw}");
        } else {
            assert_eq!(ours.0.len(), 16, "{rw}: {:?}", ours.0);
            assert!(ours.0.iter().all(|(a, _)| a == "read"), "{rw}: {:?}", ours.0);
        }
        for (tool, v) in [("fio", &fio.1), ("elevator", &ours.1)] {
            let w = &v["write"];
            assert_eq!(
                (w["io_bytes"].as_u64(), w["total_ios"].as_u64()),
                (Some(65536), Some(16)),
                "{tool} {rw}"
            );
            assert_eq!(w["runtime"], 0, "{tool} {rw}: the dry run takes no time");
            assert_eq!(v["read"]["io_bytes"], 65536, "{tool} {rw}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `file_service_type=zipf|pareto|gauss`: files drawn from fio's generators with the hash
/// off (the hottest ranks side by side, 1024 to a file), a finished file read again from its
/// start. Real fio (installed by setup.sh) and elevator give the hottest file, and the five
/// hottest, the same share of 5120 reads over 50 files (within 8 points: not fio's random
/// numbers); uniform `random` gives each about 2 %.
#[test]
fn file_distributions_skew_as_real_fio_s() {
    let dir = scratch_dir("fdist");
    let (job, log) = (dir.join("f.fio"), dir.join("f.log"));
    let shares = |tool: &str, fst: &str| -> (f64, f64) {
        let text = format!(
            "[z]\nioengine=null\ndirectory={}\nnrfiles=50\nfilesize=4m\nrw=read\nbs=4k\n\
             io_size=20m\nfile_service_type={fst}\nwrite_iolog={}\n",
            dir.display(),
            log.display()
        );
        let reads = file_reads_of(tool, &job, &text, &log);
        let mut count = std::collections::BTreeMap::<String, u64>::new();
        for (name, _) in &reads {
            *count.entry(name.clone()).or_default() += 1;
        }
        let mut top: Vec<u64> = count.into_values().collect();
        top.sort_unstable_by(|a, b| b.cmp(a));
        let n = reads.len() as f64;
        (top[0] as f64 / n, top.iter().take(5).sum::<u64>() as f64 / n)
    };
    for fst in ["zipf:1.2", "pareto:0.2", "gauss:10", "random"] {
        let (fio, ours) = (shares("fio", fst), shares("elevator", fst));
        assert!(
            (fio.0 - ours.0).abs() < 0.08 && (fio.1 - ours.1).abs() < 0.08,
            "{fst}: hottest and five hottest files' shares {ours:?} against fio's {fio:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `steadystate=`: once a second the job's (or group's) IOPS and bandwidth go into a ring of
/// `ss_dur` samples, and the job stops when the ring meets the criterion. Real fio
/// (installed by setup.sh) and elevator stop at the same tick (fio's a little before the
/// whole second: its ticks start before the job), attain alike, report the same
/// `steadystate` object, and both refuse a reporting group whose jobs disagree.
#[test]
fn steadystate_stops_jobs_where_real_fio_does() {
    let dir = scratch_dir("ss");
    let job = dir.join("ss.fio");
    // (options, attained, runtime in ms, IOPS mean)
    for (extra, attained, runtime_ms, iops) in [
        ("ss=iops:2%\nss_dur=2", 1, 2000, 1000),
        ("ss=bw_slope:1%\nss_dur=2\nss_ramp=2\nruntime=8", 1, 5000, 1000),
        ("ss=iops:2%\nss_dur=2\nnumjobs=2\ngroup_reporting", 1, 2000, 2000),
        ("ss=iops:0%\nss_dur=2", 0, 3000, 1000),
    ] {
        let text = format!(
            "[s]\nioengine=null\nfilename={}\nrw=randread\nbs=4k\nsize=1g\nrate_iops=1000\n\
             time_based\nruntime=3\n{extra}\n",
            dir.join("x").display()
        );
        std::fs::write(&job, text).unwrap();
        // Real fio's samples are the machine's: on a busy one its rate-limited bandwidth
        // wobbles past `bw_slope:1%` and it attains a tick late. It gets three runs to stop
        // where it stops on an idle machine; elevator's run is the same every time.
        let ran_ms = |out: &Output| fio_json_of(&out.stdout)["jobs"][0]["read"]["runtime"].as_u64();
        let mut runs = fio_and_elevator_json(&job);
        for _ in 0..2 {
            if ran_ms(&runs[0]).is_some_and(|ran| ran.abs_diff(runtime_ms) <= 300) {
                break;
            }
            runs = fio_and_elevator_json(&job);
        }
        let [fio, ours] = runs;
        for (tool, out) in [("fio", &fio), ("elevator", &ours)] {
            assert!(
                out.status.success(),
                "{tool} {extra}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let v = fio_json_of(&out.stdout);
            let jobs = v["jobs"].as_array().unwrap();
            assert_eq!(jobs.len(), 1, "{tool} {extra}");
            let ss = &jobs[0]["steadystate"];
            let keys: Vec<&str> = ss.as_object().unwrap().keys().map(String::as_str).collect();
            let want =
                ["ss", "duration", "attained", "criterion", "max_deviation", "slope", "data"];
            assert_eq!(keys, want, "{tool} {extra}");
            assert_eq!(ss["attained"], attained, "{tool} {extra}");
            assert_eq!(ss["duration"], 2, "{tool} {extra}");
            assert_eq!(ss["data"]["iops"].as_array().unwrap().len(), 2, "{tool} {extra}");
            let mean = ss["data"]["iops_mean"].as_u64().unwrap();
            assert!(mean.abs_diff(iops) <= iops / 50, "{tool} {extra}: IOPS mean {mean}");
            let ran = jobs[0]["read"]["runtime"].as_u64().unwrap();
            assert!(ran.abs_diff(runtime_ms) <= 300, "{tool} {extra}: ran {ran} ms");
        }
        let spec = |out: &Output| fio_json_of(&out.stdout)["jobs"][0]["steadystate"]["ss"].clone();
        assert_eq!(spec(&ours), spec(&fio), "{extra}");
    }
    assert_eq!(
        fio_json_of(&elevator(&["run", job.to_str().unwrap(), "--output-format", "json"]).stdout)
            ["jobs"][0]["read"]["runtime"],
        3000,
        "never attained: the whole runtime, exactly"
    );
    let text = elevator(&["run", job.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("steadystate  : attained=no, "), "{text}");
    // The group's last job judges it; one that starts after the group attained does
    // nothing (fio: 1.9 s of the second job alone, where the first would have run 4-12 s).
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=1g\nrw=randread\nbs=4k\nrate_iops=1000\ntime_based\n\
         runtime=8\ngroup_reporting\nss=iops:2%\nss_dur=2\n[a]\nstartdelay=4\n[b]\n",
    )
    .unwrap();
    let [fio, ours] = fio_and_elevator_json(&job);
    for (tool, out) in [("fio", &fio), ("elevator", &ours)] {
        let v = fio_json_of(&out.stdout);
        let ran = v["jobs"][0]["job_runtime"].as_u64().unwrap();
        assert!((1700..=2000).contains(&ran), "{tool}: the group ran {ran} ms");
    }
    // A job with steadystate beside one without, in one reporting group: both refuse.
    std::fs::write(
        &job,
        "[global]\nioengine=null\nsize=1g\nruntime=1\n[a]\n[b]\nss=iops:2%\nss_dur=5\n",
    )
    .unwrap();
    let [fio, ours] = fio_and_elevator_json(&job);
    assert!(!fio.status.success() && !ours.status.success());
    let err = String::from_utf8_lossy(&ours.stderr);
    assert!(err.contains("ss.fio") && err.contains("steadystate"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `max_latency=` (and `latency_target` at depth 1): an I/O slower than the limit ends the
/// job with ETIMEDOUT (110), reported as real fio (installed by setup.sh) reports it, and the
/// run exits 1 as fio does.
#[test]
fn max_latency_ends_the_job_as_real_fio_does() {
    let dir = scratch_dir("maxlat");
    let job = dir.join("m.fio");
    let text = format!(
        "[m]\nfilename={}\nsize=1m\nbs=4k\nrw=randread\nmax_latency=1\n",
        dir.join("data").display()
    );
    std::fs::write(&job, text).unwrap();
    let [fio, ours] = fio_and_elevator_json(&job);
    for (tool, out) in [("fio", &fio), ("elevator", &ours)] {
        assert_eq!(out.status.code(), Some(1), "{tool} exits 1");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("exceeds specified max (1000 nsec)"), "{tool}: {stderr}");
        let v = fio_json_of(&out.stdout);
        assert_eq!(v["jobs"][0]["error"], 110, "{tool}");
        let ios = v["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
        assert!((1..=2).contains(&ios), "{tool}: the job stops at its first slow read: {ios}");
    }
    let normal = elevator(&["run", job.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&normal.stdout);
    assert!(
        text.contains("err=110 (func=max latency exceeded, error=Connection timed out)"),
        "{text}"
    );
    // latency_target at percentile 100: an I/O over the target at depth 1 ends the job the
    // same way (fio's lat_target_failed).
    let text = format!(
        "[t]\nfilename={}\nsize=1m\nbs=4k\nrw=randread\nlatency_target=1\nlatency_window=1s\n",
        dir.join("data").display()
    );
    std::fs::write(&job, text).unwrap();
    let [fio, ours] = fio_and_elevator_json(&job);
    for (tool, out) in [("fio", &fio), ("elevator", &ours)] {
        assert_eq!(out.status.code(), Some(1), "{tool} exits 1");
        assert_eq!(fio_json_of(&out.stdout)["jobs"][0]["error"], 110, "{tool}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `rate_min=`: a job below it over a rate cycle, once 2 s have passed, ends with EIO (5),
/// as under real fio (installed by setup.sh): both stop after about 3 s.
#[test]
fn rate_min_ends_a_slow_job_as_real_fio_does() {
    let dir = scratch_dir("ratemin");
    let job = dir.join("r.fio");
    let text = format!(
        "[r]\nfilename={}\nsize=16m\nbs=4k\nrw=randread\nrate_min=100g\nruntime=20\ntime_based\n",
        dir.join("data").display()
    );
    std::fs::write(&job, text).unwrap();
    let [fio, ours] = fio_and_elevator_json(&job);
    for (tool, out) in [("fio", &fio), ("elevator", &ours)] {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("rate_min=107374182400B/s not met"), "{tool}: {stderr}");
        let v = fio_json_of(&out.stdout);
        assert_eq!(v["jobs"][0]["error"], 5, "{tool}");
        let ms = v["jobs"][0]["read"]["runtime"].as_u64().unwrap();
        assert!((2900..=6000).contains(&ms), "{tool} stopped after {ms} ms");
    }
    assert_eq!(ours.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A blktrace binary replays like a fio log, once told which device it was taken on.
#[test]
fn blktrace_replay_needs_a_device_and_keeps_timing() {
    use elevator_fio::blktrace::encode;
    let queue_read = 1 | 1 << 16 | 1 << 20; // __BLK_TA_QUEUE, BLK_TC_READ | BLK_TC_QUEUE
    let sdb = 8 << 20 | 16;
    let mut trace = Vec::new();
    for i in 0..20u64 {
        trace.extend(encode(i * 10_000_000, i * 8192, 4096, queue_read, sdb, &[]));
    }
    let path = temp_file("trace.blktrace.0", "");
    std::fs::write(&path, &trace).unwrap();
    let job = temp_file("bt.fio", "[bt]\nread_iolog=trace.blktrace.0\nioengine=libaio\n");
    let out = elevator(&["run", job.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("names its device by number (8,16)"), "{err}");
    let job = temp_file(
        "bt2.fio",
        "[bt]\nread_iolog=trace.blktrace.0\nreplay_redirect=sda\nioengine=libaio\n",
    );
    let v = json(&["run", job.to_str().unwrap()]);
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 20);
    let ms = v["jobs"][0]["read"]["runtime"].as_f64().unwrap();
    assert!((190.0..260.0).contains(&ms), "20 reads 10 ms apart: {ms} ms");
}

/// The example of the README: a fresh drive written three times over falls off the cliff.
#[test]
fn ssd_write_cliff_example() {
    let v =
        json(&["run", "examples/ssd-write-cliff.fio", "--topology", "examples/ssd-fresh-1g.toml"]);
    let bw: Vec<f64> = (0..3).map(|i| v["jobs"][i]["write"]["bw"].as_f64().unwrap()).collect();
    assert!(bw[0] > 1.5 * bw[2], "fresh {} KiB/s vs third pass {} KiB/s", bw[0], bw[2]);
    assert!(bw[1] < bw[0], "{bw:?}");
    let wa = v["elevator"]["devices"][0]["stats"]["write_amplification"].as_f64().unwrap();
    assert!(wa > 1.2, "garbage collection copied pages: WA {wa}");
}

/// mq-deadline bounds a reader's latency under a heavy write load; `none` does not: as the
/// writer queues more, the reader waits longer behind it under `none` only.
#[test]
fn deadline_bounds_read_latency_under_writes() {
    let example = std::fs::read_to_string(repo().join("examples/reads-under-writes.fio")).unwrap();
    assert!(example.contains("iodepth=256"));
    let shallow = temp_file("writes-32.fio", &example.replace("iodepth=256", "iodepth=32"));
    let p99_ms = |job: &str, sched: &str| {
        let v = json(&["run", job, "--scheduler", sched]);
        let reader = v["jobs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|j| j["jobname"] == "reader")
            .unwrap()
            .clone();
        reader["read"]["clat_ns"]["percentile"]["99.000000"].as_f64().unwrap() / 1e6
    };
    let deep = "examples/reads-under-writes.fio";
    let shallow = shallow.to_str().unwrap();
    let (dl_shallow, dl_deep) = (p99_ms(shallow, "mq-deadline"), p99_ms(deep, "mq-deadline"));
    let (none_shallow, none_deep) = (p99_ms(shallow, "none"), p99_ms(deep, "none"));
    // read_expire (500 ms) plus what the drive's own queue and write cache add.
    assert!(dl_deep < 750.0, "mq-deadline p99 {dl_deep} ms");
    assert!(
        dl_deep < dl_shallow * 1.25,
        "mq-deadline {dl_shallow} -> {dl_deep} ms as writes deepen"
    );
    assert!(
        none_deep > none_shallow * 1.3,
        "none {none_shallow} -> {none_deep} ms as writes deepen"
    );
    assert!(none_deep > dl_deep * 1.3, "none {none_deep} ms vs mq-deadline {dl_deep} ms");
}

/// `elevator serve` exports a file over NBD on a Unix socket: qemu-img writes an image into
/// it and compares it back, and SIGTERM stops the server cleanly.
#[test]
fn serve_exports_a_file_to_real_clients() {
    if Command::new("qemu-img").arg("--version").output().is_err() {
        eprintln!("skipped: qemu-img is not installed (./setup.sh installs it)");
        return;
    }
    let dir = scratch_dir("serve");
    let backing = dir.join("disk0.img");
    std::fs::write(&backing, vec![0u8; 8 << 20]).unwrap();
    let source = dir.join("source.img");
    let pattern: Vec<u8> =
        (0..(8u32 << 20)).map(|i| (i.wrapping_mul(2654435761) >> 24) as u8).collect();
    std::fs::write(&source, &pattern).unwrap();
    let socket = dir.join("nbd.sock");
    let config = temp_file(
        "serve.toml",
        &format!(
            "listen = \"\"\nunix_socket = \"{}\"\nscheduler = \"mq-deadline\"\nqueue_depth = 8\n\n[[export]]\nname = \"disk0\"\npath = \"{}\"\n",
            socket.display(),
            backing.display()
        ),
    );
    let mut server = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["serve", "--config", config.to_str().unwrap()])
        .spawn()
        .expect("server starts");
    for _ in 0..100 {
        if socket.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let uri = format!("nbd+unix:///disk0?socket={}", socket.display());
    let convert = Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "-O", "raw", source.to_str().unwrap(), &uri])
        .output()
        .unwrap();
    let compare = Command::new("qemu-img")
        .args(["compare", "-f", "raw", "-F", "raw", source.to_str().unwrap(), &uri])
        .output()
        .unwrap();
    // SIGTERM: the server finishes in-flight work and exits 0.
    Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    let status = server.wait().unwrap();
    assert!(
        convert.status.success(),
        "qemu-img convert: {}",
        String::from_utf8_lossy(&convert.stderr)
    );
    assert!(
        compare.status.success(),
        "qemu-img compare: {}",
        String::from_utf8_lossy(&compare.stdout)
    );
    assert!(status.success(), "server exit {status}");
    assert_eq!(std::fs::read(&backing).unwrap(), pattern);
}

#[test]
fn spun_cpu_time_is_reported_as_fio_reports_user_time() {
    // Four jobs spinning on the built-in machine's two CPUs: each has half a CPU, which
    // fio's usr_cpu (summed over the group, over the summed runtime) shows as 50 %.
    let v = json(&["run", "examples/compute-between-reads.fio"]);
    let usr = v["jobs"][0]["usr_cpu"].as_f64().unwrap();
    assert!((48.0..=51.0).contains(&usr), "usr_cpu {usr}");
    let text = ok(&["run", "examples/compute-between-reads.fio"]);
    assert!(text.contains(&format!("  cpu          : usr={usr:.2}%, sys=0.00%")), "{text}");
    // A job that only sleeps between its I/Os uses no CPU.
    let v = json(&["run", "examples/randread-qd1.fio"]);
    assert_eq!(v["jobs"][0]["usr_cpu"].as_f64(), Some(0.0));
}

/// Runs of real fio a timing cross-check may take: real fio measures wall and CPU time on a
/// machine the rest of the test suite is loading at the same time, so one run can land out
/// of range for reasons that are not fio's semantics.
const REAL_FIO_ATTEMPTS: usize = 3;

/// The longest one run of real fio may take in a timing cross-check. fio 3.33's
/// `handle_thinktime` sleeps `thinktime - spun` with unsigned arithmetic: when a loaded
/// machine makes `thinktime_spin` overrun the think time, the difference wraps and the job
/// sleeps for ever. Such a run is killed and counts as out of range.
const REAL_FIO_TIMEOUT_S: u32 = 60;

/// Real fio's JSON report of `job`, run again (up to [`REAL_FIO_ATTEMPTS`] times) until
/// `timing_ok` accepts its first job.
fn real_fio_json_timed(job: &Path, timing_ok: impl Fn(&Value) -> Result<(), String>) -> Value {
    let mut errors = Vec::new();
    for _ in 0..REAL_FIO_ATTEMPTS {
        let real = Command::new("timeout")
            .args([
                &format!("{REAL_FIO_TIMEOUT_S}"),
                "fio",
                "--output-format=json",
                job.to_str().unwrap(),
            ])
            .output()
            .expect("fio runs (setup.sh installs it)");
        if real.status.code() == Some(124) {
            errors.push(format!("killed after {REAL_FIO_TIMEOUT_S} s"));
            continue;
        }
        assert!(real.status.success(), "{}", String::from_utf8_lossy(&real.stderr));
        let v = fio_json_of(&real.stdout);
        match timing_ok(&v["jobs"][0]) {
            Ok(()) => return v,
            Err(e) => errors.push(e),
        }
    }
    panic!("real fio out of range in {REAL_FIO_ATTEMPTS} runs: {errors:?}");
}

/// The JSON report in real fio's output (engines such as cpuio print a banner before it).
fn fio_json_of(stdout: &[u8]) -> Value {
    let text = String::from_utf8(stdout.to_vec()).unwrap();
    serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap()
}

#[test]
fn thinktime_spin_is_user_time_as_under_real_fio() {
    // 40 reads of a 1 MiB file, each followed by 10 ms of think of which 5 ms spin: about
    // 400 ms of runtime, half of it on the CPU, under real fio and elevator alike.
    let dir = scratch_dir("spin");
    let data = dir.join("data");
    std::fs::write(&data, vec![7u8; 1 << 20]).unwrap();
    let job = temp_file(
        "spin.fio",
        &format!(
            "[spin]\nfilename={}\nrw=read\nbs=4k\nsize=1m\nnumber_ios=40\nthinktime=10ms\n\
             thinktime_spin=5ms\n",
            data.display()
        ),
    );
    let in_range = |j: &Value| {
        let usr = j["usr_cpu"].as_f64().unwrap();
        let ms = j["job_runtime"].as_u64().unwrap();
        if (35.0..=65.0).contains(&usr) && (380..=600).contains(&ms) {
            Ok(())
        } else {
            Err(format!("usr_cpu {usr}, runtime {ms} ms"))
        }
    };
    real_fio_json_timed(&job, in_range);
    let ours = json(&["run", job.to_str().unwrap()]);
    in_range(&ours["jobs"][0]).unwrap_or_else(|e| panic!("elevator: {e}"));
}

#[test]
fn cpuio_reports_as_real_fio_does() {
    // The same cpuio job under real fio (installed by setup.sh) and elevator: each 50 ms
    // burn is a read of no bytes, a quarter of a CPU is used. Real fio's counts depend on
    // the machine's timing, hence the ranges.
    let job = temp_file("cpuio-burn.fio", "[burn]\nioengine=cpuio\ncpuload=25\nruntime=1\n");
    let in_range = |j: &Value| {
        let ios = j["read"]["total_ios"].as_u64().unwrap();
        let bytes = j["read"]["io_bytes"].as_u64();
        let usr = j["usr_cpu"].as_f64().unwrap();
        if (4..=6).contains(&ios) && bytes == Some(0) && (15.0..=35.0).contains(&usr) {
            Ok(())
        } else {
            Err(format!("{ios} burns in a second, {bytes:?} bytes, usr_cpu {usr}"))
        }
    };
    real_fio_json_timed(&job, in_range);
    let ours = json(&["run", job.to_str().unwrap()]);
    in_range(&ours["jobs"][0]).unwrap_or_else(|e| panic!("elevator: {e}"));
}

/// `ioscheduler=`: the job's disk runs the scheduler it names (the disk-stats line says
/// which), a name the disk does not have fails the job as fio reports it (EINVAL from
/// `iosched_switch`, exit 1), and `--scheduler` on the command line keeps its own.
#[test]
fn ioscheduler_switches_the_jobs_disk() {
    let job = |sched: &str| {
        temp_file(
            &format!("iosched-{sched}.fio"),
            &format!("[j]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=64m\nruntime=1\ntime_based\nioscheduler={sched}\n"),
        )
    };
    let bfq = job("bfq");
    let text = ok(&["run", bfq.to_str().unwrap()]);
    assert!(text.contains("sda: ios=") && text.contains("[bfq; "), "{text}");
    let out = elevator(&["run", job("nope").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("job `j`: fio: unable to set io scheduler to nope"), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("err=22 (func=iosched_switch, error=Invalid argument)"), "{stdout}");
    let out = elevator(&["run", bfq.to_str().unwrap(), "--scheduler", "kyber"]);
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("[kyber; "), "{stdout}");
    assert!(stderr.contains("ioscheduler=bfq left out: --scheduler kyber"), "{stderr}");
}

/// `zonemode=strided`: real fio (installed by setup.sh) and elevator do `size=` bytes in
/// zones of `zonerange=` bytes, `zonesize=` bytes in each, `zoneskip=` between them, back at
/// the start past the file's end. Sequential shapes give the same `write_iolog` lines;
/// random ones read the same zones in the same order, each `zonerange` bytes of reads a
/// permutation of the zone's blocks (the random map is reset at every `zonerange` bytes).
#[test]
fn strided_zones_are_read_as_real_fio_reads_them() {
    let reads = |tool: &str, i: usize, shape: &str| -> Vec<u64> {
        let lines = file_iolog(tool, &format!("zones-{i}"), &format!("size=1m\nbs=16k\n{shape}"));
        lines.iter().filter(|f| f[2] == "read").map(|f| f[3].parse().unwrap()).collect()
    };
    for (i, shape) in [
        "rw=read\nzonemode=strided\nzonesize=32k\nzoneskip=96k",
        "rw=read\nzonemode=strided\nzonesize=128k\nzonerange=64k\nzoneskip=64k",
        "rw=read\nzonemode=strided\nzonesize=32k\nzonerange=64k\nzoneskip=448k",
        "rw=read\nzonemode=strided\nzonesize=48k\nzoneskip=16k\noffset=256k",
        // A new file is made offset + size long, and size= is read from the offset.
        "rw=read\noffset=256k",
    ]
    .into_iter()
    .enumerate()
    {
        let fio = reads("fio", i, shape);
        assert!(fio.len() >= 48, "{shape}: {fio:?}");
        assert_eq!(reads("elevator", i, shape), fio, "{shape}");
    }
    // Random: zonerange 64k (4 blocks), 128k in each zone, 64k skipped.
    let shape = "rw=randread\nzonemode=strided\nzonesize=128k\nzonerange=64k\nzoneskip=64k";
    for tool in ["fio", "elevator"] {
        let r = reads(tool, 9, shape);
        assert_eq!(r.len(), 64, "{tool}");
        for (k, group) in r.chunks(4).enumerate() {
            let zone = (k as u64 / 2) * (128 << 10);
            let mut blocks: Vec<u64> = group.iter().map(|o| (o - zone) / (16 << 10)).collect();
            blocks.sort();
            assert_eq!(blocks, [0, 1, 2, 3], "{tool}: reads {k}: {group:?} in zone {zone}");
        }
    }
}

/// `bsrange=`: fio 3.33 draws min + max × u, aligns it down to min and caps it at max, so a
/// max that is no multiple of min comes out itself: 4k-10k gives 4k and 8k 40 % each and 10k
/// 20 %, in real fio (installed by setup.sh) and elevator alike; 4k-16k is uniform.
#[test]
fn bsrange_sizes_are_drawn_as_real_fio_draws_them() {
    for (i, range, want) in [
        (0, "4k-10k", vec![(4096, 0.4), (8192, 0.4), (10240, 0.2)]),
        (1, "4k-16k", vec![(4096, 0.25), (8192, 0.25), (12288, 0.25), (16384, 0.25)]),
    ] {
        for tool in ["fio", "elevator"] {
            let body =
                format!("size=64m\nrw=randread\nbsrange={range}\nnorandommap=1\nnumber_ios=8000");
            let lines = file_iolog(tool, &format!("bsrange-{i}"), &body);
            let sizes: Vec<u64> =
                lines.iter().filter(|f| f[2] == "read").map(|f| f[4].parse().unwrap()).collect();
            assert!(sizes.len() >= 5000, "{tool} {range}: {} reads", sizes.len());
            for &(bytes, share) in &want {
                let got = sizes.iter().filter(|&&s| s == bytes).count() as f64 / sizes.len() as f64;
                assert!(
                    (got - share).abs() < 0.03,
                    "{tool} {range}: {bytes} B {got:.3}, want {share}"
                );
            }
            let known: usize =
                want.iter().map(|&(b, _)| sizes.iter().filter(|&&s| s == b).count()).sum();
            assert_eq!(known, sizes.len(), "{tool} {range}: no other sizes");
        }
    }
}

/// fio's do_io ends every pass with `end_fsync`'s (or `fsync_on_close`'s) fsync when the
/// job writes and its last I/O was no sync, direct or buffered: a sync engine's pass found
/// its file done and closed it, so the sync goes to it opened again (and closed); an async
/// engine's pass stops at its bytes with the file open. A read job syncs nothing. Each
/// shape logs real fio 3.33's lines, opens and closes included (an async engine's sync
/// offset aside).
#[test]
fn end_fsync_ends_every_pass_as_real_fio_does() {
    for (i, body) in [
        "rw=write\nend_fsync=1\nloops=2",
        "rw=write\nfsync_on_close=1\nloops=2",
        "rw=write\nend_fsync=1\nloops=3\nioengine=libaio",
        "rw=write\nend_fsync=1\nloops=2\ndirect=1",
        "rw=write\nend_fsync=1\ndirect=1\nioengine=libaio\niodepth=4",
        "rw=write\nend_fsync=1\nloops=2\ndirect=1\nioengine=libaio\niodepth=4",
        "rw=write\nfsync=3\nend_fsync=1\nloops=2",
        "rw=write\nfsync=8\nend_fsync=1",
        "rw=read\nend_fsync=1\nloops=2",
    ]
    .into_iter()
    .enumerate()
    {
        // An async engine's sync reuses whichever io_u completed last, which real fio's
        // completion order decides: its offset is left out there.
        let async_engine = body.contains("libaio");
        let lines = |tool: &str| -> Vec<String> {
            file_actions(tool, &format!("end-fsync-{i}"), &format!("size=32k\nbs=4k\n{body}"))
                .into_iter()
                .map(|l| match l.split_once(" sync ") {
                    Some((file, _)) if async_engine => format!("{file} sync"),
                    _ => l,
                })
                .collect()
        };
        assert_eq!(lines("elevator"), lines("fio"), "{body}");
    }
}

/// fio's libaio runs a sync inline (`do_io_u_sync`) while its writes are in flight, and reaps
/// the writes that completed meanwhile only when its queue next fills, one per wait: until
/// then they hold their io_us and the sync stays the last I/O reaped (`last_was_sync`), and
/// once one is reaped the sync that `fsync=N` keeps due goes out; a pass's end reaps them all
/// before its end_fsync. elevator reaped each write as it completed, so the
/// sync due at the 6th write of `iodepth=4 fsync=3` found the last reaped I/O still the sync
/// and was skipped (3 syncs against real fio's 4). And an async engine's pass that runs out
/// of offsets short of its bytes (`size=` not a multiple of `bs=`) finds its file done and
/// closes it, as a sync engine's does: end_fsync opens it again for the sync; elevator logged
/// neither. Each shape failed before; the sync's offset (the io_u the reaping freed last,
/// which real completion order decides) is left out.
#[test]
fn libaio_syncs_wait_for_fios_reaping_and_a_short_pass_closes_its_file() {
    for (i, body) in [
        "rw=write\nsize=200k\nbs=16k\nioengine=libaio\niodepth=4\ndirect=1\nfsync=3",
        "rw=write\nsize=256k\nbs=16k\nioengine=libaio\niodepth=8\ndirect=1\nfsync=5",
        "rw=randwrite\nsize=256k\nbs=8k\nioengine=libaio\niodepth=4\ndirect=1\nfsync=2",
        "rw=write\nsize=200k\nbs=16k\nioengine=libaio\niodepth=4\ndirect=1\nfsync=3\nend_fsync=1",
        "rw=write\nsize=200k\nbs=16k\nioengine=libaio\niodepth=4\nend_fsync=1",
        "rw=write\nsize=200k\nbs=16k\nioengine=io_uring\niodepth=4\nend_fsync=1",
        "rw=write\nsize=200k\nbs=16k\nioengine=libaio\niodepth=4\nend_fsync=1\nloops=2",
        "rw=write\nsize=200k\nbs=16k\nioengine=libaio\niodepth=4\nfsync_on_close=1\ndirect=1",
        "rw=write\nsize=256k\nbs=16k\nioengine=libaio\niodepth=3\ndirect=1\nfsync=4\nloops=2\nend_fsync=1",
        // Buffered: each write done as libaio submits it, reaped once 8 io_us are in use.
        "rw=write\nsize=512k\nbs=4k\nioengine=libaio\niodepth=8\nfsync=2",
    ]
    .into_iter()
    .enumerate()
    {
        let lines = |tool: &str| -> Vec<String> {
            file_actions(tool, &format!("aio-sync-{i}"), body)
                .into_iter()
                .map(|l| match l.split_once(" sync ") {
                    Some((file, _)) => format!("{file} sync"),
                    _ => l,
                })
                .collect()
        };
        assert_eq!(lines("elevator"), lines("fio"), "{body}");
    }
}

/// fio 3.33 aligns every drawn size down to the direction's smallest unless `bs_unaligned`:
/// `bssplit=4k/50:6k/50` issues only 4 KiB blocks, and `bsrange=1k-10k` with `bs_unaligned`
/// any byte count from 1 KiB (nine in ten not whole sectors), 10 KiB for the tenth of draws past
/// it, in real fio and elevator alike. With `direct=1` fio fails such an I/O with EINVAL;
/// elevator refuses the job.
#[test]
fn drawn_sizes_are_aligned_unless_bs_unaligned_as_real_fio_does() {
    for tool in ["fio", "elevator"] {
        let sizes = |name: &str, shape: &str| -> Vec<u64> {
            let body = format!("size=64m\nrw=randread\n{shape}\nnorandommap=1\nnumber_ios=4000");
            file_iolog(tool, name, &body)
                .iter()
                .filter(|f| f[2] == "read")
                .map(|f| f[4].parse().unwrap())
                .collect()
        };
        let split = sizes("bssplit-aligned", "bssplit=4k/50:6k/50");
        assert!(split.len() >= 3000 && split.iter().all(|&s| s == 4096), "{tool}: {split:?}");
        let split = sizes("bssplit-unaligned", "bssplit=4k/50:6k/50\nbs_unaligned=1");
        let six = split.iter().filter(|&&s| s == 6144).count() as f64 / split.len() as f64;
        assert!((six - 0.5).abs() < 0.05, "{tool}: 6 KiB share {six:.3}");
        let range = sizes("bsrange-unaligned", "bsrange=1k-10k\nbs_unaligned=1");
        assert!(range.len() >= 3000, "{tool}: {} reads", range.len());
        assert!(range.iter().all(|&s| (1024..=10240).contains(&s)), "{tool}: {range:?}");
        let share = |f: &dyn Fn(u64) -> bool| {
            range.iter().filter(|&&s| f(s)).count() as f64 / range.len() as f64
        };
        let (odd, max) = (share(&|s| s % 512 != 0), share(&|s| s == 10240));
        assert!(odd > 0.85, "{tool}: whole sectors too often ({odd:.3} not)");
        assert!((max - 0.1).abs() < 0.03, "{tool}: 10 KiB share {max:.3}");
    }
    let dir = scratch_dir("unaligned-direct");
    let job = dir.join("j.fio");
    let text = format!(
        "[j]\nfilename={}\nsize=64k\nrw=write\nbsrange=1k-10k\nbs_unaligned=1\ndirect=1\n",
        dir.join("data").display()
    );
    std::fs::write(&job, text).unwrap();
    let out = elevator(&["run", job.to_str().unwrap()]);
    let err = refusal(&out);
    assert!(err.contains("bs_unaligned") && err.contains("EINVAL"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// fio 3.33 trims with the BLKDISCARD ioctl, which a regular file refuses: real fio fails a
/// trim job on a file (ENOTTY, err=25, exit status 1) and elevator refuses it, naming the
/// reason (on a device, with the null engine, or with the falloc engine, which punches a
/// hole, trims run).
#[test]
fn trims_on_a_regular_file_fail_as_in_real_fio() {
    for rw in ["trim", "randtrim"] {
        for tool in ["fio", "elevator"] {
            let dir = scratch_dir(&format!("trim-file-{rw}-{tool}"));
            let job = dir.join("j.fio");
            let text =
                format!("[j]\nfilename={}\nrw={rw}\nbs=4k\nsize=16k\n", dir.join("data").display());
            std::fs::write(&job, text).unwrap();
            let out = run_under(tool, &job, "terse");
            assert!(!out.status.success(), "{tool} {rw} on a file succeeded");
            if tool == "elevator" {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(err.contains("BLKDISCARD") && err.contains("ENOTTY"), "{err}");
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
    }
    // The null engine trims nothing; the falloc engine punches holes in the file.
    for engine in ["null", "falloc"] {
        let dir = scratch_dir(&format!("trim-{engine}"));
        let job = dir.join("j.fio");
        let text = format!("[j]\nrw=trim\nbs=4k\nsize=16k\nioengine={engine}\n");
        std::fs::write(&job, text).unwrap();
        let out = elevator(&["run", job.to_str().unwrap()]);
        assert!(out.status.success(), "{engine}: {}", String::from_utf8_lossy(&out.stderr));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Under a non-uniform file choice (`file_service_type=zipf`) fio never finishes a file:
/// drawing one whose blocks are all done, it closes it and resets it, and opens it again
/// when it draws it next. Real fio's `write_iolog` (installed by setup.sh) and elevator's
/// show that for every file: its last block is followed by a `close`, a `close` by an
/// `open` (or the end), an `open` by a read of its first block. (Which file is drawn when
/// differs: the draws are each tool's own.)
#[test]
fn a_finished_file_under_zipf_is_closed_and_opened_again_as_real_fio_does() {
    for tool in ["fio", "elevator"] {
        let log =
            tree_iolog(tool, "zipf-files", "rw=read\nfile_service_type=zipf:1.2\nio_size=96k");
        let mut per_file: std::collections::BTreeMap<String, Vec<String>> = Default::default();
        for line in log.lines().skip(1) {
            let f: Vec<&str> = line.split(' ').collect();
            let action = match f.get(2).copied() {
                Some("read") => format!("read {}", f[3]),
                Some(a @ ("open" | "close")) => a.to_string(),
                _ => continue,
            };
            per_file.entry(f[1].to_string()).or_default().push(action);
        }
        let mut resets = 0;
        for (file, actions) in &per_file {
            for pair in actions.windows(2) {
                let ok = match pair[0].as_str() {
                    "read 4096" => pair[1] == "close",
                    "close" => pair[1] == "open",
                    "open" => pair[1] == "read 0",
                    "read 0" => pair[1] == "read 4096" || pair[1] == "close",
                    _ => false,
                };
                assert!(ok, "{tool}: {file}: {} then {}: {actions:?}", pair[0], pair[1]);
            }
            assert_eq!(actions.last().map(String::as_str), Some("close"), "{tool}: {file}");
            resets += actions.windows(2).filter(|p| p[0] == "close" && p[1] == "open").count();
        }
        assert!(resets >= 5, "{tool}: {resets} files reset: {per_file:?}");
    }
}

/// `random_generator=lfsr`: fio's shift register never draws a block twice in a pass, random
/// map or not, so with `norandommap=1` real fio (installed by setup.sh) and elevator read
/// each of the file's blocks once (`loops=2`: once per pass); the default generator draws
/// with replacement without the map, and blocks repeat in both.
#[test]
fn lfsr_reads_each_block_once_per_pass_as_real_fio_does() {
    for tool in ["fio", "elevator"] {
        let offsets = |generator: &str| -> Vec<u64> {
            let body = format!(
                "size=1m\nbs=4k\nrw=randread\nnorandommap=1\nrandom_generator={generator}\nloops=2"
            );
            let lines = file_iolog(tool, &format!("lfsr-{generator}"), &body);
            lines.iter().filter(|f| f[2] == "read").map(|f| f[3].parse().unwrap()).collect()
        };
        let lfsr = offsets("lfsr");
        assert_eq!(lfsr.len(), 512, "{tool}");
        for pass in lfsr.chunks(256) {
            let mut blocks: Vec<u64> = pass.iter().map(|o| o / 4096).collect();
            blocks.sort();
            assert_eq!(blocks, (0..256).collect::<Vec<u64>>(), "{tool}: each block once a pass");
        }
        let taus = offsets("tausworthe");
        let distinct = taus[..256].iter().collect::<std::collections::BTreeSet<_>>().len();
        assert!(distinct < 200, "{tool}: tausworthe without a map repeats blocks: {distinct}");
    }
}

/// `exitall_on_error`: a job that ends in an error (here `max_latency=1`, its first read too
/// slow) stops the others, as `exitall` would, in real fio (installed by setup.sh) and
/// elevator alike; without it the other job runs its 3 s. A job not started yet when
/// `exitall` fires never starts, in both; and any job's end fires a flag another job set.
#[test]
fn exitall_on_error_stops_the_other_jobs_as_real_fio_does() {
    let dir = scratch_dir("exitall-on-error");
    for (i, flag) in ["exitall_on_error=1", ""].into_iter().enumerate() {
        let job = dir.join(format!("e{i}.fio"));
        let text = format!(
            "[global]\nsize=1m\nbs=4k\nrw=randread\n[slow]\nfilename={}\nmax_latency=1\n{flag}\n[other]\nfilename={}\ntime_based\nruntime=3\n",
            dir.join("a").display(),
            dir.join("b").display()
        );
        std::fs::write(&job, text).unwrap();
        for (tool, out) in ["fio", "elevator"].into_iter().zip(fio_and_elevator_json(&job)) {
            let v = fio_json_of(&out.stdout);
            assert_eq!(v["jobs"][0]["error"], 110, "{tool}");
            let ms = v["jobs"][1]["job_runtime"].as_u64().unwrap();
            if flag.is_empty() {
                assert!(ms >= 2_900, "{tool}: the other job ran its runtime: {ms} ms");
            } else {
                assert!(ms < 1_500, "{tool}: the other job was stopped: {ms} ms");
            }
        }
    }
    // A job that has not started when another's exitall fires never starts.
    let job = dir.join("late.fio");
    let text = format!(
        "[global]\nfilename={}\nsize=1m\nbs=4k\nrw=read\ntime_based\n[a]\nruntime=1\nexitall\n[b]\nstartdelay=3\nruntime=1\n",
        dir.join("a").display()
    );
    std::fs::write(&job, text).unwrap();
    for (tool, out) in ["fio", "elevator"].into_iter().zip(fio_and_elevator_json(&job)) {
        let b = &fio_json_of(&out.stdout)["jobs"][1];
        assert_eq!(
            (b["job_runtime"].as_u64(), b["read"]["total_ios"].as_u64()),
            (Some(0), Some(0)),
            "{tool}"
        );
    }
    // `exitall` is fio's global: one job's flag makes every job's end stop the rest, so the
    // short job `b`, without the flag, stops `a`'s 3 s.
    let job = dir.join("global.fio");
    let text = format!(
        "[global]\nfilename={}\nsize=1m\nbs=4k\nrw=read\ntime_based\n[a]\nruntime=3\nexitall\n[b]\nruntime=1\n",
        dir.join("a").display()
    );
    std::fs::write(&job, text).unwrap();
    for (tool, out) in ["fio", "elevator"].into_iter().zip(fio_and_elevator_json(&job)) {
        let ms = fio_json_of(&out.stdout)["jobs"][0]["job_runtime"].as_u64().unwrap();
        assert!(ms < 1_500, "{tool}: `a` stopped when `b` ended: {ms} ms");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `bwavgtime=` and `iopsavgtime=` set the windows of the bandwidth and IOPS samples, and
/// a bandwidth log without `log_avg_msec` samples every I/O, as in real fio: the same
/// sample counts for a rate-limited null job of 3 s (real fio's own helper thread may take
/// one sample fewer on a loaded machine), and the text's sample lines in fio's layout.
#[test]
fn sample_windows_follow_bwavgtime_and_iopsavgtime_as_real_fio() {
    let dir = scratch_dir("avgtime");
    let job = dir.join("j.fio");
    let body = "[j]\nioengine=null\nrw=read\nbs=4k\nsize=1g\nruntime=3\ntime_based\n\
                rate_iops=1000\nbwavgtime=250\niopsavgtime=100\n";
    std::fs::write(&job, body).unwrap();
    let samples = |v: &Value| {
        let r = &v["jobs"][0]["read"];
        (r["bw_samples"].as_i64().unwrap(), r["iops_samples"].as_i64().unwrap())
    };
    let ours = samples(&fio_json_of(&run_under("elevator", &job, "json").stdout));
    assert_eq!(ours, (11, 29));
    let real = real_fio_json_timed(&job, |j| {
        let r = &j["read"];
        let (bw, iops) = (r["bw_samples"].as_i64().unwrap(), r["iops_samples"].as_i64().unwrap());
        ((bw - 11).abs() <= 1 && (iops - 29).abs() <= 1)
            .then_some(())
            .ok_or(format!("samples {bw}, {iops}"))
    });
    let _ = samples(&real);
    let text = String::from_utf8(run_under("elevator", &job, "normal").stdout).unwrap();
    assert!(
        text.contains("   bw (  KiB/s): min= 4000, max= 4000, per=100.00%, avg=4000.00, stdev= 0.00, samples=11"),
        "{text}"
    );
    assert!(text
        .contains("   iops        : min= 1000, max= 1000, avg=1000.00, stdev= 0.00, samples=29"));
    // A bandwidth log of every I/O: a sample per I/O.
    std::fs::write(&job, format!("{body}write_bw_log={}\n", dir.join("b").display())).unwrap();
    let per_io = samples(&fio_json_of(&run_under("elevator", &job, "json").stdout));
    assert_eq!(per_io.0, 3000, "a log of every I/O samples every I/O, bwavgtime= or not");
    std::fs::write(
        &job,
        body.replace("bwavgtime=250\n", "")
            + &format!("write_bw_log={}\n", dir.join("b").display()),
    )
    .unwrap();
    let per_io = samples(&fio_json_of(&run_under("elevator", &job, "json").stdout));
    assert_eq!(per_io.0, 3000, "one per I/O");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The text report writes rates, sizes and counts through fio's num2str: a rate-limited null
/// job's `read:` and `READ:` lines are real fio's (`IOPS=19.7k, BW=77.0MiB/s
/// (80.7MB/s)(231MiB/...`), runtimes aside (real fio's wall clock runs a ms or so over).
/// Real fio gets three tries: on a loaded machine its rate limiting may fall short.
#[test]
fn text_numbers_are_written_as_real_fio_writes_them() {
    let dir = scratch_dir("num2str");
    let job = dir.join("j.fio");
    std::fs::write(
        &job,
        "[j]\nioengine=null\nrw=read\nbs=4k\nsize=1g\nruntime=3\ntime_based\nrate=77m\n",
    )
    .unwrap();
    // The rate lines, with each runtime (`3000msec`, `3000-3001msec`) as `Tmsec`.
    let lines = |tool: &str| -> Vec<String> {
        let out = run_under(tool, &job, "normal");
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let rate_lines =
            text.lines().filter(|l| l.starts_with("  read: IOPS") || l.starts_with("   READ: bw"));
        rate_lines
            .map(|l| {
                let (head, tail) = l.split_once("msec").unwrap();
                let keep = head.trim_end_matches(|c: char| c.is_ascii_digit() || c == '-');
                format!("{keep}Tmsec{tail}")
            })
            .collect()
    };
    let ours = lines("elevator");
    assert_eq!(
        ours,
        [
            "  read: IOPS=19.7k, BW=77.0MiB/s (80.7MB/s)(231MiB/Tmsec)",
            "   READ: bw=77.0MiB/s (80.7MB/s), 77.0MiB/s-77.0MiB/s (80.7MB/s-80.7MB/s), \
             io=231MiB (242MB), run=Tmsec"
        ]
    );
    let tries: Vec<Vec<String>> = (0..3).map(|_| lines("fio")).take_while(|l| *l != ours).collect();
    assert!(tries.len() < 3, "real fio: {tries:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job's text block has real fio 3.33's lines in real fio's order (the values are the
/// simulated device's): the latency distribution, the submit and complete distributions,
/// the latency-target line, no blank line between jobs, `Starting 2 processes`.
#[test]
fn a_job_s_text_block_has_real_fio_s_lines() {
    let dir = scratch_dir("textblock");
    let job = dir.join("j.fio");
    let body = format!(
        "[global]\nfilename={}\nsize=4m\nbs=4k\nioengine=psync\n[a]\nrw=read\n[b]\nrw=randread\n\
         [c]\nrw=write\n",
        dir.join("data").display()
    );
    std::fs::write(&job, body).unwrap();
    // Each line's label: up to its first `:`, `(`, `=` or `[`, as written.
    let labels = |tool: &str| -> Vec<String> {
        let out = run_under(tool, &job, "normal");
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let block = text.split("Run status").next().unwrap();
        block
            .lines()
            .skip_while(|l| !l.starts_with("Starting"))
            .map(|l| l.split([':', '(', '=', '[']).next().unwrap().to_string())
            .collect()
    };
    // Left out: the percentiles' rows (as many as the latencies' widths ask for), the
    // number of latency-distribution lines (as many as the buckets the latencies fill) and
    // real fio's `a: Laying out IO file` (elevator lays out nothing).
    let kept = |v: Vec<String>| -> Vec<String> {
        let mut v: Vec<String> = v.into_iter().filter(|l| !l.starts_with("     |")).collect();
        if let Some(i) = v.iter().position(|l| l == "a") {
            if v.get(i + 1).is_some_and(|l| l.is_empty()) {
                v.remove(i);
            }
        }
        v.dedup();
        v
    };
    let (ours, real) = (kept(labels("elevator")), kept(labels("fio")));
    assert_eq!(ours, real);
    // The tails labels leave out: each job's time after its pid (ctime's five fields) and
    // the write line's `; 0 zone resets`.
    let tails = |tool: &str| -> Vec<String> {
        let text = String::from_utf8(run_under(tool, &job, "normal").stdout).unwrap();
        text.lines()
            .filter_map(|l| {
                if let Some((_, t)) = l.split_once("pid=") {
                    Some(format!("time fields {}", t.split_whitespace().count() - 1))
                } else {
                    l.starts_with("  write: IOPS").then(|| l.split_once("msec)").unwrap().1.into())
                }
            })
            .collect()
    };
    assert_eq!(tails("elevator"), tails("fio"));
    let _ = std::fs::remove_dir_all(&dir);
}

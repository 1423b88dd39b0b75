//! End-to-end: job files written the way fio's own examples are (regular-path filenames,
//! `/dev/X` outside the topology, every engine class, fio's value grammar), run by the real
//! `elevator` binary; and bad input refused in one line naming file, line and option.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn temp_file(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-intake-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("runs")
}

/// Runs a job file, expecting success; gives the JSON report and stderr.
fn run_json(name: &str, text: &str) -> (Value, String) {
    let path = temp_file(name, text);
    let out = elevator(&["run", path.to_str().unwrap(), "--output-format", "json"]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{name}: {stderr}");
    (serde_json::from_str(&String::from_utf8_lossy(&out.stdout)).expect("JSON"), stderr)
}

/// Runs a job file, expecting a refusal: exit 1 and one line on stderr.
fn refused(name: &str, text: &str) -> String {
    let path = temp_file(name, text);
    let out = elevator(&["run", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
    stderr
}

fn ios(report: &Value, job: usize, dir: &str) -> u64 {
    report["jobs"][job][dir]["total_ios"].as_u64().unwrap()
}

#[test]
fn regular_paths_are_files_on_the_default_device_and_never_written() {
    let real = std::env::temp_dir().join(format!("elevator-never-{}", std::process::id()));
    let _ = std::fs::remove_file(&real);
    let text = format!(
        "[global]\nioengine=psync\ndirect=1\nbs=64k\n\
         [w]\nfilename={}\nrw=write\nsize=8m\n\
         [r]\nstonewall\nfilename={}\nrw=read\nsize=8m\n\
         [d]\ndirectory=/data1\nrw=read\nsize=4m\n",
        real.display(),
        real.display()
    );
    let (report, _) = run_json("paths.fio", &text);
    assert_eq!(ios(&report, 0, "write"), 128);
    assert_eq!(ios(&report, 1, "read"), 128);
    assert_eq!(ios(&report, 2, "read"), 64);
    assert!(!real.exists(), "elevator created the real file");

    // No size= and no such file: a 1 GiB file, said in a warning.
    let (report, stderr) = run_json(
        "nosize.fio",
        "[r]\nfilename=/nonexistent/elevator/file\nrw=read\nbs=1m\ndirect=1\n",
    );
    assert_eq!(ios(&report, 0, "read"), 1024);
    assert!(stderr.contains("does not exist and the job gives no size="), "{stderr}");
}

#[test]
fn unknown_dev_names_become_builtin_disks_with_one_warning_each() {
    let text = "[global]\nioengine=libaio\niodepth=4\ndirect=1\nrw=randread\nsize=4m\n\
                [a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme0n1\n[c]\nfilename=/dev/sdq\n";
    let (report, stderr) = run_json("devs.fio", text);
    assert_eq!(stderr.matches("simulated as a disk like `sda`").count(), 2, "{stderr}");
    assert!(stderr.contains("`/dev/nvme0n1`") && stderr.contains("`/dev/sdq`"), "{stderr}");
    let devices: Vec<&str> = report["elevator"]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(devices.contains(&"nvme0n1") && devices.contains(&"sdq"), "{devices:?}");
}

#[test]
fn every_engine_class_runs() {
    for engine in
        ["sg", "mmap", "libzbc", "io_uring_cmd", "posixaio", "xnvme", "null", "cpuio", "page_fault"]
    {
        let text = format!(
            "[j]\nioengine={engine}\niodepth=8\ndirect=1\nrw=randread\nbs=4k\nsize=1m\nruntime=1\n\
             cpuload=50\n"
        );
        let (report, _) = run_json(&format!("eng-{engine}.fio"), &text);
        let job = &report["jobs"][0];
        if engine == "cpuio" {
            // It burns half a CPU in 50 ms chunks, each reported as a read of no bytes
            // (as fio 3.33 reports them): 10 in the second.
            assert_eq!(job["read"]["total_ios"].as_u64(), Some(10), "{engine}");
            assert_eq!(job["read"]["io_bytes"].as_u64(), Some(0), "{engine}");
            let usr = job["usr_cpu"].as_f64().unwrap();
            assert!((49.0..=51.0).contains(&usr), "cpuio usr_cpu {usr}");
        } else {
            assert!(job["read"]["total_ios"].as_u64().unwrap() > 0, "{engine}");
        }
    }
    // The null engine never reaches a disk: a GiB of random 4 KiB reads in well under a
    // simulated second.
    let (report, _) = run_json("null.fio", "[n]\nioengine=null\nrw=randread\nbs=4k\nsize=1g\n");
    assert_eq!(ios(&report, 0, "read"), 262_144);
    assert!(report["jobs"][0]["read"]["runtime"].as_u64().unwrap() < 1_000);
}

#[test]
fn fio_value_grammar() {
    let text = "[global]\nioengine=libaio\ndirect=1\nfilename=sda\n\
                [a]\nbs=$pagesize\nsize=(64k*4)\nrw=read:-8k\nnumjobs=$ncpus\n\
                [b]\nsize=2*1024*$pagesize ; eight MiB\nrw=trimwrite\nbs=1m\n\
                [c]\nzonemode=strided\nzonesize=1m\noffset=4z\nsize=2z\nrw=read\nbs=1m\ntime_based\nthreads=1\n";
    let (report, stderr) = run_json("grammar.fio", text);
    let jobs = report["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 4, "numjobs=$ncpus is 2 on the built-in machine");
    assert_eq!(ios(&report, 0, "read"), 64);
    assert_eq!(ios(&report, 2, "write"), 8);
    assert_eq!(ios(&report, 3, "read"), 2);
    assert!(stderr.contains("time_based without runtime="), "{stderr}");
    assert!(stderr.contains("trimwrite"), "{stderr}");
}

#[test]
fn bad_input_is_one_line_naming_file_line_and_option() {
    let e = refused("div0.fio", "[j]\nfilename=sda\nsize=(1g/0)\n");
    assert!(e.contains("div0.fio:3: option `size`") && e.contains("divides by zero"), "{e}");
    let e = refused("undef.fio", "[j]\nfilename=sda\n\nbs=$blocksize\n");
    assert!(
        e.contains("undef.fio:4: option `bs`") && e.contains("`$blocksize` is not defined"),
        "{e}"
    );
    let e = refused("engine.fio", "[j]\nioengine=warp9\n");
    assert!(e.contains("engine.fio:2: option `ioengine`") && e.contains("not a fio engine"), "{e}");
    for net in ["net", "http", "rdma", "libiscsi", "nbd", "rbd"] {
        let e = refused("net.fio", &format!("[j]\nioengine={net}\n"));
        assert!(e.contains(&format!("the `{net}` engine talks to a network")), "{e}");
    }
}

#[test]
fn cmdprio_reaches_the_schedulers_priority_levels() {
    let ios = |pct: u32| {
        let text = format!(
            "[global]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=16\nrw=randread\n\
             runtime=5\ntime_based\n[rt]\ncmdprio_percentage={pct}\ncmdprio_class=1\n[be]\n"
        );
        let (report, _) = run_json(&format!("cmdprio-{pct}.fio"), &text);
        (ios(&report, 0, "read"), ios(&report, 1, "read"))
    };
    // mq-deadline serves the real-time requests first; without them the two jobs share.
    let (rt, be) = ios(100);
    assert!(rt > 10 * be, "{rt} vs {be}");
    let (a, b) = ios(0);
    assert!(a.abs_diff(b) * 10 < a + b, "{a} vs {b}");
}

#[test]
fn cmdprio_bssplit_gives_priorities_by_block_size() {
    // One job reads 4 KiB and 64 KiB blocks half and half; with cmdprio_bssplit its 64 KiB
    // reads are real-time, and mq-deadline serves them before the best-effort reader's.
    let run = |split: &str| {
        let text = format!(
            "[global]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=16\nrw=randread\n\
             runtime=5\ntime_based\n[mixed]\nbssplit=4k/50:64k/50\n{split}\n[be]\nbs=64k\n"
        );
        let (report, _) = run_json("cmdprio-bssplit.fio", &text);
        (ios(&report, 0, "read"), ios(&report, 1, "read"))
    };
    let (mixed, be) = run("cmdprio_bssplit=64k/100/1/0");
    let (mixed0, be0) = run("");
    eprintln!("with cmdprio_bssplit: mixed {mixed}, be {be}; without: {mixed0}, {be0}");
    assert!(be * 10 < be0 * 8, "the best-effort reader keeps {be} of {be0} I/Os");
    assert!(mixed > mixed0, "{mixed} vs {mixed0}");
    let e =
        refused("both.fio", "[j]\nfilename=sda\ncmdprio_percentage=10\ncmdprio_bssplit=4k/10\n");
    assert!(e.contains("mutually exclusive"), "{e}");
}

#[test]
fn latency_target_searches_the_deepest_queue_that_meets_it() {
    // On the built-in disk, 64 random reads in flight take far longer than 40 ms; fio's
    // search settles on a shallow depth whose p90 is within the target, reruns one window at
    // it and ends long before the 60 s runtime.
    let text = "[global]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=64\nrw=randread\n\
                bs=4k\nruntime=60\ntime_based\n[search]\nlatency_target=40ms\n\
                latency_window=500ms\nlatency_percentile=90\n";
    let (report, _) = run_json("latency-target.fio", text);
    let job = &report["jobs"][0];
    let depth = job["latency_depth"].as_u64().unwrap();
    let p90 = job["read"]["clat_ns"]["percentile"]["90.000000"].as_u64().unwrap();
    eprintln!("latency_depth {depth}, p90 {p90} ns, runtime {} ms", job["job_runtime"]);
    assert!((1..64).contains(&depth), "depth {depth}");
    assert!(p90 <= 40_000_000, "p90 {p90} ns against the 40 ms target");
    assert!(job["job_runtime"].as_u64().unwrap() < 10_000, "{}", job["job_runtime"]);
    assert_eq!(job["latency_target"], 40_000);
    assert_eq!(job["latency_window"], 500_000);
    assert_eq!(job["latency_percentile"], 90.0);
    let e = refused("bad.fio", "[j]\nfilename=sda\nlatency_percentile=101\n");
    assert!(e.contains("latency_percentile"), "{e}");
}

#[test]
fn filesize_sizes_the_file_and_caps_size() {
    // As fio's examples/enospc-pressure.fio: size= far beyond the device, filesize= the file.
    let (json, _) = run_json(
        "filesize.fio",
        "[w]\ndirectory=/scratch\nfilename=data\nfilesize=64m\nsize=999G\nrw=write\nbs=1m\n\
         direct=1\n",
    );
    assert_eq!(json["jobs"][0]["write"]["io_bytes"].as_u64(), Some(64 << 20));
}

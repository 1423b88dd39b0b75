//! elevator's `json` and `json+` against real fio 3.33 output on the same job files.
//!
//! `tests/fixtures/fio-3.33/` holds three small job files and what fio 3.33 printed for them
//! (`fio --output-format=json|json+ JOB`, on a 16 MiB file): psync random reads, libaio randrw
//! with numjobs=2, and group_reporting over a libaio and a psync job. Consumers of fio's JSON
//! walk its keys, so the key tree must be the same; values differ (a simulated disk). The one
//! addition is elevator's own top-level `elevator` object.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use elevator_sim::stats::{fio_plat_idx_to_val, fio_plat_val_to_idx};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-3.33")
}

/// Every path of keys down to the leaves; maps keyed by numbers or names chosen by the job
/// (percentiles, bins, options) count as one leaf, and array elements share a path.
fn key_tree(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            if path.ends_with("percentile") || path.ends_with("bins") || path.ends_with("options") {
                out.insert(format!("{path}{{}}"));
                return;
            }
            for (k, x) in map {
                if path.is_empty() && k == "elevator" {
                    continue;
                }
                key_tree(x, &format!("{path}/{k}"), out);
            }
        }
        Value::Array(items) => {
            for x in items {
                key_tree(x, &format!("{path}[]"), out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

fn tree_of(v: &Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    key_tree(v, "", &mut out);
    out
}

fn elevator_json(job: &str, format: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", fixtures().join(job).to_str().unwrap(), "--output-format", format])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{job}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("valid JSON")
}

fn fio_json(name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join(name)).unwrap()).unwrap()
}

#[test]
fn json_and_json_plus_key_trees_match_fio_3_33() {
    for job in ["psync-randread", "libaio-randrw", "group-reporting"] {
        for (format, suffix) in [("json", "json"), ("json+", "json+.json")] {
            let fio = tree_of(&fio_json(&format!("{job}.{suffix}")));
            let ours = tree_of(&elevator_json(&format!("{job}.fio"), format));
            let missing: Vec<_> = fio.difference(&ours).collect();
            let extra: Vec<_> = ours.difference(&fio).collect();
            assert!(
                missing.is_empty() && extra.is_empty(),
                "{job} {format}: missing {missing:?}, extra {extra:?}"
            );
        }
    }
}

#[test]
fn json_plus_bins_are_fio_buckets_that_add_up_to_the_ios() {
    let report = elevator_json("libaio-randrw.fio", "json+");
    for job in report["jobs"].as_array().unwrap() {
        for dir in ["read", "write"] {
            let d = &job[dir];
            let bins = d["clat_ns"]["bins"].as_object().unwrap();
            let mut last = 0;
            let mut total = 0;
            for (k, n) in bins {
                let ns: u64 = k.parse().unwrap();
                assert!(ns > last, "bins ascend");
                assert_eq!(fio_plat_idx_to_val(fio_plat_val_to_idx(ns)), ns, "{ns} is a bucket");
                last = ns;
                total += n.as_u64().unwrap();
            }
            assert_eq!(total, d["total_ios"].as_u64().unwrap());
        }
    }
    // Real fio's bins obey the same layout.
    let fio = fio_json("libaio-randrw.json+.json");
    for (k, _) in fio["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap() {
        let ns: u64 = k.parse().unwrap();
        assert_eq!(fio_plat_idx_to_val(fio_plat_val_to_idx(ns)), ns, "fio's {ns}");
    }
}

#[test]
fn comma_joined_formats_print_each() {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "run",
            fixtures().join("psync-randread.fio").to_str().unwrap(),
            "--output-format",
            "normal,json",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let brace = text.find("\n{\n").expect("the JSON follows the normal text");
    assert!(text[..brace].contains("psync-randread: (g=0)"), "{text}");
    let _: Value = serde_json::from_str(&text[brace + 1..]).expect("valid JSON");
}

#[test]
fn submission_figures_as_fio_reports_them() {
    // psync: no submission latency, one I/O per submission and per reap.
    let report = elevator_json("psync-randread.fio", "json");
    let job = &report["jobs"][0];
    assert_eq!(job["read"]["slat_ns"]["N"], 0);
    assert_eq!(job["iodepth_submit"]["4"], 100.0);
    assert_eq!(job["iodepth_complete"]["4"], 100.0);
    // group_reporting: job_runtime is the members' runtimes added up (two libaio readers and
    // a psync writer: fio 3.33's fixture has 645 ms against a read runtime of 172); the
    // writer's psync writes carry no slat, the libaio reads do.
    let report = elevator_json("group-reporting.fio", "json");
    let job = &report["jobs"][0];
    let runtime = job["read"]["runtime"].as_u64().unwrap();
    assert!(job["job_runtime"].as_u64().unwrap() > 2 * runtime, "{job}");
    assert_eq!(job["write"]["slat_ns"]["N"], 0);
    assert_eq!(job["read"]["slat_ns"]["N"], job["read"]["total_ios"]);
}

#[test]
fn the_null_engine_is_synchronous_at_depth_one_as_real_fio_s() {
    // null_init makes the engine FIO_SYNCIO at iodepth=1: no slat, and (its commit hook
    // never called) no submit or complete batches; deeper, it queues and has both.
    for depth in [1, 4] {
        let job = format!("[n]\nioengine=null\nrw=randread\nbs=4k\nsize=8m\niodepth={depth}\n");
        let (fio, ours) = both(&job, "json");
        let figures = |text: &str| {
            let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            let job = &v["jobs"][0];
            (
                job["read"]["slat_ns"]["N"].as_u64().unwrap() > 0,
                job["iodepth_submit"].clone(),
                job["iodepth_complete"].clone(),
            )
        };
        assert_eq!(figures(&ours), figures(&fio), "iodepth={depth}");
    }
}

#[test]
fn io_depths_are_fio_s_shares_syncs_included() {
    // fio marks each I/O at its queue's depth, io_us done but not reaped included, and
    // divides by the data I/Os alone: a psync writer's syncs lift depth 1 past 100 %, an
    // end_fsync is not marked, and a libaio writer's inline syncs leave its queue full.
    let jobs = [
        "rw=randwrite\nfsync=8",
        "rw=write\nend_fsync=1",
        "rw=write\nioengine=libaio\niodepth=4\ndirect=1\nfdatasync=16\nend_fsync=1",
    ];
    for options in jobs {
        let job = format!("[j]\nfilename=depths.dat\nsize=4m\nbs=4k\n{options}\n");
        let (fio, ours) = both(&job, "json");
        let depths = |text: &str| {
            let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            v["jobs"][0]["iodepth_level"].clone()
        };
        assert_eq!(depths(&ours), depths(&fio), "{options}");
    }
}

#[test]
fn terse_lines_have_fio_3_33s_fields() {
    let fio = std::fs::read_to_string(fixtures().join("psync-randread.terse")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args([
            "run",
            fixtures().join("psync-randread.fio").to_str().unwrap(),
            "--output-format",
            "terse",
        ])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let ours = String::from_utf8(out.stdout).unwrap();
    let (f, o): (Vec<&str>, Vec<&str>) =
        (fio.trim_end().split(';').collect(), ours.trim_end().split(';').collect());
    assert_eq!(f.len(), o.len(), "{ours}");
    assert_eq!((o[0], o[2], o[3]), ("3", "psync-randread", "0"));
    for i in 0..f.len() {
        // Same kind of field everywhere: a percentile `P%=v`, a percentage, a number, a name.
        let kind = |s: &str| (s.contains("%="), s.ends_with('%'), s.parse::<f64>().is_ok());
        if i != 1 && i != 121 {
            assert_eq!(kind(f[i]), kind(o[i]), "field {}: fio {} elevator {}", i + 1, f[i], o[i]);
        }
    }
    assert_eq!(o[5], "16384", "KiB read");
}

/// A reader and a writer in one group, then a job `exitall` stops before it starts: the group
/// lines and the group's aggregate (each job's `per=`) count each direction's movers only (fio's __show_run_stats: the writer is not the
/// reads' 0 B/s, nor its runtime theirs), and terse's latency fields are the text's shares
/// with the nanosecond buckets folded into the first (null-engine I/Os take nanoseconds:
/// about 100 %), `-nan%` for the job that did nothing, as real fio prints them.
#[test]
fn group_lines_and_terse_latencies_as_real_fio_s() {
    let job = "[global]\nioengine=null\nbs=4k\n[r]\nrw=read\nsize=64m\n[w]\nrw=write\nsize=16m\n";
    let (fio, ours) = both(job, "normal");
    for (who, text) in [("fio", &fio), ("elevator", &ours)] {
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(": bw=")).collect();
        assert_eq!(lines.len(), 2, "{who}:\n{text}");
        for l in lines {
            // One job moved data each way: its bandwidth is the range's both ends, its
            // runtime the run's.
            let range = l.split("), ").nth(1).unwrap().split(" (").next().unwrap();
            let (lo, hi) = range.split_once('-').unwrap();
            let (a, b) =
                l.split("run=").nth(1).unwrap().trim_end_matches("msec").split_once('-').unwrap();
            assert!(lo == hi && a == b, "{who}: {l}");
        }
    }
    // Two writers of 1 s beside a reader of 2 s: each writer's share of its group's write
    // bandwidth (`per=`) is over the writers' own runtime, half each (was 100 %: the
    // reader's 2 s halved the aggregate).
    let job = "[global]\nioengine=null\nbs=4k\nsize=1g\nrate_iops=1000\ntime_based\n\
               [r]\nrw=read\nruntime=2\n[w]\nrw=write\nruntime=1\nnumjobs=2\n";
    let (fio, ours) = both(job, "normal");
    for (who, text) in [("fio", &fio), ("elevator", &ours)] {
        let shares: Vec<f64> = text
            .lines()
            .filter_map(|l| l.split("per=").nth(1))
            .map(|p| p.split('%').next().unwrap().parse().unwrap())
            .collect();
        assert_eq!(shares.len(), 3, "{who}:\n{text}");
        assert!(shares[1..].iter().all(|p| (45.0..55.0).contains(p)), "{who}: {shares:?}");
    }
    let job =
        "[global]\nioengine=null\nbs=4k\nsize=16m\nrw=read\n[r]\nexitall\n[late]\nstartdelay=5\n";
    let (fio, ours) = both(job, "terse");
    for (who, text) in [("fio", &fio), ("elevator", &ours)] {
        let first_latency = |name: &str| -> String {
            let line = text.lines().find(|l| l.split(';').nth(2) == Some(name)).unwrap();
            line.split(';').nth(99).unwrap().to_string()
        };
        let r = first_latency("r");
        assert!(r.trim_end_matches('%').parse::<f64>().unwrap() >= 99.0, "{who}: {text}");
        assert_eq!(first_latency("late"), "-nan%", "{who}: {text}");
    }
}

/// A buffered libaio job: the kernel runs each write inside io_submit, and fio reaps only
/// once its `iodepth` io_us are in use, the oldest first. So its depth is `iodepth`, `slat`
/// is the call and `clat` the wait behind the calls after it (about three at depth 4), as
/// real fio reports them (elevator had depth 1, no slat and the call as `clat`).
#[test]
fn buffered_libaio_reports_depth_and_latency_as_real_fio() {
    let job = "[j]\nfilename=buffered-libaio.dat\nsize=16m\nbs=4k\nrw=randwrite\nioengine=libaio\niodepth=4\n";
    let (fio, ours) = both(job, "json");
    let of = |text: &str| -> (Value, f64, f64) {
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let w = &v["jobs"][0]["write"];
        let mean = |k: &str| w[k]["mean"].as_f64().unwrap();
        (v["jobs"][0]["iodepth_level"].clone(), mean("slat_ns"), mean("clat_ns"))
    };
    let (fio_depths, fio_slat, fio_clat) = of(&fio);
    let (depths, slat, clat) = of(&ours);
    assert_eq!(depths, fio_depths);
    assert!(depths["4"].as_f64().unwrap() > 99.0, "{depths}");
    assert!(fio_slat > 0.0 && fio_clat > fio_slat, "fio: slat {fio_slat} clat {fio_clat}");
    assert!(slat > 0.0 && (2.5..3.5).contains(&(clat / slat)), "slat {slat} clat {clat}");
}

/// A buffered io_uring reader of cached pages: each read is done inside io_uring_enter,
/// and fio reaps only once its `iodepth` io_us are in use. So, as for libaio, its depth is
/// `iodepth`, `slat` the call and `clat` the wait behind the calls after it, as real fio
/// reports them (elevator had depth 1, no slat and the call as `clat`).
#[test]
fn buffered_io_uring_reports_depth_and_latency_as_real_fio() {
    let job = "[j]\nfilename=buffered-uring.dat\nsize=16m\nbs=4k\nrw=randread\nioengine=io_uring\niodepth=4\npre_read=1\nruntime=1\ntime_based\n";
    let (fio, ours) = both(job, "json");
    let of = |text: &str| -> (Value, f64, f64) {
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let r = &v["jobs"][0]["read"];
        let mean = |k: &str| r[k]["mean"].as_f64().unwrap();
        (v["jobs"][0]["iodepth_level"].clone(), mean("slat_ns"), mean("clat_ns"))
    };
    let (fio_depths, fio_slat, fio_clat) = of(&fio);
    let (depths, slat, clat) = of(&ours);
    // The same depths to a tenth of a percent (the runs' I/O counts differ).
    let tenths = |d: &Value| -> Vec<(String, i64)> {
        let m = d.as_object().unwrap();
        m.iter().map(|(k, x)| (k.clone(), (x.as_f64().unwrap() * 10.0).round() as i64)).collect()
    };
    assert_eq!(tenths(&depths), tenths(&fio_depths), "{depths} against fio's {fio_depths}");
    assert!(depths["4"].as_f64().unwrap() > 99.0, "{depths}");
    assert!(fio_slat > 0.0 && fio_clat > fio_slat, "fio: slat {fio_slat} clat {fio_clat}");
    assert!(slat > 0.0 && (2.5..3.5).contains(&(clat / slat)), "slat {slat} clat {clat}");
}

/// Buffered io_uring writes go to io-wq's worker for the file: fio submits each in a
/// microsecond or two and keeps its `iodepth` io_us busy, the writes done one after another
/// behind it, as real fio reports them (elevator had depth 1 and the call as `clat`).
#[test]
fn buffered_io_uring_writes_report_depth_and_latency_as_real_fio() {
    let job = "[j]\nfilename=buffered-uring-w.dat\nsize=16m\nbs=4k\nrw=randwrite\nioengine=io_uring\niodepth=4\n";
    let (fio, ours) = both(job, "json");
    for (who, text) in [("fio", &fio), ("elevator", &ours)] {
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let w = &v["jobs"][0]["write"];
        let mean = |k: &str| w[k]["mean"].as_f64().unwrap();
        let depths = &v["jobs"][0]["iodepth_level"];
        assert!(depths["4"].as_f64().unwrap() > 99.0, "{who}: {depths}");
        let (slat, clat) = (mean("slat_ns"), mean("clat_ns"));
        assert!(slat > 0.0 && clat > 3.0 * slat, "{who}: slat {slat} clat {clat}");
    }
}

/// fio's reset_io_stats at the ramp's end clears the depth map with the other statistics, so
/// the depths are those of the I/Os after it (about 100 % in all); elevator kept the ramp's
/// (1=150.0% for a psync reader ramping for half its time).
#[test]
fn depths_after_a_ramp_are_the_run_s_alone_as_real_fio_s() {
    let job = "[j]\nioengine=null\nrw=read\nbs=4k\nsize=1g\ntime_based\nruntime=1\nramp_time=1\nrate_iops=500\n";
    let (fio, ours) = both(job, "json");
    for (who, text) in [("fio", &fio), ("elevator", &ours)] {
        let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
        let depths = &v["jobs"][0]["iodepth_level"];
        let all: f64 = depths.as_object().unwrap().values().map(|x| x.as_f64().unwrap()).sum();
        assert!((99.0..=100.5).contains(&all), "{who}: {depths}");
    }
}

/// Disk statistics only for jobs with disks: none for the null engine (FIO_DISKLESSIO) nor
/// for a job with `disk_util=0`, text, JSON and terse alike; a job on a file has them.
/// elevator printed its topology's disks and a `(null-engine)` device for every run.
#[test]
fn disk_statistics_only_where_real_fio_has_them() {
    for (job, disks) in [
        ("[j]\nioengine=null\nsize=1m\n", false),
        ("[j]\nfilename=disk-util.dat\nsize=1m\ndisk_util=0\n", false),
        ("[j]\nfilename=disk-util.dat\nsize=1m\n", true),
    ] {
        let (fio, ours) = both(job, "normal");
        for (who, text) in [("fio", &fio), ("elevator", &ours)] {
            assert_eq!(text.contains("Disk stats"), disks, "{who}: {job}\n{text}");
        }
        let (fio, ours) = both(job, "json");
        for (who, text) in [("fio", &fio), ("elevator", &ours)] {
            let v: Value = serde_json::from_str(&text[text.find('{').unwrap()..]).unwrap();
            assert_eq!(v.get("disk_util").is_some(), disks, "{who}: {job}");
        }
        // Terse: 130 fields with one disk's nine, 121 without.
        let (fio, ours) = both(job, "terse");
        for (who, text) in [("fio", &fio), ("elevator", &ours)] {
            let fields = text.trim_end().split(';').count();
            assert_eq!(fields == 121, !disks, "{who}: {fields} fields: {text}");
        }
    }
}

/// fio writes `global options` and a job's `job options` only when there are some
/// (json_add_job_opts): no [global] section, no object; a section that sets nothing, none.
#[test]
fn option_objects_only_where_options_are_as_real_fio_s() {
    let keys = |json: &str| -> (bool, Vec<bool>) {
        let v: Value = serde_json::from_str(&json[json.find('{').unwrap()..]).unwrap();
        let jobs = v["jobs"].as_array().unwrap();
        (
            v.get("global options").is_some(),
            jobs.iter().map(|j| j.get("job options").is_some()).collect(),
        )
    };
    for (job, expected) in [
        ("[a]\nioengine=null\nsize=1m\n", (false, vec![true])),
        ("[global]\nioengine=null\nsize=1m\n[b]\n[c]\nbs=8k\n", (true, vec![false, true])),
    ] {
        let (fio, ours) = both(job, "json");
        assert_eq!(keys(&fio), expected, "fio: {job}");
        assert_eq!(keys(&ours), expected, "elevator: {job}");
    }
}

/// What real fio (installed by setup.sh) and elevator print for `job`, in `format`.
fn both(job: &str, format: &str) -> (String, String) {
    let dir = std::env::temp_dir().join(format!("elevator-percentiles-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Tests run side by side: one file per job text.
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    std::hash::Hash::hash(job, &mut hasher);
    let file = dir.join(format!("{:x}.fio", std::hash::Hasher::finish(&hasher)));
    std::fs::write(&file, job).unwrap();
    let run = |program: &str, args: &[&str]| {
        let out = Command::new(program)
            .args(args)
            .arg(format!("--output-format={format}"))
            .arg(&file)
            .current_dir(&dir)
            .output()
            .expect("runs (setup.sh installs fio)");
        assert!(out.status.success(), "{program}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let fio = run("fio", &[]);
    let ours = run(env!("CARGO_BIN_EXE_elevator"), &["run"]);
    (fio, ours)
}

/// The percentile keys of each latency object of the first job's reads.
fn percentile_keys(json: &str) -> Vec<(String, Vec<String>)> {
    let v: Value = serde_json::from_str(&json[json.find('{').unwrap()..]).unwrap();
    let read = &v["jobs"][0]["read"];
    ["slat_ns", "clat_ns", "lat_ns"]
        .iter()
        .map(|k| {
            let keys = read[k]["percentile"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            (k.to_string(), keys)
        })
        .collect()
}

#[test]
fn percentile_options_report_as_real_fio_does() {
    // A custom list, out of order, with total latency percentiles as well.
    let job = "[r]\nioengine=null\nrw=randread\nbs=4k\nsize=16m\npercentile_list=50:99.9:99:10\nlat_percentiles=1\n";
    let (fio, ours) = both(job, "json");
    assert_eq!(percentile_keys(&ours), percentile_keys(&fio));
    assert_eq!(percentile_keys(&fio)[1].1, ["10.000000", "50.000000", "99.000000", "99.900000"]);
    // The text report: the same headers, and each percentile with one decimal, as fio.
    let (fio, ours) = both(job, "normal");
    let labels = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| l.contains("percentiles (") || l.contains("th=["))
            .flat_map(|l| {
                if l.contains("percentiles (") {
                    vec![l.trim().split(" (").next().unwrap().to_string()]
                } else {
                    l.split_whitespace()
                        .filter_map(|t| t.split_once("th=[").map(|(p, _)| p.to_string()))
                        .collect()
                }
            })
            .collect()
    };
    assert_eq!(labels(&ours), labels(&fio), "elevator:\n{ours}\nfio:\n{fio}");
    assert!(ours.contains("| 10.0th=["), "{ours}");
    // Terse: the list's labels in the percentile fields, the rest `0%=0`.
    let (fio, ours) = both(job, "terse");
    let pct = |line: &str| -> Vec<String> {
        line.split(';')
            .filter(|f| f.contains("%="))
            .map(|f| f.split('=').next().unwrap().to_string())
            .collect()
    };
    assert_eq!(pct(&ours), pct(&fio));
    // clat_percentiles=0: no percentiles anywhere.
    let job = "[r]\nioengine=null\nrw=randread\nbs=4k\nsize=16m\nclat_percentiles=0\n";
    let (fio, ours) = both(job, "json");
    assert_eq!(percentile_keys(&ours), percentile_keys(&fio));
    assert!(percentile_keys(&ours).iter().all(|(_, k)| k.is_empty()));
}

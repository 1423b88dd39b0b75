//! `elevator calibrate` end to end on a plain file of this machine, with a short budget: the
//! numbers are checked for sanity only (whatever disk CI has), the topology must run, and the
//! refusals must say what is wrong.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("runs")
}

fn scratch(name: &str) -> PathBuf {
    // Beside the build, on a disk's file system (not tmpfs).
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("calibrate-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A file of `mib` MiB of non-zero data, on the disk.
fn data_file(dir: &Path, mib: usize) -> PathBuf {
    let p = dir.join("target.img");
    let mut f = std::fs::File::create(&p).unwrap();
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let chunk: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for _ in 0..mib {
        f.write_all(&chunk).unwrap();
    }
    f.sync_all().unwrap();
    p
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn calibrates_a_plain_file_and_the_topology_runs() {
    let dir = scratch("file");
    let file = data_file(&dir, 96);
    let topo = dir.join("cal.toml");
    let plots = dir.join("plots");
    let out = elevator(&[
        "calibrate",
        file.to_str().unwrap(),
        "--budget",
        "4s",
        "--topology",
        topo.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
        "--name",
        "cal0",
        "--record",
        dir.join("rec.json").to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    let err = stderr(&out);
    if !out.status.success() && err.contains("O_DIRECT") {
        eprintln!("skipping: this file system refuses O_DIRECT: {err}");
        return;
    }
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(["hdd", "ssd", "nvme"].contains(&v["model"].as_str().unwrap()), "{v}");
    let qd1 = v["measured"]["qd1_4k_read_us"].as_f64().unwrap();
    assert!(qd1 > 0.5 && qd1 < 1e6, "QD1 4 KiB read {qd1} µs");
    for pt in v["measured"]["iops_by_depth"].as_array().unwrap() {
        assert!(pt[1].as_f64().unwrap() > 0.0, "{pt}");
    }
    let cells = v["holdout"].as_array().unwrap();
    assert_eq!(cells.len(), 6);
    for c in cells {
        assert!(c["ios"].as_u64().unwrap() > 0, "{c}");
        assert!(c["iops_device"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["iops_model"].as_f64().unwrap() > 0.0, "{c}");
        assert!(c["demerit_ms"].as_f64().unwrap().is_finite(), "{c}");
        assert!(plots.join(format!("{}.svg", c["cell"].as_str().unwrap())).is_file());
    }
    let line = v["iocost_model"].as_str().unwrap();
    for k in ["rbps=", "rseqiops=", "rrandiops=", "wbps=", "wseqiops=", "wrandiops="] {
        assert!(line.contains(k), "{line}");
    }
    // The topology is one `elevator run` accepts, and its device serves a job.
    let job = dir.join("check.fio");
    std::fs::write(
        &job,
        "[r]\nfilename=cal0\nrw=randread\nbs=4k\niodepth=4\nioengine=io_uring\ndirect=1\nsize=64m\nruntime=0.2\ntime_based\n",
    )
    .unwrap();
    let out = elevator(&[
        "run",
        job.to_str().unwrap(),
        "--topology",
        topo.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["jobs"][0]["read"]["iops"].as_f64().unwrap() > 0.0);
    // The recording calibrates again, with no device, to the same topology and error.
    let again = dir.join("again.toml");
    let out = elevator(&[
        "calibrate",
        "--replay",
        dir.join("rec.json").to_str().unwrap(),
        "--topology",
        again.to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&topo).unwrap(), std::fs::read_to_string(&again).unwrap());
    let w: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(w["holdout"], v["holdout"]);
    assert_eq!(w["target"], v["target"]);
    // A device and a recording at once is refused.
    let out = elevator(&["calibrate", file.to_str().unwrap(), "--replay", "x.json"]);
    assert!(!out.status.success() && stderr(&out).contains("--replay"), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn refuses_what_it_cannot_measure() {
    let dir = scratch("refuse");
    let small = dir.join("small");
    std::fs::write(&small, vec![1u8; 1 << 20]).unwrap();
    let o = elevator(&["calibrate", small.to_str().unwrap(), "--budget", "1s"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("too small") || stderr(&o).contains("O_DIRECT"), "{}", stderr(&o));

    let sparse = dir.join("sparse");
    std::fs::File::create(&sparse).unwrap().set_len(128 << 20).unwrap();
    let o = elevator(&["calibrate", sparse.to_str().unwrap(), "--budget", "1s"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("hole") || stderr(&o).contains("O_DIRECT"), "{}", stderr(&o));

    let o = elevator(&["calibrate", small.to_str().unwrap(), "--budget", "3 days"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--budget"), "{}", stderr(&o));

    let o = elevator(&["calibrate", dir.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("neither a block device nor a regular file"), "{}", stderr(&o));

    // The block device holding the root file system is mounted: refused, read-only or not.
    let root =
        std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default().lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let dash = f.iter().position(|x| *x == "-")?;
            (f.get(4) == Some(&"/")).then(|| f.get(dash + 2).map(|s| s.to_string())).flatten()
        });
    if let Some(dev) = root.filter(|d| d.starts_with("/dev/") && Path::new(d).exists()) {
        for extra in [&[][..], &["--write"][..]] {
            let mut args = vec!["calibrate", dev.as_str(), "--budget", "1s"];
            args.extend_from_slice(extra);
            let o = elevator(&args);
            assert!(!o.status.success(), "{dev} {extra:?} was not refused");
            let e = stderr(&o);
            assert!(e.contains("mounted") || e.contains("in use") || e.contains("denied"), "{e}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_page_cache_file_system_is_refused_or_reported() {
    // tmpfs: either no O_DIRECT at all (refused), or O_DIRECT accepted but served from memory
    // (Linux 6.6 and later): then the page-cache check must say so.
    let shm = Path::new("/dev/shm");
    if !shm.is_dir() {
        return;
    }
    let dir = shm.join(format!("elevator-calibrate-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let file = data_file(&dir, 64);
    let topo = dir.join("cal.toml");
    let o = elevator(&[
        "calibrate",
        file.to_str().unwrap(),
        "--budget",
        "2s",
        "--topology",
        topo.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    let all = format!("{}{}", String::from_utf8_lossy(&o.stdout), stderr(&o));
    if o.status.success() {
        assert!(all.contains("O_DIRECT was not honoured"), "{all}");
    } else {
        assert!(all.contains("O_DIRECT"), "{all}");
    }
}

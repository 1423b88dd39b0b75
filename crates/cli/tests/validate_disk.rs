//! `elevator validate-disk` end to end, on the DiskSim validation drives when present.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn data_dir() -> Option<PathBuf> {
    let p = elevator_disksim::validation_drives_dir(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim"),
    );
    if p.join("barracuda").is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: DiskSim data not found at {}", p.display());
        None
    }
}

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).args(args).output().expect("runs")
}

#[test]
fn json_fields_access_times_and_plot() {
    let Some(d) = data_dir() else { return };
    let drive = d.join("barracuda");
    let tmp = std::env::temp_dir().join(format!("elevator-vd-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let times = tmp.join("times.txt");
    let plot = tmp.join("cdf.svg");
    let out = elevator(&[
        "validate-disk",
        "--drive",
        drive.to_str().unwrap(),
        "--output-format",
        "json",
        "--access-times",
        times.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["requests"], 10_000);
    let rms = v["rms_ms"].as_f64().unwrap();
    assert!(rms > 0.0 && rms < 1.0, "{rms}");
    for side in ["measured", "simulated"] {
        for k in ["mean_ms", "median_ms", "p99_ms"] {
            assert!(v[side][k].as_f64().unwrap() > 0.0, "{side}.{k}");
        }
    }
    let lines: Vec<f64> =
        std::fs::read_to_string(&times).unwrap().lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(lines.len(), 10_000);
    assert!(lines.iter().all(|&us| us > 100.0 && us < 100_000.0));
    assert!(std::fs::read_to_string(&plot).unwrap().starts_with("<svg"));
    // Normal output carries the same demerit; an explicit --trace gives the same figure.
    let trace = drive.join("barracuda.trace");
    let out = elevator(&[
        "validate-disk",
        "--drive",
        drive.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&format!("rms demerit: {rms:.6} ms")), "{text}");
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn errors_name_the_file_and_line_and_exit_non_zero() {
    let out = elevator(&["validate-disk", "--drive", "/nonexistent/drive"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/drive"));
    let Some(d) = data_dir() else { return };
    let tmp = std::env::temp_dir().join(format!("elevator-vd-bad-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let bad = tmp.join("bad.trace");
    let drive = d.join("cheetah9LP");
    // Replays `text` as the trace: the run must fail, without a panic; returns its stderr.
    let failing = |text: &str| -> String {
        std::fs::write(&bad, text).unwrap();
        let out = elevator(&[
            "validate-disk",
            "--drive",
            drive.to_str().unwrap(),
            "--trace",
            bad.to_str().unwrap(),
        ]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!err.contains("panicked"), "{err}");
        err
    };
    let err = failing("R Hit 100 4 1000.0 2000.0\nX Hit 1 1 1 1\n");
    assert!(err.contains("bad.trace:2"), "{err}");
    let err = failing("R Hit 999999999 4 1000.0 2000.0\n");
    assert!(err.contains("bad.trace: line 1"), "{err}");
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn all_prints_one_table_of_every_drive_beside_disksim() {
    let Some(d) = data_dir() else { return };
    let dirs: Vec<String> = {
        let mut v: Vec<String> = std::fs::read_dir(&d)
            .unwrap()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let t0 = std::time::Instant::now();
    let out = elevator(&["validate-disk", "--all", d.to_str().unwrap(), "--output-format", "json"]);
    let elapsed = t0.elapsed();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // One optimised run over the ten drives takes well under the one second.
    if !cfg!(debug_assertions) {
        assert!(elapsed.as_secs_f64() < 1.0, "validate-disk --all took {elapsed:?}");
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let drives = v["drives"].as_array().unwrap();
    let names: Vec<&str> = drives.iter().map(|x| x["drive"].as_str().unwrap()).collect();
    assert_eq!(names, dirs.iter().map(String::as_str).collect::<Vec<_>>());
    for x in drives {
        let name = x["drive"].as_str().unwrap();
        let rms = x["rms_ms"].as_f64().unwrap();
        assert!(rms > 0.0 && rms < 1.0, "{name}: {rms}");
        assert!(x["requests"].as_u64().unwrap() > 1000, "{name}");
        // Every drive of DiskSim 4.0's validation set carries DiskSim's figure.
        let published = elevator_disksim::disksim_rms_ms(name);
        assert_eq!(x["disksim_rms_ms"].as_f64(), published, "{name}");
        for side in ["measured", "simulated"] {
            let s = &x[side];
            let (mean, median, p99) = (
                s["mean_ms"].as_f64().unwrap(),
                s["median_ms"].as_f64().unwrap(),
                s["p99_ms"].as_f64().unwrap(),
            );
            assert!(mean > 0.0 && median > 0.0 && median <= p99, "{name} {side}");
        }
    }
    // The table: a header, a line per drive with the same demerit, a closing count.
    let out = elevator(&["validate-disk", "--all", d.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // ... and a line for each drive DiskSim 4.0 aborts on.
    let aborted = drives
        .iter()
        .filter(|x| elevator_disksim::disksim_abort(x["drive"].as_str().unwrap()).is_some())
        .count();
    assert_eq!(lines.len(), drives.len() + 2 + aborted, "{text}");
    assert!(lines[0].starts_with("drive") && lines[0].contains("DiskSim"), "{text}");
    for (line, x) in lines[1..].iter().zip(drives) {
        let rms = x["rms_ms"].as_f64().unwrap();
        assert!(line.starts_with(x["drive"].as_str().unwrap()), "{line}");
        assert!(line.contains(&format!("{rms:.4}")), "{line}");
    }
    assert!(lines[drives.len() + 1].contains(&format!("{} drives", drives.len())), "{text}");
}

#[test]
fn all_refuses_a_directory_without_drives_and_single_drive_options() {
    let tmp = std::env::temp_dir().join(format!("elevator-vd-none-{}", std::process::id()));
    std::fs::create_dir_all(tmp.join("not-a-drive")).unwrap();
    let out = elevator(&["validate-disk", "--all", tmp.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no drives") && err.contains(tmp.to_str().unwrap()), "{err}");
    let out = elevator(&["validate-disk", "--all", tmp.to_str().unwrap(), "--trace", "x.trace"]);
    assert!(!out.status.success());
    let out = elevator(&["validate-disk"]);
    assert!(!out.status.success());
    std::fs::remove_dir_all(&tmp).ok();
}

/// DiskSim's `valid/` as it is: many drives' files side by side, each `NAME.parv` beside its
/// `NAME.trace`, and `.parv` files for other workloads. A drive is then named by its `.parv`
/// file, a directory of several is refused, and `--all` takes the drives with a validation
/// trace.
#[test]
fn a_drive_is_its_parv_file_and_all_reads_disksims_own_layout() {
    let Some(d) = data_dir() else { return };
    let flat = std::env::temp_dir().join(format!("elevator-vd-flat-{}", std::process::id()));
    std::fs::create_dir_all(&flat).unwrap();
    for name in ["barracuda", "cheetah9LP"] {
        for e in std::fs::read_dir(d.join(name)).unwrap() {
            let p = e.unwrap().path();
            std::fs::copy(&p, flat.join(p.file_name().unwrap())).unwrap();
        }
    }
    // A workload that is no validation drive: its trace is in DiskSim's ASCII format.
    std::fs::copy(flat.join("barracuda.parv"), flat.join("ascii.parv")).unwrap();
    std::fs::write(flat.join("ascii.trace"), "13.191135\t30\t0\t5\t1\n").unwrap();
    let rms = |out: &Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["rms_ms"].as_f64().unwrap()
    };
    let by_file = elevator(&[
        "validate-disk",
        "--drive",
        flat.join("barracuda.parv").to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    let by_dir = elevator(&[
        "validate-disk",
        "--drive",
        d.join("barracuda").to_str().unwrap(),
        "--output-format",
        "json",
    ]);
    assert_eq!(rms(&by_file), rms(&by_dir));
    let out = elevator(&["validate-disk", "--drive", flat.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 .parv files") && err.contains("barracuda.parv"), "{err}");
    let out =
        elevator(&["validate-disk", "--all", flat.to_str().unwrap(), "--output-format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> =
        v["drives"].as_array().unwrap().iter().map(|x| x["drive"].as_str().unwrap()).collect();
    assert_eq!(names, ["barracuda", "cheetah9LP"]);
    // The same layout one level down, as in DiskSim's source tree (valid/).
    let top = flat.with_extension("top");
    std::fs::create_dir_all(&top).unwrap();
    std::fs::rename(&flat, top.join("valid")).unwrap();
    let out = elevator(&["validate-disk", "--all", top.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\nbarracuda ") && text.contains("\ncheetah9LP "), "{text}");
    std::fs::remove_dir_all(&top).ok();
}

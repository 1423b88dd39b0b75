//! fio-plot (the PyPI package `./setup.sh` installs in its tools venv) draws its `-g` time
//! graphs from the log files `elevator run` writes, named as its companion `bench-fio`
//! names fio's (`RW-iodepth-D-numjobs-N_{bw,iops,lat}.1.log`): per-I/O logs and
//! `log_avg_msec` windows, reads and writes.

use std::path::{Path, PathBuf};
use std::process::Command;

/// fio-plot's executable: `$ELEVATOR_FIO_PLOT`, else setup.sh's tools venv.
fn fio_plot() -> PathBuf {
    if let Some(p) = std::env::var_os("ELEVATOR_FIO_PLOT") {
        return PathBuf::from(p);
    }
    let venv = std::env::var_os("ELEVATOR_TOOLS_VENV").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/elevator/tools-venv")
    });
    let exe = venv.join("bin/fio-plot");
    assert!(exe.exists(), "{} not found: run ./setup.sh (it installs fio-plot)", exe.display());
    exe
}

fn run_job(dir: &Path, job: &str) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir)
        .args(["run", "job.fio", "--output-format", "json", "--output", "out.json"])
        .output()
        .expect("elevator runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // out.json is not a log: fio-plot lists every *.log file of the directory.
    std::fs::rename(dir.join("out.json"), dir.parent().unwrap().join("out.json")).unwrap();
}

fn graph(dir: &Path, rw: &str, types: &[&str]) -> Vec<u8> {
    let png = dir.parent().unwrap().join(format!("{rw}.png"));
    let _ = std::fs::remove_file(&png);
    let out = Command::new(fio_plot())
        .env("MPLBACKEND", "Agg")
        .arg("-i")
        .arg(dir)
        .args(["-T", "elevator", "-g", "-r", rw, "-d", "4", "-n", "1", "-t"])
        .args(types)
        .arg("-o")
        .arg(&png)
        .output()
        .expect("fio-plot runs");
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && !text.contains("Traceback"), "fio-plot failed:\n{text}");
    let bytes = std::fs::read(&png).unwrap_or_else(|e| panic!("{}: {e}\n{text}", png.display()));
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    bytes
}

fn job(rw: &str, avg: &str) -> String {
    let name = format!("{rw}-iodepth-4-numjobs-1");
    format!(
        "[global]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=4\nbs=4k\nruntime=6\n\
         time_based\n{avg}\n[{rw}]\nrw={rw}\nwrite_bw_log={name}\nwrite_iops_log={name}\n\
         write_lat_log={name}\n"
    )
}

#[test]
fn fio_plot_draws_time_graphs_from_elevator_logs() {
    let root = std::env::temp_dir().join(format!("elevator-fio-plot-{}", std::process::id()));
    for (rw, avg) in [("randread", "log_avg_msec=500"), ("randwrite", "")] {
        let dir = root.join(format!("{rw}-logs"));
        run_job(&dir, &job(rw, avg));
        assert!(dir.join(format!("{rw}-iodepth-4-numjobs-1_bw.1.log")).exists());
        let png = graph(&dir, rw, &["bw", "iops", "lat"]);
        // A drawn graph, not an empty canvas: fio-plot's 1800 × 1000 figure is far larger.
        assert!(png.len() > 20_000, "{rw}: {} bytes", png.len());
    }
    let _ = std::fs::remove_dir_all(&root);
}

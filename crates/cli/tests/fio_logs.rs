//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`): fio's names and its
//! five columns `time, value, ddir, bs, prio`, written in the current directory.

use std::path::{Path, PathBuf};
use std::process::Command;

fn run_in(tag: &str, job: &str) -> (PathBuf, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!("elevator-logs-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("job.fio"), job).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(&dir)
        .args(["run", "job.fio", "--output-format", "json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, serde_json::from_slice(&out.stdout).unwrap())
}

fn lines(dir: &Path, name: &str) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    text.lines()
        .map(|l| l.split(", ").map(|x| x.parse().expect("a number")).collect::<Vec<u64>>())
        .collect()
}

#[test]
fn every_io_in_every_log_without_log_avg_msec() {
    let (dir, report) = run_in(
        "each",
        "[r]\nfilename=sda\ndirect=1\nrw=randread\nsize=64m\nruntime=2\nwrite_lat_log=x\nwrite_bw_log\nwrite_iops_log=x\n",
    );
    let ios = report["jobs"][0]["read"]["total_ios"].as_u64().unwrap();
    for kind in ["lat", "clat", "slat"] {
        let l = lines(&dir, &format!("x_{kind}.1.log"));
        assert_eq!(l.len() as u64, ios, "{kind}");
        assert!(l.iter().all(|c| c.len() == 5 && c[2] == 0 && c[3] == 4096), "{kind}");
        assert!(l.windows(2).all(|w| w[0][0] <= w[1][0]), "{kind}: time ascends");
    }
    // As fio 3.33: a bandwidth line per I/O (bytes × 10⁶ / clat ns) and an IOPS line of 1.
    let clat = lines(&dir, "x_clat.1.log");
    let bw = lines(&dir, "r_bw.1.log");
    assert_eq!(bw.len() as u64, ios);
    for (b, c) in bw.iter().zip(&clat) {
        assert_eq!((b[0], b[1], b[3]), (c[0], 4096 * 1_000_000 / c[1], 4096));
    }
    let iops = lines(&dir, "x_iops.1.log");
    assert_eq!(iops.len() as u64, ios);
    assert!(iops.iter().all(|c| c[1] == 1 && c[3] == 4096));
}

#[test]
fn log_avg_msec_and_shared_logs() {
    let (dir, _) = run_in(
        "avg",
        "[global]\nfilename=sda\ndirect=1\nioengine=libaio\niodepth=4\nrw=randrw\nruntime=3\n\
         time_based\nlog_avg_msec=1000\nper_job_logs=0\nwrite_lat_log=s\n[j]\nnumjobs=2\n",
    );
    let l = lines(&dir, "s_clat.log");
    // Two processes, three windows each, reads and writes, and what completed after the
    // runtime at the job's end time (fio's finalize_logs).
    assert!((12..=16).contains(&l.len()), "{}", l.len());
    assert!(l.iter().all(|c| (c[0] % 1000 == 0 || c[0] > 3000) && c[3] == 0 && c[1] > 0));
    assert!(!dir.join("s_clat.1.log").exists());
}

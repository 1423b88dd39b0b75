//! End-to-end: the README's worked sweep (`examples/sweep/deadline-writers.toml`) with one
//! seed and two simulated seconds, through `sweep plan`, `sweep run`, `sweep merge` and
//! `elevator report` of the merged Parquet: the page has every chart and table, and the same
//! bytes twice. And the README's explanation of its queue-depth-1 rows: the reader's requests
//! wait for a free request slot once 16 writers hold more than `nr_requests`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn elevator(dir: &Path, args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sweep")
}

/// The example's files in a fresh directory, the job shortened to `runtime` seconds.
fn workdir(tag: &str, runtime: u32) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("elevator-sweep-report-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in ["deadline-writers.toml", "hdd.toml", "hdd-qd1.toml", "nvme.toml"] {
        std::fs::copy(examples().join(f), dir.join(f)).unwrap();
    }
    let job = std::fs::read_to_string(examples().join("deadline-writers.fio")).unwrap();
    assert!(job.contains("runtime=10\n"));
    std::fs::write(
        dir.join("deadline-writers.fio"),
        job.replace("runtime=10\n", &format!("runtime={runtime}\n")),
    )
    .unwrap();
    dir
}

#[test]
fn the_worked_sweep_reports_every_chart_and_table() {
    let dir = workdir("grid", 2);
    let grid = std::fs::read_to_string(dir.join("deadline-writers.toml")).unwrap();
    std::fs::write(
        dir.join("deadline-writers.toml"),
        grid.replace("seeds = [1, 2, 3, 4, 5]", "seeds = [1]"),
    )
    .unwrap();
    elevator(&dir, &["sweep", "plan", "deadline-writers.toml", "-o", "plan.jsonl"]);
    elevator(&dir, &["sweep", "run", "plan.jsonl", "--shard", "0/1", "-o", "out"]);
    elevator(&dir, &["sweep", "merge", "out", "-o", "merged.parquet"]);
    elevator(&dir, &["report", "merged.parquet", "-o", "a.html"]);
    elevator(&dir, &["report", "merged.parquet", "-o", "b.html"]);
    let html = std::fs::read_to_string(dir.join("a.html")).unwrap();
    assert_eq!(html, std::fs::read_to_string(dir.join("b.html")).unwrap(), "same bytes twice");
    // 3 topologies × 2 fifo_batch × 2 read_expire × 3 writer counts, one seed.
    assert!(html.contains("elevator sweep, 36 runs, 72 rows"), "{}", &html[..2000.min(html.len())]);
    // Reader and writers × 4 metrics × one chart per topology (12 lines otherwise).
    assert_eq!(html.matches("<svg").count(), 2 * 4 * 3);
    assert_eq!(html.matches("<caption>").count(), 2, "a table per job and direction");
    for want in ["topology=hdd-qd1.toml", "fifo_batch=16 read_expire=500", "<th>WRITERS</th>"] {
        assert!(html.contains(want), "{want}");
    }
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("<script"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sixteen_writers_at_queue_depth_one_fill_the_request_slots() {
    let dir = workdir("slots", 2);
    let job = std::fs::read_to_string(dir.join("deadline-writers.fio")).unwrap();
    std::fs::write(dir.join("w16.fio"), job.replace("numjobs=${WRITERS}", "numjobs=16")).unwrap();
    let topo = std::fs::read_to_string(dir.join("hdd-qd1.toml")).unwrap();
    std::fs::write(
        dir.join("slots512.toml"),
        topo.replace(
            "scheduler = \"mq-deadline\"",
            "scheduler = \"mq-deadline\"\nnr_requests = 512",
        ),
    )
    .unwrap();
    let reader_iops = |topology: &str| {
        let out = elevator(
            &dir,
            &[
                "run",
                "w16.fio",
                "--topology",
                topology,
                "--iosched",
                "fifo_batch=1",
                "--output-format",
                "json",
            ],
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["jobs"][0]["read"]["iops"].as_f64().unwrap()
    };
    let (slots128, slots512) = (reader_iops("hdd-qd1.toml"), reader_iops("slots512.toml"));
    eprintln!("reader IOPS beside 16 writers at queue depth 1: {slots128:.1} (nr_requests 128), {slots512:.1} (512)");
    assert!(slots512 > 2.0 * slots128, "{slots128} vs {slots512}");
    let _ = std::fs::remove_dir_all(&dir);
}

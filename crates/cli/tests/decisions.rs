//! `elevator run --trace-decisions FILE`: one JSON line per request each scheduler dispatched,
//! with its reason; as many lines as the disk's requests, deterministic, and the run's JSON
//! unchanged by the flag.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn job() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/blktrace.fio")
}

fn run(scheduler: &str, trace: Option<&Path>) -> Value {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_elevator"));
    cmd.arg("run").arg(job()).args(["--scheduler", scheduler, "--output-format", "json"]);
    if let Some(t) = trace {
        cmd.arg("--trace-decisions").arg(t);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_dispatch_is_a_line_with_its_reason() {
    let dir = std::env::temp_dir().join(format!("elevator-decisions-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for scheduler in ["mq-deadline", "bfq", "cfq"] {
        let trace = dir.join(format!("{scheduler}.jsonl"));
        let with = run(scheduler, Some(&trace));
        let without = run(scheduler, None);
        assert_eq!(with, without, "{scheduler}: the flag changed the results");
        let text = std::fs::read_to_string(&trace).unwrap();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let disk = &with["disk_util"][0];
        let requests = disk["read_ios"].as_u64().unwrap() + disk["write_ios"].as_u64().unwrap();
        assert_eq!(lines.len() as u64, requests, "{scheduler}: a line per request");
        for l in &lines {
            assert_eq!(l["scheduler"], scheduler, "{l}");
            assert_eq!(l["device"], "sda", "{l}");
            assert!(l["decision"].as_str().is_some_and(|d| !d.is_empty()), "{l}");
        }
        assert!(lines.windows(2).all(|w| w[0]["t_ns"].as_u64() <= w[1]["t_ns"].as_u64()));
        let reasons: std::collections::BTreeSet<&str> =
            lines.iter().map(|l| l["decision"].as_str().unwrap()).collect();
        eprintln!("{scheduler}: {} lines, reasons {reasons:?}", lines.len());
        run(scheduler, Some(&trace));
        assert_eq!(std::fs::read_to_string(&trace).unwrap(), text, "{scheduler}: same bytes");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

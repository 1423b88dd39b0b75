//! `--timestamp now`: the JSON's `timestamp`, `timestamp_ms` and `time` are the wall-clock
//! start of the run, as fio's; without it they are the epoch, so output stays byte-identical.

use std::path::Path;
use std::process::Command;

fn run(extra: &[&str]) -> serde_json::Value {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/blktrace.fio");
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .arg("run")
        .arg(job)
        .args(["--output-format", "json"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn timestamps_are_the_epoch_unless_now_is_asked() {
    let v = run(&[]);
    assert_eq!((v["timestamp"].as_u64(), v["timestamp_ms"].as_u64()), (Some(0), Some(0)));
    assert_eq!(v["time"], "Thu Jan  1 00:00:00 1970");
    let before = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    let v = run(&["--timestamp", "now"]);
    let ms = v["timestamp_ms"].as_u64().unwrap();
    assert!(ms.abs_diff(before.as_millis() as u64) < 60_000, "{ms} vs {before:?}");
    assert_eq!(v["timestamp"].as_u64().unwrap(), ms / 1000);
    let year = v["time"].as_str().unwrap().rsplit(' ').next().unwrap().parse::<u32>().unwrap();
    assert!(year >= 2024, "{}", v["time"]);
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", "x.fio", "--timestamp", "tomorrow"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("tomorrow"));
}

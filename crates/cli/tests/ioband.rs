//! dm-ioband end to end: processes that submit to a group holding `c_limit` bios sleep until
//! it has released them all, and wake again — the run ends, and the weights still decide.

use std::process::Command;

#[test]
fn sleeping_submitters_wake_and_equal_weights_share_equally() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ioband-sleep");
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", "job.fio", "--topology", "topology.toml", "--output-format", "json"])
        .current_dir(dir)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let ios: Vec<f64> = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["total_ios"].as_u64().unwrap() as f64)
        .collect();
    assert_eq!(ios.len(), 2, "group_reporting: one entry per group");
    let share = ios[0] / (ios[0] + ios[1]);
    assert!((0.45..=0.55).contains(&share), "8 deep processes vs 1, equal weights: {ios:?}");
    assert!(ios[1] > 10_000.0, "a second of 100 µs reads goes on: {ios:?}");
}

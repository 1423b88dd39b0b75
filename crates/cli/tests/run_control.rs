//! A long `elevator run` as fio users drive one: Ctrl-C prints the results so far and exits
//! 130; the status line goes to stderr only when asked for or on a terminal.

use std::process::{Command, Stdio};
use std::time::Duration;

fn long_job() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-runctl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("long.fio");
    std::fs::write(
        &path,
        "[long]\nfilename=sda\nrw=randread\ndirect=1\nioengine=libaio\niodepth=4\ntime_based\nruntime=1000h\n",
    )
    .unwrap();
    path
}

fn interrupted_run(eta: &str) -> (Option<i32>, String, String) {
    let job = long_job();
    let child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .args(["run", job.to_str().unwrap(), "--output-format", "json", "--eta", eta])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts");
    std::thread::sleep(Duration::from_millis(1500));
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn ctrl_c_prints_the_results_so_far_and_exits_130() {
    let (code, stdout, stderr) = interrupted_run("auto");
    assert_eq!(code, Some(130), "{stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("valid JSON");
    let read = &report["jobs"][0]["read"];
    assert!(read["total_ios"].as_u64().unwrap() > 0);
    assert!(read["runtime"].as_u64().unwrap() > 0);
    assert!(stderr.contains("interrupted"), "{stderr}");
    // stderr is a pipe here: no status line unless asked for.
    assert!(!stderr.contains("Jobs:"), "{stderr}");
}

#[test]
fn eta_always_shows_the_status_line_on_stderr_only() {
    let (code, stdout, stderr) = interrupted_run("always");
    assert_eq!(code, Some(130));
    assert!(stderr.contains("Jobs: 1 (f=1): ["), "{stderr}");
    assert!(stderr.contains("IOPS][eta "), "{stderr}");
    assert!(!stdout.contains("Jobs:"));
}

//! End-to-end with the real blktrace tools: `elevator run --write-blktrace DIR` on
//! `examples/blktrace.fio` (a psync random reader beside a libaio sequential writer, the
//! built-in disk, 1 s) writes `DIR/sda.blktrace.0`; Debian's `blkparse -i sda -D DIR` reads it (exit 0, the jobs named,
//! no sequence skips) and its summary's Q, D and C counts are the run's own: Q the jobs' I/Os
//! (fio's `total_ios`), D and C the disk's requests (`disk_util`'s `read_ios`/`write_ios`);
//! `blkparse -d` dumps it for `btt -i`, which prints the Q2C and D2C latency lines with as
//! many I/Os. The run's JSON is the same bytes with and without the flag.
//!
//! A direct reader of a 64-file tree opens each directory's files with a read of its inode
//! block, `REQ_META` as ext3's is: blkparse shows those four reads as `RM`.
//!
//! Without blkparse or btt the test fails, saying to run ./setup.sh (which installs Debian's
//! blktrace package; CI does).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::Value;

/// The job: `examples/blktrace.fio`, which the README's commands run.
fn job() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/blktrace.fio")
}

/// A fresh directory for this test.
fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-blktrace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `name` on PATH, or a failure that says how to get it.
fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let candidate = dir.join(name);
        if candidate.is_file() {
            return candidate;
        }
    }
    panic!(
        "`{name}` is not installed (not on PATH): run ./setup.sh, which installs Debian's \
         blktrace package (blkparse, btt); CI does"
    );
}

/// Runs `program args` in directory `cwd` (btt leaves its `*_fp.dat` files in its working
/// directory) and the C locale (blkparse groups digits by locale); its stdout, after checking
/// it exited 0.
fn run(cwd: &Path, program: &Path, args: &[&str]) -> String {
    let out = Command::new(program)
        .current_dir(cwd)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{} {args:?} failed ({}): {}{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("text")
}

/// The count after `label` (`Reads Queued:          79,      316KiB`) on the last line that
/// has it: the whole device's summary.
fn summary_count(text: &str, label: &str) -> u64 {
    let line = text.lines().rev().find(|l| l.contains(label)).unwrap_or_else(|| {
        panic!("blkparse printed no `{label}`:\n{text}");
    });
    let rest = &line[line.find(label).unwrap() + label.len()..];
    let count = rest.split(',').next().unwrap().trim();
    count.parse().unwrap_or_else(|_| panic!("`{label}` is not a plain count in `{line}`"))
}

/// btt's line for `metric` (`Q2C  0.003 0.012 0.023  711`): the line and its N.
fn btt_line<'a>(text: &'a str, metric: &str) -> (&'a str, u64) {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("btt printed no {metric} line:\n{text}"));
    let n = line.split_whitespace().last().unwrap().parse().expect("N is a count");
    (line, n)
}

#[test]
fn blkparse_and_btt_read_the_simulated_trace() {
    let blkparse = tool("blkparse");
    let btt = tool("btt");
    let dir = temp_dir();
    let job = job();
    let traces = dir.join("traces");
    let elevator = Path::new(env!("CARGO_BIN_EXE_elevator"));
    let started = Instant::now();
    let json_traced = run(
        &dir,
        elevator,
        &["run", job.to_str().unwrap(), "--output-format", "json", "--write-blktrace"]
            .into_iter()
            .chain([traces.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    let run_time = started.elapsed();
    let json_plain =
        run(&dir, elevator, &["run", job.to_str().unwrap(), "--output-format", "json"]);
    assert_eq!(json_traced, json_plain, "--write-blktrace changed the results");
    let trace = traces.join("sda.blktrace.0");
    assert!(trace.is_file(), "no {}", trace.display());

    let v: Value = serde_json::from_str(&json_plain).unwrap();
    let job_ios = |name: &str, dir: &str| -> u64 {
        let j = v["jobs"].as_array().unwrap().iter().find(|j| j["jobname"] == name).unwrap();
        j[dir]["total_ios"].as_u64().unwrap()
    };
    let (reads, writes) = (job_ios("reader", "read"), job_ios("writer", "write"));
    let disk = &v["disk_util"][0];
    assert_eq!(disk["name"], "sda");
    let disk_reads = disk["read_ios"].as_u64().unwrap();
    let disk_writes = disk["write_ios"].as_u64().unwrap();
    assert!(reads > 10 && writes > 10, "too few I/Os: {reads} reads, {writes} writes");
    assert!(disk_writes < writes, "the sequential writes merged: {disk_writes} of {writes}");

    let started = Instant::now();
    let text = run(&dir, &blkparse, &["-i", "sda", "-D", traces.to_str().unwrap()]);
    let parse_time = started.elapsed();
    assert_eq!(summary_count(&text, "Reads Queued:"), reads, "Q reads");
    assert_eq!(summary_count(&text, "Writes Queued:"), writes, "Q writes");
    assert_eq!(summary_count(&text, "Read Dispatches:"), disk_reads, "D reads");
    assert_eq!(summary_count(&text, "Write Dispatches:"), disk_writes, "D writes");
    assert_eq!(summary_count(&text, "Reads Completed:"), disk_reads, "C reads");
    assert_eq!(summary_count(&text, "Writes Completed:"), disk_writes, "C writes");
    assert_eq!(
        summary_count(&text, "Write Merges:"),
        disk["write_merges"].as_u64().unwrap(),
        "M writes"
    );
    assert!(text.contains(" Q   R ") && text.contains("[reader]"), "reads by name:\n{text}");
    assert!(text.contains(" Q  WS ") && text.contains("[writer]"), "writes by name:\n{text}");
    let skips = text.lines().find(|l| l.starts_with("Skips:")).expect("a Skips line");
    assert!(skips.starts_with("Skips: 0 forward"), "{skips}");

    let dump = dir.join("sda.bin");
    let started = Instant::now();
    run(
        &dir,
        &blkparse,
        &["-i", "sda", "-D", traces.to_str().unwrap(), "-d", dump.to_str().unwrap(), "-O"],
    );
    let report = run(&dir, &btt, &["-i", dump.to_str().unwrap()]);
    let btt_time = started.elapsed();
    let (q2c, q2c_n) = btt_line(&report, "Q2C");
    let (d2c, d2c_n) = btt_line(&report, "D2C");
    assert_eq!(q2c_n, reads + writes, "Q2C over every I/O: {q2c}");
    assert_eq!(d2c_n, reads + writes, "D2C over every I/O: {d2c}");

    // Sample lines for the record (`cargo test -- --nocapture`).
    let first_lines: Vec<&str> = text.lines().take(6).collect();
    eprintln!("elevator run --write-blktrace: {run_time:.2?}; blkparse: {parse_time:.2?}; blkparse -d + btt: {btt_time:.2?}");
    eprintln!("{}", first_lines.join("\n"));
    for l in text.lines().filter(|l| l.contains("Queued:") || l.contains("Completed:")) {
        eprintln!("{l}");
    }
    eprintln!("{q2c}\n{d2c}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn blkparse_shows_the_inode_reads_as_metadata() {
    let blkparse = tool("blkparse");
    // Not `temp_dir()`, which clears the directory the other test works in.
    let dir = std::env::temp_dir().join(format!("elevator-blktrace-meta-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // 64 files, 16 to a directory and so to an inode block: four metadata reads.
    let job = dir.join("tree.fio");
    std::fs::write(&job, "[tree]\nrw=read\nbs=4k\ndirect=1\nnrfiles=64\nfilesize=64k\nsize=4m\n")
        .unwrap();
    let traces = dir.join("traces");
    let elevator = Path::new(env!("CARGO_BIN_EXE_elevator"));
    run(
        &dir,
        elevator,
        &["run", job.to_str().unwrap(), "--write-blktrace", traces.to_str().unwrap()],
    );
    let text = run(&dir, &blkparse, &["-i", "sda", "-D", traces.to_str().unwrap()]);
    // `8,0  0  12  0.001234567  1001  Q  RM 4104 + 8 [tree]`: the action and RWBS fields.
    let queued = |rwbs: &str| {
        text.lines()
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 6 && f[5] == "Q" && f[6] == rwbs
            })
            .count()
    };
    assert_eq!(queued("RM"), 4, "metadata reads:\n{text}");
    assert_eq!(queued("R"), 1024, "data reads: 4 MiB in 4 KiB");
    let _ = std::fs::remove_dir_all(&dir);
}

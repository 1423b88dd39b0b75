//! End-to-end: the real `elevator run`, `compare` and `reproduce` write JSON, `elevator
//! report` turns it into one HTML page: the expected number of charts, no script, the same
//! bytes every time, and one-line errors naming the file.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn elevator(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("runs")
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = elevator(args);
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A fresh directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-report-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The HTML `elevator report` writes for `inputs`, checked to be one self-contained page.
fn report(dir: &Path, inputs: &[&Path]) -> String {
    let html = dir.join("report.html");
    let mut args = vec!["report"];
    args.extend(inputs.iter().map(|p| s(p)));
    args.extend(["-o", s(&html), "--title", "e2e <report>"]);
    let stdout = ok(&args);
    assert!(stdout.is_empty(), "a report written to a file prints nothing");
    let text = std::fs::read_to_string(&html).unwrap();
    assert!(text.starts_with("<!DOCTYPE html>"));
    assert!(text.contains("<title>e2e &lt;report&gt;</title>"));
    assert!(!text.to_lowercase().contains("<script"), "no JavaScript");
    assert!(!text.contains("http:") && !text.contains("https:"), "no external URL");
    text
}

#[test]
fn run_json_becomes_a_page_with_two_charts() {
    let dir = temp_dir("run");
    let json = dir.join("run.json");
    let plus = dir.join("run-plus.json");
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json", "--output", s(&json)]);
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json+", "--output", s(&plus)]);
    for input in [&json, &plus] {
        let html = report(&dir, &[input]);
        // One run: its latency CDF and its groups' shares of the I/Os.
        assert_eq!(html.matches("<svg").count(), 2, "{}", input.display());
        // Four numjobs clones and the random reader; the two cgroups, weights 100 each.
        for text in ["seqread #4", "randread", "<td>test1</td>", "<td>test2</td>", "50.0 %"] {
            assert!(html.contains(text), "{}: no `{text}`", input.display());
        }
        assert!(html.contains("Jain's fairness index of the 2 groups' throughput"));
    }
    let html = report(&dir, &[&plus]);
    assert!(html.contains("from json+'s histogram bins"));
}

#[test]
fn the_same_inputs_give_the_same_bytes_on_a_file_or_stdout() {
    let dir = temp_dir("same");
    let json = dir.join("run.json");
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json+", "--output", s(&json)]);
    let a = report(&dir, &[&json, &json]);
    let b = report(&dir, &[&json, &json]);
    assert_eq!(a, b);
    assert_eq!(a.matches("<svg").count(), 4);
    let stdout = ok(&["report", s(&json), s(&json), "-o", "-", "--title", "e2e <report>"]);
    assert_eq!(String::from_utf8(stdout).unwrap(), a);
}

#[test]
fn compare_and_reproduce_json_are_reported_too() {
    let dir = temp_dir("compare");
    let compare = dir.join("compare.json");
    ok(&[
        "compare",
        "examples/seq-vs-random.fio",
        "--scheduler",
        "mq-deadline",
        "--scheduler",
        "cfq",
        "--output-format",
        "json",
        "--output",
        s(&compare),
    ]);
    // A one-table experiment of our own, so that the test stays quick.
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("tiny.fio"),
        "[global]\ndirect=1\nbs=4k\nruntime=2\nioengine=psync\nrw=randread\nsize=64M\n\
         [a]\ncgroup=a\ncgroup_weight=200\n[b]\nnew_group\ncgroup=b\ncgroup_weight=100\n",
    )
    .unwrap();
    std::fs::write(
        scenarios.join("tiny.toml"),
        "name = \"tiny\"\nseed_mail = \"999\"\ntitle = \"Two random readers\"\n\
         [[table]]\ntitle = \"Weights 200:100\"\njobfile = \"tiny.fio\"\n\
         columns = [\"g0.agg_bw\", \"g1.agg_bw\"]\nheaders = [\"a\", \"b\"]\n\
         note = \"made up for the test\"\n\
         [[table.variant]]\nlabel = \"BFQ\"\nscheduler = \"bfq\"\npublished = [\"200KB/s 100KB/s\"]\n",
    )
    .unwrap();
    let repro = dir.join("repro.json");
    ok(&[
        "reproduce",
        "tiny",
        "--scenarios",
        s(&scenarios),
        "--output-format",
        "json",
        "--output",
        s(&repro),
    ]);
    let html = report(&dir, &[&compare, &repro]);
    // Two compare runs with two charts each; reproduce tables have none.
    assert_eq!(html.matches("<svg").count(), 4);
    for text in [
        "<caption>Summary</caption>",
        "Scheduler <code>mq-deadline</code>",
        "Scheduler <code>cfq</code>",
        "Seed 999: Two random readers",
        "<td class=\"num\">200KB/s</td><td class=\"num\">100KB/s</td>",
        "Published finding: made up for the test",
    ] {
        assert!(html.contains(text), "no `{text}`");
    }
}

/// The error: exit status 1 and one line on stderr.
fn one_line_error(args: &[&str]) -> String {
    let out = elevator(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}");
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn bad_inputs_are_one_line_errors_naming_the_file() {
    let dir = temp_dir("bad");
    let html = dir.join("out.html");
    let broken = dir.join("broken.json");
    std::fs::write(&broken, "{\"jobs\": [ {\"jobname\": ").unwrap();
    let err = one_line_error(&["report", s(&broken), "-o", s(&html)]);
    assert!(err.starts_with(&format!("elevator: {}: not JSON", broken.display())), "{err}");
    assert!(!html.exists(), "no page written on an error");

    let missing = dir.join("missing-key.json");
    std::fs::write(&missing, r#"{"jobs": [{"jobname": "x", "groupid": 0, "read": {}}]}"#).unwrap();
    let err = one_line_error(&["report", s(&missing), "-o", s(&html)]);
    assert_eq!(
        err.trim_end(),
        format!("elevator: {}: jobs[0].read: missing key `clat_ns`", missing.display())
    );

    let other = dir.join("other.json");
    std::fs::write(&other, r#"{"hello": "world"}"#).unwrap();
    let err = one_line_error(&["report", s(&other), "-o", s(&html)]);
    assert!(err.contains(&other.display().to_string()) && err.contains("`jobs`"), "{err}");

    let absent = dir.join("absent.json");
    let err = one_line_error(&["report", s(&absent), "-o", s(&html)]);
    assert!(err.starts_with(&format!("elevator: {}: cannot read", absent.display())), "{err}");
}

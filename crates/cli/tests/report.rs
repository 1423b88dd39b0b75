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
fn run_json_becomes_a_page_with_four_charts() {
    let dir = temp_dir("run");
    let json = dir.join("run.json");
    let plus = dir.join("run-plus.json");
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json", "--output", s(&json)]);
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json+", "--output", s(&plus)]);
    for input in [&json, &plus] {
        let html = report(&dir, &[input]);
        // One run: its latency CDF, its groups' shares of the I/Os, and their bandwidth and
        // IOPS over time.
        assert_eq!(html.matches("<svg").count(), 4, "{}", input.display());
        // Four numjobs clones and the random reader; the two cgroups, weights 100 each; the
        // scheduler's decisions.
        for text in [
            "seqread #4",
            "randread",
            "<td>test1</td>",
            "<td>test2</td>",
            "50.0 %",
            "Bandwidth over time per group",
            "<caption>Scheduler decisions on <code>sda</code></caption>",
        ] {
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
    assert_eq!(a.matches("<svg").count(), 8);
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
    // Two compare runs with four charts each; reproduce tables have none.
    assert_eq!(html.matches("<svg").count(), 8);
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

/// `elevator ARGS` with `stdin` on standard input.
fn ok_with_stdin(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(repo())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A two-table experiment of our own in `dir/scenarios`: the first table without a `cdf`
/// scope, the second keeping the random reader's latency CDF over two weights and two
/// schedulers (four curves in one chart).
fn cdf_scenario(dir: &Path) -> PathBuf {
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    std::fs::write(
        scenarios.join("tiny.fio"),
        "[global]\ndirect=1\nbs=4k\nruntime=1\nioengine=psync\nsize=64M\n\
         [a]\nrw=read\ncgroup=a\ncgroup_weight=${W}\n\
         [b]\nnew_group\nrw=randread\ncgroup=b\ncgroup_weight=100\n",
    )
    .unwrap();
    std::fs::write(
        scenarios.join("tiny.toml"),
        "name = \"tiny\"\nseed_mail = \"999\"\ntitle = \"A reader beside a random reader\"\n\
         [[table]]\ntitle = \"Bandwidth\"\njobfile = \"tiny.fio\"\nvars = { W = \"200\" }\n\
         columns = [\"g0.agg_bw\", \"g1.agg_bw\"]\nheaders = [\"a\", \"b\"]\n\
         [[table.variant]]\nlabel = \"BFQ\"\nscheduler = \"bfq\"\n\
         published = [\"200KB/s 100KB/s\"]\n\
         [[table]]\ntitle = \"Random reader's latency\"\njobfile = \"tiny.fio\"\n\
         vary = \"W\"\nvalues = [\"100\", \"400\"]\ncolumns = [\"g1.p99_lat\"]\ncdf = \"g1\"\n\
         [[table.variant]]\nlabel = \"BFQ\"\nscheduler = \"bfq\"\n\
         [[table.variant]]\nlabel = \"CFQ\"\nscheduler = \"cfq\"\n",
    )
    .unwrap();
    scenarios
}

#[test]
fn reproduce_report_is_the_page_report_makes_of_its_json() {
    let dir = temp_dir("reproduce-report");
    let scenarios = cdf_scenario(&dir);
    let json = dir.join("repro.json");
    let direct = dir.join("direct.html");
    let stdout = ok(&[
        "reproduce",
        "tiny",
        "--scenarios",
        s(&scenarios),
        "--output-format",
        "json",
        "--output",
        s(&json),
        "--report",
        s(&direct),
    ]);
    assert!(stdout.is_empty());
    let via_report = report(&dir, &[&json]).replace("e2e &lt;report&gt;", "elevator report");
    let direct = std::fs::read_to_string(&direct).unwrap();
    assert_eq!(direct, via_report, "reproduce --report and elevator report differ");
    // The table with a `cdf` scope gets one chart, under its heading; the other none.
    assert_eq!(direct.matches("<svg").count(), 1);
    let chart = direct.find("<svg").unwrap();
    assert!(direct.find("<h4>Random reader&#39;s latency</h4>").unwrap() < chart);
    assert!(direct.find("<h4>Bandwidth</h4>").unwrap() < chart);
    for curve in ["BFQ 100", "BFQ 400", "CFQ 100", "CFQ 400"] {
        assert!(direct.contains(&format!("\n{curve}\n</text>")), "no curve `{curve}`");
    }
    assert!(direct.contains("markers at p50 (circle) and p99 (triangle)"));

    // Tables on standard output, the page to a file: the JSON is named `-`, as when it is
    // piped into `elevator report -`.
    let piped = dir.join("piped.html");
    let tables = ok(&["reproduce", "tiny", "--scenarios", s(&scenarios), "--report", s(&piped)]);
    assert!(String::from_utf8(tables).unwrap().contains("elevator (simulated)"));
    let from_stdin = ok_with_stdin(&["report", "-", "-o", "-"], &std::fs::read(&json).unwrap());
    assert_eq!(std::fs::read(&piped).unwrap(), from_stdin);
    assert!(String::from_utf8(from_stdin).unwrap().contains("<code>-</code>"));
}

#[test]
fn compare_report_is_the_page_report_makes_of_its_json() {
    let dir = temp_dir("compare-report");
    let json = dir.join("compare.json");
    let page = dir.join("compare.html");
    let compare = |extra: &[&str]| {
        let mut args = vec![
            "compare",
            "examples/seq-vs-random.fio",
            "--scheduler",
            "mq-deadline",
            "--scheduler",
            "bfq",
        ];
        args.extend_from_slice(extra);
        ok(&args)
    };
    compare(&["--output-format", "json", "--output", s(&json), "--report", s(&page)]);
    let via_report = report(&dir, &[&json]).replace("e2e &lt;report&gt;", "elevator report");
    let direct = std::fs::read_to_string(&page).unwrap();
    assert_eq!(direct, via_report, "compare --report and elevator report differ");
    // Two schedulers, each a CDF, a share chart, bandwidth and IOPS over time.
    assert_eq!(direct.matches("<svg").count(), 8);

    // The table to a file, the page to standard output.
    let table = dir.join("table.txt");
    let stdout = compare(&["--output", s(&table), "--report", "-"]);
    assert!(std::fs::read_to_string(&table).unwrap().contains("Max-bandw"));
    let from_stdin = ok_with_stdin(&["report", "-", "-o", "-"], &std::fs::read(&json).unwrap());
    assert_eq!(stdout, from_stdin);
}

#[test]
fn report_pages_that_cannot_be_written_are_one_line_errors() {
    let dir = temp_dir("report-to");
    let scenarios = cdf_scenario(&dir);
    // The page and the tables both on standard output: refused before anything runs.
    let err = one_line_error(&["reproduce", "tiny", "--scenarios", s(&scenarios), "--report", "-"]);
    assert!(err.contains("--report -") && err.contains("--output FILE"), "{err}");
    let err = one_line_error(&[
        "compare",
        "examples/seq-vs-random.fio",
        "--scheduler",
        "none",
        "--scheduler",
        "bfq",
        "--report",
        "-",
    ]);
    assert!(err.contains("--report -"), "{err}");
    // A page in a directory that does not exist.
    let nowhere = dir.join("no/such/dir/page.html");
    let err = one_line_error(&[
        "compare",
        "examples/seq-vs-random.fio",
        "--scheduler",
        "none",
        "--scheduler",
        "bfq",
        "--output",
        s(&dir.join("table.txt")),
        "--report",
        s(&nowhere),
    ]);
    assert!(err.starts_with(&format!("elevator: {}: cannot write", nowhere.display())), "{err}");
}

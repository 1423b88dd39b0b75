//! End-to-end in a real browser: the real `elevator reproduce io-controller` (seed 000's four
//! tables, about 6 s in a debug build), a `json+` run and a small experiment with a `cdf`
//! scope write JSON; `elevator report` makes one page of them twice (the same bytes, with a
//! table for every reproduce variant and run, and an SVG for every chart); headless Chromium
//! (Debian's `chromium`, installed by ./setup.sh) renders it to a PNG without page errors,
//! and the PNG shows the page: many colours, text and tables, the charts' own colours.
//!
//! Without Chromium the test fails, saying to run ./setup.sh: CI installs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ok(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(repo())
        .args(args)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A fresh directory for this test.
fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-chromium-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Debian's `chromium` (or `chromium-browser` elsewhere) on PATH.
fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["chromium", "chromium-browser"] {
        for dir in std::env::split_paths(&path) {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return candidate;
            }
        }
    }
    panic!(
        "chromium is not installed (neither `chromium` nor `chromium-browser` is on PATH): \
         run ./setup.sh, which installs Debian's chromium package (CI does)"
    );
}

/// Longest a screenshot may take before Chromium is killed.
const CHROMIUM_TIMEOUT: Duration = Duration::from_secs(120);

/// Chromium's stderr lines that are errors of the page itself: console messages (a script's
/// errors among them), a page that did not load, a resource that failed.
const PAGE_ERRORS: [&str; 4] = [":CONSOLE", "Uncaught", "Page load failed", "net::ERR_"];

fn page_errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| PAGE_ERRORS.iter().any(|p| l.contains(p))).collect()
}

/// Headless Chromium's screenshot of `page` (1280 × `height`), with its stderr and wall time.
fn screenshot(chromium: &Path, page: &Path, png: &Path, height: u32) -> (Output, Duration) {
    let profile = png.with_extension("profile");
    let started = Instant::now();
    let mut child = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            // Console messages (and so a script's errors) on stderr.
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size=1280,{height}"))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: cannot start: {e}", chromium.display()));
    // Read the pipes on threads so that a chatty Chromium never blocks on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stdout, &mut v).unwrap();
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut stderr, &mut v).unwrap();
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > CHROMIUM_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took more than {CHROMIUM_TIMEOUT:?} on {}", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let elapsed = started.elapsed();
    let _ = std::fs::remove_dir_all(&profile);
    let output = Output { status, stdout: out.join().unwrap(), stderr: err.join().unwrap() };
    (output, elapsed)
}

/// The PNG as (width, height, RGB pixels).
fn decode(png: &Path) -> (u32, u32, Vec<[u8; 3]>) {
    let file = std::fs::File::open(png).unwrap();
    let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let samples = info.color_type.samples();
    assert!(samples >= 3, "a {:?} screenshot", info.color_type);
    let pixels = buf[..info.buffer_size()].chunks_exact(samples).map(|p| [p[0], p[1], p[2]]);
    (info.width, info.height, pixels.collect())
}

/// A one-table experiment whose table keeps the random reader's latency CDF (one chart).
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
         [[table]]\ntitle = \"Random reader's latency\"\njobfile = \"tiny.fio\"\n\
         vary = \"W\"\nvalues = [\"100\", \"400\"]\ncolumns = [\"g1.p99_lat\"]\ncdf = \"g1\"\n\
         [[table.variant]]\nlabel = \"BFQ\"\nscheduler = \"bfq\"\n\
         [[table.variant]]\nlabel = \"CFQ\"\nscheduler = \"cfq\"\n",
    )
    .unwrap();
    scenarios
}

/// (HTML tables, charts) the page should have for a reproduce JSON: a table per variant of
/// each table, a chart per table whose rows kept a CDF.
fn expected_for_reproduce(path: &Path) -> (usize, usize) {
    let v: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let tables = v["tables"].as_array().unwrap();
    let variants = tables.iter().map(|t| t["variants"].as_array().unwrap().len()).sum();
    let charts =
        tables
            .iter()
            .filter(|t| {
                t["variants"].as_array().unwrap().iter().any(|v| {
                    v["rows"].as_array().unwrap().iter().any(|r| {
                        r.get("cdf").and_then(Value::as_array).is_some_and(|c| !c.is_empty())
                    })
                })
            })
            .count();
    (variants, charts)
}

#[test]
fn chromium_renders_the_report_of_a_real_reproduction() {
    let chromium = chromium();
    let dir = temp_dir();

    // The detector of page errors sees them in this Chromium: a page with a script error.
    let probe = dir.join("probe.html");
    std::fs::write(
        &probe,
        "<!DOCTYPE html><p>probe</p><script>console.error('elevator-probe'); nope();</script>",
    )
    .unwrap();
    let (out, _) = screenshot(&chromium, &probe, &dir.join("probe.png"), 200);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        page_errors(&err).iter().any(|l| l.contains("elevator-probe")),
        "page errors are not detectable in chromium's stderr: {err}"
    );

    let started = Instant::now();
    let ioc = dir.join("io-controller.json");
    ok(&["reproduce", "io-controller", "--output-format", "json", "--output", s(&ioc)]);
    let reproduce_time = started.elapsed();
    let run = dir.join("run.json");
    ok(&["run", "examples/seq-vs-random.fio", "--output-format", "json+", "--output", s(&run)]);
    let tiny = dir.join("tiny.json");
    let scenarios = cdf_scenario(&dir);
    std::fs::write(
        &tiny,
        ok(&["reproduce", "tiny", "--scenarios", s(&scenarios), "--output-format", "json"]),
    )
    .unwrap();

    let page = dir.join("report.html");
    let again = dir.join("again.html");
    for to in [&page, &again] {
        // The charts first, so that they are inside the 6000-pixel screenshot.
        ok(&["report", s(&run), s(&tiny), s(&ioc), "-o", s(to), "--title", "io-controller"]);
    }
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.as_bytes(), std::fs::read(&again).unwrap(), "two reports differ");

    // Every table and chart: a table per reproduce variant, jobs, fairness and scheduler
    // decisions per run; the run's CDF, share, bandwidth and IOPS charts, one CDF chart per
    // `cdf` table.
    let (ioc_tables, ioc_charts) = expected_for_reproduce(&ioc);
    let (tiny_tables, tiny_charts) = expected_for_reproduce(&tiny);
    assert_eq!((ioc_tables, ioc_charts), (8, 0), "io-controller: 4 tables of 2 variants");
    assert_eq!((tiny_tables, tiny_charts), (2, 1));
    assert_eq!(html.matches("<table").count(), ioc_tables + 3 + tiny_tables);
    assert_eq!(html.matches("<svg").count(), ioc_charts + 4 + tiny_charts);
    assert_eq!(html.matches("</svg>").count(), html.matches("<svg").count());
    assert!(html.contains("Sequential readers vs random reader"));
    assert!(html.contains("16 sequential readers vs M random readers"));

    let png = dir.join("report.png");
    let (out, chromium_time) = screenshot(&chromium, &page, &png, 6000);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "chromium exited with {}: {err}", out.status);
    assert!(page_errors(&err).is_empty(), "page errors: {:?}", page_errors(&err));
    assert!(err.contains("bytes written to file"), "no screenshot written: {err}");

    let (width, height, pixels) = decode(&png);
    assert_eq!((width, height), (1280, 6000));
    let white = pixels.iter().filter(|p| **p == [255, 255, 255]).count();
    let mut colours = pixels.clone();
    colours.sort_unstable();
    colours.dedup();
    // Charts' own colours, exactly: the share bars and the first curves (Tableau 10 blue and
    // orange), and the published rows' background.
    let count = |rgb: [u8; 3]| pixels.iter().filter(|p| **p == rgb).count();
    let (blue, orange, published) =
        (count([0x4e, 0x79, 0xa7]), count([0xf2, 0x8e, 0x2b]), count([0xfb, 0xf7, 0xee]));
    println!(
        "reproduce io-controller {reproduce_time:.1?}; chromium {chromium_time:.1?}; \
         {} colours, {:.1} % not white; blue {blue}, orange {orange}, published {published} px",
        colours.len(),
        100.0 * (pixels.len() - white) as f64 / pixels.len() as f64,
    );
    assert!(colours.len() > 64, "only {} colours: a blank page?", colours.len());
    assert!(white < pixels.len() * 99 / 100, "the screenshot is (almost) all white");
    assert!(blue > 10_000, "the share bars are not drawn: {blue} px of #4e79a7");
    assert!(orange > 100, "the CDF curves are not drawn: {orange} px of #f28e2b");
    assert!(published > 10_000, "the published rows are not drawn: {published} px");
    let _ = std::fs::remove_dir_all(&dir);
}

//! End-to-end: `elevator reproduce` reruns the seed experiments and their published shapes
//! hold (the orderings and trends of seeds 000 and 003, not the exact numbers).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn reproduce(name: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["reproduce", name, "--output-format", "json"])
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// `numbers[column]` of every row of a table's variant.
fn column(v: &Value, table: &str, variant: &str, column: usize) -> Vec<f64> {
    let t = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with(table))
        .unwrap();
    let var = t["variants"].as_array().unwrap().iter().find(|x| x["label"] == variant).unwrap();
    var["rows"].as_array().unwrap().iter().map(|r| r["numbers"][column].as_f64().unwrap()).collect()
}

#[test]
fn list_names_the_experiments() {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["reproduce", "--list"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("io-controller") && text.contains("as-vs-deadline"), "{text}");
}

#[test]
fn anticipatory_beats_deadline_where_seed_003_says() {
    let v = reproduce("as-vs-deadline");
    // Streaming readers: AS at least 3x deadline's aggregate.
    let (dl, aas) =
        (column(&v, "Streaming readers", "DL", 1), column(&v, "Streaming readers", "AS", 1));
    for (d, a) in dl.iter().zip(&aas) {
        assert!(*a >= 3.0 * d, "streaming readers: AS {a} MB/s vs DL {d} MB/s");
    }
    // Reader + writer: AS serves an order of magnitude more reads per write.
    let (dl, aas) = (
        column(&v, "Streaming reader + streaming writer", "DL", 1)[0],
        column(&v, "Streaming reader + streaming writer", "AS", 1)[0],
    );
    assert!(aas >= 10.0 * dl, "reads per write: AS {aas} vs DL {dl}");
    // Small-file trees during streams: AS finishes much sooner (published 22x, 52x, 2.6x).
    let tree = |title: &str| (column(&v, title, "DL", 0)[0], column(&v, title, "AS", 0)[0]);
    let (d, a) = tree("cat a kernel tree during a streaming read");
    assert!(d >= 3.0 * a, "cat during read: DL {d} s vs AS {a} s");
    let (d, a) = tree("cat a kernel tree during a streaming write");
    assert!(d >= 5.0 * a, "cat during write: DL {d} s vs AS {a} s");
    let (d, a) = tree("ls -lR");
    assert!(d >= 2.0 * a, "ls -lR during read: DL {d} s vs AS {a} s");
    // Random reads: roughly equal.
    let (dl, aas) =
        (column(&v, "tiobench random", "DL", 1), column(&v, "tiobench random", "AS", 1));
    for (d, a) in dl.iter().zip(&aas) {
        assert!((a / d - 1.0).abs() < 0.3, "random reads: AS {a} vs DL {d} MB/s");
    }
}

#[test]
fn group_scheduling_isolates_where_vanilla_cfq_does_not() {
    let v = reproduce("io-controller");
    let t = "Sequential readers vs random reader";
    // Columns: 0 nr, 1 max, 2 min, 3 agg (seq group), 4 max-lat, 5 nr, 6 agg, 7 max-lat (random).
    let (bw, lat) = (column(&v, t, "Vanilla CFQ", 6), column(&v, t, "Vanilla CFQ", 7));
    assert!(bw[5] < 0.25 * bw[0], "vanilla: random reader {} -> {} KB/s", bw[0], bw[5]);
    assert!(
        lat[5] > 4.0 * lat[0],
        "vanilla: random reader max latency {} -> {} ns",
        lat[0],
        lat[5]
    );
    let group = "IO scheduler controller + CFQ";
    let (bw, lat) = (column(&v, t, group, 6), column(&v, t, group, 7));
    for (i, (b, l)) in bw.iter().zip(&lat).enumerate() {
        assert!(*b >= 0.7 * bw[0], "group control: random reader row {i}: {b} vs {} KB/s", bw[0]);
        assert!(
            *l <= 2.0 * lat[0],
            "group control: random reader row {i}: max latency {l} vs {} ns",
            lat[0]
        );
    }
    // A lone sequential reader keeps its bandwidth under group control, not under vanilla CFQ.
    let t = "Sequential readers vs sequential reader";
    let (vanilla, grouped) = (column(&v, t, "Vanilla CFQ", 6), column(&v, t, group, 6));
    assert!(vanilla[5] < 0.1 * vanilla[0], "vanilla lone reader {} -> {}", vanilla[0], vanilla[5]);
    assert!(grouped[5] > 0.6 * grouped[0], "grouped lone reader {} -> {}", grouped[0], grouped[5]);
}

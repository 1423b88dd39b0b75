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
    assert!(
        ["io-controller", "as-vs-deadline", "ioband", "iscsi", "interactivity", "modern-isolation"]
            .iter()
            .all(|n| text.contains(n)),
        "{text}"
    );
}

/// `--table` and `--variant` run a part of an experiment: the tables and variants whose
/// titles and labels hold the text, ignoring case; a text nothing holds is a one-line error
/// that lists what there is.
#[test]
fn table_and_variant_run_a_part_of_an_experiment() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_elevator"))
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
            .args(["reproduce", "iscsi", "--output-format", "json"])
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--table", "ONE I/O CONTEXT PER LUN", "--variant", "deadline"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tables = v["tables"].as_array().unwrap();
    assert!(!tables.is_empty());
    for t in tables {
        assert!(t["title"].as_str().unwrap().contains("one I/O context per LUN"), "{t}");
        for var in t["variants"].as_array().unwrap() {
            assert!(var["label"].as_str().unwrap().contains("deadline"), "{var}");
            // The tunables shown are those that ran: the 2.6.29 target's deadline has
            // next_rq pointers, the topology that names no kernel runs 6.5's rule.
            let on_2_6_29 = t["title"].as_str().unwrap().contains("page caches");
            let shown = var["iosched"]["next_rq_pointers"].as_str();
            assert_eq!(shown, on_2_6_29.then_some("1"), "{t}");
        }
    }
    // NAME --list: the tables and variants to choose from, as selected.
    let out = run(&["--list", "--variant", "CFQ, readahead"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("iscsi — seed 002"), "{text}");
    assert!(text.contains("\nTwo remote streams through both page caches: the target's readahead, CFQ  (1 row)\n  CFQ, readahead 128 KiB  [cfq]\n  CFQ, readahead 4 MiB  [cfq]\n"), "{text}");
    assert_eq!(text.lines().filter(|l| l.starts_with("  ")).count(), 2, "{text}");
    let out = run(&["--table", "no such table"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.lines().count() == 1, "{err}");
    assert!(
        err.contains("no table of `iscsi` has `no such table`")
            && err.contains("Two remote streams"),
        "{err}"
    );
}

#[test]
fn anticipatory_beats_deadline_where_seed_003_says() {
    let v = reproduce("as-vs-deadline");
    // Streaming readers: AS well ahead of deadline's aggregate (published 3.6x with two,
    // 3.8x with four; here about 3x and 4x: two files laid out back to back and a drive
    // without positioning jitter put deadline's alternating windows in a fixed rotational
    // phase, see two-streams-placement.fio).
    let (dl, aas) =
        (column(&v, "Streaming readers", "DL", 1), column(&v, "Streaming readers", "AS", 1));
    assert!(
        aas[0] >= 2.5 * dl[0],
        "two streaming readers: AS {} MB/s vs DL {} MB/s",
        aas[0],
        dl[0]
    );
    assert!(
        aas[1] >= 3.0 * dl[1],
        "four streaming readers: AS {} MB/s vs DL {} MB/s",
        aas[1],
        dl[1]
    );
    // Reader + writer: AS serves an order of magnitude more reads per write, and without
    // starving the writer (published 2.08); the totals within 0.7-1.3x of the published
    // 33.36 MB/s (deadline) and 42.19 MB/s (AS).
    let rw =
        |variant: &str, c: usize| column(&v, "Streaming reader + streaming writer", variant, c)[0];
    let (dl, aas) = (rw("DL", 1), rw("AS", 1));
    assert!(aas >= 10.0 * dl, "reads per write: AS {aas} vs DL {dl}");
    assert!((2.08 / 3.0..=2.08 * 3.0).contains(&aas), "AS reads per write {aas} (published 2.08)");
    let (dl, aas) = (rw("DL", 0), rw("AS", 0));
    assert!((0.7 * 33.36..=1.3 * 33.36).contains(&dl), "DL reader + writer {dl} MB/s");
    assert!((0.7 * 42.19..=1.3 * 42.19).contains(&aas), "AS reader + writer {aas} MB/s");
    // Two streaming writers: no reads to anticipate, so AS and deadline write about as
    // fast (published 40.64 and 38.59 MB/s).
    let (dl, aas) = (
        column(&v, "Two streaming writers", "DL", 0)[0],
        column(&v, "Two streaming writers", "AS", 0)[0],
    );
    assert!((aas / dl - 1.0).abs() < 0.15, "two streaming writers: AS {aas} vs DL {dl} MB/s");
    // Small-file trees during streams: AS finishes much sooner (published 22x, 52x; ls -lR
    // 2.6x and 13x, here 1.5x and 8x: ls's scattered metadata reads cost AS more than the
    // mail's did).
    let tree = |title: &str| (column(&v, title, "DL", 0)[0], column(&v, title, "AS", 0)[0]);
    let (d, a) = tree("cat a kernel tree during a streaming read");
    assert!(d >= 5.0 * a, "cat during read: DL {d} s vs AS {a} s");
    let (d, a) = tree("cat a kernel tree during a streaming write");
    assert!(d >= 5.0 * a, "cat during write: DL {d} s vs AS {a} s");
    let (d, a) = tree("ls -lR of a kernel tree during a streaming read");
    assert!(d >= 1.3 * a, "ls -lR during read: DL {d} s vs AS {a} s");
    let (d, a) = tree("ls -lR of a kernel tree during a streaming write");
    assert!(d >= 4.0 * a, "ls -lR during write: DL {d} s vs AS {a} s");
    // contest: the compile's CPU time is the unloaded run's (69 s published); a streaming
    // reader beside it costs it more under AS, which waits for the reader (published 91 s
    // under deadline, 100 s under AS); io_load slows it under both (here by the CPU the
    // writer takes; the published deadline run lost another 49 s this model does not).
    let contest = |load: &str| {
        let title = format!("contest: kernel compile (make -j4){load}");
        (column(&v, &title, "DL", 0)[0], column(&v, &title, "AS", 0)[0])
    };
    let (d, a) = contest(", no load");
    assert!((62.0..=76.0).contains(&d) && (62.0..=76.0).contains(&a), "no load: {d} s, {a} s");
    let (dr, ar) = contest(" during read_load");
    assert!(ar > 1.1 * dr, "read_load: AS {ar} s vs DL {dr} s");
    // ... and the compile's CPU% (its CPU time over its elapsed time) falls with it
    // (published 72.0 % under AS, 78.0 % under deadline).
    let cpu = |s: &str| column(&v, "contest: kernel compile (make -j4) during read_load", s, 1)[0];
    assert!(cpu("AS") < cpu("DL"), "read_load CPU%: AS {} vs DL {}", cpu("AS"), cpu("DL"));
    let (dw, aw) = contest(" during io_load");
    assert!(dw > 1.1 * d && aw > 1.1 * a, "io_load: DL {dw} s, AS {aw} s vs {d}, {a}");
    // Random reads: roughly equal.
    let (dl, aas) =
        (column(&v, "tiobench random", "DL", 1), column(&v, "tiobench random", "AS", 1));
    for (d, a) in dl.iter().zip(&aas) {
        assert!((a / d - 1.0).abs() < 0.3, "random reads: AS {a} vs DL {d} MB/s");
    }
    // Random writes: tiobench's 4000 in all (divided among the threads), 16 MB, stay under
    // the dirty limits; the flush of the scattered 4 KiB writes bounds them at ~0.8 MB/s
    // whether 1, 4, 16 or 256 threads scatter them (2.5.65 writes a file back in the order
    // its pages were dirtied, and the IDE drive writes its cache in arrival order), not
    // faster as they crowd, and no write waits on throttling.
    for variant in ["DL", "AS"] {
        let r = column(&v, "tiobench random writes", variant, 1);
        let max_ms = column(&v, "tiobench random writes", variant, 3);
        assert_eq!(r.len(), 4, "{variant}: {r:?}");
        for ((n, x), m) in [1, 4, 16, 256].iter().zip(&r).zip(&max_ms) {
            assert!((0.4..=1.6).contains(x), "{variant} random writes, {n} threads: {x} MB/s");
            let ms = m / 1e6;
            assert!(ms < 1000.0, "{variant} random writes, {n} threads: max latency {ms} ms");
        }
    }
}

#[test]
fn group_scheduling_isolates_where_vanilla_cfq_does_not() {
    let v = reproduce("io-controller");
    let t = "Sequential readers vs random reader";
    // Columns: 0 nr, 1 max, 2 min, 3 agg (seq group), 4 max-lat, 5 nr, 6 agg, 7 max-lat (random).
    let (bw, lat) = (column(&v, t, "Vanilla CFQ", 6), column(&v, t, "Vanilla CFQ", 7));
    // Published 23 -> 6 KB/s; 2.6.31 gives the reader an idle window once 8 or more readers
    // show the device does not queue (hw_tag 0), so it dips less here.
    assert!(bw[5] < 0.6 * bw[0], "vanilla: random reader {} -> {} KB/s", bw[0], bw[5]);
    assert!(
        lat[5] > 4.0 * lat[0],
        "vanilla: random reader max latency {} -> {} ns",
        lat[0],
        lat[5]
    );
    let group = "IO scheduler controller + CFQ";
    let (bw, lat) = (column(&v, t, group, 6), column(&v, t, group, 7));
    for (i, (b, l)) in bw.iter().zip(&lat).enumerate() {
        assert!(*b >= 0.8 * bw[0], "group control: random reader row {i}: {b} vs {} KB/s", bw[0]);
        assert!(
            *l <= 2.0 * lat[0],
            "group control: random reader row {i}: max latency {l} vs {} ns",
            lat[0]
        );
    }
    // Against random writers too: the reader keeps its bandwidth at every N under group
    // control (its requests come from its own group's request descriptors).
    let t = "Random writers vs random reader";
    let bw = column(&v, t, group, 6);
    assert!(bw.iter().all(|b| *b >= 0.8 * bw[0]), "group control vs random writers: {bw:?}");
    // Without groups, once the writers' requests outnumber the LUN's 32 command slots (the FC
    // HBA's queue depth) they wait in CFQ's queues, and the reader's turn comes after a round
    // of theirs: published 170 -> 39 KB/s from 1 to 32 writers.
    let bw = column(&v, t, "Vanilla CFQ", 6);
    assert!(bw[5] < 0.3 * bw[0], "vanilla CFQ vs random writers: {bw:?}");
    // A lone sequential reader keeps its bandwidth under group control, not under vanilla CFQ.
    let t = "Sequential readers vs sequential reader";
    let (vanilla, grouped) = (column(&v, t, "Vanilla CFQ", 6), column(&v, t, group, 6));
    assert!(vanilla[5] < 0.1 * vanilla[0], "vanilla lone reader {} -> {}", vanilla[0], vanilla[5]);
    assert!(grouped[5] > 0.6 * grouped[0], "grouped lone reader {} -> {}", grouped[0], grouped[5]);
    // The sequential group gives up about half its vanilla aggregate to the random reader's
    // disk time once it has several readers.
    let t = "Sequential readers vs random reader";
    let (vanilla, grouped) = (column(&v, t, "Vanilla CFQ", 3), column(&v, t, group, 3));
    for i in 3..vanilla.len() {
        let r = grouped[i] / vanilla[i];
        assert!((0.3..=0.75).contains(&r), "row {i}: grouped/vanilla sequential aggregate {r}");
    }
}

#[test]
fn dm_ioband_shares_follow_weights_and_fail_where_seed_000_says() {
    let v = reproduce("ioband");
    let shares = |table: &str, variant: &str, groups: usize| -> Vec<f64> {
        (0..groups).map(|g| column(&v, table, variant, 2 * g + 1)[0]).collect()
    };
    let near = |got: &[f64], want: &[f64]| got.iter().zip(want).all(|(g, w)| (g - w).abs() <= 1.0);
    let s = shares("Per partition, weights 40/20/10", "dm-ioband", 3);
    assert!(near(&s, &[57.1, 28.6, 14.3]), "40/20/10: {s:?}");
    let s = shares("Per partition, equal weights", "dm-ioband", 3);
    assert!(near(&s, &[33.3, 33.3, 33.3]), "equal: {s:?}");
    let s = shares("Per partition, no dm-ioband", "direct access", 3);
    assert!(s[0] < s[1] && s[1] < s[2], "without ioband the process counts decide: {s:?}");
    // Weights 20/10 per LV, VBD and tapdisk: within 1.5 points of each published split (seed 001).
    for (t, published) in [
        ("Per striped logical volume", [66.6, 33.3]),
        ("Per Xen virtual block device", [65.2, 34.8]),
        ("Per tapdisk process", [65.8, 34.2]),
    ] {
        let s = shares(t, "dm-ioband", 2);
        let close = s.iter().zip(&published).all(|(g, w)| (g - w).abs() <= 1.5);
        assert!(close, "{t}: {s:?} (published {published:?})");
    }
    // 000's rows: the lone random reader is not protected as N grows...
    let t = "000: sequential readers vs random reader";
    let bw = column(&v, t, "dm-ioband + CFQ", 6);
    assert!(bw[5] < 0.6 * bw[0], "random reader under dm-ioband: {bw:?} (published 37 -> 14)");
    // ...and with 16 random readers the byte fairness costs most of the array's throughput:
    // well under half of vanilla CFQ's total for the same job (seed 000: 2.7 vs 6.9 MB/s).
    let total = column(&v, "000: 16 sequential readers vs M random readers", "dm-ioband + CFQ", 8);
    let vanilla = reproduce("io-controller");
    let t = "16 sequential readers vs M random readers";
    let vanilla_total =
        column(&vanilla, t, "Vanilla CFQ", 3)[4] + column(&vanilla, t, "Vanilla CFQ", 6)[4];
    assert!(
        total[4] < 0.5 * vanilla_total,
        "dm-ioband {} vs vanilla {vanilla_total} KB/s",
        total[4]
    );
    // range-bw: each group inside its range while the disk has room (KiB/s columns)...
    let t = "range-bw with room";
    let capped = column(&v, t, "dm-ioband range-bw", 0)[0] * 1.024;
    let floor = column(&v, t, "dm-ioband range-bw", 1)[0] * 1.024;
    assert!(capped <= 200.0 * 1.03, "capped group {capped} KB/s over its 200 KB/s maximum");
    assert!(floor >= 250.0 * 0.97, "floor group {floor} KB/s under its 250 KB/s minimum");
    // ...and minimums the disk cannot deliver are reported, not silently missed.
    let over = v["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"].as_str().unwrap().starts_with("range-bw oversubscribed"))
        .unwrap();
    let warnings = over["variants"][0]["rows"][0]["warnings"].as_array().map_or(0, |w| w.len());
    assert!(warnings > 0, "oversubscribed minimums must be reported");
}

#[test]
fn cfq_idling_helps_remote_streams_only_when_target_threads_share_a_context() {
    let v = reproduce("iscsi");
    let shared = "Two remote streams on one disk, target threads in one I/O context";
    let separate = "Two remote streams on one disk, each target thread";
    let dl = column(&v, shared, "deadline", 0)[0];
    let cfq = column(&v, shared, "CFQ", 0)[0];
    // Seed 002: CFQ 23 MB/s vs deadline 5 for the measured stream (> 4x).
    assert!(cfq > 3.0 * dl, "shared contexts: CFQ {cfq} vs deadline {dl}");
    assert!(dl < 10.0, "deadline seeks between the streams: {dl}");
    // Separate contexts: CFQ cannot keep both streams streaming.
    let total_shared = column(&v, shared, "CFQ", 2)[0];
    let total_separate = column(&v, separate, "CFQ", 2)[0];
    assert!(total_separate < 0.75 * total_shared, "{total_separate} vs {total_shared}");
    // One stream through both page caches, on a target drive whose read-ahead stops 128-256
    // KiB past a read: deadline holds the target's async readahead (queue plugging) until
    // the next command needs it, by then the drive has stopped reading ahead and the sectors
    // must come round again. CFQ, idling for the stream, sends it at once. With 64 KiB pieces
    // the window a command needs is still in flight when it comes (the pieces complete one
    // by one), and waiting for it runs the queue, new readahead and all. Seed 002: deadline
    // 51 MB/s, CFQ 100, deadline with max_sectors_kb 64 100.
    let short = "One remote stream through both page caches, a target drive that reads ahead";
    let dl = column(&v, short, "deadline, max_sectors_kb 512", 0)[0];
    let dl64 = column(&v, short, "deadline, max_sectors_kb 64", 0)[0];
    let cfq = column(&v, short, "CFQ", 0)[0];
    assert!(cfq >= 1.6 * dl && dl64 >= 1.6 * dl, "deadline {dl}, 64 KiB {dl64}, CFQ {cfq}");
    assert!(cfq > 90.0 && dl64 > 90.0, "link-bound: CFQ {cfq}, deadline 64 KiB {dl64}");
}

/// Seed 004 on ext3, one run for the shapes and the plot (the reproduction is the slowest).
#[test]
fn interactive_reads_stall_behind_ext3_commits_while_jbd_writes_them_sync() {
    let dir = std::env::temp_dir().join(format!("elevator-plot-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["reproduce", "interactivity", "--output-format", "json", "--plot"])
        .arg(&dir)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    const S: f64 = 1e9; // latencies are in ns
    for table in ["largedd", "fsmark-single", "fsmark-threaded", "postmark"] {
        let at = |variant: &str, c: usize| column(&v, table, variant, c)[0];
        let (mean, max, time) = (0, 5, 6);
        // 2.6.37-3.4 ext3 under CFQ: every commit writes its ordered data WRITE_SYNC, and a
        // cold read waits seconds behind them (the mail's 3.2 rows; under postmark, 3.2
        // improved the worst case on arnold, so no bound there).
        let cfq32 = "CFQ, 3.2";
        if table != "postmark" {
            assert!(at(cfq32, max) >= 1.0 * S, "{table} {cfq32}: max {}", at(cfq32, max) / S);
        }
        // 2.6.30-2.6.36 commit async unless a task waits: 2.6.32 beats 3.2 (the mail's hydra
        // and sandy: latencies doubled to quadrupled since 2.6.32). Postmark's mean only
        // "regressed" (hydra), and the mail draws no conclusion from postmark.
        let cfq2632 = "CFQ, 2.6.32";
        let factor = if table == "postmark" { 1.0 } else { 0.5 };
        assert!(at(cfq2632, mean) < factor * at(cfq32, mean), "{table}: mean 2.6.32 vs 3.2");
        // 3.5's async commits (Jan Kara's fix): mean and worst case fall several-fold
        // (published: mean 619 -> 82 ms, max 2.13 -> 0.70 s). The mail has no 3.5 row for
        // postmark: there the mean only must not rise.
        let (before, after) = ("CFQ, 3.2", "CFQ, 3.5 (jbd commits async)");
        if table == "postmark" {
            assert!(at(after, mean) < at(before, mean), "{table}: mean {before} vs {after}");
        } else {
            assert!(at(after, mean) < 0.4 * at(before, mean), "{table}: mean {before} vs {after}");
            assert!(at(after, max) < 0.5 * at(before, max), "{table}: max {before} vs {after}");
        }
        // Percentiles are ordered, and every background job finished.
        for variant in ["CFQ, 2.6.32", "deadline, 3.2", "noop, 2.6.32"] {
            let row: Vec<f64> = (1..=5).map(|c| at(variant, c)).collect();
            assert!(row.windows(2).all(|w| w[0] <= w[1]), "{table} {variant}: {row:?}");
            assert!(at(variant, time) > 1.0, "{table} {variant}");
        }
    }
    // 3.0: 2.6.32's writeback with 3.2's sync commits. The commits cost the monitor (its
    // mean at least doubles against 2.6.32); IO-less throttling (3.2) costs fs_mark's
    // threads their completion time (the mail: "3.2 showed a big increase").
    for table in ["largedd", "fsmark-single", "fsmark-threaded"] {
        let at = |variant: &str, c: usize| column(&v, table, variant, c)[0];
        assert!(at("CFQ, 3.0", 0) > 2.0 * at("CFQ, 2.6.32", 0), "{table}: mean 3.0 vs 2.6.32");
    }
    let threaded = |variant: &str| column(&v, "fsmark-threaded", variant, 6)[0];
    assert!(threaded("CFQ, 3.0") < 0.9 * threaded("CFQ, 3.2"), "fsmark-threaded: 3.0 vs 3.2");
    // largedd writes 16 GiB at the disk's rate: minutes, whatever the scheduler.
    assert!(column(&v, "largedd", "noop, 3.2", 6)[0] > 100.0);
    let cdf = v["tables"][0]["variants"][0]["rows"][0]["cdf"].as_array().unwrap();
    assert_eq!(cdf.len(), 101, "a point per percent");
    let svg = std::fs::read_to_string(dir.join("interactivity-1.svg")).unwrap();
    for label in ["CFQ, 2.6.32", "deadline, 3.2", "noop, 3.2", "CFQ, 3.5 (jbd commits async)"] {
        assert!(svg.lines().any(|l| l.trim() == label), "legend names {label}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn modern_controllers_isolate_and_bfq_starts_applications_fast() {
    let v = reproduce("modern-isolation");
    let t = "Sequential readers vs random reader, 7200 rpm SATA";
    // Columns: 0 nr, 1 seq agg, 2 seq max-lat, 3 random agg, 4 random avg-lat, 5 max-lat.
    let plain = column(&v, t, "mq-deadline, no control", 3);
    assert!(plain[3] < 0.2 * plain[0], "no control: random reader {plain:?} KB/s");
    // BFQ injects the sequential readers' requests while it idles for the random reader, and
    // its inject limit lets that stretch each of the reader's requests by up to half
    // (`bfq_update_inject_limit`'s threshold), so BFQ's bound is that much lower.
    for (groups, stretch) in [("CFQ groups", 1.0), ("BFQ groups", 1.5)] {
        let bw = column(&v, t, groups, 3);
        assert!(
            bw.iter().all(|b| *b >= 0.8 * bw[0] / stretch),
            "{groups}: random reader {bw:?} KB/s"
        );
    }
    let lat = column(&v, t, "io.latency target=20000 on the random reader, mq-deadline", 4);
    let plain_lat = column(&v, t, "mq-deadline, no control", 4);
    for i in 1..lat.len() {
        assert!(
            lat[i] <= 30e6 && lat[i] < 0.25 * plain_lat[i],
            "io.latency row {i}: {lat:?} vs {plain_lat:?} ns"
        );
    }
    // io.cost with a 50 ms p95 target keeps the random reader going beside random writers.
    let t = "Random writers vs random reader, 7200 rpm SATA";
    let cost = column(&v, t, "io.cost rpct=95 rlat=50000, mq-deadline", 2);
    let plain = column(&v, t, "mq-deadline, no control", 2);
    for i in 1..cost.len() {
        assert!(cost[i] > 3.0 * plain[i], "io.cost row {i}: {cost:?} vs {plain:?} KB/s");
    }
    // A buffered writer's writeback reaches the controllers through cgroup writeback (6.1):
    // BFQ's groups and io.max on the writer give the random reader back several times what
    // it gets under plain mq-deadline (where writeback throttling already helps it); on 4.1
    // io.max does not touch the writer.
    let t = "A buffered writer beside a random reader";
    let cell = |variant, c| column(&v, t, variant, c)[0];
    let plain = cell("mq-deadline, no control, Linux 6.1", 2);
    let bfq = cell("BFQ groups, Linux 6.1", 2);
    let capped = "io.max wbps=20971520 on the writer, mq-deadline, Linux 6.1";
    let old = "io.max wbps=20971520 on the writer, mq-deadline, Linux 4.1";
    assert!(bfq > 2.0 * plain && cell(capped, 2) > 3.0 * plain, "{plain} {bfq} KB/s");
    assert!(cell(old, 0) > 2.0 * cell(capped, 0), "4.1: io.max does not reach buffered writes");
    assert!(cell(old, 2) <= plain, "4.1 has no writeback throttling either");
    let idle = column(&v, "Application start-up (8 MiB cold) on an idle disk", "BFQ", 0)[0];
    let t = "Application start-up (8 MiB cold) beside";
    let bfq = column(&v, t, "BFQ", 0);
    // Beside 10 readers (the first row) within twice the idle start-up, as BFQ's own
    // benchmark claims; beside 5 readers and 5 writers CFQ and mq-deadline still take at least
    // twice as long.
    assert!(bfq[0] <= 2.0 * idle, "BFQ start-up {} s against {idle} s idle", bfq[0]);
    for other in ["CFQ", "mq-deadline"] {
        let o = column(&v, t, other, 0);
        for i in 0..bfq.len() {
            assert!(o[i] >= 2.0 * bfq[i], "{other} start-up {} s against BFQ's {} s", o[i], bfq[i]);
        }
    }
}

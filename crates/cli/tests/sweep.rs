//! End-to-end: `elevator sweep plan` → `sweep run` (two shards) → `sweep merge` on a tiny
//! grid, read back with the parquet crate and checked against `elevator run`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::record::Field;
use serde_json::Value;

const JOB: &str = "\
[global]
filename=sda
bs=${BS}
direct=1
ioengine=psync
runtime=1
time_based

[reader]
rw=randread

[writer]
rw=randwrite
";

const GRID: &str = r#"job = "job.fio"
scheduler = ["mq-deadline", "bfq"]
seeds = [1, 2]
[vars]
BS = ["4k"]
[tunables.mq-deadline]
fifo_batch = [8]
"#;

fn elevator(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elevator")).current_dir(dir).args(args).output().expect("runs")
}

fn ok(dir: &Path, args: &[&str]) -> String {
    let out = elevator(dir, args);
    assert!(
        out.status.success(),
        "elevator {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn workdir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("elevator-sweep-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("job.fio"), JOB).unwrap();
    std::fs::write(dir.join("grid.toml"), GRID).unwrap();
    dir
}

/// Rows of a Parquet file: column → value, nulls left out.
fn rows(path: &Path) -> Vec<BTreeMap<String, Field>> {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    assert_eq!(
        reader.metadata().file_metadata().created_by(),
        Some("elevator sweep"),
        "no version in created_by"
    );
    reader
        .get_row_iter(None)
        .unwrap()
        .map(|r| {
            r.unwrap()
                .get_column_iter()
                .filter(|(_, f)| !matches!(f, Field::Null))
                .map(|(k, f)| (k.clone(), f.clone()))
                .collect()
        })
        .collect()
}

fn id(row: &BTreeMap<String, Field>) -> String {
    match &row["id"] {
        Field::Str(s) => s.clone(),
        other => panic!("id: {other:?}"),
    }
}

fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn plan_run_two_shards_merge() {
    let dir = workdir("main");
    ok(&dir, &["sweep", "plan", "grid.toml", "-o", "plan.jsonl"]);
    let plan = std::fs::read_to_string(dir.join("plan.jsonl")).unwrap();
    assert_eq!(plan.lines().count(), 4, "2 schedulers × 2 seeds");
    assert_eq!(plan, ok(&dir, &["sweep", "plan", "grid.toml"]), "same grid, same plan");

    for shard in ["0/2", "1/2"] {
        ok(&dir, &["sweep", "run", "plan.jsonl", "--shard", shard, "-o", "a"]);
        ok(&dir, &["sweep", "run", "plan.jsonl", "--shard", shard, "-o", "b"]);
    }
    for name in ["shard-0-of-2.parquet", "shard-1-of-2.parquet"] {
        assert_eq!(bytes(&dir.join("a").join(name)), bytes(&dir.join("b").join(name)), "{name}");
        assert!(!dir.join("a").join(format!("{name}.tmp")).exists());
    }
    // Shard 0 has plan lines 0 and 2: 2 runs × 2 jobs, each one direction.
    let shard0 = rows(&dir.join("a/shard-0-of-2.parquet"));
    assert_eq!(shard0.len(), 4);

    // Resuming a complete shard runs nothing and leaves its bytes.
    let before = bytes(&dir.join("a/shard-1-of-2.parquet"));
    let out = elevator(&dir, &["sweep", "run", "plan.jsonl", "--shard", "1/2", "-o", "a"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "elevator: sweep: shard 1/2: ran 0, skipped 2 already in a/shard-1-of-2.parquet\n"
    );
    assert_eq!(before, bytes(&dir.join("a/shard-1-of-2.parquet")));

    ok(&dir, &["sweep", "merge", "a", "-o", "merged-a.parquet"]);
    ok(&dir, &["sweep", "merge", "b", "-o", "merged-b.parquet"]);
    // Merging both directories: every run twice, each kept once.
    ok(&dir, &["sweep", "merge", "a", "b", "-o", "merged-ab.parquet"]);
    let merged = bytes(&dir.join("merged-a.parquet"));
    assert_eq!(merged, bytes(&dir.join("merged-b.parquet")));
    assert_eq!(merged, bytes(&dir.join("merged-ab.parquet")));

    let all = rows(&dir.join("merged-a.parquet"));
    assert_eq!(all.len(), 8, "4 runs × 2 jobs × one direction");
    let ids: Vec<String> = all.iter().map(id).collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "sorted by id");
    let distinct: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), 4, "each id once");
    let plan_ids: BTreeSet<String> = plan
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(distinct.into_iter().cloned().collect::<BTreeSet<_>>(), plan_ids);
    for row in &all {
        let is_mq = row["scheduler"] == Field::Str("mq-deadline".into());
        assert_eq!(row.contains_key("tunable.fifo_batch"), is_mq, "{row:?}");
        assert_eq!(row["var.BS"], Field::Str("4k".into()));
    }

    // One run against `elevator run --output-format json`.
    let spec: Value = serde_json::from_str(plan.lines().next().unwrap()).unwrap();
    assert_eq!(spec["scheduler"], "mq-deadline");
    let seed = spec["seed"].to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(&dir)
        .env("BS", "4k")
        .args(["run", "job.fio", "--scheduler", "mq-deadline", "--iosched", "fifo_batch=8"])
        .args(["--seed", &seed, "--output-format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let fio: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine: Vec<&BTreeMap<String, Field>> =
        all.iter().filter(|r| id(r) == spec["id"].as_str().unwrap()).collect();
    assert_eq!(mine.len(), 2);
    for (job, row) in fio["jobs"].as_array().unwrap().iter().zip(&mine) {
        let direction = if job["jobname"] == "reader" { "read" } else { "write" };
        assert_eq!(row["jobname"], Field::Str(job["jobname"].as_str().unwrap().into()));
        assert_eq!(row["direction"], Field::Str(direction.into()));
        let stats = &job[direction];
        for key in ["io_bytes", "bw_bytes", "total_ios", "runtime"] {
            assert_eq!(row[key], Field::Long(stats[key].as_i64().unwrap()), "{key}");
        }
        assert_eq!(row["iops"], Field::Double(stats["iops"].as_f64().unwrap()));
        assert_eq!(row["lat_ns.mean"], Field::Double(stats["lat_ns"]["mean"].as_f64().unwrap()));
        let p99 = &stats["clat_ns"]["percentile"]["99.000000"];
        assert_eq!(row["clat_ns.percentile.99.000000"], Field::Long(p99.as_i64().unwrap()));
        assert!(stats["io_bytes"].as_i64().unwrap() > 0);
    }
}

#[test]
fn an_interrupted_shard_resumes_to_the_same_bytes() {
    let dir = workdir("resume");
    ok(&dir, &["sweep", "plan", "grid.toml", "-o", "plan.jsonl"]);
    let plan = std::fs::read_to_string(dir.join("plan.jsonl")).unwrap();
    // The first two runs only, as a shard killed halfway would have them.
    let half: String = plan.lines().take(2).map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("half.jsonl"), half).unwrap();
    ok(&dir, &["sweep", "run", "half.jsonl", "-o", "resumed"]);
    assert_eq!(rows(&dir.join("resumed/shard-0-of-1.parquet")).len(), 4);
    let out = elevator(&dir, &["sweep", "run", "plan.jsonl", "-o", "resumed"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "elevator: sweep: shard 0/1: ran 2, skipped 2 already in resumed/shard-0-of-1.parquet\n"
    );
    ok(&dir, &["sweep", "run", "plan.jsonl", "-o", "whole"]);
    assert_eq!(
        bytes(&dir.join("resumed/shard-0-of-1.parquet")),
        bytes(&dir.join("whole/shard-0-of-1.parquet"))
    );
}

#[test]
fn bad_shards_and_grids_are_one_line_errors() {
    let dir = workdir("errors");
    ok(&dir, &["sweep", "plan", "grid.toml", "-o", "plan.jsonl"]);
    for (shard, why) in
        [("3/2", "i is not below N"), ("0/0", "N is 0"), ("x/2", "i is not a number")]
    {
        let out = elevator(&dir, &["sweep", "run", "plan.jsonl", "--shard", shard, "-o", "d"]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!("elevator: --shard `{shard}`: {why}; expected i/N with 0 <= i < N, e.g. 0/4\n")
        );
    }
    assert!(!dir.join("d").exists(), "nothing ran");
    let plan = std::fs::read_to_string(dir.join("plan.jsonl")).unwrap();
    let first = plan.lines().next().unwrap();
    std::fs::write(dir.join("twice.jsonl"), format!("{plan}{first}\n")).unwrap();
    let out = elevator(&dir, &["sweep", "run", "twice.jsonl", "-o", "d"]);
    assert_eq!(out.status.code(), Some(1));
    let id = serde_json::from_str::<Value>(first).unwrap()["id"].as_str().unwrap().to_string();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("elevator: twice.jsonl:5: run `{id}` is in the plan twice\n")
    );
    std::fs::write(dir.join("tampered.jsonl"), first.replace("\"seed\":1", "\"seed\":9")).unwrap();
    let out = elevator(&dir, &["sweep", "run", "tampered.jsonl", "-o", "d"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!(
            "elevator: tampered.jsonl:1: id `{id}` does not match the run's spec"
        )),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    let out = elevator(&dir, &["sweep", "merge", "empty", "-o", "m.parquet"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "elevator: empty: no *.parquet files to merge\n"
    );
    assert!(!dir.join("d").exists(), "nothing ran");
    std::fs::write(dir.join("bad.toml"), GRID.replace("fifo_batch = [8]", "read_expyre = [100]"))
        .unwrap();
    let out = elevator(&dir, &["sweep", "plan", "bad.toml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(
            "elevator: bad.toml:7: tunables.mq-deadline.read_expyre: scheduler `mq-deadline` has no tunable `read_expyre`"
        ),
        "{err}"
    );
}

/// The README's example grid plans to its 24 runs from the repository root.
#[test]
fn the_example_grid_plans() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let plan = ok(&repo, &["sweep", "plan", "examples/sweep/grid.toml"]);
    assert_eq!(plan.lines().count(), 24);
    let first: Value = serde_json::from_str(plan.lines().next().unwrap()).unwrap();
    assert_eq!(first["job_path"], "examples/sweep/randread.fio");
    assert_eq!(first["vars"]["QD"], "1");
}

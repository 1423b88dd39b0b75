//! What the front ends share: the `elevator` command (crates/cli) and the Python package
//! (crates/python) read their inputs and lay out `compare`'s JSON through these functions, so
//! the same job file, topology, scheduler and seed give the same numbers and the same bytes
//! in both, and the same one-line errors.
//!
//! Nothing here prints: warnings stay in the [`JobFile`] and the [`SimResult`] for the caller
//! to show its own way (stderr for the command, Python's `warnings` for the package).

use std::path::Path;

use elevator_fio::{JobFile, Keywords};
use serde_json::{json, Value};

use crate::topology::MAX_TOPOLOGY_BYTES;
use crate::{report, simulate, SimOptions, SimResult, Topology};

/// Parses `KEY=VALUE` scheduler tunables (`--iosched`, compare's `NAME:KEY=VALUE,...`).
pub fn parse_iosched(pairs: &[String]) -> Result<Vec<(String, String)>, String> {
    pairs
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                Ok((k.trim().to_string(), v.trim().to_string()))
            }
            _ => {
                Err(format!("--iosched `{p}`: expected KEY=VALUE, e.g. --iosched read_expire=250"))
            }
        })
        .collect()
}

/// Splits a compare variant, `cfq:slice_idle=0,quantum=8`, into the scheduler's name and its
/// tunables.
pub fn parse_variant(text: &str) -> Result<(String, Vec<(String, String)>), String> {
    match text.split_once(':') {
        None => Ok((text.to_string(), Vec::new())),
        Some((name, rest)) => {
            let pairs: Vec<String> = rest.split(',').map(str::to_string).collect();
            Ok((
                name.to_string(),
                parse_iosched(&pairs).map_err(|e| format!("--scheduler {text}: {e}"))?,
            ))
        }
    }
}

/// Reads the topology file, or gives the built-in single SATA disk.
pub fn load_topology(path: Option<&Path>) -> Result<Topology, String> {
    match path {
        Some(path) => Topology::from_file(path),
        None => Ok(Topology::builtin()),
    }
}

/// [`load_topology`] on TOML text; `name` labels it in messages (and relative paths in it
/// resolve against its directory). At most [`MAX_TOPOLOGY_BYTES`], as a file.
pub fn parse_topology(text: &str, name: &str) -> Result<Topology, String> {
    if text.len() as u64 > MAX_TOPOLOGY_BYTES {
        return Err(format!(
            "{name}: cannot read topology: larger than {MAX_TOPOLOGY_BYTES} bytes"
        ));
    }
    Topology::from_str(text, name)
}

/// The simulated machine's `$pagesize`, `$ncpus` and `$mb_memory` for job files.
pub fn keywords(topology: &Topology) -> Keywords {
    let vm = &topology.machine.vm;
    Keywords { pagesize: 4096, ncpus: vm.cpus, mb_memory: vm.memory_bytes >> 20 }
}

/// Reads a job file for `topology`'s machine; `env` answers `${VAR}`. Its warnings are in
/// [`JobFile::warnings`].
pub fn load_jobs(
    path: &Path,
    topology: &Topology,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, String> {
    elevator_fio::parse_file_with(path, env, &keywords(topology)).map_err(|e| e.to_string())
}

/// [`load_jobs`] on job-file text: `name` labels it in messages, `include`s resolve relative
/// to `base_dir`.
pub fn parse_jobs(
    text: &str,
    name: &str,
    base_dir: &Path,
    topology: &Topology,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, String> {
    elevator_fio::parse_str_with(text, name, base_dir, env, &keywords(topology))
        .map_err(|e| e.to_string())
}

/// `elevator compare`'s runs: the job file under each variant (`NAME` or
/// `NAME:KEY=VALUE,...`), in the order given, with the same seed.
pub fn compare(
    jobs: &JobFile,
    topology: &Topology,
    seed: u64,
    variants: &[String],
) -> Result<Vec<(String, SimResult)>, String> {
    let mut results = Vec::with_capacity(variants.len());
    for variant in variants {
        let (name, iosched) = parse_variant(variant)?;
        let options = SimOptions { seed, scheduler: Some(name), iosched, ..SimOptions::default() };
        let result = simulate(jobs, topology, &options)
            .map_err(|e| format!("--scheduler {variant}: {e}"))?;
        results.push((variant.clone(), result));
    }
    Ok(results)
}

/// `elevator compare --output-format json`: `{"runs": [{"scheduler": VARIANT, "result":
/// <fio JSON>}, ...]}`, pretty-printed, with a final newline.
pub fn compare_json(
    runs: &[(String, SimResult)],
    jobs: &JobFile,
    seed: u64,
    topology: &Topology,
) -> String {
    let runs: Vec<Value> = runs
        .iter()
        .map(|(variant, r)| {
            let fio: Value =
                serde_json::from_str(&report::json::render(r, jobs, seed, &topology.source))
                    .expect("our own JSON parses");
            json!({ "scheduler": variant, "result": fio })
        })
        .collect();
    let mut s = serde_json::to_string_pretty(&json!({ "runs": runs })).expect("serialises");
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iosched_pairs_and_their_errors() {
        let pairs = vec!["read_expire = 250".to_string(), "fifo_batch=8".to_string()];
        assert_eq!(
            parse_iosched(&pairs).unwrap(),
            vec![("read_expire".into(), "250".into()), ("fifo_batch".into(), "8".into())]
        );
        let err = parse_iosched(&["=3".to_string()]).unwrap_err();
        assert!(err.starts_with("--iosched `=3`: expected KEY=VALUE"), "{err}");
    }

    #[test]
    fn variants_split_at_the_colon() {
        assert_eq!(parse_variant("bfq").unwrap(), ("bfq".to_string(), vec![]));
        let (name, pairs) = parse_variant("cfq:slice_idle=0,quantum=8").unwrap();
        assert_eq!(name, "cfq");
        assert_eq!(pairs.len(), 2);
        let err = parse_variant("cfq:slice_idle").unwrap_err();
        assert!(err.starts_with("--scheduler cfq:slice_idle: --iosched"), "{err}");
    }

    #[test]
    fn job_text_reads_like_a_file_and_is_bounded() {
        let topology = Topology::builtin();
        let env = |_: &str| None;
        let jobs = parse_jobs("[r]\nrw=read\nsize=1m\n", "<job>", Path::new("."), &topology, &env)
            .unwrap();
        assert_eq!(jobs.jobs.len(), 1);
        let err =
            parse_jobs("[r]\nrw=sideways\n", "<job>", Path::new("."), &topology, &env).unwrap_err();
        assert!(err.starts_with("<job>:2: option `rw`"), "{err}");
        let big = "#".repeat(elevator_fio::MAX_JOB_TEXT_BYTES as usize + 1);
        let err = parse_jobs(&big, "<job>", Path::new("."), &topology, &env).unwrap_err();
        assert!(err.contains("exceeds 16 MiB"), "{err}");
    }

    #[test]
    fn topology_text_is_bounded() {
        let big = "#".repeat(MAX_TOPOLOGY_BYTES as usize + 1);
        let err = parse_topology(&big, "<topology>").unwrap_err();
        assert!(err.starts_with("<topology>: cannot read topology: larger than"), "{err}");
        let err = parse_topology("", "<topology>").unwrap_err();
        assert!(err.contains("no [[device]] tables"), "{err}");
    }
}

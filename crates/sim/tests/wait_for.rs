//! When jobs start, as fio's `run_threads` starts them. `wait_for=NAME`: a job starts once
//! every job named NAME (all its clones) has finished (`waitee_running`); other jobs start
//! as they would, and a start delay still counts. fio refuses a job that waits for itself,
//! for a job not defined before it, or for a name two sections share (`wait_for_ok`).
//! `startdelay=` counts from the run's start (`utime_since_genesis`), also for a job behind
//! a `stonewall`: one whose delay has passed by its phase starts with the phase.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

const TOPOLOGY: &str = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n";

fn run(jobs: &str) -> Result<SimResult, String> {
    let jobs = elevator_fio::parse_str(jobs, "t.fio", Path::new("."), &|_| None)
        .map_err(|e| e.to_string())?;
    let topology = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let options = SimOptions { trace_decisions: true, ..SimOptions::default() };
    simulate(&jobs, &topology, &options).map_err(|e| e.to_string())
}

/// The first and last dispatch of each pid's requests, ns.
fn spans(r: &SimResult) -> std::collections::BTreeMap<u64, (u64, u64)> {
    let mut spans = std::collections::BTreeMap::new();
    for l in r.devices[0].decisions.as_ref().expect("traced").text.lines() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let (t, pid) = (v["t_ns"].as_u64().unwrap(), v["pid"].as_u64().unwrap());
        let s = spans.entry(pid).or_insert((t, t));
        s.1 = t;
    }
    spans
}

const JOBS: &str =
    "[global]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nruntime=1\ntime_based\n";

#[test]
fn a_job_starts_when_every_clone_of_its_waitee_is_done() {
    let r = run(&format!("{JOBS}[a]\nnumjobs=2\n[b]\nwait_for=a\n[c]\n")).unwrap();
    let s = spans(&r);
    let (a0, a1, b, c) = (s[&1000], s[&1001], s[&1002], s[&1003]);
    // a's clones and c start at once; b after both clones of a are done, 1 s on.
    assert!(a0.0 < 1_000_000 && a1.0 < 1_000_000 && c.0 < 1_000_000, "{s:?}");
    assert!(b.0 >= a0.1.max(a1.1), "{s:?}");
    assert!((1_000_000_000..1_100_000_000).contains(&b.0), "{s:?}");
    assert!(r.processes.iter().all(|p| p.error.is_none()));
    // A start delay longer than the wait still holds: b starts at 1.5 s.
    let r = run(&format!("{JOBS}[a]\n[b]\nwait_for=a\nstartdelay=1500ms\n")).unwrap();
    let b = spans(&r)[&1001];
    assert!((1_500_000_000..1_600_000_000).contains(&b.0), "{b:?}");
}

#[test]
fn wait_for_is_checked_as_fio_checks_it() {
    let err = |jobs: &str| match run(&format!("{JOBS}{jobs}")) {
        Ok(_) => panic!("{jobs}: ran"),
        Err(e) => e,
    };
    assert!(err("[a]\nwait_for=a\n").contains("cannot wait for itself"));
    assert!(err("[b]\nwait_for=a\n[a]\n").contains("waitee job `a` unknown"));
    assert!(err("[a]\n[a]\n[b]\nwait_for=a\n").contains("multiple waitees"));
}

#[test]
fn a_start_delay_counts_from_the_run_s_start_behind_a_stonewall_too() {
    // Real fio 3.33 takes about 3 s for the first file and 4 s for the second: b starts at
    // 2 s (its 1 s delay long past) and at 3 s.
    for (delay, start_s) in [(1, 2), (3, 3)] {
        let r =
            run(&format!("{JOBS}[a]\nruntime=2\n[b]\nstonewall\nstartdelay={delay}\n")).unwrap();
        let b = spans(&r)[&1001];
        let start = start_s * 1_000_000_000;
        assert!((start..start + 100_000_000).contains(&b.0), "startdelay={delay}: {b:?}");
    }
}

//! fio's `ioscheduler=`: as a job starts it switches the device its file is on (a
//! partition's disk) to the named scheduler (`switch_ioscheduler`, by writing the name to
//! `queue/scheduler`); a name the device does not have fails the job with EINVAL. The
//! kernel freezes the queue for the switch: requests already in it finish under the old
//! scheduler, new ones wait and go to the new one.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

const TOPOLOGY: &str = "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"mq-deadline\"\n\n[[partition]]\nname = \"sda1\"\ndevice = \"sda\"\nstart = \"1MiB\"\nsize = \"100GiB\"\n";

fn run_with(jobs: &str, options: &SimOptions) -> Result<SimResult, String> {
    let jobs = elevator_fio::parse_str(jobs, "t.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    simulate(&jobs, &topology, options).map_err(|e| e.to_string())
}

fn traced(jobs: &str) -> SimResult {
    run_with(jobs, &SimOptions { trace_decisions: true, ..SimOptions::default() }).unwrap()
}

/// Per dispatched request, in order: (time, scheduler, pid).
fn dispatches(r: &SimResult) -> Vec<(u64, String, u64)> {
    let log = r.devices[0].decisions.as_ref().expect("decisions were traced");
    log.text
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["t_ns"].as_u64().unwrap(),
                v["scheduler"].as_str().unwrap().to_string(),
                v["pid"].as_u64().unwrap(),
            )
        })
        .collect()
}

const READER: &str =
    "[global]\nfilename=sda1\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nruntime=1\ntime_based\n";

#[test]
fn a_job_switches_its_disk_before_its_first_io() {
    let r = traced(&format!("{READER}ioscheduler=bfq\n[a]\n[b]\n"));
    assert_eq!(r.devices[0].scheduler, "bfq");
    let d = dispatches(&r);
    assert!(d.len() > 100, "{} requests", d.len());
    assert!(d.iter().all(|(_, s, _)| s == "bfq"), "every request went through BFQ");
    assert!(r.processes.iter().all(|p| p.error.is_none()));
    // The same name as the device has changes nothing.
    let same = traced(&format!("{READER}ioscheduler=mq-deadline\n[a]\n[b]\n"));
    let plain = traced(&format!("{READER}[a]\n[b]\n"));
    assert_eq!(dispatches(&same), dispatches(&plain));
}

#[test]
fn a_stonewalled_job_switches_between_phases() {
    let r = traced(&format!("{READER}[a]\n[b]\nstonewall\nioscheduler=kyber\n"));
    assert_eq!(r.devices[0].scheduler, "kyber");
    let d = dispatches(&r);
    let (pa, pb) = (u64::from(r.processes[0].owner.pid), u64::from(r.processes[1].owner.pid));
    assert!(d.iter().filter(|x| x.2 == pa).all(|x| x.1 == "mq-deadline"));
    assert!(d.iter().filter(|x| x.2 == pb).all(|x| x.1 == "kyber"));
    assert!(d.iter().any(|x| x.2 == pb), "the second job ran");
}

#[test]
fn a_switch_waits_for_the_requests_in_the_queue() {
    // `b` starts 300 ms into `a`'s run with 32 requests of `a` in the queue: those finish
    // under mq-deadline, nothing of `b` or `a` enters until they have, then all is BFQ.
    let r = traced(
        "[global]\nfilename=sda1\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nruntime=1\ntime_based\nioengine=libaio\niodepth=32\n[a]\n[b]\nstartdelay=300ms\nioscheduler=bfq\n",
    );
    let d = dispatches(&r);
    let first_bfq = d.iter().position(|x| x.1 == "bfq").expect("the switch happened");
    assert!(d[first_bfq..].iter().all(|x| x.1 == "bfq"), "no mq-deadline after BFQ took over");
    let (switch_ns, _, _) = &d[first_bfq];
    assert!(*switch_ns > 300_000_000, "switched at {switch_ns} ns");
    // What mq-deadline still held at 300 ms went to the drive after it.
    let drained = d.iter().filter(|x| x.1 == "mq-deadline" && x.0 >= 300_000_000).count();
    assert!(drained >= 1, "{drained} dispatched while the queue drained");
    let pb = u64::from(r.processes[1].owner.pid);
    assert!(d[..first_bfq].iter().all(|x| x.2 != pb), "`b` waited for the switch");
    let done: u64 = r.processes.iter().map(|p| p.stats[0].total_ios).sum();
    assert_eq!(done, d.len() as u64, "every request completed once");
    assert!(r.processes.iter().all(|p| p.error.is_none()));
}

#[test]
fn a_scheduler_the_device_does_not_have_fails_the_job() {
    // exitall_on_error does not stop `b`: fio's thread ends at its setup error before it
    // looks (goto err).
    let r = traced(&format!("{READER}[a]\nioscheduler=elevator9\nexitall_on_error=1\n[b]\n"));
    let e = r.processes[0].error.as_ref().expect("job a failed");
    assert_eq!((e.errno, e.func), (22, "iosched_switch"));
    assert_eq!(e.message, "fio: unable to set io scheduler to elevator9");
    assert_eq!(r.processes[0].stats[0].total_ios, 0);
    assert!(r.processes[1].error.is_none() && r.processes[1].stats[0].total_ios > 50);
    assert_eq!(r.devices[0].scheduler, "mq-deadline");
}

#[test]
fn the_command_lines_scheduler_stays() {
    let options = SimOptions { scheduler: Some("none".into()), ..SimOptions::default() };
    let r = run_with(&format!("{READER}ioscheduler=bfq\n[a]\n"), &options).unwrap();
    assert_eq!(r.devices[0].scheduler, "none");
    let w = r.warnings();
    assert!(w.iter().any(|w| w.contains("ioscheduler=bfq left out: --scheduler none")), "{w:?}");
    // --iosched tunables must fit the scheduler a job switches to.
    let options =
        SimOptions { iosched: vec![("fifo_batch".into(), "8".into())], ..SimOptions::default() };
    let e = run_with(&format!("{READER}ioscheduler=bfq\n[a]\n"), &options).err().unwrap();
    assert!(e.contains("job `a`: ioscheduler=bfq on `sda`: --iosched fifo_batch=8"), "{e}");
}

//! A topology that names its machine's kernel runs CFQ (and mq-deadline) as that release
//! shipped it: the same run as with the release's switches set by hand, and not the one
//! elevator's defaults (CFQ: 2.6.38's rules; mq-deadline: 6.5's) give.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const JOB: &str = "
[global]
direct=1
runtime=5
time_based
filename=sda
size=8G

[seq]
rw=read
bs=64k

[rand]
rw=randread
bs=4k
ioengine=libaio
iodepth=4
";

/// I/Os done by each job under CFQ.
fn run(machine: &str, iosched: &str) -> Vec<u64> {
    run_job(JOB, "scheduler = \"cfq\"\n", machine, iosched)
}

/// I/Os done by each job of `job` on one 7200 rpm disk with `device`'s lines (its
/// scheduler, ...), under `machine`'s table and `iosched`'s.
fn run_job(job: &str, device: &str, machine: &str, iosched: &str) -> Vec<u64> {
    let topo = format!(
        "{machine}[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n\
         {device}{iosched}"
    );
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    r.processes.iter().map(|p| p.stats[0].total_ios).collect()
}

#[test]
fn a_named_kernel_runs_its_release_s_cfq() {
    for (kernel, by_hand) in [
        ("2.6.29", "workload_trees = 0\ngroup_scheduling = 0\nrules_2_6_29 = 1\nqueue_merging = 0\nlow_latency = 0\n"),
        ("2.6.32", "workload_trees = 0\ngroup_scheduling = 0\nrules_2_6_32 = 1\n"),
        ("3.2", "quantum = 8\nrules_3_2 = 1\n"),
    ] {
        let named = run(&format!("[machine]\nkernel = \"{kernel}\"\n"), "");
        let set = run("", &format!("[device.iosched]\n{by_hand}"));
        assert_eq!(named, set, "{kernel}");
        // The topology's own tunables still win over the release's.
        let own = run(&format!("[machine]\nkernel = \"{kernel}\"\n"), "[device.iosched]\nslice_idle = 0\n");
        assert_ne!(own, named, "{kernel}: slice_idle = 0 is the topology's");
    }
    assert_ne!(run("", ""), run("[machine]\nkernel = \"2.6.32\"\n", ""), "2.6.38's rules differ");
}

/// Two forward readers (a 64 KiB hole after each read, so that their requests do not merge),
/// two reads in flight each, on a disk that takes one command at a time: a reader's next
/// request comes in just above the head, after the other reader's was already waiting higher
/// up.
const TWO_STREAMS: &str = "
[global]
direct=1
runtime=2
time_based
filename=sda
rw=read:64k
bs=64k
ioengine=libaio
iodepth=2

[low]
offset=0
size=4G

[high]
offset=100G
size=4G
";

/// mq-deadline on a kernel before 6.5 goes on with its batches through `next_rq` pointers.
#[test]
fn a_named_kernel_before_6_5_runs_deadline_with_next_rq_pointers() {
    let device = "scheduler = \"mq-deadline\"\nparams = { queue_depth = 1 }\n";
    let run = |machine: &str, iosched: &str| run_job(TWO_STREAMS, device, machine, iosched);
    let named = run("[machine]\nkernel = \"2.6.29\"\n", "");
    assert_eq!(named, run("", "[device.iosched]\nnext_rq_pointers = 1\n"));
    assert_eq!(run("[machine]\nkernel = \"6.5\"\n", ""), run("", ""));
    // Since 6.5 a reader's new request goes next while it is above the head: the readers take
    // turns of many reads. Before, the pointer set at the dispatch sends the other reader's:
    // turns of one read, a seek each.
    let since_6_5 = run("", "");
    let total = |v: &[u64]| v.iter().sum::<u64>();
    assert!(total(&named) * 2 < total(&since_6_5), "{named:?} against {since_6_5:?}");
}

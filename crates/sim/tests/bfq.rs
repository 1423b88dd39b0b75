//! BFQ's headline behaviour on the built-in 7200 rpm disk: weights between groups, a random
//! reader's share beside 32 sequential readers, and an application's cold start-up beside 10
//! sequential readers (weight raising), with CFQ and mq-deadline beside it; and on the NVMe
//! preset, injection keeping BFQ groups near the drive's throughput.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

fn run(job: &str, scheduler: &str) -> SimResult {
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let opts = SimOptions { scheduler: Some(scheduler.to_string()), ..SimOptions::default() };
    simulate(&jobs, &Topology::builtin(), &opts).unwrap()
}

/// Read bytes/s and runtime (ns) of job `name`.
fn read(r: &SimResult, name: &str) -> (f64, u64) {
    let p = r.processes.iter().find(|p| p.name == name).expect("the job ran");
    let ns = p.runtime_ns();
    (p.stats[0].io_bytes as f64 / (ns as f64 / 1e9), ns)
}

#[test]
fn two_groups_weighted_two_to_one_share_two_to_one() {
    let job = "[global]\ndirect=1\nioengine=psync\nrw=read\nbs=64k\nruntime=20\ntime_based\nfilename=sda\nsize=4G\n\
               [heavy]\ncgroup=heavy\ncgroup_weight=200\noffset=0\n[light]\ncgroup=light\ncgroup_weight=100\noffset=100G\n";
    let r = run(job, "bfq");
    let (heavy, _) = read(&r, "heavy");
    let (light, _) = read(&r, "light");
    let share = heavy / (heavy + light);
    eprintln!("BFQ groups 200:100: heavy share {:.1} %", share * 100.0);
    assert!((share - 2.0 / 3.0).abs() <= 0.05, "heavy group got {share:.3}");
}

#[test]
fn a_random_reader_keeps_its_share_beside_32_sequential_readers() {
    let base = "[global]\ndirect=1\nioengine=psync\nruntime=30\ntime_based\nfilename=sda\nsize=400G\n[rand]\nrw=randread\nbs=4k\n";
    let (alone, _) = read(&run(base, "bfq"), "rand");
    let crowd = format!("{base}[seq]\nrw=read\nbs=64k\nnumjobs=32\n");
    let (shared, _) = read(&run(&crowd, "bfq"), "rand");
    // Equal weights: a 33rd of the disk's time is the reader's.
    let promised = alone / 33.0;
    eprintln!("random reader: {shared:.0} B/s beside 32 readers, {alone:.0} B/s alone");
    assert!(
        shared >= 0.8 * promised,
        "{shared:.0} B/s against {promised:.0} promised ({alone:.0} alone)"
    );
}

#[test]
fn an_application_starts_within_twice_its_idle_time_beside_10_readers() {
    let app = "[app]\nrw=randread\nbs=16k\nsize=8m\noffset=200G\nstartdelay=3\n";
    let global = "[global]\ndirect=1\nioengine=psync\nfilename=sda\nsize=400G\n";
    let seq = "[seq]\nrw=read\nbs=128k\nnumjobs=10\nruntime=20\ntime_based\n";
    let startup = |scheduler: &str, busy: bool| {
        let job = format!("{global}{}{app}", if busy { seq } else { "" });
        let r = run(&job, scheduler);
        let p = r.processes.iter().find(|p| p.name == "app").unwrap();
        p.runtime_ns() as f64 / 1e9
    };
    let idle = startup("bfq", false);
    let bfq = startup("bfq", true);
    let cfq = startup("cfq", true);
    let deadline = startup("mq-deadline", true);
    eprintln!("start-up: idle {idle:.2} s; beside 10 readers BFQ {bfq:.2} s, CFQ {cfq:.2} s, mq-deadline {deadline:.2} s");
    assert!(bfq <= 2.0 * idle, "BFQ: {bfq:.2} s against {idle:.2} s idle");
    assert!(
        cfq > 3.0 * bfq && deadline > 3.0 * bfq,
        "CFQ {cfq:.2} s, mq-deadline {deadline:.2} s, BFQ {bfq:.2} s"
    );
}

const HDD: &str = "model = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"bfq\"";

/// Sequential 64 KiB readers in nested cgroups under BFQ, weights from `io.bfq.weight`.
fn nested(cgroups: &str) -> Vec<f64> {
    let topo = format!("[[device]]\nname = \"sda\"\n{HDD}\n{cgroups}");
    let topology = Topology::from_str(&topo, "t.toml").unwrap();
    let job = "[global]\ndirect=1\nioengine=psync\nrw=read\nbs=64k\nruntime=20\ntime_based\n\
               filename=sda\nsize=4G\n\
               [x]\ncgroup=a/x\noffset=0\n[y]\ncgroup=a/y\noffset=100G\n[b]\ncgroup=b\noffset=200G\n";
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    let bw: Vec<f64> = ["x", "y", "b"].iter().map(|n| read(&r, n).0).collect();
    let total: f64 = bw.iter().sum();
    bw.iter().map(|b| b / total).collect()
}

#[test]
fn nested_groups_share_by_io_bfq_weight() {
    // a and b alike (BFQ's default 100): a's half is split between a/x and a/y.
    let shares = nested("");
    eprintln!("BFQ a/x, a/y, b at 100 each: {shares:.3?}");
    assert!((shares[2] - 0.5).abs() <= 0.05 && (shares[0] - 0.25).abs() <= 0.05, "{shares:?}");
    // io.bfq.weight: a 300 (on this device), b 100, a/y twice a/x.
    let shares = nested(
        "[[cgroup]]\npath = \"a\"\n\"io.bfq.weight\" = \"8:0 300\"\n\
         [[cgroup]]\npath = \"a/y\"\n\"io.bfq.weight\" = \"default 200\"\n",
    );
    eprintln!("BFQ a 300 (x 100, y 200), b 100: {shares:.3?}");
    let a = shares[0] + shares[1];
    assert!((a - 0.75).abs() <= 0.05, "{shares:?}");
    assert!((shares[1] / a - 2.0 / 3.0).abs() <= 0.05, "{shares:?}");
}

#[test]
fn bad_io_bfq_weight_lines_name_the_file_and_cgroup() {
    for (cgroups, want) in [
        ("[[cgroup]]\npath = \"a\"\n\"io.bfq.weight\" = \"default 1001\"\n", "1 to 1000"),
        ("[[cgroup]]\npath = \"a\"\n\"io.bfq.weight\" = \"8:0 heavy\"\n", "expected a weight"),
        ("[[cgroup]]\npath = \"/\"\n\"io.bfq.weight\" = \"100\"\n", "root cgroup"),
        ("[[cgroup]]\npath = \"a\"\n\"io.bfq.weight\" = \"8:9 100\"\n", "8:9"),
    ] {
        let topo = format!("[[device]]\nname = \"sda\"\n{HDD}\n{cgroups}");
        let e = Topology::from_str(&topo, "t.toml").unwrap_err();
        assert!(e.starts_with("t.toml:") && e.contains(want) && !e.contains('\n'), "{e}");
    }
}

#[test]
fn on_flash_injection_keeps_bfq_groups_near_the_drives_throughput() {
    // BFQ idles for each sync queue; on flash that queues, the requests of the other queues
    // go to the drive meanwhile (injection), so four sequential readers in one cgroup beside
    // a random reader in another keep most of what the drive gives them without a scheduler
    // (70 % here; before injection was modelled, about a seventh).
    let topo = "[[device]]\nname = \"sda\"\nmodel = \"nvme\"\npreset = \"nvme-pcie3-2018\"\nscheduler = \"none\"\n";
    let topology = Topology::from_str(topo, "t.toml").unwrap();
    let job =
        "[global]\ndirect=1\nioengine=psync\nbs=4k\nruntime=5\ntime_based\nfilename=sda\nsize=2G\n\
               [seq]\nrw=read\nnumjobs=4\ncgroup=a\n[rand]\nrw=randread\ncgroup=b\n";
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let seq_bw = |scheduler: &str| {
        let opts = SimOptions { scheduler: Some(scheduler.into()), ..SimOptions::default() };
        let r = simulate(&jobs, &topology, &opts).unwrap();
        r.processes.iter().filter(|p| p.name == "seq").map(read_of).sum::<f64>()
    };
    let (bfq, none) = (seq_bw("bfq"), seq_bw("none"));
    eprintln!("NVMe, 4 sequential readers beside a random one: BFQ groups {bfq:.0} B/s, none {none:.0} B/s");
    assert!(bfq >= 0.5 * none, "BFQ {bfq:.0} B/s against none's {none:.0}");
}

fn read_of(p: &elevator_sim::workload::Process) -> f64 {
    p.stats[0].io_bytes as f64 / (p.runtime_ns() as f64 / 1e9)
}

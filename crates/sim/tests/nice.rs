//! fio's `nice=`: without `prio=` the kernel gives a niced process the I/O priority level
//! `(nice + 20) / 5` of the best-effort class (`task_nice_ioprio`), so under CFQ and BFQ a
//! nice 19 reader gets a smaller share of the disk than a nice 0 one; under mq-deadline,
//! which looks at the class only, the two share alike. An explicit `prio=` wins over nice.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

/// I/Os of two sequential readers of their own regions, the first with `first` options.
fn ios(scheduler: &str, first: &str) -> (u64, u64) {
    ios_with(scheduler, first, &[])
}

fn ios_with(scheduler: &str, first: &str, iosched: &[(&str, &str)]) -> (u64, u64) {
    let job = format!(
        "[global]\ndirect=1\nrw=read\nbs=64k\nruntime=10\ntime_based\nfilename=sda\nsize=4G\n\n[a]\n{first}\n\n[b]\noffset=100G\n"
    );
    let topo = format!("[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\nscheduler = \"{scheduler}\"\n");
    let t = Topology::from_str(&topo, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(&job, "j.fio", Path::new("."), &|_| None).unwrap();
    let options = SimOptions {
        iosched: iosched.iter().map(|&(k, v)| (k.to_string(), v.to_string())).collect(),
        ..SimOptions::default()
    };
    let r = simulate(&jobs, &t, &options).unwrap();
    (r.processes[0].stats[0].total_ios, r.processes[1].stats[0].total_ios)
}

#[test]
fn a_niced_reader_gets_less_of_the_disk_under_cfq_and_bfq() {
    // BFQ without weight raising, which would first give each new queue of the default
    // weight 30 times its weight for seconds (and, as 6.x, none of another weight).
    for (scheduler, iosched) in [("cfq", &[][..]), ("bfq", &[("low_latency", "0")][..])] {
        // The first reader's share against the second's, each at nice 0: BFQ charges a
        // reader of the slower inner region its whole budget when it times out, so the two
        // need not be equal; the nice values move the share from there.
        let share = |first: &str| {
            let (a, b) = ios_with(scheduler, first, iosched);
            a as f64 / b as f64
        };
        let base = share("");
        // Level 7 against 4: CFQ's slices 40 against 100 ms, BFQ's weights 25 against 100.
        let low = share("nice=19");
        assert!(low < base / 2.0, "{scheduler}: nice 19 share {low:.2}, at nice 0 {base:.2}");
        // Level 0 against 4: 180 against 100 ms, weights 200 against 100.
        let high = share("nice=-20");
        assert!(high > base * 1.5, "{scheduler}: nice -20 share {high:.2}, at nice 0 {base:.2}");
        // An explicit priority is the process's, whatever its nice value.
        let set = share("nice=19\nprio=4");
        assert!(
            (set / base - 1.0).abs() < 0.1,
            "{scheduler}: prio=4 at nice 19 {set:.2}, {base:.2}"
        );
    }
}

#[test]
fn bfq_raises_only_queues_of_the_default_weight() {
    // Both readers start as new queues: with low_latency the nice 0 one is raised, the nice
    // 19 one (weight 25) is not, and gets less than without raising.
    let (a, b) = ios("bfq", "nice=19");
    let (a0, b0) = ios_with("bfq", "nice=19", &[("low_latency", "0")]);
    assert!(
        (a as f64 / b as f64) < (a0 as f64 / b0 as f64),
        "raised: {a}/{b}, not raised: {a0}/{b0}"
    );
}

#[test]
fn mq_deadline_sees_the_class_only() {
    let (a, b) = ios("mq-deadline", "nice=19");
    assert!(a.abs_diff(b) * 10 < a + b, "mq-deadline: {a} {b}");
}

//! `thinktime_spin`: a job's think begins with CPU time, and jobs that spin at once share
//! the machine's CPUs (`[machine] cpus`); the rest of the think is asleep and costs no CPU.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

/// The runtimes (ms) of `jobs` jobs, each 20 reads of 4 KiB from RAM with a 10 ms think
/// after each, of which `spin_ms` spins, on a machine of `cpus` CPUs.
fn runtimes_ms(jobs: u32, spin_ms: u32, cpus: u32) -> Vec<u64> {
    let topology = format!(
        "[[device]]\nname = \"ram0\"\nmodel = \"ram\"\n[device.params]\ncapacity_bytes = 1073741824\n\n[machine]\ncpus = {cpus}\n"
    );
    let text = format!(
        "[j]\nfilename=ram0\nrw=read\nbs=4k\ndirect=1\nnumber_ios=20\nthinktime=10ms\n\
         thinktime_spin={spin_ms}ms\nnumjobs={jobs}\n"
    );
    let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
    let topology = Topology::from_str(&topology, "t.toml").unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    r.processes.iter().map(|p| p.runtime_ns() / 1_000_000).collect()
}

#[test]
fn spinning_jobs_share_the_cpus() {
    // Alone: 19 thinks of 10 ms (none after the last read), whatever part of them spins.
    for spin in [0, 5, 10] {
        let t = runtimes_ms(1, spin, 1);
        assert!((185..=195).contains(&t[0]), "one job, spin {spin} ms: {t:?} ms");
    }
    // Four jobs that spin all their think on one CPU take four times as long...
    let t = runtimes_ms(4, 10, 1);
    assert!(t.iter().all(|&ms| (750..=770).contains(&ms)), "4 spinners on 1 CPU: {t:?} ms");
    // ... on two CPUs twice, on four not longer.
    let t = runtimes_ms(4, 10, 2);
    assert!(t.iter().all(|&ms| (375..=385).contains(&ms)), "4 spinners on 2 CPUs: {t:?} ms");
    let t = runtimes_ms(4, 10, 4);
    assert!(t.iter().all(|&ms| (185..=195).contains(&ms)), "4 spinners on 4 CPUs: {t:?} ms");
    // Sleeping costs no CPU: four jobs that only sleep run side by side on one CPU.
    let t = runtimes_ms(4, 0, 1);
    assert!(t.iter().all(|&ms| (185..=195).contains(&ms)), "4 sleepers on 1 CPU: {t:?} ms");
}

#[test]
fn each_job_is_charged_the_cpu_time_it_spun() {
    let topology = Topology::from_str(
        "[[device]]\nname = \"ram0\"\nmodel = \"ram\"\n[device.params]\n\
         capacity_bytes = 1073741824\n\n[machine]\ncpus = 1\n",
        "t.toml",
    )
    .unwrap();
    let text = "[j]\nfilename=ram0\nrw=read\nbs=4k\ndirect=1\nnumber_ios=20\nthinktime=10ms\n\
                thinktime_spin=4ms\nnumjobs=3\n";
    let jobs = elevator_fio::parse_str(text, "t.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    for p in &r.processes {
        // 19 spins of 4 ms each, however the CPU was shared.
        assert_eq!(p.cpu_ns, 19 * 4_000_000, "{}", p.name);
    }
}

#[test]
fn opening_a_file_is_not_an_io_unit() {
    // Eight files of 4 KiB read whole, a 10 ms think after every I/O: eight thinks, one a
    // file (fio counts I/O units; the inode reads of the opens are not), whether buffered
    // or direct (they were 9 and 16).
    let topology = "[[device]]\nname = \"ram0\"\nmodel = \"ram\"\n[device.params]\n\
                    capacity_bytes = 1073741824\n";
    for direct in [0, 1] {
        let text = format!(
            "[j]\nfilename=ram0\nrw=read\nbs=4k\ndirect={direct}\nsize=8m\nnrfiles=8\n\
             filesize=4k\nfile_service_type=sequential\nthinktime=10ms\n"
        );
        let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
        let topology = Topology::from_str(topology, "t.toml").unwrap();
        let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
        let ms = r.processes[0].runtime_ns() / 1_000_000;
        assert!((78..=82).contains(&ms), "direct={direct}: {ms} ms");
    }
}

/// Runs `text` on a RAM disk and a machine of `cpus` CPUs: (job name, runtime ms, CPU ms,
/// I/Os) of each process.
fn run_on(text: &str, cpus: u32) -> Vec<(String, u64, u64, u64)> {
    let topology = format!(
        "[[device]]\nname = \"ram0\"\nmodel = \"ram\"\n[device.params]\n\
         capacity_bytes = 1073741824\n\n[machine]\ncpus = {cpus}\n"
    );
    let topology = Topology::from_str(&topology, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(text, "t.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
    r.processes
        .iter()
        .map(|p| {
            let ios = p.stats.iter().map(|s| s.total_ios).sum();
            (p.name.clone(), p.runtime_ns() / 1_000_000, p.cpu_ns / 1_000_000, ios)
        })
        .collect()
}

#[test]
fn cpuio_burns_its_load_and_takes_the_cpu_from_spinners() {
    // cpuload=25 in 20 ms chunks for 2 s: 500 ms of CPU in 25 burns, each reported as an
    // I/O (of no bytes, as fio does).
    let r = run_on("[burn]\nioengine=cpuio\ncpuload=25\ncpuchunks=20000\nruntime=2\n", 1);
    let (_, ms, cpu, ios) = &r[0];
    assert!((1990..=2010).contains(ms) && (480..=520).contains(cpu) && *ios == 25, "{r:?}");
    // A full-load burner beside a job that spins 10 ms after each of 20 reads on one CPU:
    // the spinner gets half the CPU (19 spins of 20 ms).
    let text = "[burn]\nioengine=cpuio\ncpuload=100\nruntime=10\n\
                [spin]\nfilename=ram0\nrw=read\nbs=4k\ndirect=1\nnumber_ios=20\n\
                thinktime=10ms\nthinktime_spin=10ms\n";
    let r = run_on(text, 1);
    assert!((375..=385).contains(&r[1].1), "spinner beside a burner: {r:?}");
    // exit_on_io_done: the burner stops when the reader ends, not at its runtime.
    let text = "[burn]\nioengine=cpuio\ncpuload=100\nexit_on_io_done=1\n\
                [spin]\nfilename=ram0\nrw=read\nbs=4k\ndirect=1\nnumber_ios=20\n\
                thinktime=10ms\nthinktime_spin=10ms\n";
    let r = run_on(text, 1);
    assert!(r[0].1 <= r[1].1 + 1 && (375..=385).contains(&r[1].1), "exit_on_io_done: {r:?}");
    // Alone, it stops at once: there is no I/O to wait for.
    let r = run_on("[burn]\nioengine=cpuio\ncpuload=50\nexit_on_io_done=1\n", 1);
    assert!(r[0].1 <= 1, "{r:?}");
}

#[test]
fn cpuio_needs_a_load() {
    let topology = Topology::from_str(
        "[[device]]\nname = \"ram0\"\nmodel = \"ram\"\n[device.params]\ncapacity_bytes = 1048576\n",
        "t.toml",
    )
    .unwrap();
    let jobs = elevator_fio::parse_str(
        "[burn]\nioengine=cpuio\nruntime=1\n",
        "t.fio",
        Path::new("."),
        &|_| None,
    )
    .unwrap();
    let Err(e) = simulate(&jobs, &topology, &SimOptions::default()) else {
        panic!("a cpuio job without cpuload= ran");
    };
    assert!(e.to_string().contains("needs a rate (cpuload=)"), "{e}");
}

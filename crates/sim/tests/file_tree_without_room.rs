//! A file tree whose files are all too small for the job's block: every file is given up
//! without I/O, and the job ends. Under a non-uniform file choice (`zipf`, `pareto`,
//! `normal`) fio 3.33 resets each file it finds finished and draws on for ever (its own run
//! of this job never ends); the simulator ends the pass instead, with nothing moved.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

const TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
[[filesystem]]
on = "sda"
"#;

#[test]
fn a_tree_with_no_room_for_a_block_ends_without_io() {
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let services = ["random", "roundrobin", "sequential", "zipf:1.1", "pareto:0.5", "normal:50"];
    // A random job's map has no block in a file smaller than one: no room at all.
    for (rw, service) in ["read", "randread", "randwrite"]
        .into_iter()
        .flat_map(|rw| services.into_iter().map(move |s| (rw, s)))
    {
        for extra in
            ["", "direct=1", "loops=2", "io_size=80k", "direct=1\nioengine=libaio\niodepth=4"]
        {
            let job = format!(
                "[j]\ndirectory=sda\nrw={rw}\nnrfiles=10\nfilesize=4k\nsize=40k\nbs=8k\n\
                 file_service_type={service}\n{extra}\n"
            );
            let jobs = elevator_fio::parse_str(&job, "j.fio", Path::new("."), &|_| None).unwrap();
            let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
            let ios: u64 = r.processes[0].stats.iter().map(|s| s.total_ios).sum();
            assert_eq!(ios, 0, "{rw} {service} {extra}");
        }
    }
}

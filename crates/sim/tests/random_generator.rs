//! fio's `random_generator=lfsr` never draws a block twice in a pass; elevator keeps that
//! with a random map, which has a size limit: past it the job goes on without one, and says
//! so (the CLI test `lfsr_reads_each_block_once_per_pass_as_real_fio_does` compares small
//! files with real fio).

use std::path::Path;

use elevator_sim::random_map::MAX_RANDOM_MAP_BLOCKS;
use elevator_sim::{simulate, SimOptions, Topology};

#[test]
fn an_lfsr_past_the_map_limit_goes_on_with_a_warning() {
    let capacity = (MAX_RANDOM_MAP_BLOCKS + 1) * 4096;
    let topology = Topology::from_str(
        &format!("[[device]]\nname = \"ram0\"\nmodel = \"ram\"\nscheduler = \"none\"\n\n[device.params]\ncapacity_bytes = {capacity}\nlatency_ns = 10000\nqueue_depth = 32\n"),
        "t.toml",
    )
    .unwrap();
    let run = |extra: &str| {
        let text =
            format!("[r]\nfilename=ram0\ndirect=1\nrw=randread\nbs=4k\nnumber_ios=1000\n{extra}\n");
        let jobs = elevator_fio::parse_str(&text, "t.fio", Path::new("."), &|_| None).unwrap();
        simulate(&jobs, &topology, &SimOptions::default()).map_err(|e| e.to_string())
    };
    let r = run("norandommap=1\nrandom_generator=lfsr").unwrap();
    assert_eq!(r.processes[0].stats[0].total_ios, 1000);
    let w = r.warnings();
    assert!(w.iter().any(|w| w.contains("random_generator=lfsr over 536870913 blocks")), "{w:?}");
    // The default generator with its map that large is refused, as before.
    let e = run("").err().expect("refused");
    assert!(e.contains("MAX_RANDOM_MAP_BLOCKS"), "{e}");
}

//! Buffered jobs of every shape on ext3 run to completion: whatever mix of directions, block
//! sizes, file trees, creation, syncs and barriers a job file asks for, the simulation ends,
//! every job finishes, and nothing panics.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};
use proptest::prelude::*;

const TOPOLOGY: &str = r#"
[machine]
memory = "64MiB"
kernel = "KERNEL"
[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
scheduler = "SCHED"
[[filesystem]]
on = "sda"
journal = "8MiB"
"#;

fn job(rw: &str, bs: u64, nrfiles: u32, create: bool, fsync: u32, barrier: u32) -> String {
    let tree = if nrfiles > 1 {
        format!(
            // Files at least as large as the largest block: as under real fio, a file too
            // small for the block is given up without I/O.
            "nrfiles={nrfiles}\nfilesize=64k-256k\nsize=64m\ncreate_on_open={}\n",
            u8::from(create)
        )
    } else {
        "size=8m\n".to_string()
    };
    format!(
        "[j]\ndirectory=sda\nrw={rw}\nbs={bs}\n{tree}fsync={fsync}\nwrite_barrier={barrier}\nend_fsync=1\nio_size=4m\n\n[monitor]\ndirectory=sda\nrw=read\nbs=64k\nsize=4m\ninvalidate=1\n"
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn buffered_jobs_of_any_shape_finish(
        rw in prop::sample::select(vec!["read", "write", "randread", "randwrite", "rw", "randrw"]),
        bs in prop::sample::select(vec![512u64, 4096, 6144, 65536]),
        nrfiles in prop::sample::select(vec![1u32, 8, 200]),
        create in any::<bool>(),
        fsync in prop::sample::select(vec![0u32, 1, 7]),
        barrier in prop::sample::select(vec![0u32, 3]),
        kernel in prop::sample::select(vec!["2.5.65", "2.6.32", "3.2", "3.5"]),
        sched in prop::sample::select(vec!["cfq", "mq-deadline", "none"]),
    ) {
        let text = job(rw, bs, nrfiles, create, fsync, barrier);
        let jobs = elevator_fio::parse_str(&text, "p.fio", Path::new("."), &|_| None).unwrap();
        let topo = TOPOLOGY.replace("KERNEL", kernel).replace("SCHED", sched);
        let topology = Topology::from_str(&topo, "p.toml").unwrap();
        let result = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
        for p in &result.processes {
            prop_assert!(p.end_ns > 0 || p.runtime_ns() == 0, "{} never ended", p.name);
        }
        prop_assert!(result.end_ns > 0);
        let moved: u64 = result.processes[0].stats.iter().map(|s| s.io_bytes).sum();
        prop_assert!(moved >= 4 << 20, "the job moved {} bytes of its 4 MiB", moved);
    }
}

const REMOTE: &str = r#"
[machine]
memory = "64MiB"
[[device]]
name = "sdb"
model = "hdd"
preset = "sata-7200-2009"
scheduler = "SCHED"
read_ahead_kb = RA
max_sectors_kb = MS
[[volume]]
name = "lun"
target = "iscsi"
over = ["sdb"]
target_io = "fileio"
readahead_state = "STATE"
io_context = "CTX"
threads = 3
"#;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn remote_buffered_jobs_finish_through_both_page_caches(
        rw in prop::sample::select(vec!["read", "write", "randread", "randrw"]),
        bs in prop::sample::select(vec![4096u64, 65536, 1 << 20]),
        direct in any::<bool>(),
        ra in prop::sample::select(vec![0u32, 128, 4096]),
        ms in prop::sample::select(vec![64u32, 512]),
        state in prop::sample::select(vec!["shared", "per_thread"]),
        ctx in prop::sample::select(vec!["shared", "separate"]),
        sched in prop::sample::select(vec!["cfq", "mq-deadline"]),
    ) {
        let text = format!(
            "[j]\nfilename=lun\nrw={rw}\nbs={bs}\nsize=64m\nio_size=8m\ndirect={}\n[k]\nfilename=lun\nrw=read\nbs=64k\noffset=128m\nsize=8m\n",
            u8::from(direct)
        );
        let jobs = elevator_fio::parse_str(&text, "r.fio", Path::new("."), &|_| None).unwrap();
        let topo = REMOTE
            .replace("SCHED", sched)
            .replace("RA", &ra.to_string())
            .replace("MS", &ms.to_string())
            .replace("STATE", state)
            .replace("CTX", ctx);
        let topology = Topology::from_str(&topo, "r.toml").unwrap();
        let result = simulate(&jobs, &topology, &SimOptions::default()).unwrap();
        let moved: u64 = result.processes[0].stats.iter().map(|s| s.io_bytes).sum();
        prop_assert!(moved >= 8 << 20, "moved {}", moved);
        prop_assert!(result.processes[1].stats[0].io_bytes >= 8 << 20);
    }
}

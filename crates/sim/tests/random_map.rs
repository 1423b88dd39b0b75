//! fio's random map: by default a random job does each block of its region once per pass
//! (and starts a new pass when it has done them all); with `norandommap` offsets are drawn
//! with replacement. Seen where it matters: which blocks reach the device, and how many
//! reads a cold page cache has to send there.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, SimResult, Topology};

mod common;

use common::{queued_per_sector, queued_sectors};

/// The RAM disk `sda`, and a disk `sdb` big enough for a map past the limit.
fn topology() -> String {
    format!(
        "{}\n[[device]]\nname = \"sdb\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n",
        common::RAM_DISK_16G
    )
}

fn run(job: &str) -> Result<SimResult, String> {
    let t = Topology::from_str(&topology(), "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() })
        .map_err(|e| e.to_string())
}

const BLOCKS: u64 = 1024;

#[test]
fn a_random_job_does_each_block_once_per_pass() {
    let job = "[r]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=4m\n";
    let per = queued_per_sector(&run(job).unwrap());
    assert_eq!(per.len() as u64, BLOCKS, "every block, once");
    assert!(per.values().all(|&n| n == 1));
    // With norandommap the same number of draws repeats blocks and misses others.
    let per = queued_per_sector(&run(&format!("{job}norandommap=1\n")).unwrap());
    assert_eq!(per.values().sum::<u32>() as u64, BLOCKS);
    assert!((550..=750).contains(&per.len()), "{} blocks of {BLOCKS} drawn", per.len());
}

#[test]
fn passes_start_again_when_every_block_is_done() {
    // io_size of 2.5 passes: every block twice or three times, never once or four times.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=randwrite\nbs=4k\nsize=4m\nio_size=10m\n";
    let per = queued_per_sector(&run(job).unwrap());
    assert_eq!(per.len() as u64, BLOCKS);
    assert_eq!(per.values().sum::<u32>() as u64, 2560);
    assert!(per.values().all(|&n| n == 2 || n == 3), "{per:?}");
    assert_eq!(per.values().filter(|&&n| n == 3).count(), 512);
}

#[test]
fn mixed_sizes_are_cut_to_the_free_blocks() {
    // 4-64 KiB I/Os over 4 MiB: once the map fills up, an I/O that starts on a free block
    // but runs into done ones is cut short, so no block is done twice in the pass.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=randread\nbsrange=4k-64k\nsize=4m\n";
    let r = run(job).unwrap();
    let per = queued_per_sector(&r);
    assert!(per.values().all(|&n| n == 1), "a block done twice");
    let bytes: u64 = r.processes[0].stats.iter().map(|s| s.io_bytes).sum();
    assert_eq!(bytes, BLOCKS * 4096, "the pass covers the region exactly");
}

#[test]
fn a_cold_random_pass_reads_every_page_from_the_device() {
    // Buffered random reads of a whole file (fio's fadvise_hint turns readahead off): with
    // the map no read finds its page already cached; drawn with replacement, over a third
    // do.
    let job = "[r]\nfilename=sda\nrw=randread\nbs=4k\nsize=4m\n";
    let device_bytes = |r: &SimResult| r.devices[0].counters.sectors[0] * 512;
    let r = run(job).unwrap();
    assert_eq!(device_bytes(&r), BLOCKS * 4096);
    let r = run(&format!("{job}norandommap=1\n")).unwrap();
    let read = device_bytes(&r) as f64 / (BLOCKS * 4096) as f64;
    assert!((0.55..=0.75).contains(&read), "{read} of the pass read from the device");
}

#[test]
fn a_map_too_large_is_refused_unless_soft() {
    // 300 GiB of 512-byte blocks is more than MAX_RANDOM_MAP_BLOCKS.
    let job = "[r]\nfilename=sdb\ndirect=1\nrw=randread\nbs=512\nsize=300g\nnumber_ios=8\n";
    let Err(e) = run(job) else { panic!("a 300 GiB map of 512-byte blocks was accepted") };
    assert!(e.contains("job `r`") && e.contains("norandommap=1"), "{e}");
    assert!(e.contains("j.fio:1"), "{e}");
    for extra in ["softrandommap=1\n", "norandommap=1\n"] {
        let r = run(&format!("{job}{extra}")).unwrap();
        assert_eq!(r.processes[0].stats[0].total_ios, 8, "{extra}");
    }
}

#[test]
fn a_time_based_pass_starts_cold_again() {
    // fio's get_next_rand_block: a time-based job whose map is full resets it and drops the
    // file's cached pages (loop_cache_invalidate), unless invalidate=0 (or pre_read).
    let job = "[r]\nfilename=sda\nrw=randread\nbs=4k\nsize=4m\nruntime=200ms\ntime_based\n";
    let passes = |extra: &str| {
        let r = run(&format!("{job}{extra}")).unwrap();
        let reads: u64 = r.processes[0].stats[0].total_ios;
        let device_pages = r.devices[0].counters.sectors[0] / 8;
        (reads, device_pages)
    };
    let (reads, device) = passes("");
    assert!(reads > 2 * BLOCKS, "{reads} reads: more than two passes");
    assert_eq!(device, reads, "every pass cold: every read from the device");
    let (reads, device) = passes("invalidate=0\n");
    assert!(reads > 2 * BLOCKS);
    assert_eq!(device, BLOCKS, "only the first pass reads the device");
}

#[test]
fn percentage_random_mixes_in_sequential_io() {
    // Of a random job's I/Os, percentage_random go to random offsets; the others go on from
    // where the last one ended. Count the I/Os that start where the one before ended.
    let following = |pct: u32| {
        let job = format!(
            "[r]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=64m\nnumber_ios=2000\npercentage_random={pct}\n"
        );
        let sectors = queued_sectors(&run(&job).unwrap());
        assert_eq!(sectors.len(), 2000);
        sectors.windows(2).filter(|w| w[1] == w[0] + 8).count()
    };
    assert_eq!(following(0), 1999, "0 %: sequential throughout");
    assert!(following(100) < 10, "100 %: random throughout");
    let half = following(50);
    assert!((900..=1100).contains(&half), "50 %: {half} of 1999 follow on");
}

#[test]
fn blockalign_places_random_io_off_its_size_and_drops_the_map() {
    // 64 KiB reads aligned to 4 KiB over 4 MiB (fio's ba=4k): every start on a 4 KiB
    // boundary, most not on a 64 KiB one, all within the region, drawn with replacement.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=randread\nbs=64k\nba=4k\nsize=4m\nnumber_ios=2000\nio_size=1g\n";
    let sectors = queued_sectors(&run(job).unwrap());
    assert_eq!(sectors.len(), 2000);
    assert!(sectors.iter().all(|s| s % 8 == 0 && *s * 512 + 65536 <= 4 << 20));
    let off_size = sectors.iter().filter(|s| *s % 128 != 0).count();
    assert!(off_size > 1800, "{off_size} of 2000 off a 64 KiB boundary");
    // 1009 places (the last at 4 MiB - 64 KiB); 2000 draws with replacement find about
    // 1009 (1 - e^(-2000/1009)) = 870 of them (real fio 3.33, the same job on its null
    // engine: 863, 1875 of 2000 off a 64 KiB boundary).
    let distinct: std::collections::BTreeSet<_> = sectors.iter().collect();
    assert!((830..=910).contains(&distinct.len()), "{}", distinct.len());
    // Without ba, every start is on a 64 KiB boundary.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=randread\nbs=64k\nsize=4m\nnumber_ios=64\n";
    assert!(queued_sectors(&run(job).unwrap()).iter().all(|s| s % 128 == 0));
}

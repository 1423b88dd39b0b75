//! fio's `random_distribution=`, against real fio (installed by setup.sh): the same job run
//! by fio on its null engine (offsets read back from its `write_iolog`) and by elevator on a
//! RAM disk (offsets read back from its blktrace) must spread its I/O alike — as many
//! distinct blocks, the same share on the hottest ones, the same share per zone. The blocks
//! themselves differ: each draws its own `rand_off` and random numbers.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use elevator_sim::{simulate, SimOptions, Topology};

mod common;

use common::queued_sectors;

const BLOCK: u64 = 4096;
const BLOCKS: u64 = 16384; // 64 MiB of 4 KiB blocks
const IOS: u64 = 20480; // io_size 80 MiB

/// The job both run: 20480 random 4 KiB reads over 64 MiB.
fn job(filename: &str, dist: &str, extra: &str) -> String {
    format!(
        "[z]\nfilename={filename}\nrw=randread\nbs=4k\nsize=64m\nio_size=80m\n\
         random_distribution={dist}\n{extra}"
    )
}

/// The block of each read real fio issued.
fn fio_blocks(dist: &str) -> Vec<u64> {
    let dir = std::env::temp_dir().join(format!(
        "elevator-distribution-{}-{}",
        std::process::id(),
        dist.replace([':', '/'], "_")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("z.log");
    let _ = std::fs::remove_file(&log); // fio appends to an existing log
    let file = dir.join("z.fio");
    let data = dir.join("data");
    std::fs::write(
        &file,
        job(
            data.to_str().unwrap(),
            dist,
            &format!("ioengine=null\nwrite_iolog={}\n", log.display()),
        ),
    )
    .unwrap();
    let out = Command::new("fio")
        .args(["--output-format=terse", file.to_str().unwrap()])
        .output()
        .expect("fio runs (setup.sh installs it)");
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    // iolog v3: `time file action offset length`.
    let blocks = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "read").then(|| f[3].parse::<u64>().unwrap() / BLOCK)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    blocks
}

/// The block of each read elevator issued.
fn elevator_blocks(dist: &str) -> Vec<u64> {
    let t = Topology::from_str(common::RAM_DISK_16G, "t.toml").unwrap();
    let text = job("sda", dist, "direct=1\n");
    let jobs = elevator_fio::parse_str(&text, "z.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() }).unwrap();
    queued_sectors(&r).into_iter().map(|s| s * 512 / BLOCK).collect()
}

/// How the reads spread: distinct blocks, the share of the 164 (1 %) hottest blocks, and
/// the share of each tenth of the region.
struct Spread {
    distinct: usize,
    top_percent: f64,
    tenths: [f64; 10],
}

fn spread(blocks: &[u64]) -> Spread {
    assert_eq!(blocks.len() as u64, IOS);
    let mut per: HashMap<u64, u64> = HashMap::new();
    let mut tenths = [0.0; 10];
    for &b in blocks {
        assert!(b < BLOCKS);
        *per.entry(b).or_default() += 1;
        tenths[(b * 10 / BLOCKS) as usize] += 1.0 / IOS as f64;
    }
    let mut counts: Vec<u64> = per.values().copied().collect();
    counts.sort_unstable_by(|a, b| b.cmp(a));
    let top: u64 = counts.iter().take((BLOCKS / 100) as usize).sum();
    Spread { distinct: per.len(), top_percent: top as f64 / IOS as f64, tenths }
}

fn compare(dist: &str) -> (Spread, Spread) {
    let (fio, ours) = (spread(&fio_blocks(dist)), spread(&elevator_blocks(dist)));
    // Shown with `-- --nocapture`: the figures the README quotes.
    eprintln!(
        "{dist}: {} distinct blocks (fio {}), {:.3} of the reads on the hottest 1 % (fio {:.3}), {:.3} in the first tenth (fio {:.3})",
        ours.distinct, fio.distinct, ours.top_percent, fio.top_percent, ours.tenths[0], fio.tenths[0]
    );
    let d = (ours.distinct as f64 / fio.distinct as f64 - 1.0).abs();
    assert!(d < 0.06, "{dist}: {} distinct blocks, fio {}", ours.distinct, fio.distinct);
    assert!(
        (ours.top_percent - fio.top_percent).abs() < 0.03,
        "{dist}: hottest 1 % of blocks took {:.3}, under fio {:.3}",
        ours.top_percent,
        fio.top_percent
    );
    (fio, ours)
}

#[test]
fn zipf_concentrates_as_under_fio() {
    // Under fio 3.33: 2694 distinct blocks, 74 % of the reads on the hottest 1 %.
    let (fio, _) = compare("zipf:1.2");
    assert!(fio.top_percent > 0.6, "{}", fio.top_percent);
    compare("zipf:0.8");
}

#[test]
fn pareto_and_normal_spread_as_under_fio() {
    compare("pareto:0.2");
    compare("normal:10");
}

#[test]
fn zones_take_their_shares_as_under_fio() {
    let (fio, ours) = compare("zoned:60/10:30/20:8/30:2/40");
    for (i, (a, b)) in fio.tenths.iter().zip(ours.tenths).enumerate() {
        assert!((a - b).abs() < 0.02, "tenth {i}: {b:.3}, fio {a:.3}");
    }
    assert!((ours.tenths[0] - 0.6).abs() < 0.02);
}

#[test]
fn uniform_keeps_the_random_map() {
    // `random` (the default) still does each block once per pass: 16384 blocks, then 4096
    // more in the second pass, as fio.
    let ours = spread(&elevator_blocks("random"));
    assert_eq!(ours.distinct as u64, BLOCKS);
    assert_eq!(spread(&fio_blocks("random")).distinct as u64, BLOCKS);
}

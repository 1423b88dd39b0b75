//! The SSD's behaviour: write cliff, latencies of the presets, parallelism, and invariants.

use super::*;
use elevator_core::RandomStream;
use proptest::prelude::*;

fn cmd(id: u64, op: Op, offset_bytes: u64, len_bytes: u64) -> Command {
    Command { id: RequestId(id), op, offset_bytes, len_bytes, fua: false }
}

/// Runs a closed loop: `qd` commands outstanding, `n` in all, each made by `make` when a slot
/// frees; returns (submit, done) per command in completion order. Starts when the device's
/// last command (if any) finished.
fn closed_loop(
    d: &mut Ssd,
    qd: usize,
    n: u64,
    mut make: impl FnMut(u64) -> Command,
) -> Vec<(Nanos, Nanos)> {
    let mut submitted = std::collections::BTreeMap::new();
    let mut out = Vec::with_capacity(n as usize);
    let mut next = 0u64;
    let mut now = d.last_done;
    let mut buf = Vec::new();
    while next < n && submitted.len() < qd {
        let c = make(next);
        submitted.insert(c.id.0, now);
        d.submit(c, now);
        next += 1;
    }
    while let Some(t) = d.next_event_ns() {
        assert!(t >= now, "time went backwards");
        now = t;
        buf.clear();
        d.advance(now, &mut buf);
        for c in &buf {
            let s = submitted.remove(&c.id.0).expect("completes once");
            out.push((s, c.done_ns));
        }
        while next < n && submitted.len() < qd {
            let c = make(next);
            submitted.insert(c.id.0, now);
            d.submit(c, now);
            next += 1;
        }
    }
    assert!(submitted.is_empty(), "every command completed");
    d.last_done = now;
    out
}

fn iops(runs: &[(Nanos, Nanos)]) -> f64 {
    let start = runs.iter().map(|r| r.0).min().unwrap();
    let end = runs.iter().map(|r| r.1).max().unwrap();
    runs.len() as f64 * 1e9 / (end - start) as f64
}

fn mean_us(runs: &[(Nanos, Nanos)]) -> f64 {
    runs.iter().map(|(s, e)| (e - s) as f64).sum::<f64>() / runs.len() as f64 / 1e3
}

fn random_4k(d: &Ssd, op: Op, seed: u64) -> impl FnMut(u64) -> Command {
    let units = d.capacity_bytes() / 4096;
    let mut rng = RandomStream::new(seed, 0);
    move |i| cmd(i, op, rng.below(units) * 4096, 4096)
}

/// A small SATA drive for long write runs: the preset with 8-page blocks (1 GiB raw).
fn small_sata(fill: Fill) -> Ssd {
    Ssd::new(SsdParams { pages_per_block: 8, fill, ..SsdParams::sata_ssd_2015() }).unwrap()
}

#[test]
fn write_cliff_fresh_fast_then_steady_state_slow() {
    let mut d = small_sata(Fill::Empty);
    let units = d.capacity_bytes() / 4096;
    let n = units * 3;
    let make = random_4k(&d, Op::Write, 7);
    let runs = closed_loop(&mut d, 32, n, make);
    // Fresh: the first 20 % of the user capacity, before any block is cleaned.
    let fresh = iops(&runs[..(units / 5) as usize]);
    // Steady state: the last third (two full drive writes later).
    let steady = iops(&runs[(2 * n / 3) as usize..]);
    let s = d.stats();
    let wa = d.write_amplification();
    assert!(s.ftl.gc_runs > 0 && s.ftl.gc_units_moved > 0);
    assert!(wa > 1.5, "write amplification {wa}");
    assert!(fresh > 2.5 * steady, "fresh {fresh:.0} IOPS vs steady {steady:.0}");
    assert!(fresh > 70_000.0, "fresh random writes run at the host link's rate: {fresh:.0}");
    d.ftl().check().unwrap();
}

#[test]
fn a_sequentially_filled_drive_slows_down_once_the_spare_area_is_used() {
    let mut d = small_sata(Fill::Full);
    let units = d.capacity_bytes() / 4096;
    let make = random_4k(&d, Op::Write, 8);
    let runs = closed_loop(&mut d, 32, units, make);
    let first = iops(&runs[..(units / 50) as usize]);
    let last = iops(&runs[(units / 2) as usize..]);
    assert_eq!(runs.len() as u64, units);
    assert!(first > 2.5 * last, "first {first:.0} IOPS vs later {last:.0}");
}

#[test]
fn qd1_latencies_match_the_presets_drives() {
    // (preset, read µs range, write µs range): the SATA drive quotes 10k read / 36k write
    // IOPS at QD1 (~100 / ~28 µs seen by the host, a few µs of it the host's own), the NVMe
    // drive 15k read IOPS (~67 µs).
    for (p, read, write) in [
        (SsdParams::sata_ssd_2015(), 60.0..110.0, 15.0..45.0),
        (SsdParams::nvme_pcie3_2018(), 55.0..100.0, 5.0..30.0),
    ] {
        let mut d = Ssd::new(p.clone()).unwrap();
        let make = random_4k(&d, Op::Read, 1);
        let r = mean_us(&closed_loop(&mut d, 1, 2000, make));
        let make = random_4k(&d, Op::Write, 2);
        let w = mean_us(&closed_loop(&mut d, 1, 2000, make));
        assert!(read.contains(&r), "{:?}: QD1 read {r:.1} µs", p.interface);
        assert!(write.contains(&w), "{:?}: QD1 write {w:.1} µs", p.interface);
    }
}

#[test]
fn deep_queues_use_the_internal_parallelism() {
    let mut d = Ssd::new(SsdParams::sata_ssd_2015()).unwrap();
    let make = random_4k(&d, Op::Read, 3);
    let qd1 = iops(&closed_loop(&mut d, 1, 2000, make));
    let make = random_4k(&d, Op::Read, 4);
    let qd32 = iops(&closed_loop(&mut d, 32, 20_000, make));
    assert!(qd32 > 6.0 * qd1, "QD1 {qd1:.0} vs QD32 {qd32:.0}");
    assert!((85_000.0..115_000.0).contains(&qd32), "SATA QD32 {qd32:.0} IOPS (data sheet: 100k)");

    let mut d = Ssd::new(SsdParams::nvme_pcie3_2018()).unwrap();
    let make = random_4k(&d, Op::Read, 5);
    let qd128 = iops(&closed_loop(&mut d, 128, 50_000, make));
    assert!(qd128 > 300_000.0, "NVMe QD128 {qd128:.0} IOPS");
}

#[test]
fn sequential_reads_reach_the_host_link() {
    for (p, lo, hi) in
        [(SsdParams::sata_ssd_2015(), 520e6, 570e6), (SsdParams::nvme_pcie3_2018(), 3.0e9, 3.5e9)]
    {
        let mut d = Ssd::new(p.clone()).unwrap();
        let runs = closed_loop(&mut d, 8, 4000, |i| cmd(i, Op::Read, i * (128 << 10), 128 << 10));
        let bw = iops(&runs) * f64::from(128 << 10);
        assert!((lo..hi).contains(&bw), "{:?}: {:.0} MB/s", p.interface, bw / 1e6);
    }
}

#[test]
fn buffered_and_unmapped_reads_skip_the_flash_and_flush_waits_for_programs() {
    let mut d = Ssd::new(SsdParams { fill: Fill::Empty, ..SsdParams::sata_ssd_2015() }).unwrap();
    let mut out = Vec::new();
    d.submit(cmd(1, Op::Read, 0, 4096), 0);
    let t = d.next_event_ns().unwrap();
    d.advance(t, &mut out);
    assert!(t < 30_000, "an unmapped read costs the controller and the link: {t} ns");
    d.submit(cmd(2, Op::Write, 0, 4096), t);
    let w = d.next_event_ns().unwrap();
    d.advance(w, &mut out);
    d.submit(cmd(3, Op::Read, 0, 4096), w);
    let r = d.next_event_ns().unwrap();
    assert!(r - w < 30_000, "the unit is in the write buffer");
    d.advance(r, &mut out);
    d.submit(cmd(4, Op::Flush, 0, 0), r);
    let f = d.next_event_ns().unwrap();
    assert!(f - r > 1_300_000, "a flush programs the open page: {} ns", f - r);
    d.advance(f, &mut out);
    assert_eq!(d.stats().ftl.units_padded, 7);
    d.submit(cmd(5, Op::Read, 0, 4096), f);
    let r2 = d.next_event_ns().unwrap();
    assert!(r2 - f > 50_000, "now from flash: {} ns", r2 - f);
    d.advance(r2, &mut out);
    d.submit(cmd(6, Op::Discard, 0, 8192), r2);
    d.advance(u64::MAX, &mut out);
    assert_eq!(d.ftl().lookup(0), Loc::Unmapped);
    assert_eq!(out.iter().map(|c| c.id.0).collect::<Vec<_>>(), vec![1, 2, 3, 4, 5, 6]);
}

#[test]
fn nvme_exposes_many_deep_queues_and_sata_one() {
    let n = Ssd::new(SsdParams::nvme_pcie3_2018()).unwrap();
    assert_eq!(n.queue_depth(), 64 * 1023);
    assert!(!n.rotational());
    assert!(n.describe().starts_with("NVMe SSD, 64 queues × 1023"), "{}", n.describe());
    let s = Ssd::new(SsdParams::sata_ssd_2015()).unwrap();
    assert_eq!(s.queue_depth(), 32);
    assert_eq!(s.capacity_bytes(), (32u64 << 30) / 4096 * 93 / 100 * 4096);
}

#[test]
fn bad_parameters_are_explained() {
    let bad = |p: SsdParams| Ssd::new(p).unwrap_err();
    let base = SsdParams::sata_ssd_2015;
    assert!(bad(SsdParams { submission_queues: 4, ..base() }).contains("submission_queues = 1"));
    assert!(bad(SsdParams { page_bytes: 5000, ..base() }).contains("multiple of 4096"));
    assert!(
        bad(SsdParams { over_provisioning: 0.01, ..base() }).contains("raise over_provisioning")
    );
    assert!(bad(SsdParams { write_buffer_bytes: 4096, ..base() }).contains("write_buffer_bytes"));
    assert!(bad(SsdParams { page_read_us: f64::NAN, ..base() }).contains("page_read_us"));
    assert!(bad(SsdParams { gc_threshold: 0.9, ..base() }).contains("gc_threshold"));
    let e: Result<SsdParams, _> = toml::from_str("page_read = 3");
    assert!(e.unwrap_err().to_string().contains("unknown field `page_read`"));
    let p: SsdParams = toml::from_str("interface = \"nvme\"\nfill = \"empty\"").unwrap();
    assert_eq!((p.interface, p.fill, p.channels), (Interface::Nvme, Fill::Empty, 8));
}

/// A tiny drive where garbage collection runs all the time: 4 dies, 2-unit pages, 4-page
/// blocks, 16 blocks a die, a quarter over-provisioned (96 user units).
fn tiny(fill: Fill, queues: u32) -> SsdParams {
    SsdParams {
        interface: if queues > 1 { Interface::Nvme } else { Interface::Sata },
        channels: 2,
        dies_per_channel: 2,
        planes_per_die: 1,
        page_bytes: 8192,
        pages_per_block: 4,
        blocks_per_plane: 16,
        over_provisioning: 0.25,
        write_buffer_bytes: 80 * 4096,
        submission_queues: queues,
        queue_depth: 8,
        fill,
        ..SsdParams::sata_ssd_2015()
    }
}

#[derive(Clone, Debug)]
enum Step {
    Read(u32, u32),
    Write(u32, u32, bool),
    Trim(u32, u32),
    Flush,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0u32..96, 1u32..5).prop_map(|(a, n)| Step::Read(a, n)),
        5 => (0u32..96, 1u32..5, any::<bool>()).prop_map(|(a, n, f)| Step::Write(a, n, f)),
        1 => (0u32..96, 1u32..5).prop_map(|(a, n)| Step::Trim(a, n)),
        1 => Just(Step::Flush),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every command completes exactly once, no sooner than its data can cross the host link;
    /// the map, the reverse map and the valid counts agree; nothing written is lost to
    /// garbage collection and nothing trimmed comes back.
    #[test]
    fn commands_complete_once_and_the_map_stays_consistent(
        steps in prop::collection::vec((step(), 0u64..200_000), 1..300),
        full in any::<bool>(),
        queues in prop::sample::select(vec![1u32, 3]),
    ) {
        let fill = if full { Fill::Full } else { Fill::Empty };
        let mut d = Ssd::new(tiny(fill, queues)).unwrap();
        let units = d.ftl().geometry().user_units as u32;
        // Shadow: is each unit holding data?
        let mut has = vec![full; units as usize];
        let mut pending: std::collections::BTreeMap<u64, (Nanos, u64)> = Default::default();
        let mut done = Vec::new();
        let mut now = 0;
        let qd = d.queue_depth() as usize;
        for (id, (s, gap)) in steps.into_iter().enumerate() {
            let id = id as u64;
            // Let time pass, collecting completions on the way.
            let until = now + gap;
            while let Some(t) = d.next_event_ns().filter(|&t| t <= until || pending.len() >= qd) {
                prop_assert!(t >= now);
                now = t;
                d.advance(now, &mut done);
            }
            now = now.max(until);
            let (op, a, n, fua) = match s {
                Step::Read(a, n) => (Op::Read, a, n, false),
                Step::Write(a, n, f) => (Op::Write, a, n, f),
                Step::Trim(a, n) => (Op::Discard, a, n, false),
                Step::Flush => (Op::Flush, 0, 0, false),
            };
            let n = n.min(units - a);
            for l in a..a + n {
                match op {
                    Op::Write => has[l as usize] = true,
                    Op::Discard => has[l as usize] = false,
                    _ => {}
                }
            }
            let c = Command { id: RequestId(id), op, offset_bytes: u64::from(a) * 4096, len_bytes: u64::from(n) * 4096, fua };
            let min = if matches!(op, Op::Read | Op::Write) { d.host_transfer_ns(c.len_bytes) } else { 0 };
            pending.insert(id, (now, min));
            d.submit(c, now);
            if op == Op::Write {
                for l in a..a + n {
                    // Where the map points, the unit is this one's. (A write still waiting in
                    // a submission queue behind other commands is not planned, hence not
                    // mapped, yet: the final check covers it.)
                    if let Loc::At(pun) = d.ftl().lookup(l) {
                        prop_assert_eq!(d.ftl().owner(pun), Some(l));
                    }
                }
            }
        }
        d.advance(u64::MAX, &mut done);
        prop_assert!(d.next_event_ns().is_none());
        for c in &done {
            let (submit, min) = pending.remove(&c.id.0).expect("completes exactly once");
            prop_assert!(c.done_ns >= submit + min, "done {} < submit {} + transfer {}", c.done_ns, submit, min);
        }
        prop_assert!(pending.is_empty(), "never completed: {:?}", pending.keys().collect::<Vec<_>>());
        let mapped = d.ftl().check().map_err(TestCaseError::fail)?;
        for (l, &h) in has.iter().enumerate() {
            prop_assert_eq!(d.ftl().lookup(l as u32) != Loc::Unmapped, h, "unit {}", l);
        }
        prop_assert_eq!(mapped, has.iter().filter(|&&h| h).count() as u64);
    }

    /// The FTL alone, under long random overwrites: garbage collection moves every valid unit
    /// and the valid counts stay exact.
    #[test]
    fn garbage_collection_never_loses_a_valid_unit(lpns in prop::collection::vec(0u32..96, 600..2000), full in any::<bool>()) {
        let p = tiny(if full { Fill::Full } else { Fill::Empty }, 1);
        let g = Geometry::new(p.channels, p.dies_per_channel, p.planes_per_die, p.page_bytes, p.pages_per_block, p.blocks_per_plane, p.over_provisioning).unwrap();
        let mut f = Ftl::new(g, p.fill, 2).unwrap();
        let mut ops = Vec::new();
        let mut latest = std::collections::BTreeMap::new();
        for &l in &lpns {
            let pun = f.write(l, &mut ops).expect("space");
            latest.insert(l, pun);
            // Relocations since move units: the latest write of each unit is where it maps,
            // unless cleaning moved it, in which case its old place no longer claims it.
            for (&k, &p) in &latest {
                match f.lookup(k) {
                    Loc::At(q) => { prop_assert!(q == p || f.owner(p) != Some(k)); prop_assert_eq!(f.owner(q), Some(k)); }
                    Loc::Unmapped => prop_assert!(false, "unit {} lost", k),
                }
            }
        }
        f.check().map_err(TestCaseError::fail)?;
        let erased = ops.iter().any(|o| matches!(o, FlashOp::Erase { .. }));
        prop_assert!(erased);
    }
}

/// The figures quoted in the report: `cargo test -p elevator-device --release -- --ignored
/// figures --nocapture`.
#[test]
#[ignore]
fn figures() {
    for (name, p) in [
        ("sata-ssd-2015", SsdParams::sata_ssd_2015()),
        ("nvme-pcie3-2018", SsdParams::nvme_pcie3_2018()),
    ] {
        let mut d = Ssd::new(p.clone()).unwrap();
        let make = random_4k(&d, Op::Read, 1);
        let r1 = mean_us(&closed_loop(&mut d, 1, 5000, make));
        let make = random_4k(&d, Op::Write, 2);
        let w1 = mean_us(&closed_loop(&mut d, 1, 5000, make));
        let mut d = Ssd::new(p.clone()).unwrap();
        let make = random_4k(&d, Op::Read, 3);
        let q32 = iops(&closed_loop(&mut d, 32, 100_000, make));
        let make = random_4k(&d, Op::Read, 4);
        let q128 = iops(&closed_loop(&mut d, 128, 200_000, make));
        let mut d = Ssd::new(p.clone()).unwrap();
        let seq_r =
            iops(&closed_loop(&mut d, 8, 8000, |i| cmd(i, Op::Read, i * (128 << 10), 128 << 10)))
                * 131072.0
                / 1e6;
        let mut d = Ssd::new(SsdParams { fill: Fill::Empty, ..p.clone() }).unwrap();
        let seq_w =
            iops(&closed_loop(&mut d, 8, 8000, |i| cmd(i, Op::Write, i * (128 << 10), 128 << 10)))
                * 131072.0
                / 1e6;
        println!("{name}: QD1 read {r1:.1} µs, QD1 write {w1:.1} µs, QD32 read {q32:.0} IOPS, QD128 read {q128:.0} IOPS, seq read {seq_r:.0} MB/s, seq write {seq_w:.0} MB/s");
        let mut d = Ssd::new(SsdParams { fill: Fill::Empty, ..p.clone() }).unwrap();
        let units = d.capacity_bytes() / 4096;
        let mut make = random_4k(&d, Op::Write, 9);
        let runs = closed_loop(&mut d, 32, 2 * units, &mut make);
        let fresh = iops(&runs[..(units / 5) as usize]);
        let before = d.stats();
        let runs = closed_loop(&mut d, 32, units, &mut make);
        let steady = iops(&runs);
        let after = d.stats();
        let wa = (after.ftl.pages_programmed - before.ftl.pages_programmed) as f64
            * f64::from(d.ftl().geometry().units_per_page)
            / (after.ftl.host_units_written - before.ftl.host_units_written) as f64;
        println!("{name}: random 4K writes QD32 from empty: fresh {fresh:.0} IOPS; third drive write {steady:.0} IOPS, WA {wa:.2} (whole run {:.2})", d.write_amplification());
    }
}

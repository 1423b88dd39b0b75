//! Tests over the real DiskSim 4.0 validation drives: those in $ELEVATOR_DISKSIM_DRIVES (see
//! `bench/disksim-drives.sh`), else the two in /work/shared/data/disksim.

use elevator_disksim::*;
use std::path::PathBuf;

/// The two drives shipped beside the project, with DiskSim's own simulated CDFs.
fn shared_dir() -> Option<PathBuf> {
    present(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim"))
}

/// Every validation drive at hand: `$ELEVATOR_DISKSIM_DRIVES`, else the shared two.
fn data_dir() -> Option<PathBuf> {
    present(validation_drives_dir(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/disksim"),
    ))
}

fn present(p: PathBuf) -> Option<PathBuf> {
    if p.join("barracuda").is_dir() {
        Some(p)
    } else {
        eprintln!("skipping: DiskSim data not found at {}", p.display());
        None
    }
}

fn header_rms(text: &str) -> f64 {
    let h = text.lines().next().unwrap();
    let i = h.rfind("rms = ").unwrap();
    h[i + 6..].trim().parse().unwrap()
}

#[test]
fn rms_matches_disksim() {
    let Some(d) = shared_dir() else { return };
    for name in ["barracuda", "cheetah9LP"] {
        let dir = d.join(name);
        let defs = StatDefs::load(&dir.join("statdefs")).unwrap();
        let buckets = defs.buckets("Trace access time").unwrap();
        assert_eq!(buckets, defs.buckets("Physical access time").unwrap());
        assert_eq!(buckets, Buckets::access_time_default());
        let trace = load_trace(&dir.join(format!("{name}.trace"))).unwrap();
        assert_eq!(trace.len(), 10_000);
        let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
        let text = std::fs::read_to_string(dir.join("disksim-simulated-cdf.tsv")).unwrap();
        let expect = header_rms(&text);
        let sim = parse_cdf_tsv(&text, "tsv").unwrap();
        // Printed labels are DiskSim's bucket labels.
        for (i, r) in sim.iter().enumerate() {
            assert!((r.edge_ms - buckets.label(i)).abs() < 1e-9, "row {i}");
        }
        let got = rms_from_cdf(&measured, &sim, &buckets);
        eprintln!("{name}: rms {got:.6} (DiskSim {expect})");
        assert!((got - expect).abs() < 5e-6, "{name}: {got} vs {expect}");
        // Same via counts re-expanded into a sample at bucket labels.
        let counts: Vec<u64> = sim.iter().map(|r| r.count).collect();
        let mut c = counts.clone();
        c.resize(buckets.len(), 0);
        let pts = cdf_points(&c, &buckets);
        let mine = cdf_points(&histogram(&measured, &buckets), &buckets);
        let got2 = rms_between_cdfs(&mine, &pts);
        assert!((got2 - expect).abs() < 5e-6, "{name}: {got2} vs {expect}");
        // Identical samples give zero.
        assert_eq!(rms_demerit_ms(&measured, &measured, &buckets), 0.0);
        let m = mean(&measured);
        assert!(m > 1.0 && m < 30.0);
        assert!(median(&measured) <= p99(&measured));
    }
}

#[test]
fn parse_and_time_trace_plus_rms() {
    let Some(d) = shared_dir() else { return };
    let dir = d.join("barracuda");
    let text = std::fs::read_to_string(dir.join("barracuda.trace")).unwrap();
    let sim_text = std::fs::read_to_string(dir.join("disksim-simulated-cdf.tsv")).unwrap();
    let buckets = Buckets::access_time_default();
    let t0 = std::time::Instant::now();
    let trace = parse_trace(&text, "barracuda.trace").unwrap();
    let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
    let sim = parse_cdf_tsv(&sim_text, "tsv").unwrap();
    let r = rms_from_cdf(&measured, &sim, &buckets);
    eprintln!("trace parse + rms: {:?} (rms {r})", t0.elapsed());
    let first = trace[0];
    assert!(!first.is_write);
    assert_eq!(first.start_block, 2992396);
    assert_eq!(first.size_sectors, 4);
    assert_eq!(first.access_time_us, 13670.0);
    assert_eq!(first.think_time_us, 35942.0);
    assert!(trace[2].is_write);
}

#[test]
fn load_barracuda() {
    let Some(d) = data_dir() else { return };
    let drv = load_drive(&d.join("barracuda")).unwrap();
    assert_eq!(drv.disk.name, "SEAGATE_ST32171W");
    assert_eq!(drv.disk.bulk_sector_transfer_ms, 0.134);
    assert_eq!(drv.disk.buffer_segments, 3);
    assert_eq!(drv.disk.segment_size_sectors, 281);
    assert_eq!(drv.disk.max_read_ahead_sectors, 281);
    assert_eq!(drv.disk.fast_write_level, 1);
    assert_eq!(drv.disk.buffer_continuous_read, 3);
    assert!(drv.disk.enable_caching_in_buffer);
    assert_eq!(drv.disk.overheads.read_miss_after_read_ms, 0.61307);
    assert_eq!(drv.disk.overheads.write_hit_after_write_ms, 0.9291);
    assert_eq!(drv.disk.max_queue_len, 1);
    let m = &drv.model;
    assert_eq!((m.surfaces, m.cylinders, m.block_count), (5, 5172, 4110000));
    assert_eq!(m.layout.sparing, SparingScheme::SectorsPerRange);
    assert_eq!(m.layout.range_size_cylinders, 6);
    assert_eq!(m.layout.zones.len(), 11);
    assert_eq!(m.layout.zones[1].slips.len(), 15);
    assert_eq!(m.mech.rpm, 7200.0);
    assert_eq!(m.mech.head_switch_ms, 0.1);
    assert_eq!(m.mech.full_strobe_seek_ms, Some(16.679));
    assert_eq!(m.mech.access_time_type.as_deref(), Some("trackSwitchPlusRotation"));
    let seek = drv.seek_curve.as_ref().unwrap();
    assert_eq!(seek.points.len(), 87);
    assert_eq!(seek.points[0], (1, 1.943));
    assert_eq!(seek.seek_ms(4986), 16.679);
    assert!((seek.seek_ms(11) - (2.351 + 2.358) / 2.0).abs() < 1e-12);
    assert_eq!(drv.buses.len(), 2);
    assert_eq!(drv.controllers.len(), 1);
    assert_eq!(drv.iodriver_constant_access_ms, Some(0.0));
    assert!(drv.statdefs.is_some());
    assert!(drv.trace_path.is_some());
    // DiskSim (layout_g1_load.c: checknumblocks) replaces "Block count" with the sum of
    // the zones' capacities; for these extracted models that sum is larger.
    assert_eq!(m.mapped_blocks(), 4_217_670);
    assert!(m.mapped_blocks() >= m.block_count);
}

#[test]
fn load_cheetah() {
    let Some(d) = data_dir() else { return };
    let drv = load_drive(&d.join("cheetah9LP")).unwrap();
    let m = &drv.model;
    assert_eq!((m.surfaces, m.cylinders, m.block_count), (12, 6962, 17783240));
    assert_eq!(m.layout.sparing, SparingScheme::SectorsPerZone);
    assert_eq!(m.mech.rpm, 10045.0);
    assert_eq!(m.mech.add_write_settling_ms, 0.461);
    assert_eq!(drv.disk.fast_write_level, 2);
    assert_eq!(drv.seek_curve.as_ref().unwrap().points.len(), 106);
    assert_eq!(m.mapped_blocks(), 17_918_387);
    assert!(m.mapped_blocks() >= m.block_count);
    // Every traced request maps.
    let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
    for r in &trace {
        let end = r.start_block + r.size_sectors as u64 - 1;
        assert!(end < m.block_count);
        assert!(m.lbn_to_pbn(end).is_some());
    }
}

/// Invariants of the LBN→PBN map on every zone of both drives: first/last block of
/// each zone, monotonic physical order, and blocks around every slip.
#[test]
fn lbn_to_pbn_zones_and_slips() {
    let Some(d) = data_dir() else { return };
    for name in ["barracuda", "cheetah9LP"] {
        let drv = load_drive(&d.join(name)).unwrap();
        let m = &drv.model;
        let surf = m.surfaces;
        assert!(m.lbn_to_pbn(m.mapped_blocks()).is_none());
        assert!(m.lbn_to_pbn(m.mapped_blocks() - 1).is_some());
        let sum: u64 = m.layout.zones.iter().map(|z| z.blocks_in_zone).sum();
        assert_eq!(sum, m.mapped_blocks());
        let phys = |p: &Pbn, z: &Zone| {
            ((p.cylinder - z.first_cylinder) * surf + p.surface) * z.blocks_per_track + p.sector
        };
        for (zi, z) in m.layout.zones.iter().enumerate() {
            let first = m.lbn_to_pbn(z.first_lbn).unwrap();
            assert_eq!(first.zone, zi);
            assert_eq!(
                (first.cylinder, first.surface, first.sector),
                (z.first_cylinder, 0, 0),
                "{name} zone {zi}"
            );
            let last = m.lbn_to_pbn(z.first_lbn + z.blocks_in_zone - 1).unwrap();
            assert_eq!(last.zone, zi);
            assert!(last.cylinder <= z.last_cylinder);
            // Around every slip (and on a coarse sample elsewhere) physical order is
            // strictly increasing, never lands on a slipped sector, and for per-zone
            // sparing skips exactly the slips in between.
            let end = z.first_lbn + z.blocks_in_zone;
            let mut windows: Vec<(u64, u64, u64)> = z
                .slips
                .iter()
                .map(|&s| {
                    let lo = (z.first_lbn + s.saturating_sub(400)).min(end - 1);
                    (lo, (lo + 500).min(end), 1)
                })
                .collect();
            windows.push((z.first_lbn, end, 997));
            for (lo, hi, step) in windows {
                let mut prev: Option<u64> = None;
                let mut first_ph = 0;
                let mut lbn = lo;
                while lbn < hi {
                    let p = m.lbn_to_pbn(lbn).unwrap();
                    let ph = phys(&p, z);
                    assert!(!z.slips.contains(&ph), "{name}: lbn {lbn} on slipped sector {ph}");
                    match prev {
                        Some(pv) => assert!(ph > pv),
                        None => first_ph = ph,
                    }
                    prev = Some(ph);
                    lbn += step;
                }
                if step == 1 && m.layout.sparing == SparingScheme::SectorsPerZone {
                    let last_ph = prev.unwrap();
                    let inside =
                        z.slips.iter().filter(|&&s| s > first_ph && s < last_ph).count() as u64;
                    assert_eq!(last_ph - first_ph + 1 - (hi - lo), inside, "{name} zone {zi}");
                }
            }
        }
    }
}

#[test]
fn barracuda_slip_neighbours() {
    let Some(d) = data_dir() else { return };
    let drv = load_drive(&d.join("barracuda")).unwrap();
    let m = &drv.model;
    let z = &m.layout.zones[0];
    // Zone 0 first slip at physical 112508 (range 0 holds 6*5*186 = 5580 sectors minus
    // 88 spares per range): the LBN before the slip maps to 112507, the next one to 112509.
    let bpr = 6 * 5 * 186u64;
    let s = 112508u64;
    let range = s / bpr;
    let lbn_before = range * (bpr - 88) + (s - range * bpr) - 1;
    let phys = |p: Pbn| ((p.cylinder - z.first_cylinder) * 5 + p.surface) * 186 + p.sector;
    assert_eq!(phys(m.lbn_to_pbn(lbn_before).unwrap()), s - 1);
    assert_eq!(phys(m.lbn_to_pbn(lbn_before + 1).unwrap()), s + 1);
    // Track start angles follow the skews: track 1 of cylinder 0 starts 37 sectors later.
    let p0 = m.lbn_to_pbn(0).unwrap();
    let p1 = m.lbn_to_pbn(186).unwrap();
    assert_eq!((p1.cylinder, p1.surface, p1.sector), (0, 1, 0));
    assert!((p1.track_start_angle - p0.track_start_angle - 37.0 / 186.0).abs() < 1e-12);
    let p5 = m.lbn_to_pbn(5 * 186).unwrap();
    assert_eq!((p5.cylinder, p5.surface), (1, 0));
    let expect = ((4.0 * 37.0 + 52.0) / 186.0f64).rem_euclid(1.0);
    assert!((p5.track_start_angle - expect).abs() < 1e-12);
}

/// The HDD model with DiskSim's controller, driven by the drive's own parameters, against
/// the measured access times; returns (its demerit, DiskSim 4.0's).
fn demerits(name: &str) -> Option<(f64, f64)> {
    let d = shared_dir()?;
    let dir = d.join(name);
    let drv = load_drive(&dir).unwrap();
    let params = hdd_params(&drv).unwrap();
    let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
    let sim = replay(&params, &trace).unwrap();
    let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
    let got = rms_demerit_ms(&measured, &sim, &Buckets::access_time_default());
    let text = std::fs::read_to_string(dir.join("disksim-simulated-cdf.tsv")).unwrap();
    let disksim = header_rms(&text);
    eprintln!("{name}: demerit {got:.6} ms (DiskSim {disksim})");
    Some((got, disksim))
}

#[test]
fn barracuda_demerit_at_or_below_disksim() {
    let Some((got, disksim)) = demerits("barracuda") else { return };
    assert!(got <= disksim, "{got} > DiskSim's {disksim}");
}

/// 0.10582 against DiskSim's 0.10710 since a read hit holds back the mechanism until its
/// read-miss overhead is over, as DiskSim's `disk_read_arrive` does.
#[test]
fn cheetah_demerit_at_or_below_disksim() {
    let Some((got, disksim)) = demerits("cheetah9LP") else { return };
    assert!(got <= disksim, "{got} > DiskSim's {disksim}");
}

/// Every drive of DiskSim 4.0's validation set that is present imports, and its trace lies
/// within it.
#[test]
fn every_validation_drive_imports() {
    let Some(d) = data_dir() else { return };
    for (name, _) in DISKSIM_4_0_RMS_MS {
        let dir = d.join(name);
        if !dir.is_dir() {
            eprintln!("skipping {name}: not in {}", d.display());
            continue;
        }
        let drv = load_drive(&dir).unwrap_or_else(|e| panic!("{name}: {e}"));
        let params = hdd_params(&drv).unwrap_or_else(|e| panic!("{name}: {e}"));
        let hdd =
            elevator_device::hdd::Hdd::new(params, &mut elevator_core::RandomStream::new(1, 0))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        let blocks = hdd.geometry().total_sectors;
        assert_eq!(blocks, drv.model.mapped_blocks(), "{name}");
        let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
        assert!(trace.len() > 7000, "{name}");
        assert!(
            trace.iter().all(|r| r.start_block + u64::from(r.size_sectors) <= blocks),
            "{name}"
        );
    }
}

/// On every drive present, the demerit is at or below DiskSim 4.0's: the figure `runvalid`
/// says each drive's rms "should be about", to its three decimals (a demerit that rounds
/// to it passes). And reading the trace on a second thread while it replays, as
/// `validate-disk` does, gives what reading it first and then replaying gives, to the bit.
#[test]
fn every_demerit_at_or_below_disksim() {
    let Some(d) = data_dir() else { return };
    let mut seen = 0;
    for (name, published) in DISKSIM_4_0_RMS_MS {
        let dir = d.join(name);
        if !dir.is_dir() {
            continue;
        }
        let drv = load_drive(&dir).unwrap();
        let params = hdd_params(&drv).unwrap();
        let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
        let sim = replay(&params, &trace).unwrap();
        let measured: Vec<f64> = trace.iter().map(|r| r.access_time_ms()).collect();
        let both = replay_trace_file(&params, drv.trace_path.as_ref().unwrap()).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&both.simulated_ms), bits(&sim), "{name}");
        assert_eq!(bits(&both.measured_ms), bits(&measured), "{name}");
        let got = rms_demerit_ms(&measured, &sim, &Buckets::access_time_default());
        eprintln!("{name}: demerit {got:.6} ms (DiskSim 4.0: {published})");
        assert!(at_or_below_published(got, published), "{name}: {got} above DiskSim's {published}");
        seen += 1;
    }
    assert!(seen >= 2);
}

/// The drive file's own LBN → PBN map (written from DiskSim's `disksim_diskmap.c` functions)
/// and the HDD model's geometry (built from the bridged parameters) are two independent
/// implementations of the same layout: they must agree on every sampled block, those that
/// defects displace included.
#[test]
fn the_two_lbn_maps_agree() {
    let Some(d) = data_dir() else { return };
    for (name, _) in DISKSIM_4_0_RMS_MS {
        if !d.join(name).is_dir() {
            continue;
        }
        let drive = load_drive(&d.join(name)).unwrap();
        let params = elevator_disksim::bridge::hdd_params(&drive).unwrap();
        let hdd =
            elevator_device::hdd::Hdd::new(params, &mut elevator_core::RandomStream::new(1, 0))
                .unwrap();
        let m = &drive.model;
        let blocks = m.mapped_blocks().min(hdd.geometry().total_sectors);
        let mut checked = 0;
        let mut lbn = 0u64;
        while lbn < blocks {
            let reference = m.lbn_to_pbn(lbn).unwrap();
            let chs = hdd.geometry().map(lbn);
            assert_eq!(
                (chs.cylinder, chs.head, chs.sector),
                (reference.cylinder, reference.surface, reference.sector),
                "{name}: LBN {lbn}"
            );
            checked += 1;
            // Every zone boundary region and a spread of blocks in between.
            lbn += 1 + lbn / 97;
        }
        assert!(checked > 1000, "{name}: {checked} blocks checked");
    }
}

/// st41601n, the validation drive `runvalid` leaves out: DiskSim 4.0 aborts on it at request
/// 3206; over the requests before, the demerit is DiskSim's own to its six printed decimals,
/// and the whole trace replays.
#[test]
fn st41601n_matches_disksim_up_to_where_disksim_aborts() {
    let Some(d) = data_dir() else { return };
    let dir = d.join("st41601n");
    if !dir.is_dir() {
        eprintln!("skipping st41601n: not in {}", d.display());
        return;
    }
    let abort = disksim_abort("st41601n").unwrap();
    let drv = load_drive(&dir).unwrap();
    assert!(drv.trace_path.as_ref().unwrap().ends_with("st41601n.trace"));
    let params = hdd_params(&drv).unwrap();
    assert!(params.controller.as_ref().unwrap().drop_request_data);
    let trace = load_trace(drv.trace_path.as_ref().unwrap()).unwrap();
    let before = &trace[..abort.aborts_at_request - 1];
    let sim = replay(&params, before).unwrap();
    let measured: Vec<f64> = before.iter().map(|r| r.access_time_ms()).collect();
    let got = rms_demerit_ms(&measured, &sim, &Buckets::access_time_default());
    assert!((got - abort.rms_before_ms).abs() < 5e-7, "{got} vs DiskSim {}", abort.rms_before_ms);
    assert_eq!(replay(&params, &trace).unwrap().len(), trace.len());
}

//! Each DiskSim feature the import takes, on a small hand-written drive: written to a
//! temporary directory, loaded with `load_drive`, bridged with `hdd_params` and, where
//! timing is the point, replayed closed-loop.

use elevator_device::hdd::seek::SeekSpec;
use elevator_device::hdd::{Hdd, HddParams};
use elevator_disksim::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The disk block: every parameter DiskSim requires, overheads small and distinct.
const SPECS: &str = "disksim_disk T {
   Model = source t.model,
   Per-request overhead time = 0.0,
   Time scale for overheads = 1.0,
   Bulk sector transfer time = 0.05,
   Hold bus entire read xfer = 0,
   Hold bus entire write xfer = 0,
   Allow almost read hits = 0,
   Allow sneaky full read hits = 0,
   Allow sneaky partial read hits = 0,
   Allow sneaky intermediate read hits = 0,
   Allow read hits on write data = 1,
   Allow write prebuffering = 0,
   Preseeking level = 0,
   Never disconnect = 0,
   Print stats = 1,
   Avg sectors per cylinder = 40,
   Max queue length = 1,
   Number of buffer segments = 2,
   Maximum number of write segments = 1,
   Segment size (in blks) = 64,
   Use separate write segment = 0,
   Low (write) water mark = 0.0,
   High (read) water mark = 0.0,
   Set watermark by reqsize = 1,
   Calc sector by sector = 1,
   Enable caching in buffer = 1,
   Buffer continuous read = 0,
   Minimum read-ahead (blks) = 0,
   Maximum read-ahead (blks) = 0,
   Read-ahead over requested = 1,
   Read-ahead on idle hit = 0,
   Read any free blocks = 0,
   Fast write level = 0,
   Immediate buffer read = 0,
   Immediate buffer write = 0,
   Combine seq writes = 1,
   Stop prefetch in sector = 0,
   Disconnect write if seek = 0,
   Write hit stop prefetch = 1,
   Read directly to buffer = 1,
   Immed transfer partial hit = 1,
   Read hit over. after read = 0.1,
   Read hit over. after write = 0.1,
   Read miss over. after read = 0.5,
   Read miss over. after write = 0.5,
   Write hit over. after read = 0.3,
   Write hit over. after write = 0.3,
   Write miss over. after read = 0.6,
   Write miss over. after write = 0.6,
   Read completion overhead = 0.0,
   Write completion overhead = 0.0,
   Data preparation overhead = 0.0,
   First reselect overhead = 0.0,
   Other reselect overhead = 0.0,
   Read disconnect afterread = 0.0,
   Read disconnect afterwrite = 0.0,
   Write disconnect overhead = 0.0,
   Extra write disconnect = 0,
   Extradisc command overhead = 0.0,
   Extradisc disconnect overhead = 0.0,
   Extradisc inter-disconnect delay = 0.0,
   Extradisc 2nd disconnect overhead = 0.0,
   Extradisc seek delta = 0.0,
   Minimum seek delay = 0.0
}
instantiate [ disk0 ] as T
";

/// Ten cylinders of two 20-sector tracks at 6000 rpm (0.5 ms a sector), per-zone sparing.
const MODEL: &str = "dm_disk TM {
   Number of data surfaces = 2,
   Number of cylinders = 10,
   Block count = 390,
   Layout Model = dm_layout_g1 {
      LBN-to-PBN mapping scheme = 0,
      Sparing scheme used = 9,
      Rangesize for sparing = 2,
      Zones = [
         dm_layout_g1_zone {
            First cylinder number = 0,
            Last cylinder number = 9,
            Blocks per track = 20,
            Offset of first block = 0,
            Empty space at zone front = 0,
            Skew for track switch = 2,
            Skew for cylinder switch = 4,
            Number of spares = 10,
            slips = [ 30, 7 ],
            defects = [ 100, 395 ]
         }
      ]
   },
   Mechanical Model = dm_mech_g1 {
      Access time type = trackSwitchPlusRotation,
      Seek type = extracted,
      Full seek curve = t.seek,
      Add. write settling delay = 0.2,
      Head switch time = 0.3,
      Rotation speed (in rpms) = 6000,
      Percent error in rpms = 0.0
   }
}
";

const SEEK: &str = "Seek distances measured: 3\n1, 1.0\n5, 2.0\n9, 3.0\n";

/// A drive directory with `SPECS` and `MODEL` edited by `(from, to)` replacements.
struct Drive {
    dir: PathBuf,
}

impl Drive {
    fn new(specs: &[(&str, &str)], model: &[(&str, &str)]) -> Drive {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "elevator-ds-feature-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let edit = |text: &str, edits: &[(&str, &str)]| {
            let mut t = text.to_string();
            for (from, to) in edits {
                assert!(t.contains(from), "no `{from}` to replace");
                t = t.replace(from, to);
            }
            t
        };
        std::fs::write(dir.join("t.parv"), edit(SPECS, specs)).unwrap();
        std::fs::write(dir.join("t.model"), edit(MODEL, model)).unwrap();
        std::fs::write(dir.join("t.seek"), SEEK).unwrap();
        Drive { dir }
    }

    fn load(&self) -> Result<DiskSimDrive, DiskSimError> {
        load_drive(&self.dir)
    }

    fn params(&self) -> HddParams {
        hdd_params(&self.load().unwrap()).unwrap()
    }

    /// The error bridging (or loading) the drive gives.
    fn error(&self) -> String {
        match self.load() {
            Err(e) => e.to_string(),
            Ok(d) => hdd_params(&d).expect_err("an error").to_string(),
        }
    }
}

impl Drop for Drive {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

/// Replays `(write, start, sectors, think_ms)` requests closed-loop; access times in ms.
fn times(p: &HddParams, reqs: &[(bool, u64, u32, f64)]) -> Vec<f64> {
    let trace: Vec<TraceRecord> = reqs
        .iter()
        .enumerate()
        .map(|(i, &(is_write, start_block, size_sectors, think))| TraceRecord {
            is_write,
            start_block,
            size_sectors,
            access_time_us: 0.0,
            think_time_us: think * 1000.0,
            line: i + 1,
        })
        .collect();
    replay(p, &trace).unwrap()
}

/// The drive's geometry and its file's own LBN→PBN map agree on every block.
fn maps_agree(d: &DiskSimDrive) -> u64 {
    let hdd =
        Hdd::new(hdd_params(d).unwrap(), &mut elevator_core::RandomStream::new(1, 0)).unwrap();
    let blocks = d.model.mapped_blocks();
    assert_eq!(hdd.geometry().total_sectors, blocks);
    for lbn in 0..blocks {
        let r = d.model.lbn_to_pbn(lbn).unwrap();
        let c = hdd.geometry().map(lbn);
        assert_eq!((c.cylinder, c.head, c.sector), (r.cylinder, r.surface, r.sector), "{lbn}");
    }
    blocks
}

#[test]
fn unsorted_slips_are_sorted_and_both_maps_agree() {
    let d = Drive::new(&[], &[]).load().unwrap();
    assert_eq!(d.model.layout.zones[0].slips, vec![7, 30]);
    // 400 sectors, 10 spares: 390 blocks; slips 7 and 30 are skipped.
    assert_eq!(maps_agree(&d), 390);
    let phys = |l| {
        let p = d.model.lbn_to_pbn(l).unwrap();
        (p.cylinder * 2 + p.surface) * 20 + p.sector
    };
    assert_eq!((phys(6), phys(7), phys(28), phys(29)), (6, 8, 29, 31));
}

#[test]
fn defects_go_to_their_spares_in_both_maps() {
    let d = Drive::new(&[], &[]).load().unwrap();
    // Physical 100 is block 98 (two slips before it): it lies on spare 395 instead.
    let p = d.model.lbn_to_pbn(98).unwrap();
    assert!(p.remapped);
    assert_eq!((p.cylinder, p.surface, p.sector), (9, 1, 15));
    maps_agree(&d);
    // A spare beyond the zone is refused by the geometry.
    let bad = Drive::new(&[], &[("defects = [ 100, 395 ]", "defects = [ 100, 400 ]")]);
    let e = bad.error();
    assert!(e.contains("t.model:10") && e.contains("lies beyond"), "{e}");
}

#[test]
fn every_sparing_scheme_imports_and_both_maps_agree() {
    for scheme in 0..=10 {
        let d = Drive::new(
            &[],
            &[
                ("Sparing scheme used = 9", &format!("Sparing scheme used = {scheme}")),
                ("Number of spares = 10", "Number of spares = 2"),
                (
                    "slips = [ 30, 7 ]",
                    if scheme == 1 { "slips = [ 3 ]" } else { "slips = [ 30, 7 ]" },
                ),
                (
                    "defects = [ 100, 395 ]",
                    if scheme == 1 { "defects = [ 5, 19 ]" } else { "defects = [ 100, 39 ]" },
                ),
            ],
        );
        let drive = d.load().unwrap();
        let blocks = maps_agree(&drive);
        assert!(blocks > 300, "scheme {scheme}: {blocks} blocks");
    }
}

#[test]
fn zones_may_reach_past_the_cylinder_count_when_only_spares_lie_there() {
    // Track sparing with 2 spare tracks: cylinder 9 holds only spares, so 9 cylinders do.
    let spares_only = [
        ("Number of cylinders = 10", "Number of cylinders = 9"),
        ("Sparing scheme used = 9", "Sparing scheme used = 1"),
        ("Number of spares = 10", "Number of spares = 2"),
        ("slips = [ 30, 7 ]", "slips = []"),
        ("defects = [ 100, 395 ]", "defects = []"),
    ];
    assert!(Drive::new(&[], &spares_only).load().is_ok());
    // With per-zone sparing the last blocks would lie on cylinder 9: refused, naming the key.
    let e = Drive::new(&[], &[("Number of cylinders = 10", "Number of cylinders = 9")]).error();
    assert!(e.contains("t.model:") && e.contains("Last cylinder number"), "{e}");
}

#[test]
fn seek_types_map_to_the_models_seek_curves() {
    let mech = |lines: &str| {
        Drive::new(
            &[],
            &[("      Seek type = extracted,\n      Full seek curve = t.seek,\n", lines)],
        )
    };
    assert!(matches!(Drive::new(&[], &[]).params().seek, SeekSpec::Table { .. }));
    let hpl = "      Seek type = hplplus10,\n      HPL seek equation values = [ 5, 1.5, 0.25, \
               2.0, 0.1, -1.000000 ],\n      First ten seek times = [ 1.0, 1.1, 1.2, 1.3, 1.4, \
               1.5, 1.6, 1.7, 1.8, 1.9 ],\n";
    match mech(hpl).params().seek {
        SeekSpec::Hpl { v1_cyl, first_ten_ms, single_cylinder_ms, .. } => {
            assert_eq!((v1_cyl, first_ten_ms.len(), single_cylinder_ms), (5, 10, None));
        }
        s => panic!("{s:?}"),
    }
    let p = mech(
        "      Seek type = hpl,\n      HPL seek equation values = [ 5, 1.5, 0.25, 2.0, \
                  0.1, 0.75 ],\n",
    )
    .params();
    assert!(matches!(p.seek, SeekSpec::Hpl { single_cylinder_ms: Some(s), .. } if s == 0.75));
    let three = "      Single cylinder seek time = 1.0,\n      Average seek time = 3.0,\n      \
                 Full strobe seek time = 5.0,\n";
    let p = mech(&format!("      Seek type = curve,\n{three}")).params();
    assert!(matches!(p.seek, SeekSpec::ThreePoint { .. }));
    let p = mech(&format!("      Seek type = linear,\n{three}")).params();
    assert!(
        matches!(&p.seek, SeekSpec::Table { distances_cyl, .. } if *distances_cyl == [1, 3, 10])
    );
    let p = mech("      Seek type = constant,\n      Constant seek time = 2.5,\n").params();
    assert_eq!(p.seek, SeekSpec::Constant { ms: 2.5 });
    // DiskSim's own errors stay errors, naming file, line and key.
    let e = mech(
        "      Seek type = hplplus10,\n      HPL seek equation values = [ 5, 1.5, 0.25, \
                  2.0, 0.1, -1.0 ],\n",
    )
    .error();
    assert!(e.contains("First ten seek times"), "{e}");
    let e = mech(
        "      Seek type = hpl,\n      HPL seek equation values = [ 5, 1, 0.25, 2.0, \
                  0.1, -1.0 ],\n",
    )
    .error();
    assert!(e.contains("t.model:") && e.contains("decimals"), "{e}");
    let e = mech(
        "      Seek type = hpl,\n      Full seek curve = t.seek,\n      HPL seek \
                  equation values = [ 5, 1.5, 0.25, 2.0, 0.1, -1.0 ],\n",
    )
    .error();
    assert!(e.contains("Full seek curve"), "{e}");
    let e = mech("      Seek type = wobbly,\n").error();
    assert!(e.contains("t.model:") && e.contains("wobbly"), "{e}");
}

#[test]
fn a_negative_write_settle_shortens_writes_that_move() {
    let neg =
        Drive::new(&[], &[("Add. write settling delay = 0.2", "Add. write settling delay = -0.4")]);
    let p = neg.params();
    assert_eq!(p.write_settle_ms, -0.4);
    let pos = Drive::new(&[], &[]).params();
    // A write three cylinders away: positioning 1.5 ms + settle, then rotation.
    let reqs = [(false, 0, 1, 1.0), (true, 250, 1, 0.0)];
    let (a, b) = (times(&p, &reqs)[1], times(&pos, &reqs)[1]);
    assert!(a < b, "{a} vs {b}");
}

#[test]
fn the_bus_moves_reads_and_writes_at_their_own_block_times() {
    let parv_bus = |read: &str, write: &str| {
        format!(
            "disksim_bus BUS1 {{\n   type = 1,\n   Arbitration type = 1,\n   Arbitration time = \
             0.0,\n   Read block transfer time = {read},\n   Write block transfer time = \
             {write},\n   Print stats = 1\n}}\n"
        )
    };
    let d = Drive::new(&[("instantiate", &format!("{}instantiate", parv_bus("0.2", "0.4")))], &[]);
    let c = d.params().controller.unwrap();
    assert_eq!((c.bus_read_sector_ms, c.bus_write_sector_ms), (Some(0.2), Some(0.4)));
    // 40 blocks written through: on the media 20 ms; at 1 ms a block over the bus the data
    // takes 40, at 0.05 it keeps ahead of the media. Reads do not care.
    let bus = |write: &str| {
        Drive::new(&[("instantiate", &format!("{}instantiate", parv_bus("0.05", write)))], &[])
            .params()
    };
    let (slow, fast) = (bus("1.0"), bus("0.05"));
    let w = [(true, 100, 40, 0.0)];
    assert!(times(&slow, &w)[0] > 40.0 && times(&fast, &w)[0] < 35.0);
    let r = [(false, 100, 40, 0.0)];
    assert_eq!(times(&slow, &r), times(&fast, &r));
}

#[test]
fn a_disconnected_read_reselects_at_its_water_mark_and_never_disconnect_skips_it() {
    // Disconnect 0.3 ms, reselect 0.7 ms; `bus` ms a sector against the media's 0.5.
    let read = |bus: &str, extra: &[(&str, &str)]| {
        let mut e = vec![
            ("First reselect overhead = 0.0", "First reselect overhead = 0.7"),
            ("Read disconnect afterread = 0.0", "Read disconnect afterread = 0.3"),
        ];
        let b = format!("Bulk sector transfer time = {bus}");
        e.push(("Bulk sector transfer time = 0.05", &b));
        e.extend_from_slice(extra);
        // A 10-block miss on one track.
        times(&Drive::new(&e, &[]).params(), &[(false, 200, 10, 0.0)])[0]
    };
    let base = read("0.6", &[]);
    // Never disconnecting skips the reselection (the disconnect overlaps the media anyway).
    let never = read("0.6", &[("Never disconnect = 0", "Never disconnect = 1")]);
    assert!((base - never - 0.7).abs() < 0.01, "{base} vs {never}");
    // With the water mark at the whole request the transfer waits for all ten blocks
    // (nine more sectors, 4.5 ms).
    let whole = read("0.6", &[("High (read) water mark = 0.0", "High (read) water mark = 1.0")]);
    assert!((whole - base - 4.5).abs() < 0.01, "{whole} vs {base}");
    // A bus faster than the media runs dry after every sector: letting it go costs a
    // disconnect and reselection each time, holding it does not.
    let letgo = read("0.1", &[]);
    let hold = read("0.1", &[("Hold bus entire read xfer = 0", "Hold bus entire read xfer = 1")]);
    assert!(letgo > hold, "{letgo} vs {hold}");
    assert_eq!(hold, read("0.1", &[("Never disconnect = 0", "Never disconnect = 1")]));
}

#[test]
fn a_separate_write_segment_keeps_reads_cached_and_writes_out_of_reads() {
    let shared =
        Drive::new(&[("Number of buffer segments = 2", "Number of buffer segments = 1")], &[])
            .params();
    let separate =
        Drive::new(&[("Use separate write segment = 0", "Use separate write segment = 1")], &[])
            .params();
    assert!(separate.controller.as_ref().unwrap().separate_write_segment);
    // Read A, write B elsewhere, read A again: with one shared segment the write took it.
    let reqs = [(false, 200, 8, 5.0), (true, 40, 4, 5.0), (false, 200, 8, 0.0)];
    let t_shared = times(&shared, &reqs)[2];
    let t_separate = times(&separate, &reqs)[2];
    assert!(t_separate < 1.0 && t_shared > 1.0, "{t_separate} vs {t_shared}");
    // Written data is never read from the separate write segment.
    let reqs = [(true, 40, 4, 5.0), (false, 40, 4, 0.0)];
    assert!(times(&separate, &reqs)[1] > 1.0);
    // It needs a second segment, as in DiskSim.
    let e = Drive::new(
        &[
            ("Use separate write segment = 0", "Use separate write segment = 1"),
            ("Number of buffer segments = 2", "Number of buffer segments = 1"),
        ],
        &[],
    )
    .error();
    assert!(e.contains("t.parv:") && e.contains("Use separate write segment"), "{e}");
}

#[test]
fn an_extra_write_disconnect_costs_a_write_that_does_not_follow_the_last() {
    // With a separate write segment every write uses the same (most recently used) one.
    let sep = ("Use separate write segment = 0", "Use separate write segment = 1");
    let edits = [
        sep,
        ("Extra write disconnect = 0", "Extra write disconnect = 1"),
        ("Extradisc command overhead = 0.0", "Extradisc command overhead = 0.4"),
        ("Extradisc inter-disconnect delay = 0.0", "Extradisc inter-disconnect delay = 30.0"),
    ];
    let p = Drive::new(&edits, &[]).params();
    let x = p.controller.as_ref().unwrap().extra_write_disconnect.clone().unwrap();
    assert_eq!((x.command_ms, x.inter_disconnect_ms), (0.4, 30.0));
    let plain = Drive::new(&[sep], &[]).params();
    // The second write does not continue the first: its data waits for the extra
    // disconnect (0.4 + 30 ms) instead of the write overhead (0.6 ms).
    let reqs = [(true, 100, 4, 2.0), (true, 300, 4, 0.0)];
    let (extra, without) = (times(&p, &reqs)[1], times(&plain, &reqs)[1]);
    assert!(extra > 30.4 && without < 30.0, "{extra} vs {without}");
    // One that follows it does not disconnect.
    let reqs = [(true, 100, 4, 2.0), (true, 104, 4, 0.0)];
    assert_eq!(times(&p, &reqs)[1], times(&plain, &reqs)[1]);
}

#[test]
fn a_minimum_seek_delay_holds_back_writes_that_do_not_continue() {
    let p = Drive::new(&[("Minimum seek delay = 0.0", "Minimum seek delay = 7.0")], &[]).params();
    assert_eq!(p.controller.as_ref().unwrap().minimum_seek_delay_ms, 7.0);
    // A write on the track the heads are on: overhead 0.6 ms, then at least 7 ms.
    let t = times(&p, &[(false, 0, 1, 0.0), (true, 10, 1, 0.0)])[1];
    assert!(t >= 7.6, "{t}");
}

#[test]
fn read_ahead_over_requested_minus_one_drops_a_reads_data_from_its_segment() {
    let drive = |value: &'static str| {
        Drive::new(
            &[
                ("Buffer continuous read = 0", "Buffer continuous read = 3"),
                ("Maximum read-ahead (blks) = 0", "Maximum read-ahead (blks) = 16"),
                ("Read-ahead over requested = 1", value),
            ],
            &[],
        )
        .params()
    };
    let keep = drive("Read-ahead over requested = 1");
    let drop = drive("Read-ahead over requested = -1");
    assert!(!keep.controller.as_ref().unwrap().drop_request_data);
    assert!(drop.controller.as_ref().unwrap().drop_request_data);
    // Read 8 blocks and, once the 16 after them are read ahead, the same 8 again: a hit
    // where the segment keeps them, the media where it drops them. The blocks read ahead
    // past them hit either way.
    let again = [(false, 200, 8, 50.0), (false, 200, 8, 0.0)];
    let (kept, dropped) = (times(&keep, &again)[1], times(&drop, &again)[1]);
    assert!(kept < 1.0 && dropped > 1.0, "{kept} vs {dropped}");
    let ahead = [(false, 200, 8, 50.0), (false, 208, 8, 0.0)];
    assert!(times(&drop, &ahead)[1] < 1.0);
}

#[test]
fn parameters_disksim_never_acts_on_are_accepted_and_range_checked() {
    let on = [
        ("Immediate buffer read = 0", "Immediate buffer read = 1"),
        ("Immediate buffer write = 0", "Immediate buffer write = 1"),
        ("Read any free blocks = 0", "Read any free blocks = 1"),
        ("Enable caching in buffer = 1", "Enable caching in buffer = 2"),
    ];
    let c = Drive::new(&on, &[]).params().controller.unwrap();
    assert!(!c.immediate_read && !c.immediate_write && !c.read_any_free_blocks);
    // Out of DiskSim's range: an error naming file, line and key.
    let e = Drive::new(&[("Never disconnect = 0", "Never disconnect = 2")], &[]).error();
    assert!(e.contains("t.parv:15") && e.contains("Never disconnect"), "{e}");
    let e = Drive::new(&[("Enable caching in buffer = 1", "Enable caching in buffer = 3")], &[])
        .error();
    assert!(e.contains("Enable caching in buffer"), "{e}");
    // What the model does not do stays refused.
    let e = Drive::new(&[("Preseeking level = 0", "Preseeking level = 1")], &[]).error();
    assert!(e.contains("t.parv:") && e.contains("preseeking"), "{e}");
}

#[test]
fn no_buffer_segments_and_empty_segments_are_refused_as_in_disksim() {
    // DiskSim's disk_postpass_perdisk refuses both whether or not the cache is on
    // (src/disksim_disk.c:394 and :399); this used to reach the controller and panic there.
    for (from, to, key) in [
        (
            "Number of buffer segments = 2",
            "Number of buffer segments = 0",
            "Number of buffer segments",
        ),
        ("Segment size (in blks) = 64", "Segment size (in blks) = 0", "Segment size (in blks)"),
        (
            "Segment size (in blks) = 64",
            "Segment size (in blks) = 100000000",
            "Segment size (in blks)",
        ),
    ] {
        let e = Drive::new(&[(from, to)], &[]).error();
        assert!(e.contains("t.parv:") && e.contains(key), "{to}: {e}");
    }
}

#[test]
fn with_the_cache_off_reads_never_hit_and_writes_still_go_through_a_segment() {
    let off = ("Enable caching in buffer = 1", "Enable caching in buffer = 0");
    let uncached = Drive::new(&[off], &[]).params();
    let cached = Drive::new(&[], &[]).params();
    // Read A twice: the second is a hit only with the cache on.
    let reqs = [(false, 200, 8, 5.0), (false, 200, 8, 0.0)];
    assert!(times(&cached, &reqs)[1] < 1.0);
    assert!(times(&uncached, &reqs)[1] > 1.0, "no hits with the cache off");
    // A write, then a read of what it wrote: the write completes (DiskSim moves its data
    // through a segment) and the read goes to the media. This used to panic: no segment.
    let reqs = [(true, 40, 4, 5.0), (false, 40, 4, 0.0), (true, 48, 4, 0.0)];
    let t = times(&uncached, &reqs);
    assert!(t.iter().all(|&x| x > 0.0) && t[1] > 1.0, "{t:?}");
    // DiskSim refuses read-ahead, reading free blocks and fast writes without the cache.
    for (from, to) in [
        ("Buffer continuous read = 0", "Buffer continuous read = 1"),
        ("Fast write level = 0", "Fast write level = 1"),
    ] {
        let e = Drive::new(&[off, (from, to)], &[]).error();
        assert!(e.contains("t.parv:") && e.contains("Enable caching in buffer"), "{to}: {e}");
    }
}

#[test]
fn a_request_past_the_drive_is_an_error_even_where_its_end_would_wrap() {
    let p = Drive::new(&[], &[]).params();
    for start in [u64::MAX, u64::MAX - 3, 1 << 40] {
        let trace = [TraceRecord {
            is_write: false,
            start_block: start,
            size_sectors: 4,
            access_time_us: 0.0,
            think_time_us: 0.0,
            line: 7,
        }];
        let e = replay(&p, &trace).unwrap_err().to_string();
        assert!(e.contains("line 7") && e.contains("beyond"), "{start}: {e}");
    }
}

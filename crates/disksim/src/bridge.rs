//! A DiskSim drive as elevator's HDD model: [`hdd_params`] maps every parameter of the
//! `disksim_disk` block, its `dm_disk` model and the path above it (bus, controller, driver)
//! that changes access times onto [`HddParams`] with DiskSim's controller
//! ([`elevator_device::hdd::controller`]). A parameter set to something the model does not
//! do is an error naming its file, line and key, never silently dropped; one that DiskSim
//! reads but whose value changes nothing it (or this model) does is accepted, range-checked
//! as DiskSim checks it, and listed with the DiskSim source that shows why
//! (`accepted_unused`'s docs). Every parameter of DiskSim 4.0's ten validation drives maps.

use crate::drive::{DiskSimDrive, SparingScheme};
use crate::error::DiskSimError;
use crate::params::{Block, Node, Value};
use elevator_device::hdd::controller::{DiskSimController, ExtraWriteDisconnect, ReadAhead};
use elevator_device::hdd::geometry::{Sparing, SurfaceOrder, ZoneSpec};
use elevator_device::hdd::seek::SeekSpec;
use elevator_device::hdd::HddParams;

fn err_at(b: &Block, key: &str, msg: impl Into<String>) -> DiskSimError {
    match b.get(key) {
        Some(v) => DiskSimError::BadValue {
            file: v.file.to_string(),
            line: v.line,
            key: key.to_string(),
            msg: msg.into(),
        },
        None => DiskSimError::BadValue {
            file: b.file.to_string(),
            line: b.line,
            key: key.to_string(),
            msg: msg.into(),
        },
    }
}

fn num(b: &Block, key: &str) -> f64 {
    b.get(key).and_then(|v| v.value.as_f64()).unwrap_or(0.0)
}

/// Refuses `key` in `b` when it is set to anything but `ok` (absent counts as `ok`).
fn only(b: &Block, key: &str, ok: f64, what: &str) -> Result<(), DiskSimError> {
    match b.get(key) {
        Some(v) if v.value.as_f64().is_some_and(|x| x != ok) => {
            Err(err_at(b, key, format!("{what} is not modelled (only {ok} is supported)")))
        }
        _ => Ok(()),
    }
}

/// A skew or offset in sectors, truncated to whole sectors as DiskSim does
/// (`layout_g1_zone`: `(int)d * sector_width`).
fn integral(b: &Block, key: &str, v: f64) -> Result<u64, DiskSimError> {
    if v < 0.0 || !v.is_finite() {
        return Err(err_at(b, key, "must be a non-negative number of sectors"));
    }
    if let Some(Value::Str(u)) = b.get("Skew units").map(|v| &v.value) {
        if u != "sectors" {
            return Err(err_at(b, "Skew units", format!("`{u}` is not modelled (only sectors)")));
        }
    }
    Ok(v as u64)
}

/// The HDD model's parameters for a DiskSim drive: its layout (zones, skews, spares, slips
/// and defects, surface order), mechanics (seek curve of any DiskSim seek type, head switch,
/// write settle, rpm), controller (overheads, disconnects and reselection, water marks,
/// per-direction bus, cache segments, read-ahead, write-back, extra write disconnects) and
/// queue, with the platter at angle 0 at time 0 as DiskSim starts it.
pub fn hdd_params(d: &DiskSimDrive) -> Result<HddParams, DiskSimError> {
    let m = &d.model;
    let mb = &m.mech.raw;
    let lb = match m.raw.get("Layout Model").and_then(|v| v.value.as_block()) {
        Some(b) => b,
        None => &m.raw,
    };
    let spec = &d.disk.raw;

    // Layout.
    let sparing = match m.layout.sparing {
        SparingScheme::None => Sparing::None,
        SparingScheme::Track => Sparing::Track,
        SparingScheme::SectorsPerCylinder => Sparing::SectorsPerCylinder,
        SparingScheme::SectorsPerTrack => Sparing::SectorsPerTrack,
        SparingScheme::SectorsPerCylinderSlipToEnd => Sparing::SectorsPerCylinderSlipToEnd,
        SparingScheme::SectorsPerCylinderAtFront => Sparing::SectorsPerCylinderAtFront,
        SparingScheme::SectorsPerCylinderAtFrontSlipToEnd => {
            Sparing::SectorsPerCylinderAtFrontSlipToEnd
        }
        SparingScheme::SectorsAtEnd => Sparing::SectorsAtEnd,
        SparingScheme::SectorsPerRange => {
            Sparing::SectorsPerRange { cylinders: m.layout.range_size_cylinders }
        }
        SparingScheme::SectorsPerZone => Sparing::SectorsPerZone,
        SparingScheme::SectorsPerZoneSlipToEnd => Sparing::SectorsPerZoneSlipToEnd,
    };
    let surface_order = match m.layout.mapping_scheme {
        0 => SurfaceOrder::Ascending,
        1 => SurfaceOrder::SerpentineInZone,
        _ => SurfaceOrder::Serpentine,
    };
    let zone_blocks: Vec<&Block> = lb
        .get("Zones")
        .and_then(|v| v.value.as_list())
        .map(|l| l.iter().filter_map(|z| z.value.as_block()).collect())
        .unwrap_or_default();
    let mut zones = Vec::with_capacity(m.layout.zones.len());
    for (i, z) in m.layout.zones.iter().enumerate() {
        let zb = zone_blocks.get(i).copied().unwrap_or(lb);
        zones.push(ZoneSpec {
            first_cylinder: z.first_cylinder,
            last_cylinder: z.last_cylinder,
            sectors_per_track: z.blocks_per_track,
            track_skew_sectors: integral(zb, "Skew for track switch", z.track_skew_sectors)?,
            cylinder_skew_sectors: integral(
                zb,
                "Skew for cylinder switch",
                z.cylinder_skew_sectors,
            )?,
            spares: z.spares,
            slips: z.slips.clone(),
            defects: z.defects.clone(),
            empty_front_sectors: z.empty_space_front_sectors,
            first_block_offset_sectors: integral(
                zb,
                "Offset of first block",
                z.first_block_offset_sectors,
            )?,
        });
    }

    // Mechanics.
    match m.mech.access_time_type.as_deref() {
        None | Some("trackSwitchPlusRotation") => {}
        Some(other) => {
            return Err(err_at(
                mb,
                "Access time type",
                format!("`{other}` is not modelled (only trackSwitchPlusRotation)"),
            ))
        }
    }
    let seek = seek_spec(d, mb)?;
    only(mb, "Percent error in rpms", 0.0, "rpm variation")?;

    // Path above the drive: driver, controllers, buses.
    if let Some(c) = d.iodriver_constant_access_ms.filter(|&c| c != 0.0) {
        let b = d.parv.blocks_of("disksim_iodriver").next().unwrap_or(spec);
        return Err(err_at(
            b,
            "Constant access time",
            format!("{c} ms: a constant access time is not a disk model"),
        ));
    }
    // DiskSim moves each sector in the slowest of the disk's, the controllers' and the bus's
    // block time for its direction (`disk_get_blktranstime`, `controller_53c700_data_transfer`).
    let mut read_sector_ms = d.disk.bulk_sector_transfer_ms;
    let mut write_sector_ms = read_sector_ms;
    for b in d.parv.blocks_of("disksim_ctlr") {
        only(b, "type", 1.0, "a controller other than pass-through (type 1)")?;
        read_sector_ms = read_sector_ms.max(num(b, "Bulk sector transfer time"));
        write_sector_ms = write_sector_ms.max(num(b, "Bulk sector transfer time"));
    }
    for b in d.parv.blocks_of("disksim_bus") {
        only(b, "Arbitration time", 0.0, "bus arbitration time")?;
        read_sector_ms = read_sector_ms.max(num(b, "Read block transfer time"));
        write_sector_ms = write_sector_ms.max(num(b, "Write block transfer time"));
    }
    for (key, v) in [
        ("Read block transfer time", read_sector_ms),
        ("Write block transfer time", write_sector_ms),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(err_at(spec, key, "block transfer times must be ≥ 0"));
        }
    }

    // The disk's controller. What the model does not do is refused; parameters DiskSim
    // reads but never acts on are accepted (see `accepted_unused`).
    for (key, ok, what) in [
        ("Allow almost read hits", 0.0, "almost read hits"),
        ("Allow sneaky full read hits", 0.0, "sneaky read hits"),
        ("Allow sneaky partial read hits", 0.0, "sneaky read hits"),
        ("Allow sneaky intermediate read hits", 0.0, "sneaky read hits"),
        ("Allow write prebuffering", 0.0, "write prebuffering"),
        ("Preseeking level", 0.0, "preseeking"),
        ("Minimum read-ahead (blks)", 0.0, "a minimum read-ahead"),
        ("Disconnect write if seek", 0.0, "disconnecting a write in a seek"),
        ("Write hit stop prefetch", 1.0, "read-ahead going on under a write"),
        ("Read directly to buffer", 1.0, "reading through a staging area"),
    ] {
        only(spec, key, ok, what)?;
    }
    accepted_unused(spec)?;
    let s = &d.disk;
    let scale = s.overhead_time_scale;
    let o = &s.overheads;
    // What DiskSim refuses with the cache off (`disk_postpass_perdisk`,
    // src/disksim_disk.c:264, :286 and :292).
    if !s.enable_caching_in_buffer {
        let refused = [
            (s.buffer_continuous_read != 0, "Buffer continuous read", "read-ahead"),
            (
                s.read_any_free_blocks.unwrap_or(false),
                "Read any free blocks",
                "reading free blocks",
            ),
            (s.fast_write_level != 0, "Fast write level", "fast writes"),
        ];
        if let Some((_, key, what)) = refused.iter().find(|r| r.0) {
            return Err(err_at(
                spec,
                key,
                format!("{what} needs \"Enable caching in buffer\" (DiskSim refuses it without)"),
            ));
        }
    }
    let read_ahead = if !s.enable_caching_in_buffer {
        ReadAhead::None
    } else {
        match s.buffer_continuous_read {
            0 => ReadAhead::None,
            1 => ReadAhead::TrackEnd,
            2 => ReadAhead::CylinderEnd,
            3 => ReadAhead::Sectors,
            4 => ReadAhead::NextTrack,
            _ => {
                return Err(err_at(spec, "Buffer continuous read", "expected 0 to 4"));
            }
        }
    };
    // DiskSim refuses both whether or not the cache is on (`disk_postpass_perdisk`,
    // src/disksim_disk.c:394 and :399).
    if s.buffer_segments < 1 {
        return Err(err_at(spec, "Number of buffer segments", "must be at least 1"));
    }
    let total_sectors = m.mapped_blocks();
    if s.segment_size_sectors < 1 || s.segment_size_sectors > total_sectors {
        return Err(err_at(
            spec,
            "Segment size (in blks)",
            format!("expected 1 to the drive's {total_sectors} sectors"),
        ));
    }
    if !(0..=2).contains(&s.fast_write_level) {
        return Err(err_at(spec, "Fast write level", "expected 0, 1 or 2"));
    }
    let flag = |v: Option<bool>| v.unwrap_or(false);
    let fraction = |key: &str, v: Option<f64>| match v {
        Some(x) if !(0.0..=1.0).contains(&x) => Err(err_at(spec, key, "expected 0 to 1")),
        v => Ok(v.unwrap_or(0.0)),
    };
    let extra_write_disconnect = flag(s.extra_write_disconnect).then(|| ExtraWriteDisconnect {
        command_ms: s.extradisc_command_overhead_ms.unwrap_or(0.0) * scale,
        disconnect_ms: s.extradisc_disconnect_overhead_ms.unwrap_or(0.0) * scale,
        inter_disconnect_ms: s.extradisc_inter_disconnect_delay_ms.unwrap_or(0.0) * scale,
        second_disconnect_ms: s.extradisc_2nd_disconnect_overhead_ms.unwrap_or(0.0) * scale,
        seek_delta_ms: s.extradisc_seek_delta_ms.unwrap_or(0.0) * scale,
    });
    if flag(s.use_separate_write_segment) && s.buffer_segments < 2 {
        return Err(err_at(
            spec,
            "Use separate write segment",
            "needs at least two buffer segments (DiskSim refuses it with one)",
        ));
    }
    let controller = DiskSimController {
        read_hit_after_read_ms: o.read_hit_after_read_ms * scale,
        read_hit_after_write_ms: o.read_hit_after_write_ms * scale,
        read_miss_after_read_ms: o.read_miss_after_read_ms * scale,
        read_miss_after_write_ms: o.read_miss_after_write_ms * scale,
        write_hit_after_read_ms: o.write_hit_after_read_ms * scale,
        write_hit_after_write_ms: o.write_hit_after_write_ms * scale,
        write_miss_after_read_ms: o.write_miss_after_read_ms * scale,
        write_miss_after_write_ms: o.write_miss_after_write_ms * scale,
        read_completion_ms: s.read_completion_overhead_ms * scale,
        write_completion_ms: s.write_completion_overhead_ms * scale,
        read_disconnect_after_read_ms: s.read_disconnect_after_read_ms * scale,
        read_disconnect_after_write_ms: s.read_disconnect_after_write_ms * scale,
        first_reselect_ms: s.first_reselect_overhead_ms * scale,
        other_reselect_ms: s.other_reselect_overhead_ms * scale,
        write_disconnect_ms: s.write_disconnect_overhead_ms * scale,
        data_prep_ms: s.data_preparation_overhead_ms * scale,
        per_request_ms: s.per_request_overhead_ms * scale,
        bus_read_sector_ms: Some(read_sector_ms),
        bus_write_sector_ms: Some(write_sector_ms),
        never_disconnect: flag(s.never_disconnect),
        hold_bus_read: flag(s.hold_bus_entire_read_xfer),
        read_water_mark: fraction("High (read) water mark", s.high_read_water_mark)?,
        water_mark_by_request: flag(s.set_watermark_by_reqsize),
        immediate_partial_hit: s.immed_transfer_partial_hit.unwrap_or(true),
        separate_write_segment: flag(s.use_separate_write_segment),
        // DiskSim 4.0 never starts an access anywhere but at its first wanted block (see
        // `accepted_unused`), so these stay off whatever the drive says.
        read_any_free_blocks: false,
        immediate_read: false,
        immediate_write: false,
        stop_prefetch_in_sector: flag(s.stop_prefetch_in_sector),
        minimum_seek_delay_ms: s.minimum_seek_delay_ms.unwrap_or(0.0) * scale,
        extra_write_disconnect,
        read_ahead,
        max_read_ahead_sectors: s.max_read_ahead_sectors,
        read_ahead_over_requested: s.read_ahead_over_requested != 0,
        drop_request_data: s.read_ahead_over_requested == -1,
        read_ahead_on_idle_hit: s.read_ahead_on_idle_hit.unwrap_or(false),
        read_hits_on_write_data: s.allow_read_hits_on_write_data.unwrap_or(false),
        combine_sequential_writes: s.combine_seq_writes.unwrap_or(false),
    };
    let caching = s.enable_caching_in_buffer;
    let segments = if caching { s.buffer_segments.min(1 << 16) as u32 } else { 0 };
    let bus_sector_ms = read_sector_ms.max(write_sector_ms);
    let bus_bytes_per_sec =
        if bus_sector_ms > 0.0 { 512.0 / (bus_sector_ms / 1000.0) } else { f64::INFINITY };
    let bad_value = |key: &str| matches!(spec.get(key).map(|v| &v.value), Some(Value::Str(_)));
    if bad_value("Max queue length") {
        return Err(err_at(spec, "Max queue length", "expected a number"));
    }
    Ok(HddParams {
        interface: "SCSI".into(),
        rpm: m.mech.rpm,
        surfaces: m.surfaces,
        zones,
        seek,
        head_switch_ms: m.mech.head_switch_ms,
        write_settle_ms: m.mech.add_write_settling_ms,
        read_overhead_ms: controller.read_miss_after_read_ms,
        write_overhead_ms: controller.write_miss_after_write_ms,
        bus_bytes_per_sec,
        cache_segments: segments,
        segment_size_bytes: s.segment_size_sectors * 512,
        write_cache: caching && s.fast_write_level > 0,
        // Unused: DiskSim's controller keeps its own cache.
        destage_candidates: elevator_device::hdd::DEFAULT_DESTAGE_CANDIDATES,
        queue_depth: s.max_queue_len.clamp(1, 256) as u32,
        max_queue_age_ms: 500.0,
        sparing,
        surface_order,
        rotation_phase_turns: Some(0.0),
        controller: Some(Box::new(controller)),
    })
}

/// DiskSim's seek types (`diskmodel/modules/mech_g1.modspec`, `mech_g1_seektime.c`) as the
/// HDD model's [`SeekSpec`]:
///
/// - `extracted`: the `.seek` file, interpolated linearly (`dm_mech_g1_seek_extracted`).
/// - `hpl` and `hplplus10`: Ruemmler and Wilkes's six values (`v1` in cylinders, `v2`–`v6`
///   written as decimals, `v6` −1 for none), the latter with "First ten seek times". Checked
///   as DiskSim's `do_hpl_seek` and `do_1st10_seeks` check them. DiskSim 4.0's `hpl`
///   compares the distance with `hpseek[0]` (`mech_g1_seektime.c:213`), which `do_hpl_seek`
///   never sets (it keeps `v1` in `hpseek_v1`), so its short-seek branch depends on
///   uninitialised memory; here `hpl` uses `v1`, as `hplplus10` does.
/// - `curve`: the three-point curve through the single-cylinder, average and full-strobe
///   seek times (Lee's `a·√(d−1) + b·(d−1) + c`). DiskSim 4.0 would use the three times as
///   the coefficients themselves: the fit (`dm_mech_g1_seek_init`, `mech_g1_load.c:301`)
///   asserts that it is never called.
/// - `linear`: linear between the single-cylinder (1 cylinder), average (a third of the
///   cylinders) and full-strobe (all of them) seek times, as DiskSim's manual describes it;
///   DiskSim 4.0's `dm_mech_g1_seek_3pt_line` takes the number of cylinders to be the seek
///   distance (`mech_g1_seektime.c:156`) and so gives the full-strobe time for every seek of
///   two cylinders or more.
/// - `constant`: "Constant seek time" for every seek (DiskSim 4.0 stores it, unconverted,
///   over the seek type, `mech_g1.modspec`, leaving a few picoseconds).
///
/// A "Full seek curve" with an HPL type is refused: DiskSim then ignores the HPL values and
/// the first ten seeks (it takes the seek type for `extracted`), leaving them unset.
fn seek_spec(d: &DiskSimDrive, mb: &Block) -> Result<SeekSpec, DiskSimError> {
    let m = &d.model;
    let need = |key: &str| -> Result<f64, DiskSimError> {
        match mb.get(key).and_then(|v| v.value.as_f64()) {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(x),
            Some(_) => Err(err_at(mb, key, "must be ≥ 0")),
            None => Err(DiskSimError::MissingKey {
                file: mb.file.to_string(),
                line: mb.line,
                block: mb.label(),
                key: key.to_string(),
            }),
        }
    };
    let kind = m.mech.seek_type.as_deref().ok_or_else(|| DiskSimError::MissingKey {
        file: mb.file.to_string(),
        line: mb.line,
        block: mb.label(),
        key: "Seek type".into(),
    })?;
    Ok(match kind {
        "extracted" => {
            let curve = d.seek_curve.as_ref().ok_or_else(|| {
                err_at(mb, "Full seek curve", "seek type `extracted` needs a seek curve file")
            })?;
            SeekSpec::Table {
                distances_cyl: curve.points.iter().map(|p| p.0).collect(),
                times_ms: curve.points.iter().map(|p| p.1).collect(),
            }
        }
        "hpl" | "hplplus10" => {
            if mb.get("Full seek curve").is_some() {
                return Err(err_at(
                    mb,
                    "Full seek curve",
                    format!("with seek type `{kind}` DiskSim ignores the HPL seek values"),
                ));
            }
            let key = "HPL seek equation values";
            let list = match mb.get(key) {
                Some(v) => v.value.as_list().ok_or_else(|| err_at(mb, key, "expected a list"))?,
                None => {
                    return Err(DiskSimError::MissingKey {
                        file: mb.file.to_string(),
                        line: mb.line,
                        block: mb.label(),
                        key: key.into(),
                    })
                }
            };
            if list.len() < 6 {
                return Err(err_at(mb, key, format!("needs 6 values, got {}", list.len())));
            }
            let bad = |n: &Node<Value>, msg: &str| DiskSimError::BadValue {
                file: n.file.to_string(),
                line: n.line,
                key: key.into(),
                msg: msg.into(),
            };
            let v1 = match list[0].value {
                Value::Int(i) if i >= 0 => i as u64,
                _ => return Err(bad(&list[0], "v1 must be a number of cylinders ≥ 0")),
            };
            let mut v = [0.0; 5];
            for (i, n) in list[1..6].iter().enumerate() {
                match n.value {
                    Value::Float(x) if x >= 0.0 || (i == 4 && x == -1.0) => v[i] = x,
                    Value::Float(_) => {
                        return Err(bad(n, "v2..v5 must be ≥ 0, v6 ≥ 0 or -1"));
                    }
                    _ => return Err(bad(n, "v2..v6 must be written as decimals")),
                }
            }
            let first_ten_ms = if kind == "hplplus10" {
                let key = "First ten seek times";
                let list = match mb.get(key) {
                    Some(v) => {
                        v.value.as_list().ok_or_else(|| err_at(mb, key, "expected a list"))?
                    }
                    None => {
                        return Err(DiskSimError::MissingKey {
                            file: mb.file.to_string(),
                            line: mb.line,
                            block: mb.label(),
                            key: key.into(),
                        })
                    }
                };
                if list.len() < 10 {
                    return Err(err_at(mb, key, format!("needs 10 times, got {}", list.len())));
                }
                list[..10]
                    .iter()
                    .map(|n| match n.value {
                        Value::Float(x) if x >= 0.0 => Ok(x),
                        _ => Err(DiskSimError::BadValue {
                            file: n.file.to_string(),
                            line: n.line,
                            key: key.into(),
                            msg: "seek times must be decimals ≥ 0".into(),
                        }),
                    })
                    .collect::<Result<Vec<_>, _>>()?
            } else {
                Vec::new()
            };
            SeekSpec::Hpl {
                v1_cyl: v1,
                v2_ms: v[0],
                v3_ms: v[1],
                v4_ms: v[2],
                v5_ms: v[3],
                single_cylinder_ms: (v[4] != -1.0).then_some(v[4]),
                first_ten_ms,
            }
        }
        "curve" => SeekSpec::ThreePoint {
            single_cylinder_ms: need("Single cylinder seek time")?,
            average_ms: need("Average seek time")?,
            full_stroke_ms: need("Full strobe seek time")?,
        },
        "linear" => {
            let third = (m.cylinders / 3).max(2);
            SeekSpec::Table {
                distances_cyl: vec![1, third, m.cylinders.max(third + 1)],
                times_ms: vec![
                    need("Single cylinder seek time")?,
                    need("Average seek time")?,
                    need("Full strobe seek time")?,
                ],
            }
        }
        "constant" => SeekSpec::Constant { ms: need("Constant seek time")? },
        other => {
            return Err(err_at(
                mb,
                "Seek type",
                format!(
                    "unknown seek type `{other}` (DiskSim knows constant, linear, curve, hpl, \
                     hplplus10 and extracted)"
                ),
            ))
        }
    })
}

/// Checks the `disksim_disk` parameters DiskSim range-checks (`src/modules/disk.modspec`:
/// a value out of range is an error there too) whose value does not change what this model
/// does:
///
/// - "Enable caching in buffer" 0 to 2: DiskSim only asks whether it is non-zero, so 2 acts
///   as 1 (hp_c2490a).
/// - "Calc sector by sector": DiskSim's manual says the simulator always acts as if it
///   were 1.
/// - "Avg sectors per cylinder": "not used by the disk itself" (DiskSim's manual); it feeds
///   external schedulers.
/// - "Print stats".
/// - "Low (write) water mark" and "Hold bus entire write xfer": DiskSim consults them when a
///   write's data fills its segment before the media has taken it; this model does not
///   throttle a write by its segment's space (see the controller's deviations).
/// - "Immediate buffer read", "Immediate buffer write" and "Read any free blocks": DiskSim
///   4.0 reads them, and a zero-latency access (or, reading free blocks, one from the
///   track's first block) asks `dm_access_block` where the heads may start; its
///   `g1_access_block` takes the layout's `DM_OK` (−3) answer for an error
///   (`diskmodel/mech_g1.c:573`, `if(rv < 0) goto out_nx`) and returns the first wanted
///   sector, and `disk_buffer_seekdone` then starts the access there
///   (`src/disksim_diskctlr.c:4143`), so every access starts at its first wanted block and
///   no block before it is read. DiskSim's figures for atlas10k, ibm18es and dec_rz26 are
///   the same with the three set to 0. The HDD model's controller can do zero-latency
///   access ([`DiskSimController::immediate_read`] and the rest); a DiskSim drive leaves
///   it off.
/// - "Maximum number of write segments": DiskSim makes a write wait when that many
///   segments hold data not yet on the media; here a write-back write goes to the media at
///   once and a write arriving meanwhile waits for the mechanism anyway.
///
/// And the flags this bridge reads as on/off, against DiskSim's ranges.
fn accepted_unused(spec: &Block) -> Result<(), DiskSimError> {
    let ranges: &[(&str, f64, f64)] = &[
        ("Enable caching in buffer", 0.0, 2.0),
        ("Calc sector by sector", 0.0, 1.0),
        ("Print stats", 0.0, 1.0),
        ("Low (write) water mark", 0.0, 1.0),
        ("High (read) water mark", 0.0, 1.0),
        ("Hold bus entire read xfer", 0.0, 1.0),
        ("Hold bus entire write xfer", 0.0, 1.0),
        ("Allow read hits on write data", 0.0, 1.0),
        ("Never disconnect", 0.0, 1.0),
        ("Use separate write segment", 0.0, 1.0),
        ("Set watermark by reqsize", 0.0, 1.0),
        ("Read-ahead on idle hit", 0.0, 1.0),
        ("Read any free blocks", 0.0, 1.0),
        ("Combine seq writes", 0.0, 1.0),
        ("Stop prefetch in sector", 0.0, 1.0),
        ("Immed transfer partial hit", 0.0, 1.0),
        ("Extra write disconnect", 0.0, 1.0),
        ("Immediate buffer read", 0.0, 2.0),
        ("Immediate buffer write", 0.0, 2.0),
        ("Read-ahead over requested", -1.0, 1.0),
    ];
    for &(key, lo, hi) in ranges {
        if let Some(v) = spec.get(key).and_then(|v| v.value.as_f64()) {
            if !(lo..=hi).contains(&v) {
                return Err(err_at(spec, key, format!("expected {lo} to {hi}")));
            }
        }
    }
    if let Some(v) = spec.get("Avg sectors per cylinder").and_then(|v| v.value.as_f64()) {
        if v < 1.0 {
            return Err(err_at(spec, "Avg sectors per cylinder", "must be ≥ 1"));
        }
    }
    if let Some(v) = spec.get("Maximum number of write segments").and_then(|v| v.value.as_f64()) {
        let segs = num(spec, "Number of buffer segments");
        if v < 1.0 || v > segs.max(1.0) {
            return Err(err_at(
                spec,
                "Maximum number of write segments",
                "expected 1 to the number of buffer segments",
            ));
        }
    }
    Ok(())
}

//! Malformed inputs must give errors naming file:line and the key, never panics.

use elevator_disksim::*;
use proptest::prelude::*;
use std::path::Path;

const MODEL: &str = "dm_disk M {
   Number of data surfaces = 2,
   Number of cylinders = 10,
   Block count = 100,
   Layout Model = dm_layout_g1 {
      LBN-to-PBN mapping scheme = 0,
      Sparing scheme used = 9,
      Rangesize for sparing = 1,
      Zones = [
         dm_layout_g1_zone {
            First cylinder number = 0,
            Last cylinder number = 4,
            Blocks per track = 10,
            Offset of first block = 0.0,
            Empty space at zone front = 0,
            Skew for track switch = 2.0,
            Skew for cylinder switch = 3.0,
            Number of spares = 5,
            slips = [ 3, 20 ],
            defects = [ 50, 98 ]
         },
         dm_layout_g1_zone {
            First cylinder number = 5,
            Last cylinder number = 9,
            Blocks per track = 8,
            Offset of first block = 0.0,
            Empty space at zone front = 0,
            Skew for track switch = 1.0,
            Skew for cylinder switch = 2.0,
            Number of spares = 0,
            slips = [],
            defects = []
         }
      ]
   },
   Mechanical Model = dm_mech_g1 {
      Head switch time = 0.1,
      Rotation speed (in rpms) = 6000
   }
}
";

fn model(text: &str) -> Result<DiskModel, DiskSimError> {
    let f = parse_str(text, "m.model")?;
    let b = f.blocks().next().expect("a block");
    DiskModel::from_block(b)
}

#[test]
fn synthetic_model_maps() {
    let m = model(MODEL).unwrap();
    // zone 0: 5*2*10 - 5 spares = 95; zone 1: 5*2*8 = 80
    assert_eq!(m.mapped_blocks(), 175);
    let phys = |p: Pbn| (p.cylinder * 2 + p.surface) * 10 + p.sector;
    assert_eq!(phys(m.lbn_to_pbn(2).unwrap()), 2);
    assert_eq!(phys(m.lbn_to_pbn(3).unwrap()), 4); // skips slip 3
    assert_eq!(phys(m.lbn_to_pbn(18).unwrap()), 19);
    assert_eq!(phys(m.lbn_to_pbn(19).unwrap()), 21); // skips slip 20
                                                     // lbn 48 sits on physical 50, a defect remapped to spare 98
    let p = m.lbn_to_pbn(48).unwrap();
    assert!(p.remapped);
    assert_eq!(phys(p), 98);
    let p = m.lbn_to_pbn(95).unwrap();
    assert_eq!((p.cylinder, p.surface, p.sector, p.zone), (5, 0, 0, 1));
    let p = m.lbn_to_pbn(174).unwrap();
    assert_eq!((p.cylinder, p.surface, p.sector), (9, 1, 7));
    assert!(m.lbn_to_pbn(175).is_none());
    // cylinder 1, surface 1 of zone 0: 2 track switches (one per surface change) + 1 cyl
    let p = m.lbn_to_pbn(30 - 2).unwrap(); // physical 30 = cyl 1 head 1 sector 0
    assert_eq!((p.cylinder, p.surface, p.sector), (1, 1, 0));
    assert!((p.track_start_angle - (2.0 * 2.0 + 3.0) / 10.0).abs() < 1e-12);
}

#[test]
fn missing_key_names_file_line_key() {
    let t = MODEL.replace("            Blocks per track = 8,\n", "");
    let e = model(&t).unwrap_err().to_string();
    assert!(e.contains("m.model:") && e.contains("Blocks per track"), "{e}");
    let t = MODEL.replace("      Rotation speed (in rpms) = 6000\n", "");
    let e = model(&t).unwrap_err().to_string();
    assert!(e.contains("m.model:36") && e.contains("Rotation speed (in rpms)"), "{e}");
}

#[test]
fn bad_value_names_file_line_key() {
    let t = MODEL.replace("Number of cylinders = 10", "Number of cylinders = ten");
    let e = model(&t).unwrap_err().to_string();
    assert!(e.contains("m.model:3") && e.contains("Number of cylinders"), "{e}");
    let t = MODEL.replace("Sparing scheme used = 9", "Sparing scheme used = 42");
    let e = model(&t).unwrap_err().to_string();
    assert!(e.contains("m.model:7") && e.contains("Sparing scheme used"), "{e}");
    let t = MODEL.replace("slips = [ 3, 20 ]", "slips = [ 3, x ]");
    let e = model(&t).unwrap_err().to_string();
    assert!(e.contains("m.model:19") && e.contains("slips"), "{e}");
}

#[test]
fn syntax_errors_name_line() {
    let e = parse_str("a b {\n  key 3,\n}\n", "x.parv").unwrap_err().to_string();
    assert!(e.contains("x.parv:2") && e.contains("key"), "{e}");
    let e = parse_str("a b {\n  key = ,\n}\n", "x.parv").unwrap_err().to_string();
    assert!(e.contains("x.parv:2") && e.contains("key"), "{e}");
    let e = parse_str("a b {\n  key = 1,\n", "x.parv").unwrap_err().to_string();
    assert!(e.contains("x.parv:1") && e.contains("never closed"), "{e}");
    let e = parse_str("source other.model\n", "x.parv").unwrap_err().to_string();
    assert!(e.contains("x.parv:1"), "{e}");
}

#[test]
fn generic_tree_keeps_everything() {
    let f = parse_str(
        "# c\nfoo X { a = 1, b = 2.5, c = word here, l = [ 1, 2 ], n = t { z = 0 } }\n\
         instantiate [ d0 ] as X\ntopology t d [ bus b [ disk d0 [] ] ]\n",
        "y",
    )
    .unwrap();
    let b = f.block_named("X").unwrap();
    assert_eq!(b.get("a").unwrap().value, Value::Int(1));
    assert_eq!(b.get("b").unwrap().value, Value::Float(2.5));
    assert_eq!(b.get("c").unwrap().value, Value::Str("word here".into()));
    assert_eq!(b.get("l").unwrap().value.as_list().unwrap().len(), 2);
    assert_eq!(b.get("n").unwrap().value.as_block().unwrap().type_name, "t");
    assert_eq!(b.get("a").unwrap().line, 2);
    assert_eq!(f.items.len(), 3);
}

#[test]
fn trace_errors() {
    let e = parse_trace("R Hit 1 2 3 4\nX Hit 1 2 3 4\n", "t.trace").unwrap_err().to_string();
    assert!(e.contains("t.trace:2") && e.contains("R|W"), "{e}");
    let e = parse_trace("R Hit 1 2 abc 4\n", "t.trace").unwrap_err().to_string();
    assert!(e.contains("t.trace:1") && e.contains("access_time_us"), "{e}");
    let e = parse_trace("R Hit 1\n", "t.trace").unwrap_err().to_string();
    assert!(e.contains("t.trace:1") && e.contains("size_sectors"), "{e}");
}

#[test]
fn statdefs_and_seek_errors() {
    let e = StatDefs::parse("Foo\nDistribution size: 20\nScale/Equals: 1/0\nStart x\n", "s")
        .unwrap_err()
        .to_string();
    assert!(e.contains("s:4"), "{e}");
    let e = SeekCurve::parse("Seek distances measured: 2\n1, 1.0\n2, zz\n", "k.seek")
        .unwrap_err()
        .to_string();
    assert!(e.contains("k.seek:3"), "{e}");
}

#[test]
fn buckets_like_disksim() {
    let b = Buckets::access_time_default();
    assert_eq!(b.starts[100], 100);
    assert_eq!(b.starts[101], 102);
    assert_eq!(b.len(), 1750);
    // values in [starts[t], starts[t+1]) land in bucket t+1 (label = upper edge)
    assert_eq!(b.index_of(0.0005), 1); // 0 us -> bucket 1
    assert_eq!(b.index_of(0.0015), 2);
    assert_eq!(b.index_of(0.101), 101); // 101 us in [100,102) -> label 102
    assert_eq!(b.index_of(1e9), 1749);
    assert_eq!(b.index_of(-1.0), 0);
    assert_eq!(mean(&[1.0, 2.0, 3.0]), 2.0);
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert!(mean(&[]).is_nan());
    assert!(rms_demerit_ms(&[], &[1.0], &b).is_nan());
}

#[test]
fn missing_dir_is_error() {
    assert!(load_drive(Path::new("/nonexistent/disksim")).is_err());
}

/// A drive is found by its `.parv`: a directory names it only if it holds one, and the
/// drive's own `NAME.trace` is its trace even beside others.
#[test]
fn a_drive_is_located_by_its_parv_file() {
    let dir = std::env::temp_dir().join(format!("elevator-ds-locate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let e = locate_drive(&dir).unwrap_err().to_string();
    assert!(e.contains("no .parv file"), "{e}");
    std::fs::write(dir.join("b.parv"), "").unwrap();
    let (d, parv) = locate_drive(&dir).unwrap();
    assert_eq!((d, parv.clone()), (dir.clone(), dir.join("b.parv")));
    std::fs::write(dir.join("a.parv"), "").unwrap();
    let e = locate_drive(&dir).unwrap_err().to_string();
    assert!(e.contains("2 .parv files (a.parv, b.parv)"), "{e}");
    assert_eq!(locate_drive(&parv).unwrap(), (dir.clone(), parv.clone()));
    std::fs::write(dir.join("b.trace"), "").unwrap();
    let e = locate_drive(&dir.join("b.trace")).unwrap_err().to_string();
    assert!(e.contains("not a .parv file"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

proptest! {
    #[test]
    fn parser_never_panics(s in "[ -~\\n{}\\[\\]=,#]{0,300}") {
        let _ = parse_str(&s, "p");
        let _ = parse_trace(&s, "p");
        let _ = StatDefs::parse(&s, "p");
        let _ = SeekCurve::parse(&s, "p");
        let _ = parse_cdf_tsv(&s, "p");
        if let Ok(f) = parse_str(&s, "p") {
            for b in f.blocks() {
                if let Ok(m) = DiskModel::from_block(b) {
                    for l in 0..m.mapped_blocks().min(50) { let _ = m.lbn_to_pbn(l); }
                }
                let _ = DiskSpec::from_block(b);
            }
        }
    }

    #[test]
    fn model_mutations_never_panic(cut in 0usize..1400, junk in "[ -~]{0,8}") {
        let cut = cut.min(MODEL.len());
        let cut = (0..=cut).rev().find(|&i| MODEL.is_char_boundary(i)).unwrap_or(0);
        let t = format!("{}{}{}", &MODEL[..cut], junk, &MODEL[cut..]);
        if let Ok(m) = model(&t) {
            let n = m.mapped_blocks();
            for l in [0, n / 2, n.saturating_sub(1), n] { let _ = m.lbn_to_pbn(l); }
        }
    }
}

#[test]
fn cylinder_switch_on_surface_mapping() {
    let t = MODEL
        .replace("LBN-to-PBN mapping scheme = 0", "LBN-to-PBN mapping scheme = 1")
        .replace("Sparing scheme used = 9", "Sparing scheme used = 0");
    let m = model(&t).unwrap();
    assert_eq!(m.mapped_blocks(), 100 + 80);
    // cylinder 0 runs surface 0 then 1; cylinder 1 starts on surface 1 (no slips with scheme 0)
    let p = m.lbn_to_pbn(20).unwrap();
    assert_eq!((p.cylinder, p.surface, p.sector), (1, 1, 0));
    let p = m.lbn_to_pbn(30).unwrap();
    assert_eq!((p.cylinder, p.surface, p.sector), (1, 0, 0));
    // second zone restarts the pattern (scheme 1 is relative to the zone's first cylinder)
    let p = m.lbn_to_pbn(100).unwrap();
    assert_eq!((p.cylinder, p.surface), (5, 0));
}

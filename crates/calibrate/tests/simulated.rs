//! Calibrating simulated drives whose parameters are known: the prober and the fit must find
//! the kind of drive and a model that behaves like it, on requests the fit never saw.

use elevator_calibrate::backend::{Backend, Hints, SimBackend};
use elevator_calibrate::fit::Model;
use elevator_calibrate::workload::{self, Dir, Phase};
use elevator_calibrate::{calibrate, Options, Report};
use elevator_core::{RandomStream, NS_PER_SEC};
use elevator_device::hdd::{Hdd, HddParams};
use elevator_device::ssd::{Ssd, SsdParams};
use elevator_device::Device;

fn opts(budget_s: u64) -> Options {
    Options {
        budget_ns: budget_s * NS_PER_SEC,
        write: false,
        seed: 1,
        name: "cal0".into(),
        source: "a simulated drive".into(),
    }
}

fn run(dev: Box<dyn Device>, hints: Hints, o: &Options) -> Report {
    let mut b = SimBackend::new(dev, 512).with_hints(hints);
    calibrate(&mut b, o, &mut |_, _, _, _| {}).unwrap()
}

/// The same requests on the true drive and on the fitted model: (true, fitted) outcomes.
fn compare(truth: Box<dyn Device>, model: &Model, phase: &Phase) -> (f64, f64, f64, f64) {
    let mut t = SimBackend::new(truth, 512);
    let mut f = SimBackend::new(model.build().unwrap(), 512);
    let a = t.run(phase).unwrap();
    let b = f.run(phase).unwrap();
    (a.iops(), b.iops(), a.bytes_per_sec(), b.bytes_per_sec())
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a / b - 1.0).abs() <= tol
}

fn nvme() -> SsdParams {
    SsdParams { blocks_per_plane: 64, ..SsdParams::nvme_pcie3_2018() }
}

#[test]
fn a_simulated_nvme_drive_is_fitted_as_flash_and_behaves_like_itself() {
    let hints = Hints {
        device: Some("nvme0n1".into()),
        hw_queues: Some(2),
        hw_queue_depth: Some(1023),
        max_sectors_kb: Some(512),
        ..Hints::default()
    };
    let r = run(Box::new(Ssd::new(nvme()).unwrap()), hints, &opts(4));
    assert!(matches!(r.fit.model, Model::Ssd(_)), "{}", r.fit.facts.rotational_verdict);
    assert_eq!(r.fit.model.kind_name(), "nvme");
    let cap = r.capacity_bytes;
    let mut rng = RandomStream::new(9, 0);
    for (depth, len, seq) in [(1, 4096, false), (32, 4096, false), (8, 1 << 20, true)] {
        let ios = if seq {
            workload::sequential(Dir::Read, 0, cap, len, 2000)
        } else {
            workload::random(&mut rng, Dir::Read, 0, cap, len, 4000)
        };
        let p = Phase::new("check", depth, ios, u64::MAX);
        let (a, b, _, _) = compare(Box::new(Ssd::new(nvme()).unwrap()), &r.fit.model, &p);
        assert!(close(b, a, 0.15), "QD{depth} {len}: fitted {b:.0} IOPS, true {a:.0}");
    }
    // Every held-out cell within 25 % of the truth's throughput.
    for c in &r.cells {
        assert!(c.iops_error().abs() < 0.25, "{}: {:+.1} %", c.name, c.iops_error() * 100.0);
        assert!(c.demerit_ms.is_finite());
    }
    assert!(r.topology.contains("model = \"nvme\""), "{}", r.topology);
    assert!(r.iocost.line(None).contains("rrandiops="));
}

#[test]
fn a_simulated_disk_is_fitted_as_a_disk_with_its_spindle_speed() {
    let truth = || -> Box<dyn Device> {
        Box::new(Hdd::new(HddParams::sata_7200_2009(), &mut RandomStream::new(3, 0)).unwrap())
    };
    let r = run(truth(), Hints { hw_queue_depth: Some(31), ..Hints::default() }, &opts(240));
    let Model::Hdd(p) = &r.fit.model else {
        panic!("fitted as flash: {}", r.fit.facts.rotational_verdict)
    };
    assert_eq!(p.rpm, 7200.0);
    assert!(p.queue_depth > 1, "NCQ not seen: {:?}", r.fit.facts.iops_by_depth);
    let cap = r.capacity_bytes;
    let mut rng = RandomStream::new(9, 0);
    let rand =
        Phase::new("r", 1, workload::random(&mut rng, Dir::Read, 0, cap, 4096, 400), u64::MAX);
    let (a, b, _, _) = compare(truth(), &r.fit.model, &rand);
    assert!(close(b, a, 0.15), "QD1 random: fitted {b:.1} IOPS, true {a:.1}");
    for start in [0, cap / 2 / 4096 * 4096, (cap - (64 << 20)) / 4096 * 4096] {
        let seq = Phase::new(
            "s",
            2,
            workload::sequential(Dir::Read, start, 64 << 20, 1 << 20, 64),
            u64::MAX,
        );
        let (_, _, a, b) = compare(truth(), &r.fit.model, &seq);
        assert!(close(b, a, 0.10), "sequential at {start}: fitted {b:.0} B/s, true {a:.0}");
    }
}

#[test]
fn the_same_measurements_give_the_same_topology() {
    let a = run(Box::new(Ssd::new(nvme()).unwrap()), Hints::default(), &opts(2));
    let b = run(Box::new(Ssd::new(nvme()).unwrap()), Hints::default(), &opts(2));
    assert_eq!(a.topology, b.topology);
}

/// A recorded calibration replays to the same fit, held-out error and topology with no
/// device; a recording whose phases differ from the plan is refused, naming the phase.
#[test]
fn a_recorded_calibration_replays_to_the_same_report() {
    use elevator_calibrate::recording::{Recorder, Recording, ReplayBackend};
    let o = opts(2);
    let mut dev = SimBackend::new(Box::new(Ssd::new(nvme()).unwrap()), 512);
    let mut recorder = Recorder::new(&mut dev);
    let a = calibrate(&mut recorder, &o, &mut |_, _, _, _| {}).unwrap();
    let rec = Recording::new(&o, &a, Vec::new(), recorder.phases);
    assert_eq!(rec.options(None), o, "the recording asks for the same calibration");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rec.json");
    rec.save(&path).unwrap();
    let loaded = Recording::load(&path).unwrap();
    assert_eq!(loaded, rec);
    let mut replay = ReplayBackend::new(loaded, &path);
    let b = calibrate(&mut replay, &o, &mut |_, _, _, _| {}).unwrap();
    assert_eq!(replay.unused_phases(), 0);
    assert_eq!(a.topology, b.topology);
    assert_eq!(a.fit.residuals.len(), b.fit.residuals.len());
    for (x, y) in a.cells.iter().zip(&b.cells) {
        assert_eq!((x.real.iops(), x.sim.iops()), (y.real.iops(), y.sim.iops()), "{}", x.name);
    }
    // Another elevator's probes: the first phase renamed.
    let mut other = rec.clone();
    other.phases[0].name = "not-a-probe".into();
    let mut replay = ReplayBackend::new(other, &path);
    let err = calibrate(&mut replay, &o, &mut |_, _, _, _| {}).unwrap_err();
    assert!(err.contains("phase 0") && err.contains("not-a-probe"), "{err}");
    // Bad files: one line naming the file and what is wrong.
    std::fs::write(&path, "{\"version\": 1,").unwrap();
    let err = Recording::load(&path).unwrap_err();
    assert!(err.starts_with(&format!("{}:1:", path.display())), "{err}");
    let mut bad = rec.clone();
    bad.phases[1].outcome.lat_ns[0] = u64::MAX;
    bad.save(&path).unwrap();
    let err = Recording::load(&path).unwrap_err();
    assert!(err.contains("phase 1") && err.contains("more than an hour"), "{err}");
    let mut bad = rec.clone();
    bad.capacity_bytes = 4096;
    bad.save(&path).unwrap();
    assert!(Recording::load(&path).unwrap_err().contains("capacity_bytes 4096"));
    let mut bad = rec;
    bad.version = 99;
    bad.save(&path).unwrap();
    assert!(Recording::load(&path).unwrap_err().contains("version 99"));
}

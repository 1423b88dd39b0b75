//! Real fio 3.33 JSON (the CLI's fixtures, checked in from fio itself) reads and renders:
//! `elevator report` takes fio's own output, not only elevator's.

use std::path::Path;

use elevator_report::input::Content;

#[test]
fn real_fio_json_and_json_plus_render() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/fixtures/fio-3.33");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("json"))
        .collect();
    paths.sort();
    assert!(paths.len() >= 6, "{paths:?}");
    let inputs = elevator_report::load_all(&paths).unwrap();
    for input in &inputs {
        let Content::Runs(runs) = &input.content else { panic!("{}: not a run", input.name) };
        assert_eq!(runs.len(), 1);
        assert!(runs[0].devices.is_empty(), "real fio has no `elevator` object");
        let bins = runs[0].jobs.iter().flat_map(|j| &j.dirs).any(|d| !d.clat.bins.is_empty());
        assert_eq!(bins, input.name.ends_with(".json+.json"), "{}", input.name);
    }
    let html = elevator_report::render("fio 3.33", &inputs).unwrap();
    // Every fixture did I/O: a CDF and a share chart each.
    assert_eq!(elevator_report::html::chart_count(&inputs), 2 * inputs.len());
    assert_eq!(html.matches("<svg").count(), 2 * inputs.len());
    assert_eq!(html, elevator_report::render("fio 3.33", &inputs).unwrap());
    // libaio-randrw reads and writes: one curve per direction.
    assert!(html.contains("libaio-randrw #1 read") && html.contains("libaio-randrw #1 write"));
}

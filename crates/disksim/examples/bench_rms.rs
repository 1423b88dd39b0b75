//! Times trace parsing and the rms demerit on the barracuda validation data.
use elevator_disksim::*;
fn main() {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/disksim/barracuda");
    let text = std::fs::read_to_string(dir.join("barracuda.trace")).expect("trace");
    let sim_text = std::fs::read_to_string(dir.join("disksim-simulated-cdf.tsv")).expect("tsv");
    let b = Buckets::access_time_default();
    for _ in 0..5 {
        let t0 = std::time::Instant::now();
        let tr = parse_trace(&text, "t").expect("parse");
        let t1 = t0.elapsed();
        let ms: Vec<f64> = tr.iter().map(|r| r.access_time_ms()).collect();
        let sim = parse_cdf_tsv(&sim_text, "tsv").expect("tsv");
        let t2 = t0.elapsed();
        let r = rms_from_cdf(&ms, &sim, &b);
        println!("parse {t1:?} +tsv {t2:?} total {:?} rms {r:.6}", t0.elapsed());
    }
}

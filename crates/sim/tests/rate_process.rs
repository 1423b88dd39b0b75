//! fio's `rate_process=poisson`: a rated job's I/Os arrive as a Poisson process (gaps drawn
//! from an exponential distribution with the rate's mean) instead of evenly spaced. Seen in
//! the times its bios are queued at the device.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

mod common;

use common::queued_times_ns;

/// The gaps (ns) between the bios a 1000 IOPS job queues in 20 s.
fn gaps(process: &str) -> Vec<f64> {
    let t = Topology::from_str(common::RAM_DISK_16G, "t.toml").unwrap();
    let job = format!(
        "[r]\nfilename=sda\ndirect=1\nrw=randread\nbs=4k\nsize=1g\nioengine=libaio\niodepth=16\n\
         rate_iops=1000\nruntime=20\ntime_based\nrate_process={process}\n"
    );
    let jobs = elevator_fio::parse_str(&job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions { blktrace: true, ..SimOptions::default() }).unwrap();
    let times = queued_times_ns(&r);
    times.windows(2).map(|w| (w[1] - w[0]) as f64).collect()
}

fn mean_and_cv(xs: &[f64]) -> (f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len() as f64;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
    (mean, var.sqrt() / mean)
}

#[test]
fn poisson_gaps_are_exponential_with_the_rate_mean() {
    let g = gaps("poisson");
    assert!((19_000..=21_000).contains(&g.len()), "{} I/Os in 20 s", g.len());
    let (mean, cv) = mean_and_cv(&g);
    assert!((mean - 1e6).abs() < 0.03e6, "mean gap {mean} ns");
    // An exponential distribution: deviation equal to the mean, 1 - 1/e of the gaps below it.
    assert!((0.95..=1.05).contains(&cv), "coefficient of variation {cv}");
    let below = g.iter().filter(|&&x| x < mean).count() as f64 / g.len() as f64;
    assert!((below - (1.0 - (-1.0f64).exp())).abs() < 0.02, "{below} of the gaps below the mean");
}

#[test]
fn linear_gaps_are_even() {
    let g = gaps("linear");
    let (mean, cv) = mean_and_cv(&g);
    assert!((mean - 1e6).abs() < 0.01e6, "mean gap {mean} ns");
    assert!(cv < 0.05, "coefficient of variation {cv}");
}

/// The gaps (ns) between the reads real fio (installed by setup.sh) issued for the same
/// kind of job on its null engine in 2 s, from its `write_iolog` (times in µs).
fn real_fio_gaps(process: &str) -> Vec<f64> {
    let dir = std::env::temp_dir()
        .join(format!("elevator-rate-process-{}-{process}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("r.log");
    let _ = std::fs::remove_file(&log); // fio appends to an existing log
    let job = dir.join("r.fio");
    std::fs::write(
        &job,
        format!(
            "[r]\nioengine=null\nfilename={}\nrw=randread\nbs=4k\nsize=1g\nrate_iops=1000\n\
             runtime=2\ntime_based\nrate_process={process}\nwrite_iolog={}\n",
            dir.join("data").display(),
            log.display()
        ),
    )
    .unwrap();
    let out = std::process::Command::new("fio")
        .args(["--output-format=terse", job.to_str().unwrap()])
        .output()
        .expect("fio runs (setup.sh installs it)");
    assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
    let times: Vec<f64> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[2] == "read").then(|| f[0].parse::<f64>().unwrap() * 1e3)
        })
        .collect();
    let _ = std::fs::remove_dir_all(&dir);
    times.windows(2).map(|w| w[1] - w[0]).collect()
}

/// The share of gaps within a quarter of the 1 ms the rate asks for: most of an even
/// process's, about e^-0.75 - e^-1.25 = 19 % of an exponential one's.
fn near_nominal(gaps: &[f64]) -> f64 {
    gaps.iter().filter(|&&g| (0.75e6..=1.25e6).contains(&g)).count() as f64 / gaps.len() as f64
}

#[test]
fn real_fio_spaces_its_io_the_same_way() {
    // fio sleeps until each I/O is due, so a loaded machine delays some sleeps and bunches the
    // I/Os after them; those outliers swing a coefficient of variation, so the gaps are judged
    // by their share near the nominal 1 ms. A run out of range is tried again, up to three
    // times.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let poisson = real_fio_gaps("poisson");
        let (mean, _) = mean_and_cv(&poisson);
        let (poisson_near, linear_near) =
            (near_nominal(&poisson), near_nominal(&real_fio_gaps("linear")));
        if (0.9e6..=1.15e6).contains(&mean) && poisson_near < 0.35 && linear_near > 0.5 {
            return;
        }
        seen.push((mean, poisson_near, linear_near));
    }
    panic!("real fio's gaps (poisson mean ns, share near 1 ms: poisson, linear): {seen:?}");
}

//! DiskSim's `rms` demerit, reproduced step by step: histogram with the statdefs buckets,
//! print-and-read the CDF the way DiskSim does (`disksim_stat.c: stat_print_large_dist`
//! writes `%6.3f` labels and `%f` cumulative fractions; `src/rms.c: get_line` reads them
//! back until the cumulative reaches 1.0), then `compute_rms` walks probabilities
//! 0.0001, 0.0002, ... <= 1.0 and averages squared horizontal gaps. Also small summary
//! statistics (mean, median, p99).

use crate::error::DiskSimError;
use crate::statdefs::Buckets;
use crate::EXACT_POW10;

/// Probability step of DiskSim's rms (`RMS_INCR`).
const RMS_INCR: f64 = 0.0001;

/// Count `values` (in the statistic's unit, ms for access times) into `buckets`.
pub fn histogram(values: &[f64], buckets: &Buckets) -> Vec<u64> {
    let mut counts = vec![0u64; buckets.len()];
    if counts.is_empty() {
        return counts;
    }
    for &v in values {
        if v.is_nan() {
            continue;
        }
        counts[buckets.index_of(v)] += 1;
    }
    counts
}

/// `x` printed with `decimals` decimals as printf does, then read back like sscanf("%lf").
/// printf rounds the exact value of `x·10^decimals` to an integer `r` and prints `r`'s
/// digits; reading them back gives the double nearest `r / 10^decimals`, which is the one
/// rounded division of those two exact doubles. The product `y` is off the exact value by
/// at most half its ulp, so unless `y` is within a few ulps of a half, rounding `y` rounds
/// the exact value: then no string is made. Near a half (and for huge or odd values) the
/// text does it.
fn round_to(x: f64, decimals: usize) -> f64 {
    if let Some(&scale) = EXACT_POW10.get(decimals) {
        let y = x * scale;
        let half_off = (y - y.floor() - 0.5).abs();
        if y.abs() < 4.5e15 && half_off > 4.0 * f64::EPSILON * y.abs().max(1.0) {
            return y.round() / scale;
        }
    }
    format!("{x:.decimals$}").parse().unwrap_or(x)
}

/// The (label, cumulative) points `rms` would read from DiskSim's printed distribution:
/// labels rounded to 3 decimals, cumulative fractions to 6, ending at the first point
/// whose printed cumulative is >= 1.0. Empty when `counts` sums to zero.
pub fn cdf_points(counts: &[u64], buckets: &Buckets) -> Vec<(f64, f64)> {
    let total: u64 = counts.iter().sum();
    let mut out = Vec::new();
    if total == 0 {
        return out;
    }
    let scaled = buckets.scale != 1;
    let mut dist = 0.0f64;
    for (i, &c) in counts.iter().enumerate().take(buckets.len()) {
        let density = c as f64 / total as f64;
        dist += density;
        let x = if scaled { round_to(buckets.label(i), 3) } else { buckets.starts[i] as f64 };
        let y = round_to(dist, 6);
        out.push((x, y));
        if y >= 1.0 {
            break;
        }
    }
    out
}

/// `compute_rms` over two point lists (x ascending, y cumulative ending >= 1.0).
/// Returns NaN when either list is empty or never reaches 1.0.
pub fn rms_between_cdfs(a: &[(f64, f64)], b: &[(f64, f64)]) -> f64 {
    let ok = |p: &[(f64, f64)]| p.last().is_some_and(|l| l.1 >= 1.0);
    if !ok(a) || !ok(b) {
        return f64::NAN;
    }
    let at = |p: &[(f64, f64)], i: &mut usize, pnt: f64| -> f64 {
        while *i < p.len() - 1 && p[*i].1 < pnt {
            *i += 1;
        }
        let (x1, y1) = p[*i];
        if *i == 0 {
            return x1;
        }
        let (x0, y0) = p[*i - 1];
        if y1 == y0 {
            return x1;
        }
        let frac = (pnt - y0) / (y1 - y0);
        x0 + frac * (x1 - x0)
    };
    let (mut i1, mut i2) = (0usize, 0usize);
    let mut pnt = RMS_INCR;
    let mut squares = 0.0f64;
    let mut count = 0u64;
    while pnt <= 1.0 {
        let d = at(a, &mut i1, pnt) - at(b, &mut i2, pnt);
        squares += d * d;
        count += 1;
        pnt += RMS_INCR;
    }
    (squares / count as f64).sqrt()
}

/// DiskSim's rms demerit (ms) between two samples of access times given in ms.
pub fn rms_demerit_ms(measured_ms: &[f64], simulated_ms: &[f64], buckets: &Buckets) -> f64 {
    let a = cdf_points(&histogram(measured_ms, buckets), buckets);
    let b = cdf_points(&histogram(simulated_ms, buckets), buckets);
    rms_between_cdfs(&a, &b)
}

/// One row of a printed DiskSim distribution (`disksim-simulated-cdf.tsv`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CdfRow {
    pub edge_ms: f64,
    pub count: u64,
    pub density: f64,
    pub cumulative: f64,
}

/// Parse a printed distribution: `edge count density cumulative` per line; lines starting
/// with `#` and blank lines are skipped.
pub fn parse_cdf_tsv(text: &str, file: &str) -> Result<Vec<CdfRow>, DiskSimError> {
    let mut out = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        let err = |msg: &str| DiskSimError::Syntax {
            file: file.to_string(),
            line: ln + 1,
            msg: msg.to_string(),
        };
        if f.len() != 4 {
            return Err(err("expected 4 columns: edge count density cumulative"));
        }
        let p = |s: &str, what: &str| s.parse::<f64>().map_err(|_| err(what));
        out.push(CdfRow {
            edge_ms: p(f[0], "bad bucket edge")?,
            count: f[1].parse().map_err(|_| err("bad count"))?,
            density: p(f[2], "bad density")?,
            cumulative: p(f[3], "bad cumulative")?,
        });
    }
    Ok(out)
}

/// rms demerit (ms) between measured access times (ms) and a distribution printed by
/// DiskSim (its own columns are used exactly as `rms` reads them).
pub fn rms_from_cdf(measured_ms: &[f64], simulated: &[CdfRow], buckets: &Buckets) -> f64 {
    let a = cdf_points(&histogram(measured_ms, buckets), buckets);
    let mut b = Vec::with_capacity(simulated.len());
    for r in simulated {
        b.push((r.edge_ms, r.cumulative));
        if r.cumulative >= 1.0 {
            break;
        }
    }
    rms_between_cdfs(&a, &b)
}

/// Arithmetic mean (NaN for an empty sample).
pub fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Percentile `q` in \[0, 1\] by linear interpolation between order statistics
/// (R type 7). NaN for an empty sample; NaNs in the sample are ignored.
pub fn percentile(v: &[f64], q: f64) -> f64 {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return f64::NAN;
    }
    let (h, lo) = rank(s.len(), q.clamp(0.0, 1.0));
    let (at_lo, at_hi) = kth_and_next(&mut s, lo);
    at_lo + (h - lo as f64) * (at_hi - at_lo)
}

/// Percentile `q`'s fractional rank among `n` values (R type 7), and its whole part.
fn rank(n: usize, q: f64) -> (f64, usize) {
    let h = (n - 1) as f64 * q;
    (h, h.floor() as usize)
}

/// The `k`-th smallest of `s` by selection (linear, not a sort), and the next one: the
/// smallest of what lies above it. `s` is left partitioned at `k`.
fn kth_and_next(s: &mut [f64], k: usize) -> (f64, f64) {
    let (_, &mut at_k, above) = s.select_nth_unstable_by(k, f64::total_cmp);
    (at_k, above.iter().copied().min_by(f64::total_cmp).unwrap_or(at_k))
}

/// Median (50th percentile).
pub fn median(v: &[f64]) -> f64 {
    percentile(v, 0.5)
}

/// 99th percentile.
pub fn p99(v: &[f64]) -> f64 {
    percentile(v, 0.99)
}

/// [`median`] and [`p99`] of `v` from one copy of it: once the median's order statistic is
/// in place, the 99th percentile's lie above it, and only that part is searched again
/// (`validate-disk` asks both of two 10,000-request samples, and the selections were a twentieth
/// of its instructions).
pub fn median_p99(v: &[f64]) -> (f64, f64) {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| !x.is_nan()).collect();
    if s.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let ((hm, lm), (hp, lp)) = (rank(s.len(), 0.5), rank(s.len(), 0.99));
    let (m_lo, m_hi) = kth_and_next(&mut s, lm);
    // The 99th percentile's order statistics: the `lp`-th smallest is the median's own or
    // the `(lp - lm - 1)`-th smallest of what lies above it.
    let (p_lo, p_hi) =
        if lp == lm { (m_lo, m_hi) } else { kth_and_next(&mut s[lm + 1..], lp - lm - 1) };
    (m_lo + (hm - lm as f64) * (m_hi - m_lo), p_lo + (hp - lp as f64) * (p_hi - p_lo))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// `median_p99` is `median` and `p99`, to the bit, NaNs and ties included.
        #[test]
        fn median_p99_is_median_and_p99(
            v in proptest::collection::vec(prop_oneof![9 => 0.0f64..50.0, 1 => Just(f64::NAN), 2 => Just(3.0)], 0..300),
        ) {
            let (m, p) = median_p99(&v);
            prop_assert_eq!(m.to_bits(), median(&v).to_bits());
            prop_assert_eq!(p.to_bits(), p99(&v).to_bits());
        }
    }

    fn printed(x: f64, decimals: usize) -> f64 {
        format!("{x:.decimals$}").parse().unwrap_or(x)
    }

    proptest! {
        /// Rounding without the text rounds as printing and reading back does, for the
        /// values the demerit rounds (labels, fractions) and for halves and their
        /// neighbours.
        #[test]
        fn round_to_is_print_and_read(
            x in prop_oneof![0.0f64..1.0, 0.0f64..1e4, any::<f64>()],
            k in 0i64..2_000_000,
            decimals in 0usize..8,
        ) {
            let half = (k as f64 + 0.5) / 10f64.powi(decimals as i32);
            for v in [x, half, f64::from_bits(half.to_bits() + 1), f64::from_bits(half.to_bits() - 1)] {
                prop_assert_eq!(round_to(v, decimals).to_bits(), printed(v, decimals).to_bits(), "{} to {}", v, decimals);
            }
        }
    }
}

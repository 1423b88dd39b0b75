//! Seek time as a function of distance in cylinders, in the forms DiskSim accepts: a
//! measured distance → time table (linearly interpolated, as DiskSim's `.seek` files and its
//! `extracted` seek type), the three-point form (single-cylinder, average, full-stroke) fitted
//! to `a·√(d−1) + b·(d−1) + c` (DiskSim `curve`), that formula's constants directly, Ruemmler
//! and Wilkes's equation (DiskSim `hpl`: `v2 + v3·√d` below `v1` cylinders, `v4 + v5·d` from
//! there) optionally with the first ten distances measured (`hplplus10`), and a constant.
//! Distance 0 costs nothing (write settle and head switches are the caller's).

use serde::{Deserialize, Serialize};

/// How seek times are given.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum SeekSpec {
    /// Measured points: ascending distances (cylinders, ≥ 1) and their times (ms).
    Table { distances_cyl: Vec<u64>, times_ms: Vec<f64> },
    /// Datasheet figures; average is taken at one third of the stroke.
    ThreePoint { single_cylinder_ms: f64, average_ms: f64, full_stroke_ms: f64 },
    /// `a·√(d−1) + b·(d−1) + c` milliseconds.
    Formula { a_ms: f64, b_ms: f64, c_ms: f64 },
    /// Ruemmler and Wilkes (IEEE Computer, March 1994): `v2 + v3·√d` ms for distances below
    /// `v1_cyl`, `v4 + v5·d` from there; one cylinder takes `single_cylinder_ms` if given
    /// (DiskSim's `v6`, −1 for none), and distances 1 to 10 take `first_ten_ms` if given
    /// (DiskSim `hplplus10`, after Worthington et al. 1994).
    Hpl {
        v1_cyl: u64,
        v2_ms: f64,
        v3_ms: f64,
        v4_ms: f64,
        v5_ms: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        single_cylinder_ms: Option<f64>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        first_ten_ms: Vec<f64>,
    },
    /// The same time for every seek.
    Constant { ms: f64 },
}

/// A seek curve ready to evaluate.
#[derive(Clone, Debug)]
pub enum SeekCurve {
    Table { d: Vec<f64>, t_ns: Vec<f64> },
    Formula { a_ns: f64, b_ns: f64, c_ns: f64 },
    Hpl { v1: u64, v_ns: [f64; 4], single_ns: Option<f64>, first_ten_ns: Vec<f64> },
    Constant { ns: f64 },
}

impl SeekCurve {
    pub fn new(spec: &SeekSpec, cylinders: u64) -> Result<SeekCurve, String> {
        match spec {
            SeekSpec::Table { distances_cyl, times_ms } => {
                if distances_cyl.is_empty()
                    || distances_cyl.len() != times_ms.len()
                    || distances_cyl.windows(2).any(|w| w[0] >= w[1])
                    || distances_cyl[0] == 0
                    || times_ms.iter().any(|t| t.is_nan() || *t < 0.0)
                {
                    return Err("seek table needs ascending distances ≥ 1 and times ≥ 0".into());
                }
                Ok(SeekCurve::Table {
                    d: distances_cyl.iter().map(|&d| d as f64).collect(),
                    t_ns: times_ms.iter().map(|t| t * 1e6).collect(),
                })
            }
            SeekSpec::Hpl {
                v1_cyl,
                v2_ms,
                v3_ms,
                v4_ms,
                v5_ms,
                single_cylinder_ms,
                first_ten_ms,
            } => {
                let v = [*v2_ms, *v3_ms, *v4_ms, *v5_ms];
                let ok = |t: &f64| t.is_finite() && *t >= 0.0;
                if !v.iter().all(ok)
                    || !single_cylinder_ms.iter().all(ok)
                    || !first_ten_ms.iter().all(ok)
                    || !(first_ten_ms.is_empty() || first_ten_ms.len() == 10)
                {
                    return Err("hpl seek needs times ≥ 0 and none or ten first seeks".into());
                }
                Ok(SeekCurve::Hpl {
                    v1: *v1_cyl,
                    v_ns: v.map(|t| t * 1e6),
                    single_ns: single_cylinder_ms.map(|t| t * 1e6),
                    first_ten_ns: first_ten_ms.iter().map(|t| t * 1e6).collect(),
                })
            }
            SeekSpec::Constant { ms } => {
                if !(ms.is_finite() && *ms >= 0.0) {
                    return Err("constant seek time must be ≥ 0".into());
                }
                Ok(SeekCurve::Constant { ns: ms * 1e6 })
            }
            SeekSpec::Formula { a_ms, b_ms, c_ms } => {
                Ok(SeekCurve::Formula { a_ns: a_ms * 1e6, b_ns: b_ms * 1e6, c_ns: c_ms * 1e6 })
            }
            SeekSpec::ThreePoint {
                single_cylinder_ms: c,
                average_ms: avg,
                full_stroke_ms: full,
            } => {
                if !(0.0 <= *c && c <= avg && avg <= full) {
                    return Err("three-point seek needs single ≤ average ≤ full".into());
                }
                let d1 = (cylinders as f64 / 3.0 - 1.0).max(1.0);
                let d2 = (cylinders as f64 - 1.0).max(2.0);
                let (y1, y2) = (avg - c, full - c);
                let det = d1.sqrt() * d2 - d2.sqrt() * d1;
                let (a, b) = if det.abs() < 1e-12 {
                    (y2 / d2.sqrt(), 0.0)
                } else {
                    ((y1 * d2 - y2 * d1) / det, (d1.sqrt() * y2 - d2.sqrt() * y1) / det)
                };
                Ok(SeekCurve::Formula {
                    a_ns: a.max(0.0) * 1e6,
                    b_ns: b.max(0.0) * 1e6,
                    c_ns: c * 1e6,
                })
            }
        }
    }

    /// Seek time in ns for `distance` cylinders.
    #[inline(always)]
    pub fn seek_ns(&self, distance: u64) -> f64 {
        if distance == 0 {
            return 0.0;
        }
        match self {
            SeekCurve::Formula { a_ns, b_ns, c_ns } => {
                let x = (distance - 1) as f64;
                a_ns * x.sqrt() + b_ns * x + c_ns
            }
            SeekCurve::Hpl { v1, v_ns, single_ns, first_ten_ns } => {
                if distance <= 10 && !first_ten_ns.is_empty() {
                    first_ten_ns[distance as usize - 1]
                } else if distance == 1 && single_ns.is_some() {
                    single_ns.unwrap_or_default()
                } else if distance < *v1 {
                    v_ns[0] + v_ns[1] * (distance as f64).sqrt()
                } else {
                    v_ns[2] + v_ns[3] * distance as f64
                }
            }
            SeekCurve::Constant { ns } => *ns,
            SeekCurve::Table { d, t_ns } => {
                let x = distance as f64;
                let i = d.partition_point(|&di| di <= x);
                if i == 0 {
                    t_ns[0]
                } else if i == d.len() {
                    // Beyond the last point: extrapolate the last segment's slope.
                    let n = d.len();
                    if n < 2 {
                        t_ns[0]
                    } else {
                        let s = (t_ns[n - 1] - t_ns[n - 2]) / (d[n - 1] - d[n - 2]);
                        t_ns[n - 1] + s.max(0.0) * (x - d[n - 1])
                    }
                } else {
                    let f = (x - d[i - 1]) / (d[i] - d[i - 1]);
                    t_ns[i - 1] + f * (t_ns[i] - t_ns[i - 1])
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_point_meets_its_points_and_table_interpolates() {
        let c = SeekCurve::new(
            &SeekSpec::ThreePoint {
                single_cylinder_ms: 0.8,
                average_ms: 8.5,
                full_stroke_ms: 17.0,
            },
            300_000,
        )
        .unwrap();
        assert!((c.seek_ns(1) - 0.8e6).abs() < 1.0);
        assert!((c.seek_ns(100_000) - 8.5e6).abs() < 1e4);
        assert!((c.seek_ns(300_000) - 17.0e6).abs() < 1e4);
        let t = SeekCurve::new(
            &SeekSpec::Table { distances_cyl: vec![1, 11], times_ms: vec![1.0, 2.0] },
            100,
        )
        .unwrap();
        assert!((t.seek_ns(6) - 1.5e6).abs() < 1e-6);
        assert_eq!(t.seek_ns(0), 0.0);
    }

    #[test]
    fn hpl_with_and_without_the_first_ten() {
        // hp_c2247a's values: 300 cylinders, 3.81 + 0.33·√d, 7.75 + 0.0059·d.
        let spec = |first_ten_ms: Vec<f64>, single| SeekSpec::Hpl {
            v1_cyl: 300,
            v2_ms: 3.81,
            v3_ms: 0.33,
            v4_ms: 7.75,
            v5_ms: 0.0059,
            single_cylinder_ms: single,
            first_ten_ms,
        };
        let ten: Vec<f64> = (1..=10).map(|d| 2.0 + 0.1 * d as f64).collect();
        let c = SeekCurve::new(&spec(ten, None), 2051).unwrap();
        assert_eq!(c.seek_ns(0), 0.0);
        assert!((c.seek_ns(1) - 2.1e6).abs() < 1.0);
        assert!((c.seek_ns(10) - 3.0e6).abs() < 1.0);
        assert!((c.seek_ns(100) - (3.81 + 0.33 * 10.0) * 1e6).abs() < 1.0);
        assert!((c.seek_ns(299) - (3.81 + 0.33 * 299f64.sqrt()) * 1e6).abs() < 1.0);
        assert!((c.seek_ns(300) - (7.75 + 0.0059 * 300.0) * 1e6).abs() < 1.0);
        let c = SeekCurve::new(&spec(Vec::new(), Some(0.5)), 2051).unwrap();
        assert!((c.seek_ns(1) - 0.5e6).abs() < 1.0);
        assert!((c.seek_ns(4) - (3.81 + 0.66) * 1e6).abs() < 1.0);
        assert!(SeekCurve::new(&spec(vec![1.0; 9], None), 2051).is_err());
        let k = SeekCurve::new(&SeekSpec::Constant { ms: 2.0 }, 10).unwrap();
        assert_eq!((k.seek_ns(0), k.seek_ns(7)), (0.0, 2e6));
    }
}

//! `random_distribution=`: how a random job draws its offsets (fio's `FIO_RAND_DIST_*`).
//!
//! The value is `random` (uniform, the default), `zipf[:theta[:center]]`,
//! `pareto[:h[:center]]`, `normal[:deviation[:center]]`, `zoned:A/S:A/S...` or
//! `zoned_abs:A/SIZE:A/SIZE...`, the zoned forms per direction (`read,write,trim`), as fio's
//! `str_random_distribution_cb` and `parse_zoned_distribution` read them. Any distribution
//! but `random` turns the random map off (fio's `fixup_options`). The simulator draws the
//! offsets; this module only checks and keeps the parameters.

use crate::units::{parse_size, split_ddir};

/// fio's default Zipf theta (`FIO_DEF_ZIPF`).
pub const DEFAULT_ZIPF_THETA: f64 = 1.1;
/// fio's default Pareto power (`FIO_DEF_PARETO`).
pub const DEFAULT_PARETO_H: f64 = 0.2;
/// The largest Zipf theta taken. fio takes any theta but 1; past a few, every draw is the
/// hottest block (theta 100 already puts all but 1e-30 of the draws there), and a negative
/// theta is no Zipf distribution at all.
pub const MAX_ZIPF_THETA: f64 = 100.0;
/// Most zones one direction of a zoned distribution has (fio's `ZONESPLIT_MAX`; fio keeps
/// the first 256 and drops the rest, elevator refuses).
pub const MAX_DISTRIBUTION_ZONES: usize = 256;

/// A random job's offset distribution.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomDistribution {
    /// Uniform over the region (with fio's random map unless `norandommap`).
    Random,
    /// Zipf with exponent `theta` (not 1), hottest blocks scattered by fio's hash.
    Zipf { theta: f64, center: Option<f64> },
    /// Pareto with power `h` (0 < h < 1): `h` = 0.2 sends 80 % of the I/O to 20 % of the
    /// blocks.
    Pareto { h: f64, center: Option<f64> },
    /// Normal (fio's `gauss`), with an extra uniform deviation of `deviation_percent` of the
    /// region (0 to under 100).
    Normal { deviation_percent: f64, center: Option<f64> },
    /// Per direction, zones in percent of the region: `size` is a percentage.
    Zoned { zones: [Vec<DistributionZone>; 3] },
    /// Per direction, zones in bytes from the region's start: `size` is in bytes.
    ZonedAbs { zones: [Vec<DistributionZone>; 3] },
}

/// One zone of a zoned distribution: the share of the direction's random I/O that lands in
/// it (uniformly), and its size (percent of the region, or bytes for `zoned_abs`). Zones lie
/// one after the other from the region's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributionZone {
    pub access_percent: u32,
    pub size: u64,
}

impl RandomDistribution {
    /// Whether fio turns its random map off for this distribution (every one but `random`).
    pub fn is_uniform(&self) -> bool {
        matches!(self, RandomDistribution::Random)
    }
}

/// Parses a `random_distribution=` value; `kb_base` reads `zoned_abs` sizes.
pub fn parse_random_distribution(v: &str, kb_base: u64) -> Result<RandomDistribution, String> {
    let v = v.trim();
    let (name, rest) = match v.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (v, None),
    };
    let default = match name {
        "random" => {
            return match rest {
                None => Ok(RandomDistribution::Random),
                Some(_) => Err("`random` takes no parameters".into()),
            }
        }
        "zipf" => DEFAULT_ZIPF_THETA,
        "pareto" => DEFAULT_PARETO_H,
        "normal" => 0.0,
        "zoned" | "zoned_abs" => {
            let rest = rest.ok_or_else(|| {
                format!("`{name}` needs its zones, e.g. {name}:60/10:40/90 (access %/size)")
            })?;
            let absolute = name == "zoned_abs";
            let mut zones: [Vec<DistributionZone>; 3] = Default::default();
            for (slot, part) in zones.iter_mut().zip(split_ddir(rest)?) {
                if let Some(p) = part {
                    *slot = parse_zones(p, absolute, kb_base)?;
                }
            }
            return Ok(if absolute {
                RandomDistribution::ZonedAbs { zones }
            } else {
                RandomDistribution::Zoned { zones }
            });
        }
        other => {
            return Err(format!(
                "`{other}` is not a distribution (expected random, zipf, pareto, normal, zoned or zoned_abs)"
            ))
        }
    };
    let (value, center) = match rest {
        None => (default, None),
        Some(r) => {
            let (a, b) = match r.split_once(':') {
                Some((a, b)) => (a, Some(b)),
                None => (r, None),
            };
            let value = number(a)?;
            let center = b.map(number).transpose()?;
            (value, center)
        }
    };
    if let Some(c) = center {
        if !(0.0..=1.0).contains(&c) {
            return Err(format!("center {c} is out of range (0 to 1)"));
        }
    }
    match name {
        "zipf" => {
            if value == 1.0 {
                return Err("the Zipf theta must be different from 1.0".into());
            }
            if !(0.0..=MAX_ZIPF_THETA).contains(&value) {
                return Err(format!(
                    "Zipf theta {value} is out of range (0 to {MAX_ZIPF_THETA}, MAX_ZIPF_THETA)"
                ));
            }
            Ok(RandomDistribution::Zipf { theta: value, center })
        }
        "pareto" => {
            if !(value > 0.0 && value < 1.0) {
                return Err(format!("Pareto power {value} is out of range (0 < h < 1)"));
            }
            Ok(RandomDistribution::Pareto { h: value, center })
        }
        _ => {
            if !(0.0..100.0).contains(&value) {
                return Err(format!(
                    "normal deviation {value} is out of range (0 to under 100, in percent)"
                ));
            }
            Ok(RandomDistribution::Normal { deviation_percent: value, center })
        }
    }
}

fn number(s: &str) -> Result<f64, String> {
    let s = s.trim();
    s.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| format!("`{s}` is not a number"))
}

/// One direction's zones: `A/S` entries joined by `:` (fio's `split_parse_ddir` and
/// `zone_split_ddir`). The access percentages must add up to 100. For `zoned`, a size
/// above 100 counts as 100, and zones without one (no `/`, nothing after it, or 0) share what the others
/// leave, each `(100 - given) / missing` (fio's integer division); the sizes may not add up
/// to more than 100. For `zoned_abs` a zone without a size has none.
fn parse_zones(v: &str, absolute: bool, kb_base: u64) -> Result<Vec<DistributionZone>, String> {
    let mut zones = Vec::new();
    let mut missing = Vec::new();
    for entry in v.split(':').map(str::trim) {
        if entry.is_empty() {
            // fio stops at the first empty entry.
            break;
        }
        if zones.len() == MAX_DISTRIBUTION_ZONES {
            return Err(format!(
                "more than {MAX_DISTRIBUTION_ZONES} zones (MAX_DISTRIBUTION_ZONES, fio's ZONESPLIT_MAX)"
            ));
        }
        let (access, size) = match entry.split_once('/') {
            Some((a, s)) => (a.trim(), Some(s.trim())),
            None => (entry, None),
        };
        let access_percent = access
            .parse::<u32>()
            .ok()
            .filter(|p| *p <= 100)
            .ok_or_else(|| format!("`{entry}`: the access share is a percentage, 0 to 100"))?;
        let size = match (size, absolute) {
            (None, true) => 0,
            (Some(s), true) => parse_size(s, kb_base)?,
            (None, false) => {
                missing.push(zones.len());
                0
            }
            // fio's `atoi` reads an empty size as 0: the zone has none.
            (Some(""), false) => {
                missing.push(zones.len());
                0
            }
            (Some(s), false) => {
                let p = s
                    .parse::<u64>()
                    .map_err(|_| format!("`{entry}`: the size is a percentage of the region"))?;
                if p == 0 {
                    missing.push(zones.len());
                }
                p.min(100)
            }
        };
        zones.push(DistributionZone { access_percent, size });
    }
    let access: u32 = zones.iter().map(|z| z.access_percent).sum();
    if access != 100 {
        return Err(format!(
            "the zones' access percentages add up to {access}; they must add up to 100"
        ));
    }
    if !absolute {
        let given: u64 = zones.iter().map(|z| z.size).sum();
        if given > 100 {
            return Err(format!("the zones' sizes add up to {given} %, more than 100"));
        }
        if !missing.is_empty() {
            let share = (100 - given) / missing.len() as u64;
            for i in missing {
                zones[i].size = share;
            }
        }
    }
    Ok(zones)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &str) -> Result<RandomDistribution, String> {
        parse_random_distribution(v, 1024)
    }

    fn zone(access_percent: u32, size: u64) -> DistributionZone {
        DistributionZone { access_percent, size }
    }

    #[test]
    fn names_defaults_and_centers() {
        assert_eq!(parse("random"), Ok(RandomDistribution::Random));
        assert_eq!(parse("zipf"), Ok(RandomDistribution::Zipf { theta: 1.1, center: None }));
        assert_eq!(
            parse("zipf:1.2:0.25"),
            Ok(RandomDistribution::Zipf { theta: 1.2, center: Some(0.25) })
        );
        assert_eq!(parse("pareto:0.3"), Ok(RandomDistribution::Pareto { h: 0.3, center: None }));
        assert_eq!(
            parse("normal:5:0.5"),
            Ok(RandomDistribution::Normal { deviation_percent: 5.0, center: Some(0.5) })
        );
        assert_eq!(
            parse("normal"),
            Ok(RandomDistribution::Normal { deviation_percent: 0.0, center: None })
        );
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        for bad in [
            "zipf:1",
            "zipf:-0.5",
            "zipf:1000",
            "pareto:0",
            "pareto:1",
            "normal:100",
            "zipf:1.2:1.5",
            "zipf:x",
            "gauss",
            "random:1",
            "zoned",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn zoned_per_direction_with_missing_sizes() {
        let d = parse("zoned:60/10:30/20:8/30:2/40").unwrap();
        let want = vec![zone(60, 10), zone(30, 20), zone(8, 30), zone(2, 40)];
        assert_eq!(d, RandomDistribution::Zoned { zones: [want.clone(), want.clone(), want] });
        // Read zones, then write (and trim) zones; sizes left out share the rest.
        let RandomDistribution::Zoned { zones } = parse("zoned:50/10:50,100/100").unwrap() else {
            panic!()
        };
        assert_eq!(zones[0], vec![zone(50, 10), zone(50, 90)]);
        assert_eq!(zones[1], vec![zone(100, 100)]);
        assert_eq!(zones[2], vec![zone(100, 100)]);
        // fio's integer shares: three zones without a size get 33 % each.
        let RandomDistribution::Zoned { zones } = parse("zoned:40:30:30").unwrap() else {
            panic!()
        };
        assert_eq!(zones[0].iter().map(|z| z.size).collect::<Vec<_>>(), [33, 33, 33]);
        // Nothing after the `/` is no size (fio's examples/rand-zones.fio).
        let RandomDistribution::Zoned { zones } = parse("zoned:50/5:30/15:20/").unwrap() else {
            panic!()
        };
        assert_eq!(zones[0], vec![zone(50, 5), zone(30, 15), zone(20, 80)]);
        assert!(parse("zoned:60/10:30/20").unwrap_err().contains("add up to 90"));
        assert!(parse("zoned:50/60:50/60").unwrap_err().contains("more than 100"));
        let many = vec!["0/0"; MAX_DISTRIBUTION_ZONES].join(":") + ":100/1";
        assert!(parse(&format!("zoned:{many}")).unwrap_err().contains("MAX_DISTRIBUTION_ZONES"));
    }

    #[test]
    fn zoned_abs_takes_sizes() {
        let RandomDistribution::ZonedAbs { zones } =
            parse("zoned_abs:60/20g:30/100g:10/500g").unwrap()
        else {
            panic!()
        };
        assert_eq!(zones[0], vec![zone(60, 20 << 30), zone(30, 100 << 30), zone(10, 500 << 30)]);
        assert!(parse("zoned_abs:60/1x:40/1g").is_err());
    }
}

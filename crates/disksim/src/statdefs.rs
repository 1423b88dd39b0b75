//! Reads DiskSim's `statdefs` (histogram bucket definitions) and reproduces how DiskSim
//! files a value into a bucket (`disksim_stat.c`: `stat_initialize`, `stat_get_large_dist`,
//! `stat_update`), because the rms demerit is computed on those exact buckets.

use crate::error::DiskSimError;
use std::path::Path;

/// DiskSim keeps up to this many buckets inline ("small" distributions); larger ones
/// use a `Start s step t grow g` line.
const DISTSIZE: usize = 10;

/// One statistic's definition.
#[derive(Debug, Clone, PartialEq)]
pub struct StatDef {
    pub name: String,
    pub line: usize,
    pub size: usize,
    pub scale: i64,
    pub equals: i64,
    pub kind: StatKind,
}

/// Bucket layout of a statistic.
#[derive(Debug, Clone, PartialEq)]
pub enum StatKind {
    /// `Start s step t grow g` (size > 10).
    Large { start: i64, step: i64, grow: i64 },
    /// Explicit break points (size <= 10).
    Small(Vec<i64>),
}

/// All definitions of a statdefs file.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StatDefs {
    pub defs: Vec<StatDef>,
}

impl StatDefs {
    pub fn get(&self, name: &str) -> Option<&StatDef> {
        self.defs.iter().find(|d| d.name == name)
    }

    /// Buckets for a large distribution by name (e.g. "Physical access time").
    pub fn buckets(&self, name: &str) -> Option<Buckets> {
        self.get(name).and_then(Buckets::from_def)
    }

    pub fn load(path: &Path) -> Result<Self, DiskSimError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| DiskSimError::Io { path: path.to_path_buf(), source: e })?;
        Self::parse(&text, &path.display().to_string())
    }

    pub fn parse(text: &str, file: &str) -> Result<Self, DiskSimError> {
        let lines: Vec<&str> = text.lines().collect();
        let err =
            |line: usize, msg: String| DiskSimError::Syntax { file: file.to_string(), line, msg };
        let mut defs = Vec::new();
        let mut i = 0;
        while i < lines.len() {
            let name = lines[i].trim();
            if name.is_empty() {
                i += 1;
                continue;
            }
            let name_line = i + 1;
            // DiskSim looks definitions up by name (`stat_initialize`), so stray lines
            // between definitions (e.g. leftover break lists) are ignored.
            let Some(size_line) =
                lines.get(i + 1).filter(|l| l.trim_start().starts_with("Distribution size:"))
            else {
                i += 1;
                continue;
            };
            let size: usize = size_line
                .trim()
                .strip_prefix("Distribution size:")
                .and_then(|s| s.trim().parse().ok())
                .ok_or_else(|| err(i + 2, format!("`{name}`: bad `Distribution size:` line")))?;
            let se = lines
                .get(i + 2)
                .and_then(|l| l.trim().strip_prefix("Scale/Equals:"))
                .and_then(|s| {
                    let (a, b) = s.split_once('/')?;
                    Some((a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?))
                })
                .ok_or_else(|| err(i + 3, format!("`{name}`: bad `Scale/Equals:` line")))?;
            if size > 1 << 20 {
                return Err(err(i + 2, format!("`{name}`: distribution size too large")));
            }
            i += 3;
            let kind = if size > DISTSIZE {
                let l = lines.get(i).map(|s| s.trim()).unwrap_or("");
                let w: Vec<&str> = l.split_whitespace().collect();
                let ok = w.len() == 6 && w[0] == "Start" && w[2] == "step" && w[4] == "grow";
                let nums = (ok)
                    .then(|| {
                        Some((
                            w[1].parse::<i64>().ok()?,
                            w[3].parse::<i64>().ok()?,
                            w[5].parse::<i64>().ok()?,
                        ))
                    })
                    .flatten()
                    .ok_or_else(|| {
                        err(i + 1, format!("`{name}`: bad `Start s step t grow g` line"))
                    })?;
                i += 1;
                StatKind::Large { start: nums.0, step: nums.1, grow: nums.2 }
            } else {
                // DISTSIZE-1 integers, possibly over several lines.
                let mut v = Vec::new();
                while v.len() < DISTSIZE - 1 {
                    let l = lines
                        .get(i)
                        .ok_or_else(|| err(i, format!("`{name}`: bucket list cut short")))?;
                    for w in l.split_whitespace() {
                        v.push(w.parse::<i64>().map_err(|_| {
                            err(i + 1, format!("`{name}`: bad bucket break `{w}`"))
                        })?);
                    }
                    i += 1;
                }
                StatKind::Small(v)
            };
            defs.push(StatDef {
                name: name.to_string(),
                line: name_line,
                size,
                scale: se.0,
                equals: se.1,
                kind,
            });
        }
        Ok(StatDefs { defs })
    }
}

/// Bucket edges of a large DiskSim distribution, in DiskSim's integer scaled units
/// (value_ms * scale; for access time scale = 1000 so units are µs).
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    /// `largediststarts`: printed label of bucket i is `starts[i] / scale`.
    pub starts: Vec<i64>,
    pub scale: i64,
    pub equals: i64,
    pub start: i64,
    pub step: i64,
    pub grow: i64,
    /// For growing buckets: per span of `2^COARSE_SHIFT` units from `start` (the first
    /// [`COARSE_SPANS`] of them), how many of `starts[1..=len-2]` are at most the span's
    /// first value. A value's bucket then lies among the few whose starts fall inside its
    /// span, so `index_of` bisects those instead of all 1,750 (the histograms of
    /// `validate-disk` searched for a twentieth of its instructions).
    coarse: Vec<u32>,
}

/// Units per span of [`Buckets`]'s coarse index (32 µs for access times).
const COARSE_SHIFT: u32 = 5;
/// Spans the coarse index covers (to 65 ms for access times, past nearly every access);
/// values beyond bisect all the buckets.
const COARSE_SPANS: usize = 2048;

impl Buckets {
    /// Build from a large-distribution definition (None for small ones).
    pub fn from_def(d: &StatDef) -> Option<Self> {
        match d.kind {
            StatKind::Large { start, step, grow } => {
                Some(Self::new(d.size, d.scale, d.equals, start, step, grow))
            }
            StatKind::Small(_) => None,
        }
    }

    /// `stat_get_large_dist`: each start is the previous plus `step + |prev|*grow/100`
    /// (integer truncation).
    pub fn new(size: usize, scale: i64, equals: i64, start: i64, step: i64, grow: i64) -> Self {
        let mut starts = Vec::with_capacity(size);
        let mut b = start;
        for _ in 0..size {
            starts.push(b);
            b = b
                .saturating_add(step)
                .saturating_add(((b.unsigned_abs() as f64 * grow as f64) / 100.0) as i64);
        }
        let mut coarse = Vec::new();
        let top = size.saturating_sub(2);
        if grow != 0 && top >= 1 && u32::try_from(top).is_ok() {
            // A merge of the spans' first values with the ascending starts.
            let mut below = 0; // how many of starts[1..=top] are at most the span's first value
            for j in 0..=COARSE_SPANS as i64 {
                let Some(first) = start.checked_add(j << COARSE_SHIFT) else { break };
                while below < top && starts[below + 1] <= first {
                    below += 1;
                }
                coarse.push(below as u32);
                if below == top {
                    break;
                }
            }
        }
        Buckets { starts, scale, equals, start, step, grow, coarse }
    }

    /// DiskSim 4.0 "Physical access time" / "Trace access time" buckets:
    /// 1750 buckets, scale 1000, start 0, step 1, grow 1 %.
    pub fn access_time_default() -> Self {
        Self::new(1750, 1000, 0, 0, 1, 1)
    }

    pub fn len(&self) -> usize {
        self.starts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Printed label (upper edge) of bucket `i`, in the statistic's unit (ms here).
    /// NaN when `i` is out of range.
    pub fn label(&self, i: usize) -> f64 {
        match self.starts.get(i) {
            Some(&s) => s as f64 / self.scale as f64,
            None => f64::NAN,
        }
    }

    /// Bucket index DiskSim's `stat_update` files `value` (in the statistic's unit,
    /// ms for access times) into.
    pub fn index_of(&self, value: f64) -> usize {
        let n = self.starts.len();
        if n == 0 {
            return 0;
        }
        let intval = (value * self.scale as f64) as i64; // C (int) truncation
        if intval < self.start {
            return 0;
        }
        if self.grow == 0 {
            let step = self.step.max(1);
            let eq = self.equals;
            let (iv, st, sp, e) = (intval as i128, self.start as i128, step as i128, eq as i128);
            if e != 0 && iv <= st - sp + sp * e && (iv - st) % sp == 0 {
                return ((iv / sp).clamp(0, n as i128 - 1)) as usize;
            }
            let i = (iv + sp - st) / sp;
            return i.clamp(0, n as i128 - 1) as usize;
        }
        let equals = self.equals.max(0) as usize;
        let mut i = 0usize;
        while i < equals && i < n {
            if intval == self.starts[i] {
                return i;
            }
            i += 1;
        }
        if i >= n {
            return n - 1;
        }
        // DiskSim's bisection: the first t in [i, n - 2] with intval < starts[t + 1] (or
        // n - 2), bucket t + 1. The starts ascend, so that is i plus how many of
        // starts[i + 1 ..= n - 2] are at most intval (a branch-free search).
        let top = n.saturating_sub(2);
        if n >= 2 && i < top && intval < self.starts[top] {
            // `intval` is at least `start`: the difference fits 64 unsigned bits.
            let span = (intval.wrapping_sub(self.start) as u64 >> COARSE_SHIFT) as usize;
            if let (0, Some(&lo), Some(&hi)) = (i, self.coarse.get(span), self.coarse.get(span + 1))
            {
                // The count of starts[1..=top] at most `intval` lies in [lo, hi].
                let (lo, hi) = (lo as usize, hi as usize);
                return lo + self.starts[lo + 1..=hi].partition_point(|&s| s <= intval) + 1;
            }
            return i + self.starts[i + 1..=top].partition_point(|&s| s <= intval) + 1;
        }
        (top + 1).min(n - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `stat_update`'s bucket search as DiskSim writes it: scan the `equals` buckets, then
    /// bisect for the first t with intval < starts[t + 1].
    fn bisect(b: &Buckets, value: f64) -> usize {
        let n = b.starts.len();
        let intval = (value * b.scale as f64) as i64;
        if intval < b.start {
            return 0;
        }
        let equals = b.equals.max(0) as usize;
        let mut i = 0;
        while i < equals && i < n {
            if intval == b.starts[i] {
                return i;
            }
            i += 1;
        }
        if i >= n {
            return n - 1;
        }
        let mut top = n.saturating_sub(2);
        // With the `equals` scan past `top` (all but the last bucket are `equals` ones)
        // DiskSim's loop starts with bottom above top and reads past its array; elevator
        // answers the last bucket there.
        if n >= 2 && i <= top && intval < b.starts[top] {
            let mut bottom = i;
            while top != bottom {
                let mid = bottom + (top - bottom) / 2;
                if intval < b.starts[mid + 1] {
                    top = mid;
                } else {
                    bottom = mid + 1;
                }
            }
        }
        (top + 1).min(n - 1)
    }

    proptest! {
        #[test]
        fn index_of_is_disksims_bisection(
            size in 2usize..2000,
            scale in prop::sample::select(vec![1i64, 1000]),
            equals in 0i64..3,
            step in 0i64..5,
            grow in 1i64..20,
            start in -50i64..50,
            values in prop::collection::vec(-1.0f64..200.0, 1..200),
        ) {
            let b = Buckets::new(size, scale, equals, start, step, grow);
            for v in values {
                prop_assert_eq!(b.index_of(v), bisect(&b, v), "value {}", v);
            }
        }
    }
}

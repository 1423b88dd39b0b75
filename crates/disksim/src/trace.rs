//! Reads DiskSim validation traces (`R|W Hit start size access_us think_us`), the measured
//! side of the comparison. Errors name file:line.

use crate::error::DiskSimError;
use crate::EXACT_POW10;
use std::path::Path;

/// One measured request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TraceRecord {
    pub is_write: bool,
    pub start_block: u64,
    pub size_sectors: u32,
    /// Measured access time in µs.
    pub access_time_us: f64,
    /// Think time before the next request in µs.
    pub think_time_us: f64,
    /// Line in the trace file (1-based).
    pub line: usize,
}

impl TraceRecord {
    /// Access time in ms, as DiskSim's statistics see it.
    pub fn access_time_ms(&self) -> f64 {
        self.access_time_us / 1000.0
    }
}

/// Parse trace text. Blank lines and `#` comments are skipped.
pub fn parse_trace(text: &str, file: &str) -> Result<Vec<TraceRecord>, DiskSimError> {
    let mut out = Vec::with_capacity(text.len() / 48 + 1);
    for (ln, line) in text.lines().enumerate() {
        // ASCII whitespace only: the traces are ASCII, and it is much cheaper to split.
        let mut f = line.split_ascii_whitespace().peekable();
        if f.peek().is_none_or(|first| first.starts_with('#')) {
            continue;
        }
        let err = |msg: String| DiskSimError::Syntax { file: file.to_string(), line: ln + 1, msg };
        let mut field = |name: &str| f.next().ok_or_else(|| err(format!("missing field `{name}`")));
        let op = field("R|W")?;
        let is_write = match op {
            "R" | "r" => false,
            "W" | "w" => true,
            o => return Err(err(format!("field `R|W`: expected R or W, got `{o}`"))),
        };
        let _buf = field("buffer")?;
        let sb = field("start_block")?;
        let sz = field("size_sectors")?;
        let at = field("access_time_us")?;
        let tt = field("think_time_us")?;
        let start_block = sb
            .parse::<u64>()
            .map_err(|_| err(format!("field `start_block`: bad integer `{sb}`")))?;
        let size_sectors = sz
            .parse::<u32>()
            .map_err(|_| err(format!("field `size_sectors`: bad integer `{sz}`")))?;
        let num = |name: &str, s: &str| -> Result<f64, DiskSimError> {
            match plain_decimal(s.as_bytes()).map_or_else(|| s.parse::<f64>(), Ok) {
                Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
                _ => Err(err(format!("field `{name}`: bad non-negative number `{s}`"))),
            }
        };
        out.push(TraceRecord {
            is_write,
            start_block,
            size_sectors,
            access_time_us: num("access_time_us", at)?,
            think_time_us: num("think_time_us", tt)?,
            line: ln + 1,
        });
    }
    Ok(out)
}

/// A plain decimal (`874`, `13670.00000`) read as `str::parse::<f64>` reads it, without its
/// general machinery (a trace is mostly such numbers, and reading them was a fifth of
/// `validate-disk`'s time): when its digits, the point left out, make an integer of at most
/// 2^53 and at most 22 of them follow the point, the value is that integer over a power of
/// ten, both exact doubles, and the one rounded division is the correctly rounded value
/// (Clinger's fast path, which `str::parse` takes as well). `None` for anything else.
fn plain_decimal(s: &[u8]) -> Option<f64> {
    let (mut m, mut digits, mut point) = (0u64, 0usize, None);
    for &b in s {
        match b {
            b'0'..=b'9' => {
                m = m.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(digits),
            _ => return None,
        }
    }
    let decimals = digits - point.unwrap_or(digits);
    (digits > 0 && m <= 1 << 53 && decimals < EXACT_POW10.len())
        .then(|| m as f64 / EXACT_POW10[decimals])
}

/// Read and parse a trace file.
pub fn load_trace(path: &Path) -> Result<Vec<TraceRecord>, DiskSimError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DiskSimError::Io { path: path.to_path_buf(), source: e })?;
    parse_trace(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The fast path reads every plain decimal as `str::parse` does, or leaves it.
        #[test]
        fn plain_decimals_read_as_str_parse_reads_them(
            int in "[0-9]{0,20}",
            frac in proptest::option::of("[0-9]{0,25}"),
        ) {
            let s = match &frac { Some(f) => format!("{int}.{f}"), None => int.clone() };
            if let Some(v) = plain_decimal(s.as_bytes()) {
                prop_assert_eq!(v.to_bits(), s.parse::<f64>().unwrap().to_bits(), "{}", s);
            }
        }
    }

    #[test]
    fn plain_decimals_take_only_plain_numbers() {
        assert_eq!(plain_decimal(b"13670.00000"), Some(13670.0));
        assert_eq!(plain_decimal(b"0.1"), Some(0.1));
        assert_eq!(plain_decimal(b"9007199254740993"), None); // past 2^53
        for s in ["", ".", "-1", "+1", "1e3", "1.2.3", "inf", "1 "] {
            assert_eq!(plain_decimal(s.as_bytes()), None, "{s}");
        }
        let t = "# comment\n\n   \nR Hit 10 4 874.5 0.25\n";
        let r = parse_trace(t, "t").unwrap();
        assert_eq!(
            (r.len(), r[0].access_time_us, r[0].think_time_us, r[0].line),
            (1, 874.5, 0.25, 4)
        );
        let e = parse_trace("R Hit 10 4 -3 1\n", "t").unwrap_err().to_string();
        assert!(e.contains("t") && e.contains("access_time_us"), "{e}");
    }
}

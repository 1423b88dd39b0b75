//! Reads DiskSim validation traces (`R|W Hit start size access_us think_us`), the measured
//! side of the comparison. Errors name file:line.

use crate::error::DiskSimError;
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
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let err = |msg: String| DiskSimError::Syntax { file: file.to_string(), line: ln + 1, msg };
        // ASCII whitespace only: the traces are ASCII, and it is much cheaper to split.
        let mut f = l.split_ascii_whitespace();
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
            match s.parse::<f64>() {
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

/// Read and parse a trace file.
pub fn load_trace(path: &Path) -> Result<Vec<TraceRecord>, DiskSimError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| DiskSimError::Io { path: path.to_path_buf(), source: e })?;
    parse_trace(&text, &path.display().to_string())
}

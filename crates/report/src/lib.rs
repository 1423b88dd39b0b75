//! `elevator report`: the JSON that `elevator run`, `compare` and `reproduce` write, read back
//! and laid out as one self-contained HTML page (inline CSS and SVG, no JavaScript, no
//! external URLs). Same inputs, same bytes out.
//!
//! - `input`: the files → a small model (jobs, directions, latencies; reproduce tables);
//! - `fairness`: groups, shares, Jain's index, weight error;
//! - `chart`: SVG charts (latency CDFs, shares of the I/Os);
//! - `sweep`: a sweep's rows (from the CLI's Parquet reader) → charts along its axes and a
//!   table of means over seeds;
//! - `markup`: HTML escaping and inline SVG;
//! - `html`: the page.

pub mod chart;
pub mod fairness;
pub mod html;
pub mod input;
pub mod markup;
pub mod sweep;

use std::path::Path;

pub use html::render;
pub use input::{load, Input};

/// Reads every file, in the order given; the first error (one line naming the file) stops.
pub fn load_all<P: AsRef<Path>>(paths: &[P]) -> Result<Vec<Input>, String> {
    paths.iter().map(|p| load(p.as_ref())).collect()
}

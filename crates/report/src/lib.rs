//! `elevator report`: the JSON that `elevator run`, `compare` and `reproduce` write, read back
//! and laid out as one self-contained HTML page (inline CSS and SVG, no JavaScript, no
//! external URLs). Same inputs, same bytes out.
//!
//! - `input`: the files → a small model (jobs, directions, latencies; reproduce tables);
//! - `fairness`: groups, shares, Jain's index, weight error;
//! - `chart`: SVG charts (latency CDFs, shares of the I/Os);
//! - `html`: the page.

pub mod chart;
pub mod fairness;
pub mod input;

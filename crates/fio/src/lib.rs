//! fio job files.
//!
//! elevator reads the job files people already have. This crate turns one into a list of
//! [`JobSpec`]s: `[global]` options folded into every later job, `include` resolved, `${VAR}`
//! expanded from the environment, fio's size/time/rate units applied. Options that fio knows
//! but elevator does not model are kept as [`Diagnostic`] warnings; unknown or malformed
//! options are errors naming file, line and option.
//!
//! [`rand`] is fio's random-number arithmetic, for draws the simulator makes as fio does.
//!
//! **Architecture invariant:** parsing only — no simulation, no topology knowledge. `filename`
//! stays a name; the simulator resolves it against the topology.

pub mod blktrace;
mod distribution;
mod expr;
mod ini;
pub mod iolog;
pub mod job;
mod options;
mod parser;
pub mod rand;
mod units;

pub use distribution::{
    parse_random_distribution, DistributionZone, RandomDistribution, DEFAULT_PARETO_H,
    DEFAULT_ZIPF_THETA, MAX_DISTRIBUTION_ZONES, MAX_ZIPF_THETA,
};
pub use expr::{Keywords, MAX_EXPR_BYTES, MAX_EXPR_DEPTH};
pub use ini::{MAX_INCLUDES, MAX_INCLUDE_DEPTH, MAX_JOB_TEXT_BYTES, MAX_SECTIONS};
pub use job::*;
pub use parser::{
    parse_file, parse_file_with, parse_str, parse_str_with, MAX_FILES, MAX_IOS_IN_FLIGHT,
    MAX_PROCESSES,
};

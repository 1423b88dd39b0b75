//! Reproductions of the reference experiments (`../shared/seeds/`).
//!
//! An experiment is a TOML [`scenario`] file under `scenarios/`: a topology, and tables. A
//! table runs one fio job file (parameterised by `${VAR}`) for each value of a variable and
//! each scheduler variant, and reports [`metric`]s per row, printed beside the numbers the
//! seed mail published. Nothing here knows about any particular experiment: adding one is
//! adding files under `scenarios/`.
//!
//! **Architecture invariant:** runs are simulations with fixed seeds; a reproduction prints
//! the same bytes every time.

pub mod metric;
pub mod render;
pub mod runner;
pub mod scenario;
mod scenario_lines;

pub use runner::{run_experiment, ExperimentResult, RowResult, TableResult, VariantResult};
pub use scenario::{find_experiment, list_experiments, scenarios_dir, Experiment};

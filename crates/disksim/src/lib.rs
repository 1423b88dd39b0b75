//! Reads DiskSim 4.0 validation drives (parameter files, seek curves, traces, statdefs)
//! and computes DiskSim's `rms` demerit exactly, so an HDD model can be checked against
//! the same figure DiskSim reports; [`bridge`] turns a drive into the parameters of
//! elevator's HDD model and [`replay()`](fn@replay) runs a validation trace through it.

pub mod bridge;
pub mod drive;
pub mod error;
pub mod params;
pub mod published;
pub mod replay;
pub mod rms;
pub mod statdefs;
pub mod trace;

/// Powers of ten that are exact doubles (10^22 is the last): dividing an exact integer by
/// one rounds once, which is how [`trace`] reads decimals and [`rms`] rounds them.
pub(crate) const EXACT_POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

pub use bridge::hdd_params;
pub use drive::{
    drives_under, load_drive, locate_drive, DiskModel, DiskSimDrive, DiskSpec, Layout, MechModel,
    Pbn, SeekCurve, SparingScheme, Zone,
};
pub use error::DiskSimError;
pub use params::{parse_file, parse_str, Block, Item, Node, ParamFile, Value};
pub use published::{
    at_or_below_published, disksim_abort, disksim_rms_ms, validation_drives_dir, DiskSimAbort,
    DISKSIM_4_0_ABORTS, DISKSIM_4_0_RMS_MS,
};
pub use replay::{replay, replay_trace_file, Replay, ReplayError, ReplayFileError, TraceReplay};
pub use rms::{
    cdf_points, histogram, mean, median, median_p99, p99, parse_cdf_tsv, percentile,
    rms_between_cdfs, rms_demerit_ms, rms_from_cdf, CdfRow,
};
pub use statdefs::{Buckets, StatDef, StatDefs};
pub use trace::{is_validation_trace, load_trace, parse_trace, parse_trace_file, TraceRecord};

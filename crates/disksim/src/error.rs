//! One error type for the crate, always naming the file and line (and key when relevant)
//! so a broken DiskSim input can be fixed without guessing.

use std::path::PathBuf;

/// Anything that can go wrong while reading DiskSim inputs.
#[derive(Debug, thiserror::Error)]
pub enum DiskSimError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Syntax error in a file.
    #[error("{file}:{line}: {msg}")]
    Syntax { file: String, line: usize, msg: String },
    /// A parameter DiskSim requires for the drive is absent from the block.
    #[error("{file}:{line}: missing required key `{key}` in block `{block}`")]
    MissingKey { file: String, line: usize, block: String, key: String },
    /// A parameter is present but its value is unusable.
    #[error("{file}:{line}: bad value for `{key}`: {msg}")]
    BadValue { file: String, line: usize, key: String, msg: String },
    /// A file the drive directory must contain is missing.
    #[error("{dir}: {msg}")]
    MissingFile { dir: PathBuf, msg: String },
}

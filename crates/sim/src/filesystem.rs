//! The `[[filesystem]]` tables of a topology: which device, partition or volume holds an ext3
//! file system, and how it is mounted. Buffered jobs' files there get its journal
//! ([`elevator_mm::vm::JournalSpec`]): ordered data and metadata committed every `commit`
//! seconds.
//!
//! ```toml
//! [[filesystem]]
//! on = "sda1"              # a device, partition or volume
//! type = "ext3"            # the only one modelled
//! data = "ordered"         # or "writeback" (mount option data=)
//! commit = 5               # seconds between commits (mount option commit=)
//! barrier = true           # mount option barrier= (default: the machine's `barrier`)
//! journal = "128MiB"       # journal size (mke2fs's default for file systems over 4 GiB)
//! ```
//!
//! The journal lies at the start of the file system, after the first block group's
//! metadata (4 MiB), as mke2fs of the seeds' era placed ext3's journal inode in the first
//! groups; jobs' own files on the file system are laid out after it.

use elevator_core::{Nanos, NS_PER_SEC};
use serde::Deserialize;

use crate::topology::Route;
use crate::units::parse_size_bytes;

/// Where the journal starts inside the file system (after group 0's bitmaps and inode
/// table).
pub const JOURNAL_OFFSET_BYTES: u64 = 4 << 20;
/// mke2fs's default journal for file systems of 4 GiB and more (32768 blocks).
pub const DEFAULT_JOURNAL_BYTES: u64 = 128 << 20;
/// The largest journal accepted: 1 GiB (mke2fs's largest default with 4 KiB blocks).
pub const MAX_JOURNAL_BYTES: u64 = 1 << 30;
/// The longest `commit=` accepted (a day).
pub const MAX_COMMIT_SECS: u64 = 24 * 3600;
/// `JBD_DEFAULT_MAX_COMMIT_AGE`.
pub const DEFAULT_COMMIT_SECS: u64 = 5;

/// A mounted ext3 file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FilesystemSpec {
    pub route: Route,
    pub start_bytes: u64,
    pub len_bytes: u64,
    pub journal_bytes: u64,
    pub commit_ns: Nanos,
    pub ordered: bool,
    /// `None`: the machine's `barrier`.
    pub barrier: Option<bool>,
}

impl FilesystemSpec {
    /// Where jobs' files begin: after the journal.
    pub fn data_start_bytes(&self) -> u64 {
        JOURNAL_OFFSET_BYTES + self.journal_bytes
    }
}

/// The table as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFilesystem {
    pub on: String,
    #[serde(rename = "type")]
    kind: Option<String>,
    data: Option<String>,
    commit: Option<u64>,
    barrier: Option<bool>,
    journal: Option<JournalSize>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum JournalSize {
    Bytes(u64),
    Text(String),
}

impl RawFilesystem {
    /// Checks the table against its limits; `target` is what `on` names (route, start,
    /// length). Errors name the key.
    pub(crate) fn build(&self, target: (Route, u64, u64)) -> Result<FilesystemSpec, String> {
        let (route, start_bytes, len_bytes) = target;
        match self.kind.as_deref().unwrap_or("ext3") {
            "ext3" => {}
            other => {
                return Err(format!("type `{other}` is not modelled; the only file system is ext3"))
            }
        }
        let ordered = match self.data.as_deref().unwrap_or("ordered") {
            "ordered" => true,
            "writeback" => false,
            "journal" => {
                return Err("data `journal` is not modelled; use ordered or writeback".into())
            }
            other => return Err(format!("data `{other}` must be ordered or writeback")),
        };
        let commit = self.commit.unwrap_or(DEFAULT_COMMIT_SECS);
        if !(1..=MAX_COMMIT_SECS).contains(&commit) {
            return Err(format!("commit {commit} must be 1..={MAX_COMMIT_SECS} seconds"));
        }
        let journal_bytes = match &self.journal {
            None => DEFAULT_JOURNAL_BYTES,
            Some(JournalSize::Bytes(b)) => *b,
            Some(JournalSize::Text(t)) => {
                parse_size_bytes(t).map_err(|e| format!("journal: {e}"))?
            }
        };
        let min = elevator_mm::vm::MIN_JOURNAL_BYTES;
        if !(min..=MAX_JOURNAL_BYTES).contains(&journal_bytes) {
            return Err(format!(
                "journal {journal_bytes} bytes must be {min}..={MAX_JOURNAL_BYTES} (4 MiB to 1 GiB)"
            ));
        }
        if JOURNAL_OFFSET_BYTES + journal_bytes + (1 << 20) > len_bytes {
            return Err(format!(
                "`{}` ({len_bytes} bytes) is too small for a journal of {journal_bytes} bytes",
                self.on
            ));
        }
        Ok(FilesystemSpec {
            route,
            start_bytes,
            len_bytes,
            journal_bytes,
            commit_ns: commit * NS_PER_SEC,
            ordered,
            barrier: self.barrier,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(text: &str) -> RawFilesystem {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn defaults_are_ext3s() {
        let fs = raw("on = \"sda\"").build((Route::Device(0), 0, 8 << 30)).unwrap();
        assert!(fs.ordered && fs.barrier.is_none());
        assert_eq!((fs.commit_ns, fs.journal_bytes), (5 * NS_PER_SEC, 128 << 20));
        assert_eq!(fs.data_start_bytes(), (4 << 20) + (128 << 20));
    }

    #[test]
    fn bad_options_are_errors_naming_the_key() {
        let target = (Route::Device(0), 0, 8 << 30);
        for (text, want) in [
            ("on = \"sda\"\ntype = \"xfs\"", "type"),
            ("on = \"sda\"\ndata = \"journal\"", "data"),
            ("on = \"sda\"\ndata = \"sometimes\"", "data"),
            ("on = \"sda\"\ncommit = 0", "commit"),
            ("on = \"sda\"\ncommit = 999999999", "commit"),
            ("on = \"sda\"\njournal = \"1MiB\"", "journal"),
            ("on = \"sda\"\njournal = \"2GiB\"", "journal"),
            ("on = \"sda\"\njournal = \"lots\"", "journal"),
        ] {
            let e = raw(text).build(target).unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
        let e = raw("on = \"sda\"").build((Route::Device(0), 0, 64 << 20)).unwrap_err();
        assert!(e.contains("too small"), "{e}");
        assert!(toml::from_str::<RawFilesystem>("on = \"sda\"\nnoatime = true").is_err());
    }
}

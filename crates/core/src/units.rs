//! Units. Plain integers with the unit in every name (`submit_ns`, `len_bytes`), as in
//! TigerBeetle: cheap to copy, impossible to misread at the call site.

/// A point or span in time, in nanoseconds. Virtual in the simulator, monotonic in the server.
pub type Nanos = u64;

pub const NS_PER_US: Nanos = 1_000;
pub const NS_PER_MS: Nanos = 1_000_000;
pub const NS_PER_SEC: Nanos = 1_000_000_000;

/// The block layer's unit of addressing, as in the kernel's `sector_t`: 512 bytes whatever the
/// device's logical block size.
pub const SECTOR_BYTES: u64 = 512;

/// Converts a byte offset to a sector number (rounding down).
#[inline]
pub fn sector_of(offset_bytes: u64) -> u64 {
    offset_bytes / SECTOR_BYTES
}

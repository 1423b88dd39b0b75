//! Opening what `elevator calibrate` measures, and the refusals: a target that cannot be
//! opened with `O_DIRECT` (tmpfs, some FUSE and network file systems), a mounted block
//! device, a target smaller than [`MIN_TARGET_BYTES`], a file with holes or unwritten
//! (fallocated) extents whose reads would never reach the device. Also what sysfs says of the
//! device under it ([`Hints`]) and whether reads through `O_DIRECT` stayed out of the page
//! cache ([`page_cache_resident`]).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use crate::backend::Hints;

/// The smallest target calibrate accepts: room for eight zone regions of several MiB, seeks
/// of many sizes and a held-out workload that does not sit in one drive cache.
pub const MIN_TARGET_BYTES: u64 = 64 << 20;

/// The most of a target calibrate addresses (16 EiB would overflow offsets; 1 PiB is more
/// than any single device and keeps the models' maps bounded by the device's own size).
pub const MAX_TARGET_BYTES: u64 = 1 << 50;

/// What the target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    BlockDevice,
    File,
}

/// An opened target.
#[derive(Debug)]
pub struct Target {
    pub path: PathBuf,
    pub file: File,
    pub kind: Kind,
    pub size_bytes: u64,
    pub hints: Hints,
    /// Things the user should know that do not stop calibration.
    pub warnings: Vec<String>,
}

fn errno_text(e: &io::Error) -> String {
    e.to_string()
}

/// Opens `path` for calibration: `O_DIRECT`, read-only unless `write`.
pub fn open(path: &Path, write: bool) -> Result<Target, String> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|e| format!("{shown}: {}", errno_text(&e)))?;
    let ft = meta.file_type();
    let kind = if ft.is_block_device() {
        Kind::BlockDevice
    } else if ft.is_file() {
        Kind::File
    } else {
        return Err(format!("{shown}: neither a block device nor a regular file"));
    };
    let mut warnings = Vec::new();
    let devno = match kind {
        Kind::BlockDevice => meta.rdev(),
        Kind::File => meta.dev(),
    };
    let (major, minor) = (libc::major(devno), libc::minor(devno));
    if kind == Kind::BlockDevice {
        if let Some(at) = mounted_at(major, minor) {
            return Err(if write {
                format!("{shown} is mounted (or holds a mounted partition) at {at}: --write would destroy that file system; unmount it first")
            } else {
                format!("{shown} is mounted (or holds a mounted partition) at {at}: the file system's own I/O would mix with the probes; calibrate a file on it instead (elevator calibrate {at}/FILE) or unmount it")
            });
        }
    }
    let mut opts = OpenOptions::new();
    opts.read(true).write(write);
    let mut flags = libc::O_DIRECT;
    if kind == Kind::BlockDevice && write {
        // The kernel refuses O_EXCL on a block device that is mounted or otherwise claimed.
        flags |= libc::O_EXCL;
    }
    opts.custom_flags(flags);
    let file = opts.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::EINVAL) => format!(
            "{shown}: cannot be opened with O_DIRECT (the file system does not support it: tmpfs, some FUSE and network file systems); calibrate measures the device, not the page cache, so put the file on a disk's file system"
        ),
        Some(libc::EBUSY) => format!("{shown}: in use (mounted, or claimed by another driver such as device-mapper or md)"),
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "{shown}: permission denied{}",
            if write { " (--write needs write access)" } else { "" }
        ),
        _ => format!("{shown}: {}", errno_text(&e)),
    })?;
    let size_bytes = match kind {
        Kind::File => meta.len(),
        Kind::BlockDevice => block_device_size(&file).map_err(|e| format!("{shown}: size: {e}"))?,
    };
    if size_bytes < MIN_TARGET_BYTES {
        return Err(format!(
            "{shown}: {size_bytes} bytes is too small to calibrate: at least {} MiB is needed (e.g. `dd if=/dev/urandom of={shown} bs=1M count=1024 oflag=direct` makes a 1 GiB file)",
            MIN_TARGET_BYTES >> 20
        ));
    }
    let size_bytes = size_bytes.min(MAX_TARGET_BYTES);
    if kind == Kind::File {
        if let Some(what) = unbacked_ranges(&file, size_bytes) {
            return Err(format!(
                "{shown}: {what}: reads there return zeros without reaching the device; fill the file with data first (`dd if=/dev/urandom of={shown} bs=1M count={} conv=notrunc oflag=direct`)",
                size_bytes >> 20
            ));
        }
    }
    let hints = sysfs_hints(major, minor);
    if hints.device.is_none() {
        warnings.push(format!(
            "device {major}:{minor} under {shown} is not a block device in /sys/dev/block (overlay, network or virtual file system?): no queue depth or scheduler hints, and O_DIRECT may not reach a disk"
        ));
    }
    Ok(Target { path: path.to_path_buf(), file, kind, size_bytes, hints, warnings })
}

fn block_device_size(file: &File) -> io::Result<u64> {
    // BLKGETSIZE64 = _IOR(0x12, 114, size_t)
    const BLKGETSIZE64: libc::c_ulong = 0x8008_1272;
    let mut size: u64 = 0;
    // SAFETY: the ioctl writes one u64 through the pointer, which outlives the call.
    let r = unsafe { libc::ioctl(file.as_raw_fd(), BLKGETSIZE64 as _, &mut size as *mut u64) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(size)
}

/// Where the device `major:minor`, or a partition of it, is mounted (from
/// `/proc/self/mountinfo`), if anywhere.
pub fn mounted_at(major: u32, minor: u32) -> Option<String> {
    let mut devs = vec![format!("{major}:{minor}")];
    // Partitions of a whole disk: /sys/dev/block/M:m/<part>/dev.
    if let Ok(dir) = std::fs::read_dir(format!("/sys/dev/block/{major}:{minor}")) {
        for e in dir.flatten() {
            if e.path().join("partition").exists() {
                if let Ok(d) = std::fs::read_to_string(e.path().join("dev")) {
                    devs.push(d.trim().to_string());
                }
            }
        }
    }
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    for line in info.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > 4 && devs.iter().any(|d| d == f[2]) {
            return Some(f[4].to_string());
        }
    }
    None
}

/// The first problem found with the file's backing: a hole or an unwritten extent.
fn unbacked_ranges(file: &File, size: u64) -> Option<String> {
    let fd = file.as_raw_fd();
    // SAFETY: lseek on an open descriptor.
    let hole = unsafe { libc::lseek(fd, 0, libc::SEEK_HOLE) };
    if hole >= 0 && (hole as u64) < size {
        return Some(format!("it has a hole at byte {hole} (a sparse file)"));
    }
    fiemap_unwritten(fd, size)
        .map(|at| format!("it has an unwritten (fallocated) extent at byte {at}"))
}

/// The logical offset of the first unwritten extent, if FIEMAP reports one.
fn fiemap_unwritten(fd: i32, size: u64) -> Option<u64> {
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    const FIEMAP_EXTENT_LAST: u32 = 0x1;
    const FIEMAP_EXTENT_UNWRITTEN: u32 = 0x800;
    const EXTENTS: usize = 128;
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Extent {
        logical: u64,
        physical: u64,
        length: u64,
        reserved64: [u64; 2],
        flags: u32,
        reserved: [u32; 3],
    }
    #[repr(C)]
    struct Map {
        start: u64,
        length: u64,
        flags: u32,
        mapped: u32,
        count: u32,
        reserved: u32,
        extents: [Extent; EXTENTS],
    }
    let empty = Extent {
        logical: 0,
        physical: 0,
        length: 0,
        reserved64: [0; 2],
        flags: 0,
        reserved: [0; 3],
    };
    let mut start = 0u64;
    // Bounded: at most 4096 calls (half a million extents) before giving up the check.
    for _ in 0..4096 {
        let mut m = Map {
            start,
            length: size - start,
            flags: 0,
            mapped: 0,
            count: EXTENTS as u32,
            reserved: 0,
            extents: [empty; EXTENTS],
        };
        // SAFETY: the ioctl reads and writes the struct, laid out as <linux/fiemap.h>.
        let r = unsafe { libc::ioctl(fd, FS_IOC_FIEMAP as _, &mut m as *mut Map) };
        if r < 0 || m.mapped == 0 {
            return None;
        }
        for e in &m.extents[..m.mapped as usize] {
            if e.flags & FIEMAP_EXTENT_UNWRITTEN != 0 {
                return Some(e.logical);
            }
            if e.flags & FIEMAP_EXTENT_LAST != 0 {
                return None;
            }
        }
        let last = m.extents[m.mapped as usize - 1];
        start = last.logical + last.length;
        if start >= size {
            return None;
        }
    }
    None
}

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// What sysfs says of the whole device holding `major:minor` (the device itself or the disk
/// a partition belongs to).
pub fn sysfs_hints(major: u32, minor: u32) -> Hints {
    let dev = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let Ok(real) = dev.canonicalize() else { return Hints::default() };
    let whole = if real.join("partition").exists() {
        real.parent().map(Path::to_path_buf).unwrap_or(real)
    } else {
        real
    };
    let q = whole.join("queue");
    let num = |name: &str| read_trim(&q.join(name)).and_then(|s| s.parse::<u32>().ok());
    let mut hw_queues = None;
    let mut hw_depth = None;
    if let Ok(dir) = std::fs::read_dir(whole.join("mq")) {
        let mut n = 0u32;
        for e in dir.flatten() {
            n += 1;
            if hw_depth.is_none() {
                hw_depth = read_trim(&e.path().join("nr_tags")).and_then(|s| s.parse().ok());
            }
        }
        hw_queues = (n > 0).then_some(n);
    }
    let scheduler = read_trim(&q.join("scheduler")).and_then(|s| {
        let a = s.find('[')?;
        let b = s[a..].find(']')?;
        Some(s[a + 1..a + b].to_string())
    });
    Hints {
        device: whole.file_name().map(|n| n.to_string_lossy().into_owned()),
        devno: read_trim(&whole.join("dev")),
        rotational: read_trim(&q.join("rotational")).map(|s| s == "1"),
        hw_queues,
        hw_queue_depth: hw_depth,
        max_sectors_kb: num("max_sectors_kb"),
        nr_requests: num("nr_requests"),
        scheduler,
    }
}

/// The fraction of the pages of `ranges` (offset, length) that are in the page cache, by
/// `mincore(2)` on a read-only mapping of the target: after `O_DIRECT` reads it should be
/// zero; more means the file system served them through the cache. None if the target
/// cannot be mapped.
pub fn page_cache_resident(file: &File, size: u64, ranges: &[(u64, u64)]) -> Option<f64> {
    let page = 4096u64;
    let (mut resident, mut total) = (0u64, 0u64);
    for &(off, len) in ranges.iter().take(256) {
        let start = off / page * page;
        let end = (off + len).min(size);
        if end <= start {
            continue;
        }
        let map_len = (end - start) as usize;
        // SAFETY: a private read-only mapping of the file's range, unmapped below; mincore
        // writes one byte per page into `vec`, sized for the range.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                start as libc::off_t,
            );
            if p == libc::MAP_FAILED {
                return None;
            }
            let pages = map_len.div_ceil(page as usize);
            let mut vec = vec![0u8; pages];
            let r = libc::mincore(p, map_len, vec.as_mut_ptr());
            libc::munmap(p, map_len);
            if r != 0 {
                return None;
            }
            resident += vec.iter().filter(|&&b| b & 1 != 0).count() as u64;
            total += pages as u64;
        }
    }
    (total > 0).then(|| resident as f64 / total as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn refuses_small_sparse_and_missing_targets() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let small = dir.path().join("small");
        std::fs::write(&small, vec![1u8; 1 << 20]).unwrap();
        let e = open(&small, false).unwrap_err();
        assert!(e.contains("too small") || e.contains("O_DIRECT"), "{e}");

        let sparse = dir.path().join("sparse");
        let f = File::create(&sparse).unwrap();
        f.set_len(128 << 20).unwrap();
        let e = open(&sparse, false).unwrap_err();
        assert!(e.contains("hole") || e.contains("O_DIRECT"), "{e}");

        let e = open(&dir.path().join("absent"), false).unwrap_err();
        assert!(e.contains("No such file"), "{e}");
        let e = open(dir.path(), false).unwrap_err();
        assert!(e.contains("neither"), "{e}");
    }

    #[test]
    fn a_written_file_opens_with_hints() {
        let dir = tempfile::tempdir_in("/var/tmp").unwrap();
        let p = dir.path().join("full");
        let mut f = File::create(&p).unwrap();
        let chunk = vec![7u8; 1 << 20];
        for _ in 0..64 {
            f.write_all(&chunk).unwrap();
        }
        f.sync_all().unwrap();
        match open(&p, false) {
            Ok(t) => {
                assert_eq!(t.size_bytes, 64 << 20);
                assert_eq!(t.kind, Kind::File);
            }
            // A file system without O_DIRECT must say so.
            Err(e) => assert!(e.contains("O_DIRECT"), "{e}"),
        }
    }
}

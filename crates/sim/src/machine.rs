//! The `[machine]` table of a topology: the simulated machine's memory, kernel and `vm.*`
//! sysctls, which its page cache ([`elevator_mm`]) runs with.
//!
//! ```toml
//! [machine]
//! memory = "4GiB"                 # MemTotal
//! reserved = "256MiB"             # kernel and processes: not for the page cache
//! kernel = "2.6.32"               # decides IO-less throttling (3.2+), context readahead
//!                                 # (`uname -r`'s form too: 3.2.0-4-amd64)
//! hz = 1000                       # CONFIG_HZ
//! cpus = 2
//! syscall = "1us"                 # CPU time of a read()/write() besides copying
//! copy_rate = "2GB/s"             # page cache <-> buffer copies
//! context_readahead = true        # default: on from 2.6.31
//! barrier = true                  # fsync ends with a cache flush (ext3 barrier=1)
//! # /proc/sys/vm, names and units as there (defaults: the kernel's):
//! dirty_ratio = 20
//! dirty_background_ratio = 10
//! dirty_bytes = 0
//! dirty_background_bytes = 0
//! dirty_expire_centisecs = 3000
//! dirty_writeback_centisecs = 500
//! ```

use elevator_core::Nanos;
use elevator_mm::{Kernel, VmConfig};
use serde::Deserialize;

use crate::units::{parse_duration_ns, parse_rate_bytes_per_sec, parse_size_bytes};

/// What the machine's page cache runs with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineSpec {
    pub vm: VmConfig,
    /// The topology named the kernel (`kernel = ...`): its schedulers are that release's
    /// ([`crate::era`]).
    pub kernel_named: bool,
    pub context_readahead: bool,
    pub barriers: bool,
}

impl MachineSpec {
    /// A 4 GiB, two-CPU machine running 2.6.32 with its defaults.
    pub fn default_machine() -> MachineSpec {
        let vm = VmConfig::default_for(Kernel::DEFAULT);
        MachineSpec {
            vm,
            kernel_named: false,
            context_readahead: vm.kernel.context_readahead(),
            barriers: true,
        }
    }
}

impl Default for MachineSpec {
    fn default() -> Self {
        MachineSpec::default_machine()
    }
}

/// The table as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMachine {
    memory: Option<SizeText>,
    reserved: Option<SizeText>,
    kernel: Option<String>,
    hz: Option<u64>,
    cpus: Option<u64>,
    syscall: Option<String>,
    copy_rate: Option<String>,
    context_readahead: Option<bool>,
    barrier: Option<bool>,
    dirty_ratio: Option<u32>,
    dirty_background_ratio: Option<u32>,
    dirty_bytes: Option<SizeText>,
    dirty_background_bytes: Option<SizeText>,
    dirty_expire_centisecs: Option<u32>,
    dirty_writeback_centisecs: Option<u32>,
}

/// A size as a number of bytes or a string with a unit.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum SizeText {
    Bytes(u64),
    Text(String),
}

fn size(key: &str, v: &SizeText) -> Result<u64, String> {
    match v {
        SizeText::Bytes(b) => Ok(*b),
        SizeText::Text(t) => parse_size_bytes(t).map_err(|e| format!("[machine] {key}: {e}")),
    }
}

impl RawMachine {
    /// The machine, checked against the limits of [`VmConfig::validate`]; errors name the
    /// key.
    pub(crate) fn build(&self) -> Result<MachineSpec, String> {
        let kernel = match &self.kernel {
            Some(k) => Kernel::parse(k).map_err(|e| format!("[machine] kernel: {e}"))?,
            None => Kernel::DEFAULT,
        };
        let mut vm = VmConfig::default_for(kernel);
        if let Some(m) = &self.memory {
            vm.memory_bytes = size("memory", m)?;
            // The default reservation scales with memory: 1/16 of it.
            vm.reserved_bytes = vm.memory_bytes / 16;
        }
        if let Some(r) = &self.reserved {
            vm.reserved_bytes = size("reserved", r)?;
        }
        if let Some(hz) = self.hz {
            vm.hz = hz;
        }
        if let Some(c) = self.cpus {
            vm.cpus = c;
        }
        if let Some(s) = &self.syscall {
            vm.syscall_ns =
                parse_duration_ns(s).map_err(|e| format!("[machine] syscall: {e}"))? as Nanos;
        }
        if let Some(r) = &self.copy_rate {
            let rate =
                parse_rate_bytes_per_sec(r).map_err(|e| format!("[machine] copy_rate: {e}"))?;
            if !(rate.is_finite() && rate >= 1e6) {
                return Err(format!("[machine] copy_rate: {r} is below 1 MB/s"));
            }
            vm.copy_bytes_per_sec = rate as u64;
        }
        let s = &mut vm.sysctl;
        if let Some(v) = self.dirty_ratio {
            s.dirty_ratio = v;
        }
        if let Some(v) = self.dirty_background_ratio {
            s.dirty_background_ratio = v;
        }
        if let Some(v) = &self.dirty_bytes {
            s.dirty_bytes = size("dirty_bytes", v)?;
        }
        if let Some(v) = &self.dirty_background_bytes {
            s.dirty_background_bytes = size("dirty_background_bytes", v)?;
        }
        if let Some(v) = self.dirty_expire_centisecs {
            s.dirty_expire_centisecs = v;
        }
        if let Some(v) = self.dirty_writeback_centisecs {
            s.dirty_writeback_centisecs = v;
        }
        vm.validate().map_err(|e| format!("[machine] {e}"))?;
        Ok(MachineSpec {
            vm,
            kernel_named: self.kernel.is_some(),
            context_readahead: self.context_readahead.unwrap_or(kernel.context_readahead()),
            barriers: self.barrier.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> Result<MachineSpec, String> {
        let raw: RawMachine = toml::from_str(text).map_err(|e| e.to_string())?;
        raw.build()
    }

    #[test]
    fn defaults_and_overrides() {
        let m = build("").unwrap();
        assert_eq!(m, MachineSpec::default_machine());
        let m = build(
            "memory = \"1GiB\"\nkernel = \"3.2\"\ndirty_ratio = 40\ndirty_bytes = \"64MiB\"\nsyscall = \"2us\"\ncopy_rate = \"1GB/s\"\n",
        )
        .unwrap();
        assert_eq!(m.vm.memory_bytes, 1 << 30);
        assert_eq!(m.vm.reserved_bytes, 64 << 20);
        assert!(m.vm.kernel.io_less_throttling());
        assert_eq!((m.vm.sysctl.dirty_ratio, m.vm.sysctl.dirty_bytes), (40, 64 << 20));
        assert_eq!((m.vm.syscall_ns, m.vm.copy_bytes_per_sec), (2_000, 1_000_000_000));
        let old = build("kernel = \"2.6.29\"").unwrap();
        assert!(!old.context_readahead);
        assert_eq!(old.vm.sysctl.dirty_ratio, 10);
    }

    #[test]
    fn impossible_values_name_their_key() {
        for (text, key) in [
            ("memory = \"1PiB\"", "memory"),
            ("memory = \"1MiB\"", "memory"),
            ("dirty_ratio = 150", "dirty_ratio"),
            ("dirty_background_ratio = 101", "dirty_background_ratio"),
            ("kernel = \"1.0\"", "kernel"),
            ("hz = 7", "hz"),
            ("dirty_writeback_centisecs = 999999999", "dirty_writeback_centisecs"),
            ("syscall = \"fast\"", "syscall"),
            ("dirty_bytes = \"100GiB\"", "dirty_bytes"),
        ] {
            let e = build(text).unwrap_err();
            assert!(e.contains(key), "{text}: {e}");
        }
        let e = build("swappiness = 60").unwrap_err();
        assert!(e.contains("swappiness"), "{e}");
    }
}

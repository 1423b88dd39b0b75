//! A CFQ group (`struct cfq_group`) and the blkio controller statistics kept for it.

use std::collections::BTreeMap;

use elevator_core::Nanos;

use super::queue::ThinkTime;

/// A statistic split the way `blkio.io_service_bytes` and friends print it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoStat {
    pub read: u64,
    pub write: u64,
    pub sync: u64,
    pub async_: u64,
}

impl IoStat {
    pub fn add(&mut self, read: bool, sync: bool, v: u64) {
        if read {
            self.read += v;
        } else {
            self.write += v;
        }
        if sync {
            self.sync += v;
        } else {
            self.async_ += v;
        }
    }

    /// `Total` line: read + write.
    pub fn total(&self) -> u64 {
        self.read + self.write
    }
}

/// Per-group statistics as the cgroup v1 blkio controller (2.6.33+) exposes them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStats {
    /// `blkio.time`: disk time charged to the group, in nanoseconds (the kernel prints ms).
    pub time_ns: u64,
    /// `blkio.sectors`: sectors dispatched.
    pub sectors: u64,
    /// `blkio.io_service_bytes`.
    pub io_service_bytes: IoStat,
    /// `blkio.io_serviced`: requests dispatched.
    pub io_serviced: IoStat,
    /// `blkio.io_service_time`: dispatch to completion, nanoseconds.
    pub io_service_time_ns: IoStat,
    /// `blkio.io_wait_time`: insert to dispatch, nanoseconds.
    pub io_wait_time_ns: IoStat,
    /// `blkio.dequeue`: times the group left the group service tree.
    pub dequeue: u64,
    /// The group's virtual disk time at the time of the query (not a blkio file).
    pub vdisktime: u64,
    pub weight: u32,
}

#[derive(Debug)]
pub struct Group {
    pub path: String,
    pub weight: u32,
    pub vdisktime: u64,
    /// Key on the group service tree while on it.
    pub on_st: Option<(u64, u64)>,
    /// Busy queues (on a service tree) of this group.
    pub nr_cfqq: u32,
    /// Service trees: RT×{async, sync-noidle, sync}, BE×{...}, idle.
    pub trees: [BTreeMap<(i64, u64), usize>; 7],
    pub dispatched: u32,
    pub saved_workload_slice: Nanos,
    pub saved_workload: usize,
    pub saved_prio: usize,
    pub busy_queues_avg: [u32; 2],
    pub stats: GroupStats,
    /// 3.2's think times (`rules_3_2`): the group's, and each service tree's.
    pub ttime: ThinkTime,
    pub tree_ttime: [ThinkTime; 7],
}

impl Group {
    pub fn new(path: String, weight: u32, created_ns: Nanos) -> Group {
        Group {
            path,
            weight: weight.max(1),
            vdisktime: 0,
            on_st: None,
            nr_cfqq: 0,
            trees: Default::default(),
            dispatched: 0,
            saved_workload_slice: 0,
            saved_workload: 0,
            saved_prio: 1,
            busy_queues_avg: [0; 2],
            stats: GroupStats::default(),
            ttime: ThinkTime::new(created_ns),
            tree_ttime: [ThinkTime::new(created_ns); 7],
        }
    }

    /// `cfq_group_busy_queues_wl`: busy queues of one priority class.
    pub fn busy(&self, prio: usize) -> usize {
        match prio {
            0 => self.trees[0..3].iter().map(|t| t.len()).sum(),
            1 => self.trees[3..6].iter().map(|t| t.len()).sum(),
            _ => self.trees[6].len(),
        }
    }

    /// `cfqg_busy_async_queues`.
    pub fn busy_async(&self) -> usize {
        self.trees[0].len() + self.trees[3].len()
    }
}

/// Index of the service tree for a class and workload (`service_tree_for`).
pub fn tree_index(class: usize, workload: usize) -> usize {
    if class >= 2 {
        6
    } else {
        class * 3 + workload
    }
}

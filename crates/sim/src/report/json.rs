//! fio's JSON output layout (`--output-format=json`, fio 3.x), so existing consumers read it
//! unchanged. Fields fio fills from the host (CPU usage, context switches) are zero; timestamps
//! are the simulation's epoch, so the output is byte-identical for identical inputs. An extra
//! top-level `elevator` object records the seed, topology, schedulers and each one's
//! dispatches by reason, and the I/Os and bytes per bin of time of each group
//! (`timeline`), which `elevator report` draws.

use serde_json::{json, Map, Value};

use crate::report::{entries, Entry};
use crate::stats::{DirStats, Summary, LAT_BUCKET_EDGES_NS};
use crate::steadystate::SteadyStateWindow;
use crate::SimResult;
use elevator_fio::{JobFile, JobSpec, UnifiedRw};

/// Renders the whole result as fio JSON text.
pub fn render(result: &SimResult, jobs: &JobFile, seed: u64, topology: &str) -> String {
    render_with(result, jobs, seed, topology, false)
}

/// fio's `json+`: the JSON layout with each direction's completion-latency histogram as
/// `clat_ns.bins` (bucket value in ns → count, fio's bucket layout, non-empty buckets only).
pub fn render_plus(result: &SimResult, jobs: &JobFile, seed: u64, topology: &str) -> String {
    render_with(result, jobs, seed, topology, true)
}

fn render_with(
    result: &SimResult,
    jobs: &JobFile,
    seed: u64,
    topology: &str,
    plus: bool,
) -> String {
    let entries = entries(result, jobs);
    let group_bw = super::group_aggregates(&entries);
    // fio's `elapsed`: seconds since the run began, rounded up, when the stats are written
    // (after the last job), the same for every job.
    let last_end_ns = result.processes.iter().map(|p| p.end_ns).max().unwrap_or(0);
    let elapsed_s = last_end_ns.div_ceil(1_000_000_000);
    let jobs_json: Vec<Value> =
        entries.iter().map(|e| job_json(e, jobs, &group_bw, elapsed_s, plus)).collect();
    let disk_util: Vec<Value> = super::reported_disks(result, jobs)
        .into_iter()
        .map(|d| {
            let c = &d.counters;
            json!({
                "name": d.name,
                "read_ios": c.ios[0],
                "write_ios": c.ios[1],
                "read_merges": c.merges[0],
                "write_merges": c.merges[1],
                "read_ticks": c.ticks_ns[0] / 1_000_000,
                "write_ticks": c.ticks_ns[1] / 1_000_000,
                "in_queue": (c.ticks_ns[0] + c.ticks_ns[1]) / 1_000_000,
                "util": round6(if result.end_ns == 0 { 0.0 } else { c.busy_ns as f64 * 100.0 / result.end_ns as f64 }),
            })
        })
        .collect();
    let mut out = json!({
        "fio version": concat!("elevator-", env!("CARGO_PKG_VERSION")),
        "timestamp": result.started_ms / 1000,
        "timestamp_ms": result.started_ms,
        "time": super::ctime(result.started_ms / 1000),
        "global options": options_map(&jobs.global_options),
        "jobs": jobs_json,
        "disk_util": disk_util,
        "elevator": {
            "seed": seed,
            "topology": topology,
            "simulated_ns": result.end_ns,
            "requests_completed": result.requests_completed,
            "devices": result.devices.iter().map(|d| {
                let mut v = json!({
                    "name": d.name, "model": d.description, "scheduler": d.scheduler,
                });
                if !d.stats.is_empty() {
                    let stats: Map<String, Value> =
                        d.stats.iter().map(|(k, x)| (k.to_string(), json!(round6(*x)))).collect();
                    v["stats"] = Value::Object(stats);
                }
                if d.counters.read_congested_ns > 0 {
                    v["read_congested_ms"] = json!(d.counters.read_congested_ns / 1_000_000);
                }
                if !d.decision_counts.is_empty() {
                    let counts: Map<String, Value> =
                        d.decision_counts.iter().map(|(k, n)| (k.to_string(), json!(n))).collect();
                    v["decisions"] = Value::Object(counts);
                }
                v
            }).collect::<Vec<_>>(),
            "timeline": timeline_json(result, jobs),
        },
    });
    if out["disk_util"].as_array().is_some_and(Vec::is_empty) {
        // fio writes no disk_util without disks (a null-engine run).
        out.as_object_mut().expect("an object").shift_remove("disk_util");
    }
    if jobs.global_options.is_empty() {
        // As fio: no [global] section (nor command-line option), no object.
        out.as_object_mut().expect("an object").shift_remove("global options");
    }
    if let Some(t) = result.target_vm {
        out["elevator"]["target_vm"] = json!({
            "pages_read": t.pages_read,
            "readahead_windows": t.readahead_windows,
            "readahead": readahead_json(&t.readahead),
            "pages_reclaimed": t.pages_reclaimed,
        });
    }
    let vm = result.vm;
    if vm != elevator_mm::vm::VmStats::default() {
        out["elevator"]["vm"] = json!({
            "pages_read": vm.pages_read,
            "pages_written": vm.pages_written,
            "readahead_windows": vm.readahead_windows,
            "readahead": readahead_json(&vm.readahead),
            "pages_reclaimed": vm.pages_reclaimed,
            "throttle_pauses": vm.throttle_pauses,
            "throttle_ns": vm.throttle_ns,
            "peak_dirty_pages": vm.peak_dirty_pages,
        });
        if vm.journal_commits > 0 {
            let o = &mut out["elevator"]["vm"];
            o["journal_commits"] = json!(vm.journal_commits);
            o["journal_ordered_pages"] = json!(vm.journal_ordered_pages);
            o["journal_log_blocks"] = json!(vm.journal_log_blocks);
            o["journal_checkpoints"] = json!(vm.journal_checkpoints);
        }
    }
    let mut text = serde_json::to_string_pretty(&out).expect("JSON values always serialise");
    text.push('\n');
    text
}

/// How a machine's readahead decided: calls on a miss and on a marker, marker hits skipped
/// on a congested device, and the cases of `ondemand_readahead` that answered the calls.
fn readahead_json(r: &elevator_mm::vm::ReadaheadStats) -> Value {
    json!({
        "on_miss": r.sync_calls,
        "on_marker": r.async_calls,
        "deferred": r.deferred,
        "initial": r.initial,
        "sequential": r.sequential,
        "marker": r.marker,
        "context": r.context,
        "random": r.random,
    })
}

/// `elevator.timeline`: I/Os and bytes completed per bin of simulated time, per group as
/// `elevator report` groups jobs (the job's `cgroup=`, else `group N` of its fio group), in
/// the order groups first appear; each direction that moved anything.
fn timeline_json(result: &SimResult, jobs: &JobFile) -> Value {
    let mut groups: Vec<(String, crate::timeline::Timeline)> = Vec::new();
    for p in &result.processes {
        let spec = &jobs.jobs[p.job];
        let cgroup = spec
            .options
            .iter()
            .chain(&jobs.global_options)
            .find(|(k, _)| k == "cgroup")
            .map(|(_, v)| v.clone());
        let name = cgroup.unwrap_or_else(|| format!("group {}", p.group_id));
        match groups.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => t.add(&p.timeline),
            None => groups.push((name, p.timeline.clone())),
        }
    }
    let wide =
        groups.iter().map(|(_, t)| t.bin_ns()).max().unwrap_or(crate::timeline::FIRST_BIN_NS);
    let groups: Vec<Value> = groups
        .iter_mut()
        .map(|(name, t)| {
            t.coarsen_to(wide);
            let mut g = json!({ "group": name });
            for (d, dir) in ["read", "write", "trim"].iter().enumerate() {
                if t.bins().iter().any(|b| b[d] > 0) {
                    let ios: Vec<u64> = t.bins().iter().map(|b| b[d]).collect();
                    let bytes: Vec<u64> = t.bins().iter().map(|b| b[3 + d]).collect();
                    g[*dir] = json!({ "ios": ios, "bytes": bytes });
                }
            }
            g
        })
        .collect();
    json!({ "bin_ns": wide, "groups": groups })
}

fn options_map(options: &[(String, String)]) -> Value {
    let mut map = Map::new();
    for (k, v) in options {
        map.insert(k.clone(), Value::String(v.clone()));
    }
    Value::Object(map)
}

/// A job's JSON; `group_bw` is each reporting group's aggregate per direction (bytes/s), for
/// `bw_agg` (a job's share in %).
fn job_json(e: &Entry, jobs: &JobFile, group_bw: &[[f64; 3]], elapsed_s: u64, plus: bool) -> Value {
    let spec = &jobs.jobs[e.job];
    let dirs: Vec<Value> =
        (0..3).map(|d| dir_json(e, spec, d, group_bw[e.group_id as usize][d], plus)).collect();
    let total_ios: u64 = e.depth_hist.iter().sum();
    let depths = super::depth_distribution(e);
    let depth_pct = |i: usize| round6(depths[i]);
    let lat = super::latency_distribution(e);
    let lat_pct = |i: usize| round6(lat[i]);
    let mut lat_ns = Map::new();
    let mut lat_us = Map::new();
    let mut lat_ms = Map::new();
    for (i, edge) in LAT_BUCKET_EDGES_NS.iter().enumerate() {
        match i {
            0..=9 => lat_ns.insert(edge.to_string(), json!(lat_pct(i))),
            10..=19 => lat_us.insert((edge / 1_000).to_string(), json!(lat_pct(i))),
            _ => lat_ms.insert((edge / 1_000_000).to_string(), json!(lat_pct(i))),
        };
    }
    lat_ms.insert(">=2000".to_string(), json!(lat_pct(31)));
    // I/Os go down `iodepth_batch_submit` at a time (one for synchronous engines) and are
    // reaped as they complete, so each submission and each reap falls in one of fio's
    // buckets (1-4, 5-8, 9-16, 17-32, 33-64, more).
    let batch_bucket = |batch: u32, busy: bool| {
        let shares = super::batch_distribution(batch, busy);
        let names = ["0", "4", "8", "16", "32", "64", ">=64"];
        Value::Object(names.iter().zip(shares).map(|(n, x)| (n.to_string(), json!(x))).collect())
    };
    let batch = if spec.engine_is_async() { spec.iodepth_batch.max(1) } else { 1 };
    let busy = total_ios > 0 && spec.counts_batches();
    let mut v = json!({
        "jobname": e.name,
        "groupid": e.group_id,
        "error": e.error.as_ref().map_or(0, |x| x.errno),
        "eta": 0,
        "elapsed": elapsed_s,
        "job options": options_map(&spec.options),
        "read": dirs[0],
        "write": dirs[1],
        "trim": dirs[2],
        "sync": sync_json(e, spec, plus),
        "job_runtime": e.job_runtime_ns / 1_000_000,
        "usr_cpu": e.usr_cpu_percent(),
        "sys_cpu": 0.0,
        "ctx": 0,
        "majf": 0,
        "minf": 0,
        "iodepth_level": {
            "1": depth_pct(0), "2": depth_pct(1), "4": depth_pct(2), "8": depth_pct(3),
            "16": depth_pct(4), "32": depth_pct(5), ">=64": depth_pct(6),
        },
        "iodepth_submit": batch_bucket(batch, busy),
        "iodepth_complete": batch_bucket(1, busy),
        "latency_ns": lat_ns,
        "latency_us": lat_us,
        "latency_ms": lat_ms,
        "latency_depth": e.latency_depth.unwrap_or(spec.iodepth),
        "latency_target": spec.latency_target_ns.map_or(0, |t| t / 1000),
        "latency_percentile": spec.latency_percentile,
        "latency_window": spec.latency_window_ns / 1000,
    });
    if spec.options.is_empty() {
        // fio's json_add_job_opts writes no object for a section that set nothing.
        v.as_object_mut().expect("an object").shift_remove("job options");
    }
    if let Some(w) = &e.steadystate {
        v.as_object_mut().expect("an object").insert("steadystate".into(), steadystate_json(w));
    }
    // unified_rw_reporting (fio's add_ddir_status_json): `mixed` has the summed directions
    // in place of read, write, trim and sync; `both` adds them after sync.
    let obj = v.as_object_mut().expect("an object");
    match spec.unified_rw_reporting {
        UnifiedRw::Split => {}
        UnifiedRw::Mixed => {
            let at = obj.keys().position(|k| k == "read").expect("read");
            let mixed = obj.shift_remove("read").expect("read");
            for key in ["write", "trim", "sync"] {
                obj.shift_remove(key);
            }
            obj.shift_insert(at, "mixed".to_string(), mixed);
        }
        UnifiedRw::Both => {
            let at = obj.keys().position(|k| k == "sync").expect("sync") + 1;
            let total: f64 = group_bw[e.group_id as usize].iter().sum();
            let mixed = dir_json(&e.mixed(), spec, 0, total, plus);
            obj.shift_insert(at, "mixed".to_string(), mixed);
        }
    }
    v
}

/// fio's `steadystate` object (`show_thread_status_json`): the criterion as given, whether
/// it was met, the last judgement, and the ring oldest first with its means.
fn steadystate_json(w: &SteadyStateWindow) -> Value {
    let ss = &w.spec;
    let pct = if ss.percent { "%" } else { "" };
    // fio prints the limit through a C float.
    let spec = format!(
        "{}{}:{:.6}{pct}",
        if ss.iops { "iops" } else { "bw" },
        if ss.slope { "_slope" } else { "" },
        ss.limit as f32
    );
    let (bw, iops): (Vec<u64>, Vec<u64>) = w.ordered().unzip();
    let (bw_mean, iops_mean) = w.means();
    json!({
        "ss": spec,
        "duration": ss.duration_s,
        "attained": u32::from(w.attained),
        "criterion": format!("{:.6}{pct}", w.criterion as f32),
        "max_deviation": round6(w.deviation),
        "slope": round6(w.slope),
        "data": { "bw_mean": bw_mean, "iops_mean": iops_mean, "iops": iops, "bw": bw },
    })
}

/// fio's `sync` object: the fsyncs counted, and the latency of every accounted sync with
/// its percentiles when the job reports clat or lat percentiles (json+: and its bins).
fn sync_json(e: &Entry, spec: &JobSpec, plus: bool) -> Value {
    let s = &e.sync;
    let mut lat = summary_json(&s.lat_ns);
    if (spec.clat_percentiles || spec.lat_percentiles) && s.lat_ns.n > 0 {
        let pct: Map<String, Value> = spec
            .percentile_list
            .iter()
            .map(|&p| (format!("{p:.6}"), json!(s.percentile_ns(p))))
            .collect();
        lat["percentile"] = Value::Object(pct);
        if plus {
            let bins: Map<String, Value> =
                s.bins().into_iter().map(|(ns, n)| (ns.to_string(), json!(n))).collect();
            lat["bins"] = Value::Object(bins);
        }
    }
    json!({ "total_ios": s.fsyncs, "lat_ns": lat })
}

fn summary_json(s: &Summary) -> Value {
    json!({ "min": s.min, "max": s.max, "mean": round6(s.mean()), "stddev": round6(s.stddev()), "N": s.n })
}

fn dir_json(e: &Entry, spec: &JobSpec, d: usize, group_total_bw: f64, plus: bool) -> Value {
    let s: &DirStats = &e.stats[d];
    let bw_bytes = e.bw_bytes_per_sec(d);
    // fio's add_ddir_lat_json: the percentiles of each latency the job reports, and with
    // json+ the histogram they come from.
    let with_percentiles = |summary: &Summary, at: &dyn Fn(f64) -> u64, bins: Vec<(u64, u64)>| {
        let mut v = summary_json(summary);
        if s.total_ios > 0 {
            let pct: Map<String, Value> =
                spec.percentile_list.iter().map(|&p| (format!("{p:.6}"), json!(at(p)))).collect();
            v["percentile"] = Value::Object(pct);
            if plus {
                let bins: Map<String, Value> =
                    bins.into_iter().map(|(ns, n)| (ns.to_string(), json!(n))).collect();
                v["bins"] = Value::Object(bins);
            }
        }
        v
    };
    let clat = if spec.clat_percentiles {
        with_percentiles(&s.clat_ns, &|p| s.clat_percentile_ns(p), s.clat_bins())
    } else {
        summary_json(&s.clat_ns)
    };
    let lat = if spec.lat_percentiles {
        with_percentiles(&s.lat_ns, &|p| s.lat_percentile_ns(p), s.lat_bins())
    } else {
        summary_json(&s.lat_ns)
    };
    json!({
        "io_bytes": s.io_bytes,
        "io_kbytes": s.io_bytes / 1024,
        "bw_bytes": bw_bytes as u64,
        "bw": (bw_bytes / 1024.0) as u64,
        "iops": round6(e.iops(d)),
        "runtime": if s.total_ios > 0 { e.dir_runtime_ns[d] / 1_000_000 } else { 0 },
        "total_ios": s.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": summary_json(&s.slat_ns),
        "clat_ns": clat,
        "lat_ns": lat,
        "bw_min": s.bw_kib_samples.min,
        "bw_max": s.bw_kib_samples.max,
        "bw_agg": round6(if s.bw_kib_samples.n == 0 {
            0.0
        } else {
            super::percent_of_group(s.bw_kib_samples.mean(), group_total_bw)
        }),
        "bw_mean": round6(s.bw_kib_samples.mean()),
        "bw_dev": round6(s.bw_kib_samples.stddev()),
        "bw_samples": s.bw_kib_samples.n,
        "iops_min": s.iops_samples.min,
        "iops_max": s.iops_samples.max,
        "iops_mean": round6(s.iops_samples.mean()),
        "iops_stddev": round6(s.iops_samples.stddev()),
        "iops_samples": s.iops_samples.n,
    })
}

/// fio prints floats as C's `%f`: six decimals of the exact binary value, a tie to the even
/// digit (2/1024 as a percentage, 0.1953125, is 0.195312), which Rust's `{:.6}` does too.
fn round6(x: f64) -> f64 {
    format!("{x:.6}").parse().unwrap_or(x)
}

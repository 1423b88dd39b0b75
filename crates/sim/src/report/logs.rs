//! fio's log files of a finished run: names and contents, for the caller to write (the
//! simulator does no I/O). Named as fio names them: `PREFIX_KIND.N.log` with `N` the
//! process's number counted from 1 over the whole job file (`per_job_logs=1`, the default),
//! or `PREFIX_KIND.log` shared by the processes that name it (`per_job_logs=0`); `PREFIX` is
//! the option's value, or the job's name when it has none.

use elevator_fio::JobFile;

use crate::iolog_out::{render, LOG_KINDS};
use crate::SimResult;

/// `(file name, text)` of every log the jobs asked for, in process order.
pub fn files(result: &SimResult, jobs: &JobFile) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (i, p) in result.processes.iter().enumerate() {
        let Some(logs) = &p.logs else { continue };
        let spec = &jobs.jobs[p.job].logs;
        let prefixes = [&spec.lat, &spec.lat, &spec.lat, &spec.bw, &spec.iops];
        for (kind, prefix) in prefixes.iter().enumerate() {
            let Some(prefix) = prefix else { continue };
            let prefix = if prefix.is_empty() { p.name.as_str() } else { prefix.as_str() };
            let name = if spec.per_job {
                format!("{prefix}_{}.{}.log", LOG_KINDS[kind], i + 1)
            } else {
                format!("{prefix}_{}.log", LOG_KINDS[kind])
            };
            let text = render(&logs.samples[kind]);
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, t)) => t.push_str(&text),
                None => out.push((name, text)),
            }
        }
    }
    out
}

/// Lines dropped past [`crate::iolog_out::MAX_LOG_SAMPLES`], over all processes.
pub fn dropped(result: &SimResult) -> u64 {
    result.processes.iter().filter_map(|p| p.logs.as_ref()).map(|l| l.dropped).sum()
}

/// `(file name, text)` of every `write_iolog` the jobs asked for, in process order; clones
/// naming the same file follow each other in it (fio interleaves them line by line).
pub fn iolog_files(result: &SimResult, jobs: &JobFile) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for p in &result.processes {
        let (Some(log), Some(name)) = (&p.issue_log, &jobs.jobs[p.job].write_iolog) else {
            continue;
        };
        let text = log.render(p.end_ns);
        match out.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => t.push_str(&text),
            None => out.push((name.clone(), text)),
        }
    }
    out
}

/// `write_iolog` lines dropped past [`crate::iolog_out::MAX_IOLOG_LINES`], over all processes.
pub fn iolog_dropped(result: &SimResult) -> u64 {
    result.processes.iter().filter_map(|p| p.issue_log.as_ref()).map(|l| l.dropped).sum()
}

//! Sections to jobs: folds `[global]` options into the jobs that follow them, applies each
//! job's own options, and turns option-level failures into [`ParseError`]s that name file,
//! line and option.
//!
//! fio semantics kept here: a `[global]` section affects only jobs after it (it may appear
//! several times, each adding to the previous ones); a job's section name is its name unless it
//! says `name=`; options before any section are an error; a file with no jobs is an error.

use std::path::Path;

use crate::expr::Keywords;
use crate::ini::{Env, Item, Reader};
use crate::job::{Diagnostic, JobFile, JobSpec, ParseError, SourceLocation};
use crate::options::{Applied, Builder, OptionError};

/// Parses a job file from disk. `env` looks up environment variables for `${VAR}` expansion.
pub fn parse_file(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, ParseError> {
    parse_file_with(path, env, &Keywords::default())
}

/// [`parse_file`] on a given machine: `keywords` are its `$pagesize`, `$ncpus`, `$mb_memory`.
pub fn parse_file_with(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    keywords: &Keywords,
) -> Result<JobFile, ParseError> {
    let mut reader = Reader::new(env);
    reader.read_file(path, None)?;
    build(reader.items, &path.display().to_string(), keywords)
}

/// Parses job-file text; `name` labels it in messages and `include` paths resolve relative to
/// `base_dir`.
pub fn parse_str(
    text: &str,
    name: &str,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<JobFile, ParseError> {
    parse_str_with(text, name, base_dir, env, &Keywords::default())
}

/// [`parse_str`] on a given machine (see [`parse_file_with`]). The text counts against
/// [`MAX_JOB_TEXT_BYTES`](crate::MAX_JOB_TEXT_BYTES) with its includes, as a file's does.
pub fn parse_str_with(
    text: &str,
    name: &str,
    base_dir: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    keywords: &Keywords,
) -> Result<JobFile, ParseError> {
    let env: Env<'_> = env;
    let mut reader = Reader::new(env);
    reader.count_text(text, name)?;
    reader.read_text(text, name, base_dir)?;
    build(reader.items, name, keywords)
}

/// Processes one job file may ask for: `numjobs` summed over its jobs (each process keeps
/// its own state and statistics in the simulator).
pub const MAX_PROCESSES: u64 = 4096;

/// Files one job file may ask for: `nrfiles` times `numjobs`, summed over its jobs. Each file
/// of a tree has state of its own in the simulator (its place, position and open state; for
/// a buffered job its page-cache accounting too, about 900 bytes a file in all), so this
/// keeps that under a GiB.
pub const MAX_FILES: u64 = 1 << 20;

/// I/Os one job file may keep in flight at once: `iodepth` (1 for a synchronous engine)
/// times `numjobs`, summed over its jobs. A process keeps a slot for each I/O it may have in
/// flight (16 bytes), so this keeps them to 16 MiB.
pub const MAX_IOS_IN_FLIGHT: u64 = 1 << 20;

/// Which kind of section the option lines currently belong to.
enum Current {
    None,
    Global,
    Job(Box<Builder>),
}

/// fio's option priorities (`.prio` in `options.c`): a section's options are parsed in
/// that order, highest first, and as written among equals (`sort_options` before
/// `fio_options_parse`). `kb_base` and `unit_base` come first, so `bs=4k` under
/// `kb_base=1000` is 4000 bytes wherever the two are written; `filename` and
/// `filename_format` come last, after `directory`.
fn option_priority(key: &str) -> i8 {
    match key {
        "kb_base" | "unit_base" | "lockfile" | "cpus_allowed_policy" => 1,
        "filename" | "filename_format" => -1,
        _ => 0,
    }
}

/// Each section's options in the order fio parses them ([`option_priority`]).
fn in_parse_order(mut items: Vec<Item>) -> Vec<Item> {
    let mut start = 0;
    while start < items.len() {
        let end = items[start..]
            .iter()
            .position(|i| matches!(i, Item::Section { .. }))
            .map_or(items.len(), |p| start + p);
        items[start..end].sort_by_key(|i| match i {
            Item::Option { key, .. } => -option_priority(key),
            Item::Section { .. } => 0,
        });
        start = end + 1;
    }
    items
}

fn build(items: Vec<Item>, file_name: &str, keywords: &Keywords) -> Result<JobFile, ParseError> {
    let items = in_parse_order(items);
    let mut out = JobFile { jobs: Vec::new(), global_options: Vec::new(), warnings: Vec::new() };
    // Every global option seen so far, replayed onto each new job (fio copies the global
    // state at the point the job section starts).
    let mut globals: Vec<(String, Option<String>)> = Vec::new();
    // Accumulated global state, so global lines are checked (and warned about) once.
    let mut global_check = Builder::with_keywords(
        "global",
        SourceLocation { file: file_name.into(), line: 0 },
        *keywords,
    );
    let mut current = Current::None;

    for item in items {
        match item {
            Item::Section { name, location } => {
                finish(&mut current, &mut out)?;
                current = if name == "global" {
                    Current::Global
                } else {
                    let mut builder = Builder::with_keywords(&name, location, *keywords);
                    for (key, value) in &globals {
                        // Already validated when the global line was read.
                        let _ = builder.apply(key, value.as_deref());
                    }
                    builder.spec.name = name;
                    Current::Job(Box::new(builder))
                };
            }
            Item::Option { key, value, written, location, included } => {
                let builder = match &mut current {
                    Current::None => {
                        return Err(ParseError {
                            location,
                            option: Some(key.clone()),
                            message: format!(
                                "option `{key}` is outside any section; put it under [global] or a [job] header"
                            ),
                        })
                    }
                    Current::Global => &mut global_check,
                    Current::Job(builder) => builder.as_mut(),
                };
                let outcome = builder.apply(&key, value.as_deref());
                // fio's JSON "job options" leave bare flags (`time_based`) out.
                let record = value.clone().map(|v| (key.clone(), v));
                match outcome {
                    Ok(Applied::Done) => {}
                    Ok(Applied::Warn(message)) => out.warnings.push(Diagnostic {
                        location: location.clone(),
                        option: key.clone(),
                        message,
                    }),
                    Err(OptionError::Unknown { .. }) if included => {
                        // Perhaps not a job file at all (`include /etc/shadow`): no quoting.
                        return Err(ParseError {
                            location,
                            option: None,
                            message: "not a fio option (this line of an included file is not \
                                      shown: is it a job file?)"
                                .into(),
                        });
                    }
                    Err(error) => {
                        let mut e = option_error(location, &key, error);
                        if let Some(written) = written {
                            e.message.push_str(&format!(
                                " (written as `{written}`; an undefined ${{VAR}} expands to nothing, as in fio)"
                            ));
                        }
                        return Err(e);
                    }
                }
                match &mut current {
                    Current::Job(builder) => builder.spec.options.extend(record),
                    _ => {
                        out.global_options.extend(record);
                        globals.push((key, value));
                    }
                }
            }
        }
    }
    finish(&mut current, &mut out)?;
    let processes: u64 = out.jobs.iter().map(|j| u64::from(j.numjobs)).sum();
    if processes > MAX_PROCESSES {
        return Err(ParseError {
            location: SourceLocation { file: file_name.into(), line: 0 },
            option: Some("numjobs".into()),
            message: format!(
                "the jobs add up to {processes} processes (numjobs summed over the sections); \
                 at most {MAX_PROCESSES}"
            ),
        });
    }
    let files: u64 = out.jobs.iter().map(|j| u64::from(j.numjobs) * u64::from(j.nrfiles)).sum();
    if files > MAX_FILES {
        return Err(ParseError {
            location: SourceLocation { file: file_name.into(), line: 0 },
            option: Some("nrfiles".into()),
            message: format!(
                "the jobs add up to {files} files (nrfiles times numjobs, summed over the \
                 sections); at most {MAX_FILES} (MAX_FILES)"
            ),
        });
    }
    let in_flight: u64 =
        out.jobs.iter().map(|j| u64::from(j.numjobs) * u64::from(j.max_in_flight())).sum();
    if in_flight > MAX_IOS_IN_FLIGHT {
        return Err(ParseError {
            location: SourceLocation { file: file_name.into(), line: 0 },
            option: Some("iodepth".into()),
            message: format!(
                "the jobs may keep {in_flight} I/Os in flight (iodepth of the async engines \
                 times numjobs, summed over the sections); at most {MAX_IOS_IN_FLIGHT} \
                 (MAX_IOS_IN_FLIGHT)"
            ),
        });
    }
    if out.jobs.is_empty() {
        return Err(ParseError {
            location: SourceLocation { file: file_name.into(), line: 0 },
            option: None,
            message:
                "the job file defines no jobs (only [global] or nothing); add a [jobname] section"
                    .into(),
        });
    }
    Ok(out)
}

fn finish(current: &mut Current, out: &mut JobFile) -> Result<(), ParseError> {
    if let Current::Job(builder) = std::mem::replace(current, Current::None) {
        let location = builder.spec.source.clone();
        let (spec, warnings): (JobSpec, _) =
            builder.finish_with_warnings().map_err(|(option, message)| ParseError {
                location,
                option: Some(option.to_string()),
                message,
            })?;
        for (option, message) in warnings {
            out.warnings.push(Diagnostic {
                location: spec.source.clone(),
                option: option.into(),
                message,
            });
        }
        out.jobs.push(spec);
    }
    Ok(())
}

fn option_error(location: SourceLocation, key: &str, error: OptionError) -> ParseError {
    let message = match error {
        OptionError::Unknown { suggestion: Some(s) } => {
            format!("`{key}` is not a fio option; did you mean `{s}`?")
        }
        OptionError::Unknown { suggestion: None } => format!("`{key}` is not a fio option"),
        OptionError::Value(m) => m,
    };
    ParseError { location, option: Some(key.to_string()), message }
}

//! `elevator ctl --socket PATH stats|list|get|set|trace`: talks to a running `elevator serve` over
//! its control socket (`control_socket` in the server's TOML). One request line out, one JSON
//! line back; printed as text, or as the JSON with `--json`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::Value;

#[derive(Args)]
pub struct CtlArgs {
    /// The server's control socket.
    #[arg(long)]
    pub socket: PathBuf,
    /// Print the server's JSON answer instead of text (before or after the command).
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: CtlCommand,
}

#[derive(Subcommand)]
pub enum CtlCommand {
    /// Per-export counters, latency percentiles and the scheduler queue.
    Stats,
    /// Exports with their backing file, scheduler and group weight.
    List,
    /// The tunables of an export's scheduler (as /sys/block/<dev>/queue/iosched/), or one.
    Get { export: String, name: Option<String> },
    /// Changes a tunable (range-checked by the scheduler) or the export's `weight`.
    Set { export: String, name: String, value: String },
    /// `trace on FILE`: each request the schedulers dispatch, with their reason, as a JSON
    /// line in FILE (the simulator's `--trace-decisions` format); `trace off` stops it.
    Trace {
        #[arg(value_parser = ["on", "off"])]
        state: String,
        /// The trace file (with `on`), written by the server; relative to this directory.
        file: Option<PathBuf>,
    },
}

fn ask(socket: &PathBuf, line: &str) -> Result<Value, String> {
    let mut s = UnixStream::connect(socket)
        .map_err(|e| format!("cannot connect to {}: {e}", socket.display()))?;
    writeln!(s, "{line}").map_err(|e| e.to_string())?;
    let mut answer = String::new();
    BufReader::new(s).read_line(&mut answer).map_err(|e| e.to_string())?;
    let v: Value = serde_json::from_str(&answer)
        .map_err(|e| format!("bad answer from the server ({e}): {answer}"))?;
    if v["ok"] != Value::Bool(true) {
        return Err(v["error"].as_str().unwrap_or("the server refused the request").to_string());
    }
    Ok(v)
}

fn ms(v: &Value) -> String {
    format!("{:.3}", v.as_f64().unwrap_or(0.0) / 1e6)
}

pub fn run(args: &CtlArgs) -> Result<(), String> {
    let line = match &args.command {
        CtlCommand::Stats => "stats".to_string(),
        CtlCommand::List => "list".to_string(),
        CtlCommand::Get { export, name } => {
            format!("get {export} {}", name.as_deref().unwrap_or("")).trim_end().to_string()
        }
        CtlCommand::Set { export, name, value } => format!("set {export} {name} {value}"),
        CtlCommand::Trace { state, file } => match (state.as_str(), file) {
            ("on", Some(f)) => {
                let abs = std::path::absolute(f).map_err(|e| format!("{}: {e}", f.display()))?;
                format!("trace on {}", abs.display())
            }
            ("on", None) => return Err("trace on needs the trace FILE".into()),
            (_, Some(_)) => return Err("trace off takes no FILE".into()),
            _ => "trace off".to_string(),
        },
    };
    if line.contains('\n') {
        return Err("arguments may not contain newlines".into());
    }
    let v = ask(&args.socket, &line)?;
    if args.json {
        println!("{v}");
        return Ok(());
    }
    let empty = vec![];
    match &args.command {
        CtlCommand::Stats => {
            println!(
                "{:<16} {:>10} {:>10} {:>10} {:>10} {:>6} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>6}",
                "export", "reads", "writes", "read_MiB", "write_MiB", "errors", "p50_ms",
                "p99_ms", "p99.9_ms", "max_ms", "queued", "inflight", "weight"
            );
            for e in v["exports"].as_array().unwrap_or(&empty) {
                println!(
                    "{:<16} {:>10} {:>10} {:>10.1} {:>10.1} {:>6} {:>9} {:>9} {:>9} {:>9} {:>7} {:>8} {:>6}",
                    e["name"].as_str().unwrap_or(""),
                    e["reads"],
                    e["writes"],
                    e["read_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
                    e["write_bytes"].as_f64().unwrap_or(0.0) / 1048576.0,
                    e["errors"],
                    ms(&e["latency_p50_ns"]),
                    ms(&e["latency_p99_ns"]),
                    ms(&e["latency_p999_ns"]),
                    ms(&e["latency_max_ns"]),
                    e["device_queued"],
                    e["device_inflight"],
                    e["weight"],
                );
            }
        }
        CtlCommand::List => {
            println!(
                "{:<16} {:<12} {:>6} {:>14} {:<3} path",
                "export", "scheduler", "weight", "size", "ro"
            );
            for e in v["exports"].as_array().unwrap_or(&empty) {
                println!(
                    "{:<16} {:<12} {:>6} {:>14} {:<3} {}",
                    e["name"].as_str().unwrap_or(""),
                    e["scheduler"].as_str().unwrap_or(""),
                    e["weight"],
                    e["size"],
                    if e["read_only"] == Value::Bool(true) { "yes" } else { "no" },
                    e["path"].as_str().unwrap_or(""),
                );
            }
        }
        CtlCommand::Get { name: Some(_), .. } => println!("{}", v["value"].as_str().unwrap_or("")),
        CtlCommand::Get { name: None, .. } => {
            println!("# scheduler {}", v["scheduler"].as_str().unwrap_or(""));
            println!("{:<20} {:>10}", "weight", v["weight"]);
            for t in v["tunables"].as_array().unwrap_or(&empty) {
                println!(
                    "{:<20} {:>10}   {} (default {}, {})",
                    t["name"].as_str().unwrap_or(""),
                    t["value"].as_str().unwrap_or(""),
                    t["unit"].as_str().unwrap_or(""),
                    t["default"].as_str().unwrap_or(""),
                    t["range"].as_str().unwrap_or(""),
                );
            }
        }
        CtlCommand::Set { .. } | CtlCommand::Trace { .. } => {}
    }
    Ok(())
}

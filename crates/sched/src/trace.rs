//! The line `--trace-decisions` (simulator) and `elevator ctl trace on FILE` (server) write
//! for each request a scheduler dispatches: one JSON object per line, the same fields in the
//! same order in both, so that a simulated and a real run compare line by line.
//!
//! Formatting only: whoever drives the scheduler decides where the lines go.

use std::fmt::Write;

use elevator_core::{Nanos, Op, Request};

/// `{"t_ns":…,"device":"sda","scheduler":"bfq","decision":"budget continues","id":…,
/// "op":"read","sector":…,"sectors":…,"pid":…,"cgroup":…,"queued":…}` and a newline.
pub fn decision_line(
    out: &mut String,
    now_ns: Nanos,
    device: &str,
    scheduler: &str,
    decision: &str,
    rq: &Request,
    queued: usize,
) {
    let op = match rq.op {
        Op::Read => "read",
        Op::Write => "write",
        Op::Flush => "flush",
        Op::Discard => "discard",
    };
    let _ = write!(out, "{{\"t_ns\":{now_ns},\"device\":\"");
    escape(out, device);
    let _ = write!(out, "\",\"scheduler\":\"");
    escape(out, scheduler);
    let _ = write!(out, "\",\"decision\":\"");
    escape(out, decision);
    let _ = writeln!(
        out,
        "\",\"id\":{},\"op\":\"{op}\",\"sector\":{},\"sectors\":{},\"pid\":{},\"cgroup\":{},\"queued\":{queued}}}",
        rq.id.0,
        rq.sector(),
        rq.sectors(),
        rq.owner.pid,
        rq.owner.cgroup
    );
}

/// JSON string escaping of `s` into `out`.
fn escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use elevator_core::{Owner, RequestId};

    #[test]
    fn one_json_object_per_line() {
        let mut owner = Owner::process(42);
        owner.cgroup = 3;
        let rq = Request::new(RequestId(7), Op::Write, 4096, 8192, false, owner, 0).unwrap();
        let mut s = String::new();
        decision_line(&mut s, 1500, "sd\"a", "bfq", "budget continues", &rq, 12);
        assert_eq!(
            s,
            "{\"t_ns\":1500,\"device\":\"sd\\\"a\",\"scheduler\":\"bfq\",\"decision\":\"budget continues\",\"id\":7,\"op\":\"write\",\"sector\":8,\"sectors\":16,\"pid\":42,\"cgroup\":3,\"queued\":12}\n"
        );
    }
}

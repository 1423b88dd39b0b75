//! Input limits: every count, size and time a job file (or a log it names) gives is checked
//! against a named limit before anything is allocated for it, and files that may not be job
//! files are never quoted in messages.

use std::path::{Path, PathBuf};

use elevator_fio::iolog::{IoLog, MAX_REPLAY_SPAN_NS};
use elevator_fio::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("elevator-fio-limits-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn parse(text: &str) -> Result<JobFile, ParseError> {
    parse_str(text, "t.fio", Path::new("."), &no_env)
}

#[test]
fn an_include_bomb_stops_at_the_include_count() {
    let d = dir("bomb");
    // inc0 includes inc1 twice, inc1 includes inc2 twice, ...: 2^30 reads unbounded.
    for i in 0..30 {
        let next = format!("include inc{}.fio\ninclude inc{}.fio\n", i + 1, i + 1);
        std::fs::write(d.join(format!("inc{i}.fio")), next).unwrap();
    }
    std::fs::write(d.join("inc30.fio"), "bs=4k\n").unwrap();
    let job = d.join("job.fio");
    std::fs::write(&job, "[j]\nrw=read\nsize=1m\ninclude inc0.fio\n").unwrap();
    let e = parse_file(&job, &no_env).unwrap_err().to_string();
    assert!(e.contains(&format!("more than {MAX_INCLUDES} includes")), "{e}");
    assert!(e.contains(".fio:"), "names the file and line: {e}");
}

#[test]
fn included_text_is_too_large_past_the_byte_limit() {
    let d = dir("big");
    let big = d.join("big.fio");
    let f = std::fs::File::create(&big).unwrap();
    f.set_len(MAX_JOB_TEXT_BYTES + 1).unwrap();
    let job = d.join("job.fio");
    std::fs::write(&job, "[j]\nrw=read\ninclude big.fio\n").unwrap();
    let e = parse_file(&job, &no_env).unwrap_err().to_string();
    assert!(e.contains("MiB of text"), "{e}");
}

#[test]
fn an_included_file_that_is_no_job_file_is_not_quoted() {
    let d = dir("shadow");
    let secret = d.join("shadow");
    std::fs::write(&secret, "root:$6$secrethash:19000:0:99999:7:::\n").unwrap();
    let job = d.join("job.fio");
    std::fs::write(&job, format!("[j]\nrw=read\ninclude {}\n", secret.display())).unwrap();
    let e = parse_file(&job, &no_env).unwrap_err().to_string();
    assert!(!e.contains("secrethash") && !e.contains("root"), "echoed the file: {e}");
    assert!(e.contains("shadow:1"), "names the file and line: {e}");
    std::fs::write(&secret, "[section]\nroot:x=1\n").unwrap();
    let e = parse_file(&job, &no_env).unwrap_err().to_string();
    assert!(!e.contains("section") || !e.contains("[section]"), "{e}");
    std::fs::write(&secret, "=secrethash\n").unwrap();
    let e = parse_file(&job, &no_env).unwrap_err().to_string();
    assert!(!e.contains("secrethash"), "{e}");
    // The job file itself is quoted as before.
    let e = parse("[j]\nbogus_option=1\n").unwrap_err().to_string();
    assert!(e.contains("bogus_option"), "{e}");
}

#[test]
fn numjobs_and_sections_are_bounded() {
    let e = parse("[j]\nrw=read\nnumjobs=100000\n").unwrap_err().to_string();
    assert!(e.contains("t.fio:3") && e.contains("numjobs"), "{e}");
    let many: String = (0..3).map(|i| format!("[j{i}]\nrw=read\nnumjobs=2000\n")).collect();
    let e = parse(&many).unwrap_err().to_string();
    assert!(e.contains(&format!("at most {MAX_PROCESSES}")), "{e}");
    // Files: each job's nrfiles, and nrfiles times numjobs over the file.
    let e = parse("[j]\nrw=read\nnrfiles=2000000\n").unwrap_err().to_string();
    assert!(e.contains("t.fio:3") && e.contains("nrfiles"), "{e}");
    let e = parse("[j]\nrw=read\nnrfiles=300000\nnumjobs=4\n").unwrap_err().to_string();
    assert!(e.contains("1200000 files") && e.contains(&format!("at most {MAX_FILES}")), "{e}");
    let sections: String = (0..=MAX_SECTIONS).map(|i| format!("[j{i}]\n")).collect();
    let e = parse(&sections).unwrap_err().to_string();
    assert!(e.contains(&format!("more than {MAX_SECTIONS} sections")), "{e}");
}

#[test]
fn log_delays_past_a_simulated_day_are_refused() {
    let wait = format!(
        "fio version 2 iolog\nsdb add\nsdb read 0 4096\nsdb wait 0 {}\nsdb read 0 4096\n",
        u64::MAX
    );
    let e = IoLog::parse(&wait, "t.log").unwrap_err();
    assert!(e.starts_with("t.log:5: ") && e.contains("one simulated day"), "{e}");
    let stamps = format!("fio version 3 iolog\n0 sdb read 0 4096\n{} sdb read 0 4096\n", u64::MAX);
    let e = IoLog::parse(&stamps, "t.log").unwrap_err();
    assert!(e.starts_with("t.log:3: "), "{e}");
    // Just inside the limit is fine.
    let ok = format!(
        "fio version 2 iolog\nsdb read 0 4096\nsdb wait 0 {}\nsdb read 0 4096\n",
        MAX_REPLAY_SPAN_NS / 1000
    );
    IoLog::parse(&ok, "t.log").unwrap();
}

#[test]
fn a_blktrace_timestamp_of_2_64_minus_1_is_refused() {
    const TA_QUEUE: u32 = 1;
    const TC_SHIFT: u32 = 16;
    let q_read = TA_QUEUE | ((1 << 4) << TC_SHIFT) | (1 << TC_SHIFT);
    let dev = 8 << 20 | 16;
    let mut t = blktrace::encode(0, 2048, 4096, q_read, dev, &[]);
    t.extend(blktrace::encode(u64::MAX, 4096, 4096, q_read, dev, &[]));
    let d = dir("blktrace");
    let p = d.join("trace.bin");
    std::fs::write(&p, t).unwrap();
    let e = IoLog::load(&p).unwrap_err();
    assert!(e.contains("record 2") && e.contains("one simulated day"), "{e}");
}

#[test]
fn iodepth_is_bounded_per_job_and_over_the_file() {
    // One job: past Linux's default fs.aio-max-nr.
    let e = parse("[j]\nrw=read\nioengine=libaio\niodepth=2147483648\n").unwrap_err().to_string();
    assert!(e.contains("t.fio:4") && e.contains("iodepth") && e.contains("65536"), "{e}");
    // The file: iodepth times numjobs, summed; a synchronous engine keeps one I/O in flight.
    let e = parse("[j]\nrw=read\nioengine=libaio\niodepth=65536\nnumjobs=17\n")
        .unwrap_err()
        .to_string();
    assert!(e.contains("1114112 I/Os") && e.contains(&format!("at most {MAX_IOS_IN_FLIGHT}")));
    assert!(parse("[j]\nrw=read\nioengine=psync\niodepth=65536\nnumjobs=17\n").is_ok());
}

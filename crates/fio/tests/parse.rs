//! Whole job files through the public API: the seed-experiment style, globals, includes,
//! `${VAR}`, warnings and errors that name file, line and option.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use elevator_core::{NS_PER_MS, NS_PER_SEC, NS_PER_US};
use elevator_fio::*;
use proptest::prelude::*;

fn no_env(_: &str) -> Option<String> {
    None
}

fn parse(text: &str) -> Result<JobFile, ParseError> {
    parse_str(text, "test.fio", Path::new("."), &no_env)
}

fn err(text: &str) -> ParseError {
    match parse(text) {
        Ok(file) => panic!("expected an error, parsed {} jobs", file.jobs.len()),
        Err(e) => e,
    }
}

/// A fresh directory under the system temp dir, unique per test and process.
fn temp_dir(tag: &str) -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("elevator-fio-{}-{tag}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    dir
}

fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

const SEED: &str = "\
; the seed experiment: two cgroups competing
[global]
direct=1
bs=4k
runtime=30
time_based
ioengine=libaio
iodepth=32
group_reporting
filename=sda

[seq]
rw=read
size=2G
numjobs=4
cgroup=a
cgroup_weight=100

[rand]
rw=randread
cgroup=b
cgroup_weight=500
";

#[test]
fn seed_experiment() {
    let file = parse(SEED).unwrap();
    assert!(file.warnings.is_empty(), "{:?}", file.warnings);
    assert_eq!(file.jobs.len(), 2);
    let seq = &file.jobs[0];
    assert_eq!(seq.name, "seq");
    assert_eq!(seq.source, SourceLocation { file: "test.fio".into(), line: 12 });
    assert_eq!(seq.rw, RwMode::Read);
    assert_eq!(seq.size, Some(Amount::Bytes(2 << 30)));
    assert_eq!(seq.numjobs, 4);
    assert_eq!(seq.cgroup.as_deref(), Some("a"));
    assert_eq!(seq.cgroup_weight, Some(100));
    assert!(seq.direct && seq.time_based && seq.group_reporting);
    assert_eq!(seq.runtime_ns, Some(30 * NS_PER_SEC));
    assert_eq!(seq.ioengine, IoEngine::Libaio);
    assert_eq!(seq.iodepth, 32);
    assert_eq!(seq.block_size[0], BlockSize::Fixed { bytes: 4096 });
    assert_eq!(seq.filename.as_deref(), Some("sda"));
    assert_eq!(
        seq.options,
        opts(&[
            ("rw", "read"),
            ("size", "2G"),
            ("numjobs", "4"),
            ("cgroup", "a"),
            ("cgroup_weight", "100")
        ])
    );
    let rand = &file.jobs[1];
    assert_eq!(rand.rw, RwMode::RandRead);
    assert_eq!(rand.size, None);
    assert_eq!(rand.numjobs, 1);
    assert_eq!(rand.cgroup_weight, Some(500));
    assert_eq!(rand.iodepth, 32);
    // Bare flags are left out, as in fio's JSON "global options".
    assert_eq!(
        file.global_options,
        opts(&[
            ("direct", "1"),
            ("bs", "4k"),
            ("runtime", "30"),
            ("ioengine", "libaio"),
            ("iodepth", "32"),
            ("filename", "sda"),
        ])
    );
}

#[test]
fn defaults_match_fio() {
    let job = &parse("[j]\n").unwrap().jobs[0];
    let expected = JobSpec::new_default("j", SourceLocation { file: "test.fio".into(), line: 1 });
    assert_eq!(job, &expected);
    assert_eq!(job.ioengine, IoEngine::Psync);
    assert_eq!(job.iodepth, 1);
    assert_eq!(job.rwmixread_percent, 50);
    assert_eq!(job.block_size[2], BlockSize::Fixed { bytes: 4096 });
    assert!(job.randrepeat && !job.direct);
    assert_eq!(job.thinktime_blocks, 1);
    assert_eq!(job.nrfiles, 1);
    assert_eq!(job.file_service_type, FileServiceType::RoundRobin);
    assert_eq!(job.offset, Amount::Bytes(0));
}

#[test]
fn global_applies_only_to_later_jobs_and_accumulates() {
    let text = "[global]\nbs=8k\n[a]\n[global]\niodepth=4\n[b]\nbs=16k\n[global]\nrw=write\n";
    let file = parse(text).unwrap();
    let (a, b) = (&file.jobs[0], &file.jobs[1]);
    assert_eq!(a.block_size[0], BlockSize::Fixed { bytes: 8192 });
    assert_eq!(a.iodepth, 1);
    assert_eq!(b.iodepth, 4);
    assert_eq!(b.block_size[0], BlockSize::Fixed { bytes: 16384 });
    assert_eq!(a.rw, RwMode::Read);
    assert_eq!(b.rw, RwMode::Read);
    assert_eq!(file.global_options, opts(&[("bs", "8k"), ("iodepth", "4"), ("rw", "write")]));
}

#[test]
fn name_option_overrides_section_name_but_global_name_does_not() {
    let file = parse("[global]\nname=g\n[first job]\n[x]\nname=renamed\n").unwrap();
    assert_eq!(file.jobs[0].name, "first job");
    assert_eq!(file.jobs[1].name, "renamed");
}

#[test]
fn realistic_mixed_job() {
    let text = "\
[global]
kb_base=1000
ioengine=io_uring
iodepth=64
iodepth_batch_submit=8
norandommap
invalidate=1

[mixed]
readwrite=randrw:16
rwmixwrite=30
bssplit=4KiB/20:64KiB/,128KiB/100
size=10%
offset=1MiB
io_limit=1g
rate=10m,,
rate_iops=,500
thinktime=2ms
thinktime_blocks=8
startdelay=1.5
ramp_time=2s
prio=4
prioclass=2
randrepeat=0
randseed=42
uid=1000
gid=100
nrfiles=8
openfiles=3
filesize=4k:1m
file_service_type=sequential
number_ios=5000
fsync=32
stonewall
new_group
description=hello world
";
    let file = parse(text).unwrap();
    let j = &file.jobs[0];
    assert_eq!(j.rw, RwMode::RandRw);
    assert_eq!(j.rwmixread_percent, 70);
    assert_eq!(j.ioengine, IoEngine::IoUring);
    assert_eq!(j.iodepth, 64);
    assert_eq!(j.iodepth_batch, 8);
    assert_eq!(j.block_size[0], BlockSize::Split { parts: vec![(4096, 20), (65536, 80)] });
    assert_eq!(j.block_size[1], BlockSize::Split { parts: vec![(131072, 100)] });
    assert_eq!(j.block_size[2], BlockSize::Split { parts: vec![(131072, 100)] });
    assert_eq!(j.size, Some(Amount::Percent(10.0)));
    // kb_base=1000 makes MiB binary and k/g decimal.
    assert_eq!(j.offset, Amount::Bytes(1 << 20));
    assert_eq!(j.io_size_bytes, Some(1_000_000_000));
    assert_eq!(j.rate_bytes_per_sec, [Some(10_000_000), None, None]);
    assert_eq!(j.rate_iops, [None, Some(500), Some(500)]);
    assert_eq!(j.thinktime_ns, 2 * NS_PER_MS);
    assert_eq!(j.thinktime_blocks, 8);
    assert_eq!(j.startdelay_ns, 1500 * NS_PER_MS);
    assert_eq!(j.ramp_time_ns, 2 * NS_PER_SEC);
    assert_eq!((j.prio, j.prioclass), (Some(4), Some(2)));
    assert!(!j.randrepeat);
    assert_eq!(j.randseed, Some(42));
    assert_eq!((j.uid, j.gid), (Some(1000), Some(100)));
    assert_eq!(j.nrfiles, 8);
    assert_eq!(j.open_files, 3);
    assert_eq!(j.filesize, Some((4000, 1_000_000)));
    assert_eq!(j.file_service_type, FileServiceType::Sequential);
    assert_eq!(j.number_ios, Some(5000));
    assert_eq!(j.fsync_every, 32);
    assert!(j.stonewall && j.new_group);
    let warned: Vec<(&str, u32)> =
        file.warnings.iter().map(|w| (w.option.as_str(), w.location.line)).collect();
    assert_eq!(warned, vec![], "the `:16` of readwrite= is modelled now");
    assert_eq!(j.rw_seq_nr, 16);
    assert!(j.invalidate, "invalidate is modelled now");
    assert!(j.norandommap, "norandommap is modelled now");
}

#[test]
fn thinktime_default_unit_is_microseconds() {
    let j = &parse("[j]\nthinktime=250\nthinktime_spin=100\n").unwrap().jobs[0];
    assert_eq!(j.thinktime_ns, 250 * NS_PER_US);
    assert_eq!(j.thinktime_spin_ns, 100 * NS_PER_US);
}

#[test]
fn comments_crlf_and_spacing() {
    let text = "[j]\r\n  bs = 8k   ; eight k\r\n# comment\r\nsize=1m#x\r\n";
    let j = &parse(text).unwrap().jobs[0];
    assert_eq!(j.block_size[0], BlockSize::Fixed { bytes: 8192 });
    assert_eq!(j.options, opts(&[("bs", "8k"), ("size", "1m")]));
}

#[test]
fn env_expansion_uses_the_given_lookup() {
    let env = |k: &str| match k {
        "BS" => Some("64k".to_string()),
        "DEV" => Some("nvme0n1".to_string()),
        _ => None,
    };
    let file = parse_str(
        "[j]\nbs=${BS}\nfilename=/dev/${DEV}\ndescription=a${UNSET}b\n",
        "env.fio",
        Path::new("."),
        &env,
    )
    .unwrap();
    let j = &file.jobs[0];
    assert_eq!(j.block_size[1], BlockSize::Fixed { bytes: 65536 });
    assert_eq!(j.filename.as_deref(), Some("/dev/nvme0n1"));
    // fio replaces an undefined variable with nothing; options show the expanded text, in
    // the order fio parses them (filename after the rest, as its JSON lists them).
    assert_eq!(j.options[1], ("description".to_string(), "ab".to_string()));
    assert_eq!(j.options[2].0, "filename");
}

#[test]
fn env_expansion_errors_name_the_expanded_value() {
    let env = |k: &str| (k == "BS").then(|| "7".to_string());
    let e = parse_str("[j]\nbs=${BS}\n", "env.fio", Path::new("."), &env).unwrap_err();
    assert!(e.to_string().contains("env.fio:2"), "{e}");
    assert!(e.to_string().contains("`7`"), "{e}");
    assert!(e.to_string().contains("written as `${BS}`"), "{e}");
    let e = parse_str("[j]\nnumjobs=${UNSET}\n", "env.fio", Path::new("."), &env).unwrap_err();
    assert!(e.to_string().contains("env.fio:2: option `numjobs`"), "{e}");
    assert!(e.to_string().contains("undefined ${VAR} expands to nothing"), "{e}");
}

#[test]
fn include_resolves_relative_to_the_including_file() {
    let dir = temp_dir("include");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/common.fio"), "bs=16k\ninclude more.fio\n").unwrap();
    std::fs::write(dir.join("sub/more.fio"), "iodepth=8\nlockmem=1m\n").unwrap();
    let main = dir.join("main.fio");
    std::fs::write(&main, "[global]\ninclude sub/common.fio\n[j]\nrw=write\n").unwrap();
    let file = parse_file(&main, &no_env).unwrap();
    let j = &file.jobs[0];
    assert_eq!(j.block_size[0], BlockSize::Fixed { bytes: 16384 });
    assert_eq!(j.iodepth, 8);
    assert_eq!(j.rw, RwMode::Write);
    assert_eq!(file.warnings.len(), 1);
    assert!(file.warnings[0].location.file.ends_with("more.fio"));
    assert_eq!(file.warnings[0].location.line, 2);
    // parse_str resolves includes against base_dir.
    let file = parse_str("[k]\ninclude sub/common.fio\n", "inline", &dir, &no_env).unwrap();
    assert_eq!(file.jobs[0].iodepth, 8);
    // The included lines count as the job's own options.
    assert_eq!(file.jobs[0].options, opts(&[("bs", "16k"), ("iodepth", "8"), ("lockmem", "1m")]));
    // fio: "No new sections in included files"; and no include before the first section.
    std::fs::write(dir.join("sect.fio"), "bs=8k\n[new]\n").unwrap();
    let e = parse_str("[k]\ninclude sect.fio\n", "inline", &dir, &no_env).unwrap_err();
    assert!(e.to_string().contains("sect.fio:2"), "{e}");
    assert!(e.message.contains("no new sections"), "{e}");
    let e = parse_str("include sub/more.fio\n[k]\n", "inline", &dir, &no_env).unwrap_err();
    assert!(e.to_string().starts_with("inline:1:"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn include_cycle_is_an_error() {
    let dir = temp_dir("cycle");
    std::fs::write(dir.join("a.fio"), "[j]\ninclude b.fio\n").unwrap();
    std::fs::write(dir.join("b.fio"), "bs=8k\ninclude a.fio\n").unwrap();
    let e = parse_file(&dir.join("a.fio"), &no_env).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("include cycle"), "{text}");
    assert!(text.contains("b.fio:2"), "{text}");
    // Self-include via parse_str (no path of its own) is stopped by the depth limit.
    std::fs::write(dir.join("self.fio"), "include self.fio\n").unwrap();
    let e = parse_str("[j]\ninclude self.fio\n", "inline", &dir, &no_env).unwrap_err();
    assert!(e.to_string().contains("include cycle"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_include_and_missing_file() {
    let e = err("[j]\ninclude /nonexistent/elevator-fio/nope.fio\n");
    assert!(e.to_string().starts_with("test.fio:2:"), "{e}");
    let e = parse_file(Path::new("/nonexistent/elevator-fio/job.fio"), &no_env).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/elevator-fio/job.fio"), "{e}");
}

#[test]
fn option_outside_section_names_the_line() {
    let e = err("; c\nbs=4k\n[j]\n");
    assert_eq!(e.location.line, 2);
    assert_eq!(e.option.as_deref(), Some("bs"));
    assert!(e.to_string().contains("test.fio:2"));
}

#[test]
fn no_jobs_is_an_error() {
    assert!(err("").message.contains("no jobs"));
    assert!(err("[global]\nbs=4k\n").message.contains("no jobs"));
}

#[test]
fn unknown_option_suggests_the_nearest() {
    let e = err("[j]\nrw=read\niodpeth=4\n");
    let text = e.to_string();
    assert!(text.contains("test.fio:3"), "{text}");
    assert!(text.contains("iodpeth"), "{text}");
    assert!(text.contains("did you mean `iodepth`"), "{text}");
    let e = err("[j]\nfrobnicate_everything=1\n");
    assert!(!e.to_string().contains("did you mean"), "{e}");
}

#[test]
fn malformed_values_name_file_line_option_value_and_expectation() {
    let cases: &[(&str, &str, &str)] = &[
        ("rwmixread=150", "150", "0 to 100"),
        ("prio=9", "9", "0 to 7"),
        ("prioclass=4", "4", "0 to 3"),
        ("cgroup_weight=5000", "5000", "100 to 1000"),
        ("iodepth=0", "0", "1 to"),
        ("bs=1000", "1000", "512-byte sectors"),
        ("bs=4q", "4q", "suffix"),
        ("size=lots", "lots", "not a number"),
        ("runtime=10x", "10x", "time suffix"),
        ("direct=yes", "yes", "0 or 1"),
        ("rw=sideways", "sideways", "randread"),
        ("ioengine=net", "net", "network or object-store server"),
        ("ioengine=warp", "warp", "not a fio engine"),
        ("size=(1g/0)", "(1g/0)", "divides by zero"),
        ("size=$nope*2", "$nope*2", "`$nope` is not defined"),
        ("kb_base=1023", "1023", "1024 or 1000"),
        ("bssplit=4k/60:8k/60", "4k/60:8k/60", "100"),
        ("numjobs=0", "0", "1 to"),
        ("bs=", "", "value is expected"),
        ("rate=1m,2m,3m,4m", "1m,2m,3m,4m", "at most 3"),
        ("filesize=4k-x", "4k-x", "not a number"),
    ];
    for (line, value, expected) in cases {
        let option = line.split('=').next().unwrap();
        let e = err(&format!("[global]\n[j]\n{line}\n"));
        let text = e.to_string();
        assert!(text.starts_with("test.fio:3: option `"), "{line}: {text}");
        assert_eq!(e.option.as_deref(), Some(option), "{line}");
        assert!(text.contains(&format!("`{value}`")), "{line}: {text}");
        assert!(text.contains(expected), "{line}: expected `{expected}` in {text}");
    }
}

#[test]
fn bare_boolean_needs_a_value_like_fio() {
    let e = err("[j]\ndirect\n");
    assert!(e.to_string().contains("test.fio:2: option `direct`"), "{e}");
    assert!(e.message.contains("needs a value"));
}

#[test]
fn errors_in_global_are_reported_at_the_global_line() {
    let e = err("[global]\nbs=3\n[a]\n[b]\n");
    assert_eq!(e.location.line, 2);
}

#[test]
fn later_option_overrides_earlier_and_both_are_recorded() {
    let j = &parse("[j]\nbs=4k\nstonewall\nbs=8k\n").unwrap().jobs[0];
    assert_eq!(j.block_size[0], BlockSize::Fixed { bytes: 8192 });
    assert!(j.stonewall);
    assert_eq!(j.options, opts(&[("bs", "4k"), ("bs", "8k")]));
}

proptest! {
    #[test]
    fn arbitrary_text_never_panics(text in "[ -~\n\t]{0,400}") {
        let _ = parse(&text);
    }

    #[test]
    fn arbitrary_unicode_never_panics(text in "(\\PC|\n|\r){0,200}") {
        let _ = parse(&text);
    }

    #[test]
    fn arbitrary_option_lines_never_panic(
        key in prop::sample::select(vec![
            "bs", "bsrange", "bssplit", "size", "offset", "rate", "rate_iops", "runtime",
            "thinktime", "rw", "filesize", "file_service_type", "ioengine", "kb_base",
            "iodepth", "prio", "time_based", "verify",
        ]),
        value in "[ -~]{0,30}",
    ) {
        let _ = parse(&format!("[j]\n{key}={value}\n"));
    }
}

#[test]
fn page_cache_options_parse() {
    let f = parse(
        "[j]\nfadvise_hint=random\ninvalidate=0\npre_read=1\nend_fsync=1\nfsync_on_close=1\nfdatasync=4\nsync=dsync\nfile_append=1\nwrite_barrier=8\ncreate_on_open=1\n",
    )
    .unwrap();
    let j = &f.jobs[0];
    assert_eq!(j.write_barrier_every, 8);
    assert!(j.create_on_open);
    assert_eq!(j.fadvise_hint, FadviseHint::Random);
    assert!(!j.invalidate && j.pre_read && j.end_fsync && j.fsync_on_close && j.file_append);
    assert_eq!((j.fdatasync_every, j.sync_io), (4, SyncIo::Dsync));
    assert!(f.warnings.is_empty(), "{:?}", f.warnings);
    let d = &parse("[j]\n").unwrap().jobs[0];
    assert_eq!((d.fadvise_hint, d.invalidate, d.sync_io), (FadviseHint::Auto, true, SyncIo::None));
    for bad in [
        "[j]\nsync=maybe\n",
        "[j]\nfadvise_hint=often\n",
        "[j]\ninvalidate=yes please\n",
        "[j]\nwrite_barrier=-1\n",
    ] {
        let e = parse(bad).unwrap_err().to_string();
        assert!(e.contains(":2:"), "{e}");
    }
}

#[test]
fn cpuio_options() {
    let j = &parse(
        "[j]\nioengine=cpuio\ncpuload=150\ncpuchunks=2000\ncpumode=qsort\nexit_on_io_done=1\n",
    )
    .unwrap()
    .jobs[0];
    // fio takes a load above 100 % as 100 %; cpuchunks is in microseconds.
    assert_eq!((j.cpuload_percent, j.cpuchunks_ns, j.exit_on_io_done), (100, 2 * NS_PER_MS, true));
    assert_eq!(parse("[j]\nioengine=cpuio\n").unwrap().jobs[0].cpuchunks_ns, 50 * NS_PER_MS);
    for bad in ["cpuchunks=0", "cpumode=spin", "cpuload=-1", "cpuchunks=99999999999999"] {
        let e = err(&format!("[j]\nioengine=cpuio\n{bad}\n"));
        assert!(e.to_string().contains("test.fio:3"), "{bad}: {e}");
    }
}

/// fio parses a section's options by priority (`sort_options`): `kb_base` first, so a size
/// written before it is read in its base; `filename` last. Real fio's JSON lists them so.
#[test]
fn a_section_s_options_are_parsed_in_fio_s_priority_order() {
    let file = parse_str(
        "[j]\nfilename=/tmp/x\nbs=64k\nsize=1m\nkb_base=1000\n",
        "prio.fio",
        Path::new("."),
        &|_| None,
    )
    .unwrap();
    let j = &file.jobs[0];
    assert_eq!(j.block_size[0], BlockSize::Fixed { bytes: 64_000 });
    let keys: Vec<&str> = j.options.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["kb_base", "bs", "size", "filename"]);
}

/// How the statistics sample bandwidth, as fio 3.33's `init.c` settles `bw_avg_time`
/// against the bandwidth log (real fio's `bw_samples` for a 3 s job at 1000 IOPS: 5, 11,
/// 3001, 28, 2 and 3001 for the six cases below).
#[test]
fn bandwidth_sampling_follows_the_log_as_fio_settles_it() {
    let sampling = |extra: &str| {
        let text = format!("[j]\nfilename=/tmp/x\nsize=1m\n{extra}");
        parse_str(&text, "s.fio", Path::new("."), &|_| None).unwrap().jobs[0].logs.bw_sampling()
    };
    let window = |ms| Sampling::Window { ms };
    assert_eq!(sampling(""), window(500));
    assert_eq!(sampling("bwavgtime=250\n"), window(250));
    assert_eq!(sampling("write_bw_log=b\n"), Sampling::PerIo);
    assert_eq!(sampling("write_bw_log=b\nlog_avg_msec=100\n"), window(100));
    assert_eq!(sampling("write_bw_log=b\nlog_avg_msec=100\nbwavgtime=1000\n"), window(1000));
    assert_eq!(sampling("write_bw_log=b\nbwavgtime=250\n"), Sampling::PerIo);
    assert!(parse_str("[j]\nbwavgtime=0\n", "s.fio", Path::new("."), &|_| None).is_err());
}

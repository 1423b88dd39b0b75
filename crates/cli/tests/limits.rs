//! Careless and hostile input to the `elevator` binary: each case of issue 19 is one line on
//! stderr naming the file (and line, and key where there is one), exit status 1, and never
//! the contents of a file that is not a job file. (Time and memory are measured by
//! `bench/attack.sh`.)

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("elevator-cli-limits-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs elevator in `cwd`; asserts exit status 1 and a single line on stderr, returns it.
fn fails(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "elevator {args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(err.starts_with("elevator: "), "{err}");
    err
}

const JOB: &str = "[j]\nrw=read\nsize=1m\n";

#[test]
fn topology_counts_are_checked_before_allocation() {
    let d = dir("topo");
    std::fs::write(d.join("j.fio"), JOB).unwrap();
    // (file, topology, what the error names beside `file:LINE`, the key's line): a drive
    // queue of a billion,
    // an array of 100,000 members, a disk of four billion surfaces or of tracks of 2^63
    // sectors.
    let cases = [
        (
            "hdd.toml",
            "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\n[device.params]\nqueue_depth = 1000000000\n",
            "queue_depth",
        ),
        (
            "array.toml",
            "[[device]]\nname = \"md0\"\nmodel = \"raid0\"\nchunk = \"64KiB\"\nmembers = 100000\n[device.member]\nmodel = \"ram\"\n",
            "members",
        ),
        (
            "surfaces.toml",
            "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n[device.params]\nsurfaces = 4000000000\n",
            "surfaces = 4000000000",
        ),
        (
            "track.toml",
            "[[device]]\nname = \"sda\"\nmodel = \"hdd\"\npreset = \"sata-7200-2009\"\n[device.params]\nzones = [{ first_cylinder = 0, last_cylinder = 9, sectors_per_track = 9223372036854775807 }]\n",
            "sectors_per_track",
        ),
    ];
    for (file, topology, key) in cases {
        std::fs::write(d.join(file), topology).unwrap();
        let e = fails(&d, &["run", "j.fio", "--topology", file]);
        let name = key.split(' ').next().unwrap();
        let line = topology.lines().position(|l| l.contains(name)).unwrap() + 1;
        assert!(e.contains(&format!("{file}:{line}:")) && e.contains(key), "{e}");
    }
}

#[test]
fn device_times_and_rates_are_bounded() {
    // A drive whose one step takes longer than a minute, or whose bus moves less than a
    // kilobyte a second, is refused by name (before the limits, these ran into the end of
    // the nanosecond clock and never finished); the bounds themselves run.
    let d = dir("device-times");
    std::fs::write(d.join("j.fio"), "[j]\nrw=randread\nsize=16m\nruntime=1\ntime_based\n").unwrap();
    let topology = |model: &str, kv: &str| {
        format!("[[device]]\nname = \"sda\"\nmodel = \"{model}\"\n[device.params]\n{kv}\n")
    };
    for (model, kv, key) in [
        ("hdd", "head_switch_ms = 1e30", "head_switch_ms"),
        ("hdd", "read_overhead_ms = 1e30", "read_overhead_ms"),
        ("hdd", "bus_bytes_per_sec = 1e-6", "bus_bytes_per_sec"),
        ("hdd", "rpm = 1e12", "rpm"),
        ("ssd", "controller_overhead_us = 1e30", "controller_overhead_us"),
        ("ssd", "page_read_us = 1e30", "page_read_us"),
        ("ssd", "channel_bytes_per_sec = 1e-6", "channel_bytes_per_sec"),
    ] {
        std::fs::write(d.join("t.toml"), topology(model, kv)).unwrap();
        let err = fails(&d, &["run", "j.fio", "--topology", "t.toml", "--output-format", "terse"]);
        assert!(err.contains("t.toml:5") && err.contains(key), "{kv}: {err}");
    }
    for (model, kv) in [
        ("hdd", "head_switch_ms = 60000"),
        ("hdd", "bus_bytes_per_sec = 1000"),
        ("ssd", "controller_overhead_us = 6e7"),
    ] {
        std::fs::write(d.join("t.toml"), topology(model, kv)).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_elevator"))
            .current_dir(&d)
            .args(["run", "j.fio", "--topology", "t.toml", "--output-format", "terse"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{kv}: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn job_file_counts_and_includes_are_bounded() {
    let d = dir("jobs");
    std::fs::write(d.join("many.fio"), "[j]\nrw=read\nsize=1m\nnumjobs=100000\n").unwrap();
    let e = fails(&d, &["run", "many.fio"]);
    assert!(e.contains("many.fio:4") && e.contains("numjobs"), "{e}");
    for i in 0..30 {
        let next = format!("include inc{}.fio\ninclude inc{}.fio\n", i + 1, i + 1);
        std::fs::write(d.join(format!("inc{i}.fio")), next).unwrap();
    }
    std::fs::write(d.join("inc30.fio"), "bs=4k\n").unwrap();
    std::fs::write(d.join("bomb.fio"), format!("{JOB}include inc0.fio\n")).unwrap();
    let e = fails(&d, &["run", "bomb.fio"]);
    assert!(e.contains("includes"), "{e}");
    let secret = d.join("secret");
    std::fs::write(&secret, "root:$6$hashofroot:19000:0:99999:7:::\n").unwrap();
    std::fs::write(d.join("leak.fio"), format!("{JOB}include {}\n", secret.display())).unwrap();
    let e = fails(&d, &["run", "leak.fio"]);
    assert!(e.contains("secret:1") && !e.contains("hashofroot"), "{e}");
    // A topology that is not TOML at all is not quoted either.
    let e = fails(&d, &["run", "leak.fio", "--topology", secret.to_str().unwrap()]);
    assert!(!e.contains("hashofroot"), "{e}");
}

#[test]
fn replay_times_past_simulated_time_are_refused() {
    let d = dir("replay");
    let log = format!(
        "fio version 2 iolog\nsda add\nsda read 0 4096\nsda wait 0 {}\nsda read 0 4096\n",
        u64::MAX
    );
    std::fs::write(d.join("r.log"), log).unwrap();
    std::fs::write(d.join("r.fio"), "[r]\nread_iolog=r.log\nreplay_redirect=sda\n").unwrap();
    let e = fails(&d, &["run", "r.fio"]);
    assert!(e.contains("r.log:5") && e.contains("simulated day"), "{e}");
}

#[test]
fn scenarios_that_do_not_parse_are_errors_even_in_the_list() {
    let d = dir("scenarios");
    std::fs::write(d.join("broken.toml"), "name = \"x\"\n[[table]\ntitle = 1\n").unwrap();
    let e = fails(&d, &["reproduce", "--list", "--scenarios", "."]);
    assert!(e.contains("broken.toml:2"), "{e}");
    let values: Vec<String> = (0..300).map(|i| i.to_string()).collect();
    let big = format!(
        "name = \"big\"\nseed_mail = \"000\"\ntitle = \"t\"\n[[table]]\ntitle = \"t\"\njobfile = \"j.fio\"\nvary = \"N\"\nvalues = {values:?}\ncolumns = [\"g0.agg_bw\"]\n[[table.variant]]\nlabel = \"a\"\nscheduler = \"none\"\n"
    );
    std::fs::write(d.join("broken.toml"), big).unwrap();
    let e = fails(&d, &["reproduce", "--list", "--scenarios", "."]);
    assert!(e.contains("300 values") && e.contains("at most 256"), "{e}");
}

#[test]
fn what_a_scenario_names_is_checked_at_its_line_before_anything_runs() {
    let d = dir("scenario-names");
    // The first table would run 30 simulated seconds; the typo is in the second.
    std::fs::write(d.join("j.fio"), "[j]\nrw=randread\nruntime=30\ntime_based\n").unwrap();
    let scenario = |second: &str| {
        format!(
            "name = \"x\"\nseed_mail = \"000\"\ntitle = \"t\"\n\n[[table]]\ntitle = \"first\"\njobfile = \"j.fio\"\ncolumns = [\"g0.agg_bw\"]\n[[table.variant]]\nlabel = \"a\"\nscheduler = \"none\"\n\n[[table]]\ntitle = \"second\"\njobfile = \"j.fio\"\ncolumns = [\"g0.agg_bw\"]\n[[table.variant]]\nlabel = \"b\"\n{second}\n"
        )
    };
    for (second, line, want) in [
        ("scheduler = \"cfqq\"", 19, "table `second`, b: unknown scheduler `cfqq`"),
        (
            "scheduler = \"cfq\"\niosched = { slice_idel = 0 }",
            20,
            "iosched slice_idel: scheduler `cfq` has no tunable `slice_idel`",
        ),
        (
            "scheduler = \"cfq\"\ntopology = \"gone.toml\"",
            20,
            "second`, b: topology `gone.toml`: no such file",
        ),
    ] {
        std::fs::write(d.join("x.toml"), scenario(second)).unwrap();
        let e = fails(&d, &["reproduce", "x", "--scenarios", "."]);
        assert!(e.contains(&format!("x.toml:{line}: ")) && e.contains(want), "{second}: {e}");
    }
    // A job file that needs a `${VAR}` the second table does not give, row by row.
    std::fs::write(d.join("v.fio"), "[j]\nrw=randread\nbs=${BS}\nruntime=1\n").unwrap();
    let text = scenario("scheduler = \"none\"")
        .replacen("jobfile = \"j.fio\"", "jobfile = \"v.fio\"\nvars = { BS = \"4k\" }", 1)
        .replacen("jobfile = \"j.fio\"", "jobfile = \"v.fio\"\nvary = \"N\"\nvalues = [\"1\"]", 1);
    std::fs::write(d.join("x.toml"), text).unwrap();
    let e = fails(&d, &["reproduce", "x", "--scenarios", "."]);
    assert!(e.contains("x.toml:16: table `second`, N = 1: ") && e.contains("BS"), "{e}");
    std::fs::write(d.join("x.toml"), scenario("scheduler = \"none\"").replace("j.fio", "k.fio"))
        .unwrap();
    let e = fails(&d, &["reproduce", "--list", "--scenarios", "."]);
    assert!(e.contains("x.toml:7: table `first`: jobfile `k.fio`: no such file"), "{e}");
}

#[test]
fn argument_errors_exit_1_in_one_line() {
    let d = dir("args");
    let e = fails(&d, &["run", "x.fio", "--seed", "99999999999999999999999"]);
    assert!(e.contains("--seed"), "{e}");
    fails(&d, &["run", "x.fio", "--bogus"]);
}

#[test]
fn block_sizes_are_bounded_by_one_read_and_by_the_data_set() {
    let d = dir("bs");
    // More than read(2) moves at once (MAX_RW_COUNT): refused where it is written. A fuzzed
    // job with bs=4294967296k used to run for minutes.
    std::fs::write(d.join("huge.fio"), "[j]\nfilename=sda\nrw=randread\nbs=4294967296k\n").unwrap();
    let e = fails(&d, &["run", "huge.fio"]);
    assert!(e.contains("huge.fio:4") && e.contains("bs") && e.contains("MAX_RW_COUNT"), "{e}");
    // A block larger than the job's data set: fio's "blocksize is larger than data set range".
    std::fs::write(d.join("set.fio"), "[j]\nfilename=sda\nrw=randread\nsize=1m\nbs=2m\n").unwrap();
    let e = fails(&d, &["run", "set.fio"]);
    assert!(e.contains("set.fio") && e.contains("larger than data set range"), "{e}");
    // The same for a file tree, over its files' data (real fio 3.33 refuses this one too).
    std::fs::write(
        d.join("tree.fio"),
        "[j]\ndirectory=sda\nrw=read\nnrfiles=2\nfilesize=4k\nbs=16k\n",
    )
    .unwrap();
    let e = fails(&d, &["run", "tree.fio"]);
    assert!(e.contains("tree.fio:1") && e.contains("larger than data set range"), "{e}");
}

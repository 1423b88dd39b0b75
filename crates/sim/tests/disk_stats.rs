//! The disks a run's statistics list (text `Disk stats`, JSON `disk_util`, terse): as fio's
//! `init_disk_util`, the disks the files of its jobs with `disk_util` on are on, here each
//! device under the volume a job names, and not the topology's other devices.

use std::path::Path;

use elevator_sim::{report, simulate, SimOptions, Topology};
use serde_json::Value;

/// Three disks; a striped volume over partitions of the first two, an ioband device over it.
const TOPOLOGY: &str = r#"
[[device]]
name = "sda"
model = "hdd"

[[device]]
name = "sdb"
model = "hdd"

[[device]]
name = "sdc"
model = "hdd"

[[partition]]
name = "sda1"
device = "sda"
start = "1GiB"
size = "4GiB"

[[partition]]
name = "sdb1"
device = "sdb"
start = "1GiB"
size = "4GiB"

[[volume]]
name = "lv0"
target = "striped"
chunk = "64KiB"
over = ["sda1", "sdb1"]

[[ioband]]
name = "vg0"
policy = "weight"

[[volume]]
name = "ioband1"
target = "ioband"
over = ["lv0"]
share = "vg0"
weight = 10
"#;

/// The names of the disks each output lists for one job per name in `files` (a name, then
/// any options of that job).
fn listed(files: &[&str]) -> (Vec<String>, Vec<String>, usize) {
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let mut job = String::from("[global]\ndirect=1\nrw=randread\nsize=16m\nruntime=1\n");
    for (i, f) in files.iter().enumerate() {
        job.push_str(&format!("[j{i}]\nfilename={f}\n"));
    }
    let jobs = elevator_fio::parse_str(&job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions { seed: 1, ..SimOptions::default() }).unwrap();
    let json: Value = serde_json::from_str(&report::json::render(&r, &jobs, 1, &t.source)).unwrap();
    let in_json = json["disk_util"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect();
    let text = report::normal::render(&r, &jobs);
    let stats = &text[text.find("Disk stats").expect("a Disk stats section")..];
    let in_text = stats
        .lines()
        .skip(1)
        .filter_map(|l| l.strip_prefix("  ")?.split(':').next())
        .filter(|name| !name.starts_with(' '))
        .map(str::to_string)
        .collect();
    let terse = report::terse::render(&r, &jobs);
    // Nine fields per disk after a job's 121.
    let terse_disks = (terse.lines().next().unwrap().split(';').count() - 121) / 9;
    (in_json, in_text, terse_disks)
}

#[test]
fn only_the_disks_the_jobs_files_are_on() {
    for (files, disks) in [
        (&["sdc"][..], &["sdc"][..]),
        (&["sda1"], &["sda"]),
        (&["sdb", "sdc"], &["sdb", "sdc"]),
        (&["lv0"], &["sda", "sdb"]),
        (&["ioband1"], &["sda", "sdb"]),
        (&["ioband1", "sdc"], &["sda", "sdb", "sdc"]),
        (&["sdb\ndisk_util=0", "sdc"], &["sdc"]),
        (&["sdb\ndisk_util=0", "sdb", "sdc\ndisk_util=0"], &["sdb"]),
    ] {
        let (json, text, terse) = listed(files);
        assert_eq!(json, disks, "JSON, jobs on {files:?}");
        assert_eq!(text, disks, "text, jobs on {files:?}");
        assert_eq!(terse, disks.len(), "terse, jobs on {files:?}");
    }
}

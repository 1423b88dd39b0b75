//! `offset=` and `offset_increment=`: where each job clone's region starts (fio's
//! `get_start_offset`: `offset + offset_increment * subjob_number`), on a device, in a
//! regular file the clones share, and in the clones' own files.

use std::path::Path;

use elevator_sim::{simulate, SimOptions, Topology};

mod common;

use common::RAM_DISK_16G as TOPOLOGY;

/// Each process's (start, length) in bytes, in clone order.
fn regions(job: &str) -> Vec<(u64, u64)> {
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let r = simulate(&jobs, &t, &SimOptions::default()).unwrap();
    r.processes.iter().map(|p| (p.region.start_bytes, p.region.len_bytes)).collect()
}

const G: u64 = 1 << 30;

#[test]
fn clones_of_a_device_job_start_an_increment_apart() {
    let job = "[r]\nfilename=sda\ndirect=1\nrw=read\nbs=64k\nsize=1G\nnumjobs=4\noffset=1G\noffset_increment=3G\nnumber_ios=1\n";
    // fio numbers the clones after the first in reverse: the second process is sub-job 3.
    assert_eq!(regions(job), vec![(G, G), (10 * G, G), (7 * G, G), (4 * G, G)]);
    // Percentages are of the device, as fio's are of the file.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=read\nbs=64k\nsize=1G\nnumjobs=4\noffset_increment=25%\nnumber_ios=1\n";
    assert_eq!(regions(job), vec![(0, G), (12 * G, G), (8 * G, G), (4 * G, G)]);
    // The last clone past the end of the device is refused, naming the job.
    let job = "[r]\nfilename=sda\ndirect=1\nrw=read\nbs=64k\nsize=1G\nnumjobs=4\noffset_increment=6G\nnumber_ios=1\n";
    let t = Topology::from_str(TOPOLOGY, "t.toml").unwrap();
    let jobs = elevator_fio::parse_str(job, "j.fio", Path::new("."), &|_| None).unwrap();
    let Err(e) = simulate(&jobs, &t, &SimOptions::default()) else { panic!("accepted") };
    let e = e.to_string();
    assert!(e.contains("job `r`") && e.contains("past the end"), "{e}");
}

#[test]
fn clones_sharing_a_file_grow_it_to_their_own_regions() {
    // Each clone does its size= from its own offset, the file growing to hold it (fio's
    // setup_files extends a file to the clone's offset and size), sub-jobs in reverse.
    let job = "[r]\nfilename=data\nrw=read\nbs=64k\nsize=4G\nnumjobs=4\noffset_increment=1G\nnumber_ios=1\n";
    let r = regions(job);
    let base = r[0].0;
    let got: Vec<(u64, u64)> = r.iter().map(|&(s, l)| (s - base, l)).collect();
    assert_eq!(got, vec![(0, 4 * G), (3 * G, 4 * G), (2 * G, 4 * G), (G, 4 * G)]);
    // A percentage offset counts from the file as the clones before left it: 0 for the
    // first (the file does not exist yet), then 4G, then 4G + the second's 10 %.
    let job = "[r]\nfilename=data\nrw=read\nbs=64k\nsize=4G\nnumjobs=3\noffset=10%\nnumber_ios=1\n";
    let r = regions(job);
    let base = r[0].0;
    let got: Vec<u64> = r.iter().map(|&(s, _)| s - base).collect();
    let second = (4 * G / 10).div_ceil(65536) * 65536;
    let third = ((second + 4 * G) / 10).div_ceil(65536) * 65536;
    assert_eq!(got, vec![0, second, third]);
}

#[test]
fn without_an_increment_clones_keep_the_same_offset() {
    let job = "[r]\nfilename=sda\ndirect=1\nrw=read\nbs=64k\nsize=1G\nnumjobs=3\noffset=2G\nnumber_ios=1\n";
    assert_eq!(regions(job), vec![(2 * G, G); 3]);
}

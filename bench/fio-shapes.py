#!/usr/bin/env python3
"""Runs random fio job shapes through `elevator run` and reports crashes and hangs.

Each shape is one job (sometimes followed by a stonewalled copy on the same file or tree)
drawn from the options users combine: directions and `rw=...:N`, single files and trees
(`nrfiles`, `filesize` ranges, `file_service_type`, `openfiles`), block sizes and ranges,
engines and depths, direct or buffered, fsync/fdatasync/sync_file_range, loops, io_size,
offsets, number_ios, rwmix, random maps and distributions, verify, runtime, rates,
thinktime, numjobs, invalidate/pre_read/fadvise, ramp and start delays, barriers, unlink,
trim_percentage, fill_device. A run
must end with status 0 (it ran) or 1 (a one-line refusal); a panic (101), a signal, or
a run past TIMEOUT seconds is reported with the job file that caused it.

Usage: bench/fio-shapes.py SEED COUNT
  env: ELEVATOR=path (default target/release/elevator; build it first), TIMEOUT=seconds (60),
       WORK=directory for the job files and their data (a fresh temporary one by default)
The same SEED draws the same shapes. Prints each failure and `failures N of COUNT`; exits 1
if there was any.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile


def shape(r):
    """One job's options (a string of lines) and whether it runs over a file tree."""
    o = []

    def maybe(p, s):
        if r.random() < p:
            o.append(s)

    rw = r.choice(["read", "write", "randread", "randwrite", "rw", "randrw", "readwrite",
                   "trim", "randtrim", "write"])
    o.append(f"rw={rw}")
    tree = r.random() < 0.4
    if tree:
        o.append(f"nrfiles={r.choice([1, 2, 3, 5, 8])}")
        o.append(f"filesize={r.choice(['4k', '8k', '16k', '12k', '8k-32k', '1m'])}")
        maybe(0.3, "file_service_type=" + r.choice(
            ["roundrobin", "sequential", "random", "roundrobin:2", "random:3", "zipf:1.1",
             "pareto:0.5", "normal:50"]))
        maybe(0.2, f"openfiles={r.choice([1, 2])}")
    else:
        o.append(f"size={r.choice(['64k', '200k', '1m', '96k', '10k', '3m'])}")
    o.append(r.choice([f"bs={r.choice(['4k', '8k', '16k', '512', '1k', '64k', '3k'])}",
                       "bsrange=1k-16k", "bssplit=4k/50:16k/30:64k/20", "bs=4k,16k"]))
    if r.random() < 0.4:
        o.append(r.choice(["ioengine=libaio", "ioengine=io_uring", "ioengine=posixaio"]))
        o.append(f"iodepth={r.choice([1, 2, 4, 8, 32])}")
        maybe(0.3, f"iodepth_batch={r.choice([1, 2, 4])}")
        maybe(0.3, f"iodepth_low={r.choice([1, 2])}")
    else:
        o.append(r.choice(["ioengine=psync", "ioengine=sync", "ioengine=pvsync", "ioengine=mmap",
                           "ioengine=null"]))
    maybe(0.5, f"direct={r.choice([0, 1])}")
    maybe(0.2, f"fsync={r.choice([1, 3, 7])}")
    maybe(0.15, f"fdatasync={r.choice([2, 5])}")
    maybe(0.1, f"sync_file_range=write:{r.choice([1, 4])}")
    maybe(0.2, f"loops={r.choice([2, 3])}")
    maybe(0.2, f"io_size={r.choice(['100k', '300k', '40k', '1k', '7m'])}")
    maybe(0.15, f"offset={r.choice(['4k', '16k', '10%', '50%', '99%'])}")
    maybe(0.15, f"number_ios={r.choice([0, 1, 5, 17])}")
    maybe(0.3, f"rwmixread={r.choice([0, 30, 50, 70, 100])}")
    maybe(0.15, "norandommap")
    maybe(0.1, f"randseed={r.choice([1, 42, 1234])}")
    maybe(0.1, "end_fsync=1")
    maybe(0.1, "fsync_on_close=1")
    maybe(0.08, f"zonesize={r.choice(['16k', '32k'])}\nzoneskip={r.choice(['0', '16k', '48k'])}")
    maybe(0.08, f"rw={rw}:{r.choice(['4k', '8k'])}")
    maybe(0.1, f"verify={r.choice(['crc32c', 'md5', 'pattern'])}"
          + ("\nverify_pattern=0xaa" if r.random() < 0.5 else ""))
    maybe(0.1, f"runtime={r.choice(['1', '2', '500ms'])}"
          + ("\ntime_based" if r.random() < 0.6 else ""))
    maybe(0.1, f"rate={r.choice(['1m', '100k', '50k,10k'])}")
    maybe(0.1, f"rate_iops={r.choice(['10', '100'])}")
    maybe(0.1, f"thinktime={r.choice(['100', '1000'])}"
          + (f"\nthinktime_blocks={r.choice([1, 4])}" if r.random() < 0.5 else ""))
    maybe(0.1, "random_distribution=" + r.choice(
        ["zipf:1.2", "pareto:0.3", "normal:20", "zoned:50/10:50/90", "random"]))
    maybe(0.1, f"percentage_random={r.choice([0, 30, 100])}")
    maybe(0.08, f"numjobs={r.choice([2, 3])}")
    maybe(0.08, f"invalidate={r.choice([0, 1])}")
    maybe(0.05, "pre_read=1")
    maybe(0.08, f"fadvise_hint={r.choice(['0', '1', 'sequential', 'random'])}")
    maybe(0.08, f"ramp_time={r.choice(['100ms', '1'])}")
    maybe(0.05, f"startdelay={r.choice(['10ms', '1'])}")
    maybe(0.05, f"blockalign={r.choice(['4k', '8k'])}")
    maybe(0.05, "rw_sequencer=identical")
    maybe(0.05, "serialize_overlap=1")
    maybe(0.05, f"write_barrier={r.choice([1, 2])}")
    maybe(0.05, f"offset_increment={r.choice(['4k', '10%'])}")
    maybe(0.05, "unlink=1")
    maybe(0.05, "trim_percentage=50\ntrim_backlog=4")
    maybe(0.05, "buffered=1")
    maybe(0.05, "fill_device=1")
    return "\n".join(o), tree


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().split("\n\n")[-1])
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(root, "target"))
    elevator = os.environ.get("ELEVATOR", os.path.join(target, "release", "elevator"))
    timeout = float(os.environ.get("TIMEOUT", "60"))
    work = os.environ.get("WORK") or tempfile.mkdtemp(prefix="fio-shapes.")
    r = random.Random(seed)
    failures = 0
    for _ in range(count):
        options, tree = shape(r)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(os.path.join(work, "t"))
        place = f"directory={work}/t" if tree else f"filename={work}/t/data"
        text = f"[t]\n{place}\n{options}\nwrite_iolog={work}/t.log\n"
        if r.random() < 0.2:
            text += f"[u]\nstonewall\n{place}\n{options}\n"
        with open(os.path.join(work, "t.fio"), "w") as f:
            f.write(text)
        try:
            p = subprocess.run([elevator, "run", "t.fio"], cwd=work, capture_output=True,
                               text=True, timeout=timeout)
            if p.returncode not in (0, 1) or "panicked" in p.stderr:
                failures += 1
                print(f"=== exit {p.returncode}\n{text}{p.stderr[:600]}")
        except subprocess.TimeoutExpired:
            failures += 1
            print(f"=== past {timeout:g} s\n{text}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"failures {failures} of {count}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

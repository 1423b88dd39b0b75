#!/usr/bin/env python3
"""Mutational fuzzing of elevator's inputs: every run must end with exit 0 or a short error
(exit 1 or 2, at most two lines besides warnings), never a panic (101), a signal or a hang.

Each run takes a file that works, changes one or two of its lines (a number replaced by an odd
value, a value replaced, a line dropped, doubled or cut) and runs elevator on it. Inputs that
break elevator are kept, with what it printed, in OUT/bad-SEED-N/.

  fuzz/inputs.py jobs      [--seed S] [--runs N]   fio job files + topologies (`run`)
  fuzz/inputs.py combos    [--seed S] [--runs N]   new job files from valid options (`run`)
  fuzz/inputs.py disksim   [--seed S] [--runs N]   DiskSim drive directories (`validate-disk`)
  fuzz/inputs.py scenarios [--seed S] [--runs N]   scenario files and sweep grids
  fuzz/inputs.py recordings [--seed S] [--runs N]  `calibrate --record` files (`--replay`)

`disksim` needs the validation drives laid out by bench/disksim-drives.sh (DRIVES, default
/tmp/drives). `recordings` records a 3 s calibration of a 96 MiB file in OUT first (the file
system must take O_DIRECT), then changes its fields and phases as JSON values, not lines.
ELEVATOR names the binary (default target/release/elevator, built first).
"""
import argparse
import copy
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ODD = ["0", "-1", "-0", "1.5", "", "abc", "nan", "inf", "1e308", "4294967296",
       "18446744073709551615", "99999999999999999999", "9223372036854775807", "0x10", "1k",
       "100%", "1000000%", '""', '"x"', "[]", "{}", "true", '"999999TiB"', '"-5MiB"', "1ns",
       "99999999h", "2147483648"]


def mutate(text, rng):
    lines = text.split("\n")
    for _ in range(rng.randint(1, 2)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        line, r = lines[i], rng.random()
        if r < 0.45 and re.search(r"\d", line):
            lines[i] = re.sub(r"-?\d+(\.\d+)?", lambda m: rng.choice(ODD), line, count=1)
        elif r < 0.65 and "=" in line:
            key, _, _ = line.partition("=")
            lines[i] = key + "=" + rng.choice(ODD)
        elif r < 0.75:
            del lines[i]
        elif r < 0.85:
            lines.insert(i, line)
        else:
            lines[i] = line[: rng.randrange(len(line) + 1)]
    return "\n".join(lines)


def run(cmd, cwd, timeout):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stderr.strip()
    except subprocess.TimeoutExpired:
        return "timeout", ""


def broken(rc, err):
    lines = [l for l in err.split("\n") if l.strip() and "warning" not in l]
    return rc not in (0, 1, 2) or "panicked" in err or (rc != 0 and len(lines) > 2)


def short_runs(job):
    """Every job at most a second of simulated time."""
    job = re.sub(r"runtime=\d+\w*", "runtime=1", job)
    if "runtime=" not in job:
        head = "[global]\nruntime=1\ntime_based\n"
        job = job.replace("[global]", head, 1) if "[global]" in job else head + job
    return job


def fuzz_jobs(elev, rng, runs, work):
    jobs = glob.glob(f"{ROOT}/examples/*.fio") + glob.glob(f"{ROOT}/scenarios/*/*.fio")
    topos = glob.glob(f"{ROOT}/examples/*.toml") + glob.glob(f"{ROOT}/scenarios/topologies/*.toml")
    os.makedirs(work, exist_ok=True)

    def attempt(job, topo):
        jf, tf = f"{work}/job.fio", f"{work}/topology.toml"
        open(jf, "w").write(short_runs(job))
        open(tf, "w").write(topo)
        return run([elev, "run", jf, "--topology", tf, "--output-format", "terse"], None, 120)

    # Pairs that run clean unmutated, so that a failure is the mutation's.
    pairs = []
    for _ in range(300):
        j, t = rng.choice(jobs), rng.choice(topos)
        os.chdir(os.path.dirname(j))
        if attempt(open(j).read(), open(t).read())[0] == 0:
            pairs.append((j, t))
    for n in range(runs):
        j, t = rng.choice(pairs)
        os.chdir(os.path.dirname(j))
        job, topo = open(j).read(), open(t).read()
        if rng.random() < 0.5:
            job = mutate(job, rng)
        else:
            topo = mutate(topo, rng)
        rc, err = attempt(job, topo)
        yield n, rc, err, work, f"{j} + {t}"


# Options `combos` draws from, each with values fio takes: the write path and page cache
# (direct or buffered, syncs, fadvise, invalidate), engines and depths, mixes, rates, think
# times, files, zones, verify, cgroups and priorities. Each job takes every option with
# probability COMBO_P, so that odd pairs (fsync with libaio, verify with zones) come up.
COMBO_OPTIONS = [
    ("ioengine", ["psync", "sync", "pvsync", "libaio", "io_uring", "posixaio", "mmap"]),
    ("iodepth", ["1", "4", "32", "128"]), ("direct", ["0", "1"]), ("fsync", ["1", "3"]),
    ("fdatasync", ["2"]), ("end_fsync", ["1"]), ("sync", ["1"]), ("fsync_on_close", ["1"]),
    ("write_barrier", ["1"]), ("numjobs", ["2", "4"]), ("rwmixread", ["10", "50", "90"]),
    ("invalidate", ["0", "1"]), ("fadvise_hint", ["0", "1", "sequential", "random"]),
    ("pre_read", ["1"]), ("thinktime", ["100", "10ms"]), ("rate", ["1m", "50m"]),
    ("rate_iops", ["100"]), ("nrfiles", ["3"]), ("file_service_type", ["random", "roundrobin"]),
    ("loops", ["2"]), ("norandommap", ["1"]),
    ("random_distribution", ["zipf:1.2", "pareto:0.9", "normal:10"]), ("offset", ["10%", "4k"]),
    ("io_size", ["8m"]), ("bsrange", ["4k-64k"]), ("verify", ["md5", "crc32c"]),
    ("cgroup", ["a", "b/c"]), ("prio", ["0", "7"]), ("prioclass", ["1", "2", "3"]),
    ("time_based", ["1"]), ("new_group", [None]), ("create_on_open", ["1"]),
]
COMBO_P = 0.15
SCHEDULERS = ["mq-deadline", "deadline", "cfq", "bfq", "kyber", "anticipatory", "none", "noop"]


def combo_job(rng, targets):
    """One to three jobs of random valid options, on the topology's targets or on files."""
    text = ""
    for i in range(rng.randint(1, 3)):
        lines = [f"[j{i}]", "rw=" + rng.choice(["read", "write", "randread", "randwrite", "rw",
                                                "randrw", "readwrite"]),
                 "bs=" + rng.choice(["512", "4k", "16k", "64k", "1m"]),
                 "size=" + rng.choice(["1m", "16m", "64m", "256m"]), "runtime=1"]
        for key, values in COMBO_OPTIONS:
            if rng.random() < COMBO_P:
                v = rng.choice(values)
                lines.append(key if v is None else f"{key}={v}")
        if rng.random() < 0.1:
            lines += ["zonemode=strided", "zonesize=1m", "zoneskip=1m"]
        if targets and rng.random() < 0.7:
            lines.append("filename=" + rng.choice(targets))
        text += "\n".join(lines) + "\n"
    return text


def fuzz_combos(elev, rng, runs, work):
    topos = [None] + sorted(glob.glob(f"{ROOT}/scenarios/topologies/*.toml"))
    os.makedirs(work, exist_ok=True)
    for n in range(runs):
        topo = rng.choice(topos)
        targets = re.findall(r'^name\s*=\s*"([^"]+)"', open(topo).read(), re.M) if topo else []
        jf = f"{work}/job.fio"
        open(jf, "w").write(combo_job(rng, targets))
        cmd = [elev, "run", jf, "--output-format", "terse", "--eta", "never"]
        if topo:
            shutil.copy(topo, f"{work}/topology.toml")
            cmd += ["--topology", f"{work}/topology.toml"]
        sched = rng.choice(SCHEDULERS) if rng.random() < 0.5 else None
        if sched:
            cmd += ["--scheduler", sched]
        rc, err = run(cmd, work, 120)
        yield n, rc, err, work, f"job.fio on {topo or 'the built-in disk'} ({sched or 'its schedulers'})"


def fuzz_disksim(elev, rng, runs, work):
    drives = sorted(glob.glob(os.path.join(os.environ.get("DRIVES", "/tmp/drives"), "*")))
    if not drives:
        sys.exit("no drives: lay them out with bench/disksim-drives.sh (DRIVES=...)")
    for n in range(runs):
        d = rng.choice(drives)
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(d, work)
        files = [f for f in os.listdir(work) if not f.endswith(".trace") or rng.random() < 0.3]
        f = os.path.join(work, rng.choice(files))
        text = open(f, errors="replace").read()
        if f.endswith(".trace"):
            text = "\n".join(text.split("\n")[:2000])
        open(f, "w").write(mutate(text, rng))
        rc, err = run([elev, "validate-disk", "--drive", work], None, 60)
        yield n, rc, err, work, f


def fuzz_scenarios(elev, rng, runs, work):
    names = ["ioband", "iscsi", "as-vs-deadline", "modern-isolation"]
    for n in range(runs):
        shutil.rmtree(work, ignore_errors=True)
        if rng.random() < 0.8:
            shutil.copytree(f"{ROOT}/scenarios", work)
            name = rng.choice(names)
            files = [f"{work}/{name}.toml"] + glob.glob(f"{work}/topologies/*.toml")
            files += glob.glob(f"{work}/{name}/*")
            f = rng.choice(files)
            cmd = [elev, "reproduce", name, "--scenarios", work]
        else:
            shutil.copytree(f"{ROOT}/examples/sweep", work)
            f = rng.choice(glob.glob(f"{work}/*.toml"))
            cmd = [elev, "sweep", "plan", f, "-o", f"{work}/plan.jsonl"]
        open(f, "w").write(mutate(open(f).read(), rng))
        rc, err = run(cmd, work, 300)
        yield n, rc, err, work, f


def fuzz_recordings(elev, rng, runs, work):
    os.makedirs(work, exist_ok=True)
    data, base = f"{work}/target.img", f"{work}/base.json"
    with open(data, "wb") as f:
        f.write(os.urandom(96 << 20))
    rc, err = run([elev, "calibrate", data, "--budget", "3s", "--record", base,
                   "--topology", f"{work}/base.toml"], work, 120)
    if rc != 0:
        sys.exit(f"could not record a calibration to mutate: {err}")
    os.remove(data)
    rec = json.load(open(base))
    odd = [0, -1, 1, 1.5, 2**31, 2**32, 2**63, 2**64 - 1, 10**30, None, "x", [], {}, True]

    def change(r):
        phases = r["phases"]
        what = rng.randrange(7)
        if what == 0:
            r[rng.choice(["version", "budget_ns", "write", "seed", "capacity_bytes", "name",
                          "source", "warnings", "hints"])] = rng.choice(odd)
        elif what == 1 and isinstance(r["hints"], dict) and r["hints"]:
            r["hints"][rng.choice(list(r["hints"]))] = rng.choice(odd)
        elif what == 2 and phases:
            p = rng.choice(phases)
            key = rng.choice(["name", "depth", "outcome"])
            p[key] = rng.choice(odd + [rng.choice(phases).get(key)])
        elif what == 3 and phases and isinstance((o := rng.choice(phases).get("outcome")), dict):
            o[rng.choice(["lat_ns", "elapsed_ns", "bytes"])] = rng.choice(odd)
        elif what == 4 and phases and isinstance((o := rng.choice(phases).get("outcome")), dict):
            lat = o.get("lat_ns")
            if isinstance(lat, list) and lat:
                lat[rng.randrange(len(lat))] = rng.choice(odd)
        elif what == 5 and phases:
            i = rng.randrange(len(phases))
            if rng.random() < 0.5:
                del phases[i]
            else:
                phases.insert(i, copy.deepcopy(phases[i]))
        elif isinstance(phases, list):
            del phases[rng.randrange(len(phases) + 1):]

    for n in range(runs):
        r = copy.deepcopy(rec)
        for _ in range(rng.randint(1, 2)):
            change(r)
        text = json.dumps(r)
        if rng.random() < 0.1:
            text = text[: rng.randrange(len(text) + 1)]
        f = f"{work}/replay.json"
        open(f, "w").write(text)
        rc, err = run([elev, "calibrate", "--replay", f, "--topology", f"{work}/out.toml"],
                      work, 120)
        yield n, rc, err, work, f


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["jobs", "combos", "disksim", "scenarios", "recordings"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--out", default="/tmp/elevator-fuzz")
    a = ap.parse_args()
    elev = os.environ.get("ELEVATOR")
    if not elev:
        subprocess.run(["cargo", "build", "--release", "-q", "-p", "elevator-cli"], cwd=ROOT,
                       check=True)
        elev = f"{ROOT}/target/release/elevator"
    rng = random.Random(a.seed)
    work = os.path.join(a.out, f"work-{a.what}-{a.seed}")
    fuzz = {"jobs": fuzz_jobs, "combos": fuzz_combos, "disksim": fuzz_disksim,
            "scenarios": fuzz_scenarios, "recordings": fuzz_recordings}[a.what]
    clean = bad = 0
    for n, rc, err, where, changed in fuzz(elev, rng, a.runs, work):
        clean += rc == 0
        if broken(rc, err):
            bad += 1
            keep = os.path.join(a.out, f"bad-{a.what}-{a.seed}-{n}")
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(where, keep)
            open(os.path.join(keep, "INFO"), "w").write(f"{changed}\nexit {rc}\n{err[-3000:]}\n")
            print(f"broken: exit {rc} after changing {changed} -> {keep}", flush=True)
    print(f"{a.what}: {a.runs} runs, {clean} ran clean, {bad} broke elevator")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()

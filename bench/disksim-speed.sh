#!/usr/bin/env bash
# Start-up-included speed of `elevator validate-disk` against DiskSim 4.0 on the same drive and
# trace (issue 16: ≥ 40×). DiskSim is not shipped: build DiskSim 4.0 yourself with -O2 (its
# Makefiles use -g; replace it with -O2 in src/, src/modules/, diskmodel/, libparam/ and
# libddbg/) and pass its binary as DISKSIM. On x86_64 a 4.0 tree built without 64-bit fixes
# crashes at once: `disksim_ioqueue_loadparams` and `dm_disk_loadparams` are called without
# prototypes, so their pointers are cut to 32 bits (declare them in src/disksim_global.h).
# With gcc 12 on Debian 12 (2026-11-28, the untouched 4.0 import `fetch
# github:artorhem/disksim-4.0` at 6d95f29) it also needed: `-O2 -fcommon -std=gnu89` in those
# Makefiles and memsmodel/ (src links it); DISKSIM_EVENT_SIZE 256 in disksim_global.h (its
# event-size check fails on 64-bit); in libparam/util.c's lp_add_param, `bzero(&((*b)[*plen])`
# for `bzero((int *)(*b) + *plen` (it cleared 8-byte pointers in 4-byte steps); `-lm` last in
# src/Makefile's LDFLAGS; `-lm` after `-lmems_internals` in memsmodel/Makefile's
# mems_seektest rule (its link fails on sqrt/acos/asin without it, and stops the build
# before libmemsmodel.a). libparam generates its parser: bison and flex must be installed
# (Debian packages bison, flex). Order: libddbg, libparam, diskmodel, memsmodel, src. That
# build matches DiskSim's published demerits on all ten drives (barracuda: 0.347863 by
# DiskSim's own `rms`, built with the same flags). Build its directories one after
# another (its Makefiles race under make -j). The mirror's newest commit (b2db6c1,
# 2026-12-01) already has the event size, the lp_add_param fix and the mems_seektest `-lm`;
# it still needs the flags, the two prototypes and `-lm` last in src/Makefile, and its
# `make` in diskmodel/ stops in tests/ (a missing driver.h) after libdiskmodel.a is built,
# which is all src needs; it gives the same 0.347863. Usage:
#   DISKSIM=/path/to/disksim bench/disksim-speed.sh [DRIVE_DIR] [RUNS]
# DRIVE_DIR defaults to ../shared/data/disksim/barracuda. Wall and CPU time per run, each
# program RUNS times (default 20).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DISKSIM:?set DISKSIM to a DiskSim 4.0 binary built with -O2}"
DRIVE=$(realpath "${1:-../shared/data/disksim/barracuda}")
RUNS=${2:-20}
NAME=$(basename "$DRIVE")
cargo build --release -q -p elevator-cli
ELEVATOR=${CARGO_TARGET_DIR:-$PWD/target}/release/elevator
WORK=$(mktemp -d /tmp/disksim-speed.XXXXXX)
cp -r "$DRIVE"/. "$WORK"/
cd "$WORK"
# The two programs run alternately, run by run, so that a machine whose speed drifts (a
# shared VM's does, by a third from minute to minute) slows both alike; the ratio of the
# medians is the figure, the means are printed beside it.
python3 - "$RUNS" "$NAME" "$DISKSIM" "$ELEVATOR" "$WORK" <<'PY'
import os, resource, statistics, subprocess, sys, time
runs, name, disksim, elevator, work = int(sys.argv[1]), *sys.argv[2:]
cmds = {
    "DiskSim 4.0 -O2": [disksim, f"{name}.parv", f"{name}.outv", "validate", f"{name}.trace", "0"],
    "elevator validate-disk": [elevator, "validate-disk", "--drive", work],
}
wall = {k: [] for k in cmds}
cpu = {k: 0.0 for k in cmds}
for _ in range(runs):
    for k, cmd in cmds.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        wall[k].append(time.perf_counter() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[k] += (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
with open("/proc/loadavg") as f:
    load = " ".join(f.read().split()[:3])
print(f"machine: {os.uname().sysname} {os.uname().release} {os.uname().machine}, {os.cpu_count()} CPUs, load {load}")
with open(f"{name}.trace") as f:
    print(f"drive {name}, {sum(1 for _ in f)} requests, {runs} runs each, alternating")
for k in cmds:
    w = wall[k]
    print(f"{k + ':':<24} {statistics.median(w) * 1e3:.1f} ms wall median, "
          f"{statistics.mean(w) * 1e3:.1f} mean, {cpu[k] / runs * 1e3:.1f} ms CPU per run")
(d, e) = (wall[k] for k in cmds)
(dc, ec) = (cpu[k] for k in cmds)
print(f"speed-up: {statistics.median(d) / statistics.median(e):.1f}x wall (medians), "
      f"{statistics.mean(d) / statistics.mean(e):.1f}x (means), {dc / ec:.1f}x CPU (target 40x)")
PY
rm -rf "$WORK"

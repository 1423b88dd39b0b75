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
# another (its Makefiles race under make -j). Usage:
#   DISKSIM=/path/to/disksim bench/disksim-speed.sh [DRIVE_DIR] [RUNS]
# DRIVE_DIR defaults to ../shared/data/disksim/barracuda. Wall and CPU time per run, each
# program RUNS times (default 20) back to back.
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
clock() { python3 - "$RUNS" "$@" <<'PY'
import os, resource, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
t0 = time.perf_counter(); r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
for _ in range(runs):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
t1 = time.perf_counter(); r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
print(f"{(t1 - t0) / runs * 1e3:.1f} {cpu / runs * 1e3:.1f}")
PY
}
read -r dw dc < <(clock "$DISKSIM" "$NAME.parv" "$NAME.outv" validate "$NAME.trace" 0)
read -r ew ec < <(clock "$ELEVATOR" validate-disk --drive "$WORK")
echo "machine: $(uname -srm), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "drive $NAME, $(wc -l < "$NAME.trace") requests, $RUNS runs each"
echo "DiskSim 4.0 -O2:         ${dw} ms wall, ${dc} ms CPU per run"
echo "elevator validate-disk:  ${ew} ms wall, ${ec} ms CPU per run"
python3 -c "print(f'speed-up: {$dw/$ew:.1f}x wall, {$dc/$ec:.1f}x CPU (target 40x)')"
rm -rf "$WORK"

#!/usr/bin/env bash
# Buffered 4 KiB random reads of a cold file, by engine and depth: real fio on this machine's
# disk (a file here, dropped from the page cache by invalidate=1) beside `elevator run` on the
# default simulated disk, and each side's IOPS relative to its psync run. The shape to see:
# psync, libaio (whose io_submit runs a buffered read to its end) and io_uring at depth 1
# alike, io_uring at depth 32 well above them on both sides (its reads wait for their pages
# side by side). Usage: bench/io-uring-buffered.sh [DIR] [SECONDS]
#   DIR holds the 1 GiB test file (default: a fresh temporary directory), SECONDS per run (5).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p elevator-cli
ELEVATOR=${CARGO_TARGET_DIR:-$PWD/target}/release/elevator
DIR=${1:-$(mktemp -d /tmp/io-uring-buffered.XXXXXX)}
SECS=${2:-5}
mkdir -p "$DIR"
cd "$DIR"
fio --name=layout --filename=uring-bench.dat --size=1g --rw=write --bs=1m --direct=1 \
    --output=/dev/null
iops() { cut -d';' -f8; }
printf '%-14s %12s %8s %12s %8s\n' "engine depth" "fio IOPS" "ratio" "elevator" "ratio"
base_fio="" base_sim=""
for case in "psync 1" "libaio 1" "libaio 32" "io_uring 1" "io_uring 32"; do
    set -- $case
    job="[rr]
filename=uring-bench.dat
size=1g
rw=randread
bs=4k
ioengine=$1
iodepth=$2
invalidate=1
runtime=$SECS
time_based"
    printf '%s\n' "$job" > uring-bench.fio
    real=$(fio --output-format=terse uring-bench.fio 2>/dev/null | iops)
    sim=$("$ELEVATOR" run uring-bench.fio --output-format terse | iops)
    base_fio=${base_fio:-$real}
    base_sim=${base_sim:-$sim}
    awk -v c="$1 $2" -v r="$real" -v rb="$base_fio" -v s="$sim" -v sb="$base_sim" \
        'BEGIN { printf "%-14s %12s %8.2f %12s %8.2f\n", c, r, r / rb, s, s / sb }'
done
rm -f uring-bench.dat uring-bench.fio

#!/usr/bin/env bash
# 4 KiB random reads of a cold file by engine and depth, buffered and direct: real fio on
# this machine's disk (a file here; buffered runs drop it from the page cache with
# invalidate=1) beside `elevator run` on the default simulated disk, and each side's IOPS
# relative to its psync run. The shapes to see: buffered, psync, libaio (whose io_submit
# runs a buffered read to its end), posixaio and io_uring at depth 1 alike, io_uring at
# depth 32 well above them (its reads wait for their pages side by side); direct, posixaio
# at depth 32 little above depth 1 (glibc runs one request per file descriptor at a time),
# libaio and io_uring at 32 far above. Then buffered random writes syncing every 32.
# Usage: bench/aio-engines.sh [DIR] [SECONDS]
#   DIR holds the 1 GiB test file (default: a fresh temporary directory), SECONDS per run (5).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p elevator-cli
ELEVATOR=${CARGO_TARGET_DIR:-$PWD/target}/release/elevator
DIR=${1:-$(mktemp -d /tmp/aio-engines.XXXXXX)}
SECS=${2:-5}
mkdir -p "$DIR"
cd "$DIR"
fio --name=layout --filename=aio-bench.dat --size=1g --rw=write --bs=1m --direct=1 \
    --output=/dev/null
for direct in 0 1; do
    echo "direct=$direct"
    printf '%-14s %12s %8s %12s %8s\n' "engine depth" "fio IOPS" "ratio" "elevator" "ratio"
    base_fio="" base_sim=""
    if [ "$direct" = 0 ]; then
        cases=("psync 1" "libaio 32" "posixaio 32" "io_uring 1" "io_uring 32")
    else
        cases=("psync 1" "posixaio 1" "posixaio 32" "libaio 32" "io_uring 32")
    fi
    for case in "${cases[@]}"; do
        set -- $case
        printf '%s\n' "[rr]" "filename=aio-bench.dat" "size=1g" "rw=randread" "bs=4k" \
            "ioengine=$1" "iodepth=$2" "direct=$direct" "invalidate=1" "runtime=$SECS" \
            "time_based" > aio-bench.fio
        real=$(fio --output-format=terse aio-bench.fio 2>/dev/null | cut -d';' -f8)
        sim=$("$ELEVATOR" run aio-bench.fio --output-format terse | cut -d';' -f8)
        base_fio=${base_fio:-$real}
        base_sim=${base_sim:-$sim}
        awk -v c="$1 $2" -v r="$real" -v rb="$base_fio" -v s="$sim" -v sb="$base_sim" \
            'BEGIN { printf "%-14s %12s %8.2f %12s %8.2f\n", c, r, r / rb, s, s / sb }'
    done
done
# Buffered 4 KiB random writes with fsync=32: io_uring's syncs run on io-wq workers beside
# the writes, so its io_us stay at iodepth (the share of I/Os issued at that depth).
echo "buffered randwrite fsync=32"
printf '%-14s %12s %8s %12s %8s %10s %10s\n' "engine depth" "fio IOPS" "ratio" "elevator" \
    "ratio" "fio depth" "elevator"
base_fio="" base_sim=""
for case in "psync 1" "io_uring 16"; do
    set -- $case
    printf '%s\n' "[rw]" "filename=aio-bench.dat" "size=1g" "rw=randwrite" "bs=4k" \
        "ioengine=$1" "iodepth=$2" "fsync=32" "runtime=$SECS" "time_based" > aio-bench.fio
    pick='import json, sys
t = sys.stdin.read(); j = json.loads(t[t.find("{"):])["jobs"][0]
print(round(j["write"]["iops"]), round(j["iodepth_level"][sys.argv[1]], 1))'
    read -r real real_depth < <(fio --output-format=json aio-bench.fio 2>/dev/null |
        python3 -c "$pick" "$2")
    read -r sim sim_depth < <("$ELEVATOR" run aio-bench.fio --output-format json |
        python3 -c "$pick" "$2")
    base_fio=${base_fio:-$real}
    base_sim=${base_sim:-$sim}
    awk -v c="$1 $2" -v r="$real" -v rb="$base_fio" -v s="$sim" -v sb="$base_sim" \
        -v rd="$real_depth" -v sd="$sim_depth" \
        'BEGIN { printf "%-14s %12s %8.2f %12s %8.2f %9s%% %9s%%\n", c, r, r / rb, s, s / sb, rd, sd }'
done
rm -f aio-bench.dat aio-bench.fio

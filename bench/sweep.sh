#!/usr/bin/env bash
# The Dask sweep executor against plain parallel shards (issue 18: Dask at most 1.15× as long):
#
#   1. `elevator sweep plan` of a 1,000-run grid (4 schedulers × 5 queue depths × 50 seeds of
#      4 KiB random reads, RUNTIME simulated seconds each);
#   2. (a) two `elevator sweep run --shard i/2` side by side, then `sweep merge`;
#   3. (b) `elevator.sweep.run` as a user calls it: its default LocalCluster (one worker per
#      CPU, threads of the calling process) started and stopped inside the timing, its
#      default 4 shards per worker, then its merge;
#   4. (c) the same on a LocalCluster of 2 worker processes, started and stopped inside the
#      timing, and timed again without its start and stop;
#   5. the wall times, their ratios to (a), and whether the merged files are the same bytes.
#
# Usage: bench/sweep.sh   ELEVATOR_BIN=path (default: a release build, made here),
# PYTHON=python with the elevator package installed (default python3), RUNTIME=300,
# OUT=dir (default a temporary directory, kept). Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${RUNTIME:-300}
PYTHON=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d /tmp/elevator-sweep-bench.XXXXXX)}
if [ -z "${ELEVATOR_BIN:-}" ]; then
  cargo build --release -q -p elevator-cli
  ELEVATOR_BIN=$PWD/${CARGO_TARGET_DIR:-target}/release/elevator
fi
ELEVATOR_BIN=$(realpath "$ELEVATOR_BIN")
export ELEVATOR_BIN
"$PYTHON" -c "import elevator.sweep, distributed" || {
  echo "needs the elevator package (pip install ./python) and Dask distributed (./setup.sh)" >&2
  exit 1
}

mkdir -p "$OUT"
cd "$OUT"
cat > randread.fio <<EOF
[randread]
filename=sda
rw=randread
bs=4k
direct=1
ioengine=libaio
iodepth=\${QD}
runtime=$RUNTIME
time_based
EOF
cat > grid.toml <<EOF
job = "randread.fio"
scheduler = ["mq-deadline", "bfq", "kyber", "none"]
seeds = [$(seq -s ', ' 1 50)]
[vars]
QD = ["1", "2", "4", "8", "16"]
EOF
"$ELEVATOR_BIN" sweep plan grid.toml -o plan.jsonl 2>/dev/null
echo "plan: $(wc -l < plan.jsonl) runs of $RUNTIME simulated s, in $OUT" >&2
rm -rf plain dask dask-processes

now() { date +%s.%N; }

t0=$(now)
"$ELEVATOR_BIN" sweep run plan.jsonl --shard 0/2 -o plain 2>/dev/null &
a=$!
"$ELEVATOR_BIN" sweep run plan.jsonl --shard 1/2 -o plain 2>/dev/null &
b=$!
wait $a
wait $b
"$ELEVATOR_BIN" sweep merge plain -o plain.parquet
t1=$(now)

# (b) the default: elevator.sweep.run starts a LocalCluster of one worker per CPU (threads
# of this process: the tasks are subprocesses) and stops it, all inside the timing.
"$PYTHON" -c 'import elevator.sweep; elevator.sweep.run("plan.jsonl", "dask", progress=False)'
t2=$(now)

# (c) worker processes (processes=True), started and stopped inside the timing; the run on
# the started cluster is timed too. -c, not a here-document: the workers are spawned and
# re-import __main__ from its file.
"$PYTHON" -c '
import distributed, elevator.sweep
with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, distributed.Client(cluster) as client:
    import time
    t = time.monotonic()
    elevator.sweep.run("plan.jsonl", "dask-processes", client=client, progress=False)
    print("%.2f" % (time.monotonic() - t), file=open("dask-run-seconds", "w"))
'
t3=$(now)

plain=$(echo "$t1 - $t0" | bc -l)
dask=$(echo "$t2 - $t1" | bc -l)
processes=$(echo "$t3 - $t2" | bc -l)
printf 'plain 2 shards + merge: %.2f s\n' "$plain"
printf 'dask, default LocalCluster (2 workers, threads): %.2f s, ratio %.3f (cluster start and stop included)\n' \
  "$dask" "$(echo "$dask / $plain" | bc -l)"
printf 'dask, LocalCluster(2 worker processes):        %.2f s, ratio %.3f (cluster start and stop included)\n' \
  "$processes" "$(echo "$processes / $plain" | bc -l)"
run=$(cat dask-run-seconds)
printf '  of which run() on the started cluster:       %.2f s, ratio %.3f\n' "$run" "$(echo "$run / $plain" | bc -l)"
for d in dask dask-processes; do
  cmp -s plain.parquet $d/merged.parquet && echo "merged files ($d): the same bytes" ||
    echo "merged files ($d): DIFFER"
done

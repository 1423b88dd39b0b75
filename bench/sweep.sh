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
#   5. the three interleaved, ROUNDS times (a busy machine slows whichever runs then), and
#      the medians, their ratios to (a), and whether the merged files are the same bytes;
#   6. once more on 2 worker processes, one of them SIGKILLed mid-sweep: the merged file must
#      still be the plain one, byte for byte.
#
# Usage: bench/sweep.sh   ELEVATOR_BIN=path (default: a release build, made here),
# PYTHON=python with the elevator package installed (default python3), RUNTIME=300, ROUNDS=3,
# OUT=dir (default a temporary directory, kept). Not run in CI.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNTIME=${RUNTIME:-300}
ROUNDS=${ROUNDS:-3}
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
now() { date +%s.%N; }

# One round of the three; each appends its wall time to a file.
round() {
  rm -rf plain dask dask-processes plain.parquet
  local t0 t1 t2 t3
  t0=$(now)
  "$ELEVATOR_BIN" sweep run plan.jsonl --shard 0/2 -o plain 2>/dev/null &
  local a=$!
  "$ELEVATOR_BIN" sweep run plan.jsonl --shard 1/2 -o plain 2>/dev/null &
  local b=$!
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
    print("%.3f" % (time.monotonic() - t), file=open("dask-run-seconds", "a"))
'
  t3=$(now)
  echo "$t1 - $t0" | bc -l >> plain-seconds
  echo "$t2 - $t1" | bc -l >> dask-seconds
  echo "$t3 - $t2" | bc -l >> processes-seconds
  for d in dask dask-processes; do
    cmp -s plain.parquet $d/merged.parquet || { echo "merged files ($d): DIFFER" >&2; exit 1; }
  done
}

median() { sort -g "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

rm -f plain-seconds dask-seconds processes-seconds dask-run-seconds dask-ratios processes-ratios
for r in $(seq 1 "$ROUNDS"); do
  round
  printf 'round %d: plain %.2f s, dask default %.2f s, dask processes %.2f s\n' "$r" \
    "$(tail -n 1 plain-seconds)" "$(tail -n 1 dask-seconds)" "$(tail -n 1 processes-seconds)"
done
plain=$(median plain-seconds)
printf 'median of %d rounds, interleaved:\n' "$ROUNDS"
printf 'plain 2 shards + merge: %.2f s\n' "$plain"
printf 'dask, default LocalCluster (2 workers, threads): %.2f s, ratio %.3f (cluster start and stop included)\n' \
  "$(median dask-seconds)" "$(echo "$(median dask-seconds) / $plain" | bc -l)"
printf 'dask, LocalCluster(2 worker processes):        %.2f s, ratio %.3f (cluster start and stop included)\n' \
  "$(median processes-seconds)" "$(echo "$(median processes-seconds) / $plain" | bc -l)"
printf '  of which run() on the started cluster:       %.2f s, ratio %.3f\n' \
  "$(median dask-run-seconds)" "$(echo "$(median dask-run-seconds) / $plain" | bc -l)"
paste plain-seconds dask-seconds processes-seconds |
  awk '{print $2 / $1 > "dask-ratios"; print $3 / $1 > "processes-ratios"}'
printf 'median of the rounds'"'"' own ratios: dask default %.3f, dask processes %.3f\n' \
  "$(median dask-ratios)" "$(median processes-ratios)"
echo "merged files: the same bytes in every round"

# Killing a worker mid-sweep loses nothing: the 1,000 runs once more on 2 worker processes;
# once a shard file exists, the worker running a task is SIGKILLed (its `elevator` dies with
# it, the nanny restarts the worker, the scheduler reruns the task, the shard resumes); the
# merged file must be the plain one byte for byte, so every run is in it once.
rm -rf dask-killed
"$PYTHON" -c '
import os, pathlib, signal, threading, time
import distributed, elevator.sweep
out = pathlib.Path("dask-killed")
killed = []
def chaos(client):
    deadline = time.monotonic() + 600
    while not list(out.glob("shard-*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)
    while not killed and time.monotonic() < deadline:
        busy = [w for w, keys in client.processing().items() if keys]
        if busy:
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(busy[0])
        time.sleep(0.05)
with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, distributed.Client(cluster) as client:
    t = threading.Thread(target=chaos, args=(client,), daemon=True)
    t.start()
    elevator.sweep.run("plan.jsonl", out, client=client, progress=False)
    t.join(5)
assert killed, "no worker was killed"
print("killed worker", killed[0])
'
if cmp -s plain.parquet dask-killed/merged.parquet; then
  echo "a worker SIGKILLed mid-sweep: merged file the same bytes as the plain one ($(wc -l < plan.jsonl) runs, each once)"
else
  echo "a worker SIGKILLed mid-sweep: merged file DIFFERS" >&2
  exit 1
fi

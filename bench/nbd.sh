#!/usr/bin/env bash
# NBD server benchmark: one backing file, fio against
#   raw      fio's io_uring engine on the file itself (direct=1): the ceiling
#   none     elevator serve, scheduler none (read_ahead_kb = 16384 for both elevator servers)
#   cfq      elevator serve, CFQ with group scheduling (IOPS mode: slice_idle=0, quantum=128)
#   nbdkit   nbdkit's file plugin (cache=none)
#   qemu     qemu-nbd --cache=none --aio=io_uring
# and three workloads: 4 KiB random read at iodepth 32 on one connection (rr1) and on four
# (numjobs=4, rr4), and 1 MiB sequential read at iodepth 8 (seq).
#
# Usage: bench/nbd.sh [FILE]   (env: SIZE=1G RUNTIME=8 REPEAT=1 SERVERS="raw none cfq nbdkit qemu"
#                                CARGO_TARGET_DIR=target ELEVATOR=path)
# With REPEAT=N every workload runs on every server once per round (servers back to back per
# workload), and the table shows medians: a machine shared with other jobs varies by more
# than the differences sought.
# Needs fio, nbdkit, qemu-nbd (./setup.sh). Servers listen on 127.0.0.1:1090x only.
set -euo pipefail

FILE=${1:-/var/tmp/elevator-bench.img}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-8}
REPEAT=${REPEAT:-1}
SERVERS=${SERVERS:-raw none cfq nbdkit qemu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
ELEVATOR=${ELEVATOR:-$TARGET/release/elevator}
OUT=$(mktemp -d /tmp/elevator-bench.XXXXXX)
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

for t in fio nbdkit qemu-nbd python3; do
  command -v "$t" >/dev/null || { echo "bench: $t is missing (run ./setup.sh)" >&2; exit 1; }
done
if [ ! -x "$ELEVATOR" ]; then
  (cd "$ROOT" && cargo build --release -p elevator-cli)
fi

# O_DIRECT must work where the file lives (tmpfs refuses it).
dir=$(dirname "$FILE")
if ! dd if=/dev/zero of="$dir/.odirect-probe" bs=4096 count=1 oflag=direct 2>/dev/null; then
  echo "bench: O_DIRECT does not work in $dir; pass a file on a disk file system" >&2
  exit 1
fi
rm -f "$dir/.odirect-probe"
if [ ! -f "$FILE" ] || [ "$(stat -c %s "$FILE")" -lt "$(numfmt --from=iec "$SIZE")" ]; then
  echo "bench: writing $SIZE of data to $FILE"
  fio --name=fill --filename="$FILE" --size="$SIZE" --rw=write --bs=1M --direct=1 \
      --ioengine=libaio --iodepth=8 --output=/dev/null
fi

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true; }

wait_port() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on port $1" >&2; exit 1
}

# run LABEL WORKLOAD fio-target-args...   (round $ROUND)
ROUND=1
run() {
  local label=$1 wl=$2; shift 2
  local w=()
  case $wl in
    rr1) w=(--rw=randread --bs=4k --iodepth=32 --numjobs=1) ;;
    rr4) w=(--rw=randread --bs=4k --iodepth=32 --numjobs=4) ;;
    seq) w=(--rw=read --bs=1M --iodepth=8 --numjobs=1) ;;
  esac
  drop_caches
  fio --name="$label-$wl" "$@" "${w[@]}" --size="$SIZE" --time_based --runtime="$RUNTIME" \
      --ramp_time=1 --group_reporting --output-format=json --output="$OUT/$label-$wl-$ROUND.json" \
      >/dev/null 2>"$OUT/$label-$wl.err" || { echo "bench: fio failed for $label $wl" >&2; cat "$OUT/$label-$wl.err" >&2; exit 1; }
  echo "  round $ROUND: $label $wl done"
}

elevator_conf() { # NAME PORT SCHEDULER [TUNABLES...]
  local conf="$OUT/$1.toml"
  {
    echo "listen = \"127.0.0.1:$2\""
    echo "scheduler = \"$3\""
    echo "queue_depth = 128"
    # A 16 MiB read-ahead window for sequential connections (the server's page-cache-less
    # readahead; the default is the block layer's 128 KiB): with it the disk keeps its depth
    # while replies are on the wire. Random readers never open a window.
    echo "read_ahead_kb = 16384"
    echo "[tunables]"
    shift 3
    for t in "$@"; do echo "$t"; done
    echo "[[export]]"
    echo "name = \"disk\""
    echo "path = \"$FILE\""
    echo "weight = 500"
  } > "$conf"
  echo "$conf"
}

nbd_uri() { echo "--ioengine=nbd --uri=nbd://127.0.0.1:$1/disk"; }

echo "bench: $FILE, $SIZE, ${RUNTIME}s per run, $REPEAT round(s), results in $OUT"

start_elevator() { # LABEL PORT SCHEDULER TUNABLES...
  local label=$1 port=$2; shift 2
  local conf; conf=$(elevator_conf "$label" "$port" "$@")
  RUST_LOG=warn "$ELEVATOR" serve --config "$conf" 2>"$OUT/$label.log" &
  PIDS+=($!)
  wait_port "$port"
}

# All servers run for the whole benchmark; each round runs one workload on every server back
# to back, so that the runs compared with each other are as close in time as possible.
for server in $SERVERS; do
  case $server in
    raw) ;;
    none) start_elevator none 10901 none ;;
    cfq)
      # IOPS mode (slice_idle = 0), one group per export. quantum = queue_depth: CFQ keeps at
      # most `quantum` requests of its active queue in flight, and with quantum = 32 the four
      # rr4 connections (four queues) would run at a device depth of ~32 rather than 128 — a
      # dispatch cap, not the cost of the weighting being measured.
      start_elevator cfq 10902 cfq "slice_idle = 0" "quantum = 128" ;;
    nbdkit)
      nbdkit -f -i 127.0.0.1 -p 10903 -e disk file "$FILE" cache=none 2>"$OUT/nbdkit.log" &
      PIDS+=($!)
      wait_port 10903 ;;
    qemu)
      qemu-nbd -f raw --cache=none --aio=io_uring -b 127.0.0.1 -p 10904 -x disk --shared=8 -t \
        "$FILE" 2>"$OUT/qemu.log" &
      PIDS+=($!)
      wait_port 10904 ;;
    *) echo "bench: unknown server $server" >&2; exit 1 ;;
  esac
done
port_of() { case $1 in none) echo 10901 ;; cfq) echo 10902 ;; nbdkit) echo 10903 ;; qemu) echo 10904 ;; esac; }

for ROUND in $(seq "$REPEAT"); do
  for wl in rr1 rr4 seq; do
    for server in $SERVERS; do
      if [ "$server" = raw ]; then
        run raw $wl --ioengine=io_uring --direct=1 --filename="$FILE"
      else
        # shellcheck disable=SC2046
        run "$server" $wl $(nbd_uri "$(port_of "$server")")
      fi
    done
  done
done

python3 - "$OUT" "$SERVERS" <<'PY'
import glob, json, os, statistics, sys
out, labels = sys.argv[1], sys.argv[2].split()
wls = ["rr1", "rr4", "seq"]
r, n = {}, {}
for l in labels:
    for w in wls:
        runs = []
        for f in glob.glob(os.path.join(out, f"{l}-{w}-*.json")):
            rd = json.load(open(f))["jobs"][0]["read"]
            runs.append((rd["iops"], rd["bw"] / 1024.0,
                         rd["clat_ns"]["percentile"].get("99.000000", 0) / 1e6))
        n[l, w] = len(runs)
        # Median of each column separately.
        r[l, w] = tuple(statistics.median(x[k] for x in runs) for k in range(3))
rounds = max(n.values())
print()
print(f"medians of {rounds} round(s)" if rounds > 1 else "one round")
print(f"{'server':<8} {'rr1 IOPS':>10} {'rr1 p99ms':>10} {'rr4 IOPS':>10} {'rr4 p99ms':>10} {'seq MiB/s':>10}")
for l in labels:
    print(f"{l:<8} {r[l,'rr1'][0]:>10.0f} {r[l,'rr1'][2]:>10.2f} {r[l,'rr4'][0]:>10.0f} {r[l,'rr4'][2]:>10.2f} {r[l,'seq'][1]:>10.0f}")
print()
def ratio(a, b, w, k=0):
    if (a, w) not in r or (b, w) not in r or not r[b, w][k]:
        return None
    return r[a, w][k] / r[b, w][k]
checks = [
    ("none / qemu-nbd IOPS, rr1", ratio("none", "qemu", "rr1"), 1.3),
    ("none / qemu-nbd IOPS, rr4", ratio("none", "qemu", "rr4"), 1.3),
    ("none / nbdkit IOPS, rr1", ratio("none", "nbdkit", "rr1"), 1.5),
    ("none / nbdkit IOPS, rr4", ratio("none", "nbdkit", "rr4"), 1.5),
    ("cfq / none IOPS, rr1", ratio("cfq", "none", "rr1"), 0.9),
    ("cfq / none IOPS, rr4", ratio("cfq", "none", "rr4"), 0.9),
    ("none / raw bandwidth, seq", ratio("none", "raw", "seq", 1), 0.9),
]
for name, v, target in checks:
    if v is not None:
        print(f"{name:<28} {v:6.2f}  (target >= {target}) {'ok' if v >= target else 'MISSED'}")
PY

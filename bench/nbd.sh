#!/usr/bin/env bash
# NBD server benchmark: one backing file, fio against
#   raw      fio's io_uring engine on the file itself (direct=1): the ceiling
#   none     elevator serve, scheduler none (read_ahead_kb = 16384 for both elevator servers)
#   cfq      elevator serve, CFQ with group scheduling (IOPS mode: slice_idle=0, quantum=128)
#   nbdkit   nbdkit's file plugin (cache=none)
#   qemu     qemu-nbd --cache=none --aio=io_uring
# over each transport in TRANSPORTS: a Unix socket (what a client on the same host uses, e.g.
# QEMU) and TCP on loopback; and three workloads: 4 KiB random read at iodepth 32 on one
# connection (rr1) and on four (numjobs=4, rr4), and 1 MiB sequential read at iodepth 8 (seq).
#
# Usage: bench/nbd.sh [FILE]   (env: SIZE=1G RUNTIME=8 REPEAT=1 SERVERS="raw none cfq nbdkit qemu"
#                                TRANSPORTS="unix tcp" CARGO_TARGET_DIR=target ELEVATOR=path)
# With REPEAT=N every workload runs on every server once per round (servers back to back per
# workload), and the table shows medians: a machine shared with other jobs varies by more
# than the differences sought.
# Needs fio, nbdkit, qemu-nbd (./setup.sh). Servers listen on 127.0.0.1:1090x and on Unix
# sockets in the results directory only.
set -euo pipefail

FILE=${1:-/var/tmp/elevator-bench.img}
SIZE=${SIZE:-1G}
RUNTIME=${RUNTIME:-8}
REPEAT=${REPEAT:-1}
SERVERS=${SERVERS:-raw none cfq nbdkit qemu}
TRANSPORTS=${TRANSPORTS:-unix tcp}
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

wait_socket() {
  for _ in $(seq 200); do
    python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' "$1" \
      2>/dev/null && return 0
    sleep 0.05
  done
  echo "bench: nothing listens on $1" >&2; exit 1
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
    echo "unix_socket = \"$OUT/$1.sock\""
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

# nbd_uri SERVER TRANSPORT
nbd_uri() {
  case $2 in
    tcp) echo "--ioengine=nbd --uri=nbd://127.0.0.1:$(port_of "$1")/disk" ;;
    unix) echo "--ioengine=nbd --uri=nbd+unix:///disk?socket=$OUT/$1.sock" ;;
  esac
}
port_of() { case $1 in none) echo 10901 ;; cfq) echo 10902 ;; nbdkit) echo 10903 ;; qemu) echo 10904 ;; esac; }

echo "bench: $FILE, $SIZE, ${RUNTIME}s per run, $REPEAT round(s), results in $OUT"

start_elevator() { # LABEL SCHEDULER TUNABLES...   (one server on both transports)
  local label=$1; shift
  local conf; conf=$(elevator_conf "$label" "$(port_of "$label")" "$@")
  RUST_LOG=warn "$ELEVATOR" serve --config "$conf" 2>"$OUT/$label.log" &
  PIDS+=($!)
  wait_port "$(port_of "$label")"
  wait_socket "$OUT/$label.sock"
}

# All servers run for the whole benchmark; each round runs one workload on every server back
# to back, so that the runs compared with each other are as close in time as possible.
# nbdkit and qemu-nbd listen on one transport per process, so each runs twice.
for server in $SERVERS; do
  case $server in
    raw) ;;
    none) start_elevator none none ;;
    cfq)
      # IOPS mode (slice_idle = 0), one group per export. quantum = queue_depth: CFQ keeps at
      # most `quantum` requests of its active queue in flight, and with quantum = 32 the four
      # rr4 connections (four queues) would run at a device depth of ~32 rather than 128 — a
      # dispatch cap, not the cost of the weighting being measured.
      start_elevator cfq cfq "slice_idle = 0" "quantum = 128" ;;
    nbdkit)
      nbdkit -f -i 127.0.0.1 -p "$(port_of nbdkit)" -e disk file "$FILE" cache=none \
        2>"$OUT/nbdkit-tcp.log" &
      PIDS+=($!)
      nbdkit -f -U "$OUT/nbdkit.sock" -e disk file "$FILE" cache=none 2>"$OUT/nbdkit-unix.log" &
      PIDS+=($!)
      wait_port "$(port_of nbdkit)"
      wait_socket "$OUT/nbdkit.sock" ;;
    qemu)
      qemu-nbd -f raw --cache=none --aio=io_uring -b 127.0.0.1 -p "$(port_of qemu)" -x disk \
        --shared=8 -t "$FILE" 2>"$OUT/qemu-tcp.log" &
      PIDS+=($!)
      qemu-nbd -f raw --cache=none --aio=io_uring -k "$OUT/qemu.sock" -x disk --shared=8 -t \
        "$FILE" 2>"$OUT/qemu-unix.log" &
      PIDS+=($!)
      wait_port "$(port_of qemu)"
      wait_socket "$OUT/qemu.sock" ;;
    *) echo "bench: unknown server $server" >&2; exit 1 ;;
  esac
done

for ROUND in $(seq "$REPEAT"); do
  for wl in rr1 rr4 seq; do
    for server in $SERVERS; do
      if [ "$server" = raw ]; then
        run raw $wl --ioengine=io_uring --direct=1 --filename="$FILE"
        continue
      fi
      for transport in $TRANSPORTS; do
        # shellcheck disable=SC2046
        run "$server-$transport" $wl $(nbd_uri "$server" "$transport")
      done
    done
  done
done

python3 - "$OUT" "$SERVERS" "$TRANSPORTS" <<'PY'
import glob, json, os, statistics, sys
out, servers, transports = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
labels = ["raw"] if "raw" in servers else []
labels += [f"{s}-{t}" for t in transports for s in servers if s != "raw"]
wls = ["rr1", "rr4", "seq"]
# per[l, w][round] = (IOPS, MiB/s, p99 ms)
per = {}
for l in labels:
    for w in wls:
        for f in glob.glob(os.path.join(out, f"{l}-{w}-*.json")):
            rd = json.load(open(f))["jobs"][0]["read"]
            rnd = int(f.rsplit("-", 1)[1].split(".")[0])
            per.setdefault((l, w), {})[rnd] = (
                rd["iops"], rd["bw"] / 1024.0,
                rd["clat_ns"]["percentile"].get("99.000000", 0) / 1e6)
# Median of each column separately.
r = {k: tuple(statistics.median(x[c] for x in v.values()) for c in range(3))
     for k, v in per.items()}
rounds = max(len(v) for v in per.values())
print()
print(f"medians of {rounds} round(s)" if rounds > 1 else "one round")
print(f"{'server':<12} {'rr1 IOPS':>10} {'rr1 p99ms':>10} {'rr4 IOPS':>10} {'rr4 p99ms':>10} {'seq MiB/s':>10}")
for l in labels:
    print(f"{l:<12} {r[l,'rr1'][0]:>10.0f} {r[l,'rr1'][2]:>10.2f} {r[l,'rr4'][0]:>10.0f} {r[l,'rr4'][2]:>10.2f} {r[l,'seq'][1]:>10.0f}")
print()
# A ratio is taken within each round (the two servers ran back to back, on the disk of that
# minute) and the median over rounds is the one checked; the spread over rounds follows.
def ratio(a, b, w, k=0):
    if (a, w) not in per or (b, w) not in per:
        return None
    pa, pb = per[a, w], per[b, w]
    v = [pa[i][k] / pb[i][k] for i in sorted(pa) if i in pb and pb[i][k]]
    return (statistics.median(v), min(v), max(v)) if v else None
print("ratios: median over rounds of each round's ratio (min-max)")
for t in transports:
    print(f"over {t}:")
    checks = [
        ("none / qemu-nbd IOPS, rr1", ratio(f"none-{t}", f"qemu-{t}", "rr1"), 1.3),
        ("none / qemu-nbd IOPS, rr4", ratio(f"none-{t}", f"qemu-{t}", "rr4"), 1.3),
        ("none / nbdkit IOPS, rr1", ratio(f"none-{t}", f"nbdkit-{t}", "rr1"), 1.5),
        ("none / nbdkit IOPS, rr4", ratio(f"none-{t}", f"nbdkit-{t}", "rr4"), 1.5),
        ("cfq / none IOPS, rr1", ratio(f"cfq-{t}", f"none-{t}", "rr1"), 0.9),
        ("cfq / none IOPS, rr4", ratio(f"cfq-{t}", f"none-{t}", "rr4"), 0.9),
        ("none / raw bandwidth, seq", ratio(f"none-{t}", "raw", "seq", 1), 0.9),
    ]
    for name, v, target in checks:
        if v is not None:
            m, lo, hi = v
            verdict = "ok" if m >= target else "MISSED"
            print(f"  {name:<28} {m:6.2f}  ({lo:.2f}-{hi:.2f}; target >= {target}) {verdict}")
PY

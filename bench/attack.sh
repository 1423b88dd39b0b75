#!/usr/bin/env bash
# Reruns issue 19's attacks on `elevator serve` and the CLI, with numbers:
#   idle      1,000 idle connections (500 TCP + 500 Unix) on a server under `ulimit -n 1024`:
#             how long legitimate nbdinfo clients take (TCP and Unix), the server's threads,
#             its sockets over time (handshakes closed at the 10 s deadline), and the most
#             log lines about refusals in any one second
#   memory    20 connections pipelining 4 × 32 MiB READs and never reading the replies, and
#             20 sending a 32 MiB WRITE one byte short, against memory_limit = 256 MiB: the
#             server's peak RSS, and how long RSS takes to come back within 64 MB of its start
#             once the clients go away
#   metrics   a client sending 1 byte/s to /metrics, and the slowest of 20 scrapes beside it
#   cli       each careless-input case: exit status, stderr lines, seconds, peak RSS
#   kill9     20 rounds of write, FLUSH, kill -9, restart, read back (crates/cli/tests/serve.rs)
#
# Usage: bench/attack.sh [idle|memory|metrics|cli|kill9 ...]   (default: all)
# Env: ELEVATOR=path (default target/release/elevator, built if missing), DIR=/var/tmp/...
# Servers listen on 127.0.0.1 and on Unix sockets in the work directory only; every client
# loop is bounded in count and time.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ELEVATOR=${ELEVATOR:-$ROOT/target/release/elevator}
DIR=${DIR:-$(mktemp -d /var/tmp/elevator-attack.XXXXXX)}
CASES=${*:-idle memory metrics cli kill9}
PIDS=()
cleanup() { for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

for t in python3 nbdinfo; do
  command -v "$t" >/dev/null || { echo "attack: $t is missing (run ./setup.sh)" >&2; exit 1; }
done
if [ ! -x "$ELEVATOR" ]; then
  (cd "$ROOT" && cargo build --release -p elevator-cli)
fi
echo "attack: $ELEVATOR, work directory $DIR"

# The attacking clients (raw NBD over sockets), in one Python file.
cat > "$DIR/clients.py" <<'PY'
import socket, struct, sys, threading, time

MAGIC_OPT = 0x49484156454F5054
def connect(addr):
    if addr.startswith("/"):
        s = socket.socket(socket.AF_UNIX); s.connect(addr)
    else:
        h, p = addr.rsplit(":", 1); s = socket.create_connection((h, int(p)))
    return s

def handshake(s, name=b"disk"):
    g = b""
    while len(g) < 18: g += s.recv(18 - len(g))
    s.sendall(struct.pack(">I", 3) + struct.pack(">QII", MAGIC_OPT, 1, len(name)) + name)
    r = b""
    while len(r) < 10: r += s.recv(10 - len(r))

def request(cmd, handle, offset, length):
    return struct.pack(">IHHQQI", 0x25609513, 0, cmd, handle, offset, length)

mode = sys.argv[1]
if mode == "idle":
    # idle TCP_ADDR UNIX_PATH N_EACH HOLD_S: open N idle connections on each, hold, close.
    tcp, unix, n, hold = sys.argv[2], sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    conns = [connect(tcp) for _ in range(n)] + [connect(unix) for _ in range(n)]
    print(f"opened {len(conns)} idle connections", flush=True)
    time.sleep(hold)
    for c in conns: c.close()
elif mode == "memory":
    # memory UNIX_PATH N HOLD_S: N readers (4 x 32 MiB READs, replies never read) and N
    # writers (a 32 MiB WRITE one byte short); hold, then close everything.
    addr, n, hold = sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    conns = []
    for i in range(n):
        s = connect(addr); handshake(s)
        s.sendall(b"".join(request(0, h, h << 25, 32 << 20) for h in range(4)))
        conns.append(s)
    def short_write():
        s = connect(addr); handshake(s); conns.append(s)
        s.settimeout(hold)
        try:
            s.sendall(request(1, 1, 0, 32 << 20) + b"\0" * ((32 << 20) - 1))
        except OSError:
            pass
    threads = [threading.Thread(target=short_write, daemon=True) for _ in range(n)]
    for t in threads: t.start()
    print(f"{n} readers and {n} writers attacking", flush=True)
    time.sleep(hold)
    for c in conns: c.close()
elif mode == "trickle":
    # trickle HOST:PORT SECONDS: one byte a second of an HTTP request that never ends.
    s = connect(sys.argv[2]); end = time.time() + float(sys.argv[3])
    for b in (b"GET /metrics HTTP/1.1\r\nX-Slow: " + b"a" * 1000):
        if time.time() > end: break
        try: s.send(bytes([b]))
        except OSError: break
        time.sleep(1)
PY

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
threads() { ls "/proc/$1/task" 2>/dev/null | wc -l; }
sockets() { ls -l "/proc/$1/fd" 2>/dev/null | grep -c socket || true; }
now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2 - $1:.3f}')"; }

# start_server NAME CONFIG_BODY [ULIMIT]: starts elevator serve, sets PID and LOG.
start_server() {
  local name=$1 body=$2 limit=${3:-}
  printf '%s\n' "$body" > "$DIR/$name.toml"
  LOG="$DIR/$name.log"
  if [ -n "$limit" ]; then
    (ulimit -n "$limit"; exec "$ELEVATOR" serve --config "$DIR/$name.toml") 2>"$LOG" &
  else
    "$ELEVATOR" serve --config "$DIR/$name.toml" 2>"$LOG" &
  fi
  PID=$!
  PIDS+=("$PID")
  for _ in $(seq 200); do grep -q "listening\|metrics" "$LOG" 2>/dev/null && break; sleep 0.05; done
  sleep 0.2
}
stop_server() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }

export_body() {
  truncate -s 1G "$DIR/disk.img"
  printf '[[export]]\nname = "disk"\npath = "%s"\n' "$DIR/disk.img"
}

case_idle() {
  echo "== idle: 1,000 idle connections, server under ulimit -n 1024"
  start_server idle "listen = \"127.0.0.1:10819\"
unix_socket = \"$DIR/idle.sock\"
$(export_body)" 1024
  echo "server pid $PID: threads $(threads "$PID"), RSS $(rss_kb "$PID") KiB"
  (ulimit -n 4096; python3 "$DIR/clients.py" idle 127.0.0.1:10819 "$DIR/idle.sock" 500 14) &
  local attacker=$!
  PIDS+=("$attacker")
  T_OPEN=$(now)
  sleep 1.5
  for uri in "nbd://127.0.0.1:10819/disk" "nbd+unix:///disk?socket=$DIR/idle.sock"; do
    local t0 t1
    t0=$(now); nbdinfo --size "$uri" >/dev/null; t1=$(now)
    echo "legitimate nbdinfo $uri: $(secs "$t0" "$t1") s"
  done
  echo "server threads during the attack: $(threads "$PID")"
  # The connections opened at t = 0; the deadline is 10 s after each was accepted.
  local t
  for t in 2 5 8 10 11 12; do
    python3 -c "import time; time.sleep(max(0, $t - (time.time() - $T_OPEN)))"
    echo "t=${t}s: server sockets $(sockets "$PID")"
  done
  wait "$attacker" 2>/dev/null || true
  local worst
  worst=$(grep -E "WARN" "$LOG" | cut -c1-19 | sort | uniq -c | sort -rn | head -1 | awk '{print $1}')
  echo "log: $(wc -l < "$LOG") lines, at most ${worst:-0} warnings in one second"
  grep -E "WARN" "$LOG" | head -3 | cut -c1-160
  stop_server
}

case_memory() {
  echo "== memory: 20 x 4 x 32 MiB pipelined READs + 20 x (32 MiB - 1) WRITEs, memory_limit 256 MiB"
  start_server memory "listen = \"\"
unix_socket = \"$DIR/mem.sock\"
memory_limit = \"256MiB\"
$(export_body)"
  local start peak=0 rss
  start=$(rss_kb "$PID")
  echo "RSS at start: $((start / 1024)) MiB"
  python3 "$DIR/clients.py" memory "$DIR/mem.sock" 20 12 &
  local attacker=$!
  PIDS+=("$attacker")
  while kill -0 "$attacker" 2>/dev/null; do
    rss=$(rss_kb "$PID"); [ "$rss" -gt "$peak" ] && peak=$rss
    sleep 0.2
  done
  echo "peak RSS during the attack: $((peak / 1024)) MiB (budget 256 MiB + 64 MB = $(( 256 + 61 )) MiB)"
  local t0 t1
  t0=$(now)
  for _ in $(seq 150); do
    rss=$(rss_kb "$PID")
    [ "$rss" -le $((start + 62500)) ] && break
    sleep 0.1
  done
  t1=$(now)
  echo "RSS back within 64 MB of the start ($((rss / 1024)) MiB) $(secs "$t0" "$t1") s after the clients left"
  stop_server
}

case_metrics() {
  echo "== metrics: a 1 byte/s client beside 20 scrapes"
  start_server metrics "listen = \"127.0.0.1:10829\"
metrics = \"127.0.0.1:10830\"
$(export_body)"
  python3 "$DIR/clients.py" trickle 127.0.0.1:10830 25 &
  PIDS+=("$!")
  sleep 1
  local worst=0 t
  for _ in $(seq 20); do
    t=$(curl -s -o /dev/null -w '%{time_total}' http://127.0.0.1:10830/metrics)
    worst=$(python3 -c "print(max($worst, $t))")
    sleep 0.2
  done
  echo "slowest scrape beside the slow client: $(python3 -c "print(f'{$worst * 1000:.1f}')") ms"
  stop_server
}

case_cli() {
  echo "== cli: careless input (exit status, stderr lines, seconds, peak RSS)"
  local d="$DIR/cli"
  mkdir -p "$d"
  printf '[j]\nrw=read\nsize=1m\n' > "$d/j.fio"
  printf '[[device]]\nname = "sda"\nmodel = "hdd"\n[device.params]\nqueue_depth = 1000000000\n' > "$d/hdd.toml"
  printf '[j]\nrw=read\nsize=1m\nnumjobs=100000\n' > "$d/numjobs.fio"
  printf 'fio version 2 iolog\nsda add\nsda read 0 4096\nsda wait 0 18446744073709551615\nsda read 0 4096\n' > "$d/delay.log"
  printf '[r]\nread_iolog=delay.log\nreplay_redirect=sda\n' > "$d/delay.fio"
  python3 - "$d/ts.bin" <<'PY'
import struct, sys
def rec(t, sector, nbytes, action, dev):
    return struct.pack("<IIQQIIIIIHH", 0x65617407, 0, t, sector, nbytes, action, 1, dev, 0, 0, 0)
q = 1 | (1 << 4 << 16) | (1 << 16)
open(sys.argv[1], "wb").write(rec(0, 2048, 4096, q, 8 << 20 | 16) + rec(2**64 - 1, 4096, 4096, q, 8 << 20 | 16))
PY
  printf '[r]\nread_iolog=ts.bin\nreplay_redirect=sda\n' > "$d/ts.fio"
  for i in $(seq 0 29); do printf 'include inc%d.fio\ninclude inc%d.fio\n' $((i + 1)) $((i + 1)) > "$d/inc$i.fio"; done
  printf 'bs=4k\n' > "$d/inc30.fio"
  printf '[j]\nrw=read\nsize=1m\ninclude inc0.fio\n' > "$d/bomb.fio"
  printf '[j]\nrw=read\nsize=1m\ninclude /etc/shadow\n' > "$d/shadow.fio"
  mkdir -p "$d/scenarios"
  printf 'name = "x"\n[[table]\n\x00\xff' > "$d/scenarios/corrupt.toml"
  local cases=(
    "hdd queue_depth 10^9|run j.fio --topology hdd.toml"
    "numjobs=100000|run numjobs.fio"
    "iolog delay 2^64-1|run delay.fio"
    "blktrace time 2^64-1|run ts.fio"
    "include bomb|run bomb.fio"
    "include /etc/shadow|run shadow.fio"
    "corrupt scenario, --list|reproduce --list --scenarios scenarios"
    "--seed overflow|run j.fio --seed 99999999999999999999999"
  )
  printf '%-26s %4s %5s %8s %9s  %s\n' case exit lines seconds "RSS MiB" message
  for c in "${cases[@]}"; do
    local name=${c%%|*} args=${c#*|}
    # shellcheck disable=SC2086
    (cd "$d" && /usr/bin/time -f "%e %M" -o "$d/time" timeout 10 "$ELEVATOR" $args >/dev/null 2>"$d/err") && rc=0 || rc=$?
    read -r sec kb < <(tail -1 "$d/time") || true
    printf '%-26s %4s %5s %8s %9s  %s\n' "$name" "$rc" "$(wc -l < "$d/err")" "$sec" \
      "$((${kb:-0} / 1024))" "$(head -c 110 "$d/err" | head -1)"
    if grep -q "root:" "$d/err"; then echo "LEAK: $name echoed a file's contents"; fi
  done
}

case_kill9() {
  echo "== kill9: 20 rounds of write, FLUSH, kill -9, restart, read back"
  (cd "$ROOT" && KILL9_ROUNDS=20 cargo test --release -q -p elevator-cli --test serve -- --nocapture 2>&1) |
    grep -E "kill -9 round|test result" | tail -3
}

for c in $CASES; do "case_$c"; echo; done

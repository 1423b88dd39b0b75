#!/usr/bin/env bash
# elevator calibrate against fio on one file, in one run (issue 16's "must show"):
#
#   1. fio measures 4 KiB random reads at QD1 and QD32 and 1 MiB sequential reads at QD8
#      (and QD1) on FILE;
#   2. `elevator calibrate FILE` fits a model and writes a topology (run 1);
#   3. fio measures the same again, right after: the device's own drift across the
#      calibration shows as the change between the two fio runs, and the model is compared
#      with their geometric mean (the calibration lies between them in time);
#   4. `elevator run` runs the same job file on the fitted topology;
#   5. a second `elevator calibrate` (run 2) and the largest relative change of any fitted
#      parameter between the two runs.
#
# Both calibrations are recorded (OUT/run1.rec.json, OUT/run2.rec.json): `elevator calibrate
# --replay` fits them again without the device.
#
# Usage: bench/calibrate.sh [FILE]   (default /var/tmp/elevator-calibrate.img, 1 GiB, made
# with random data if missing). BUDGET=60s (per calibrate run), RUNTIME=10 (s per fio job),
# OUT=dir for the outputs (default a temporary directory, kept). Needs fio (setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

FILE=${1:-/var/tmp/elevator-calibrate.img}
BUDGET=${BUDGET:-60s}
RUNTIME=${RUNTIME:-10}
OUT=${OUT:-$(mktemp -d /tmp/elevator-calibrate.XXXXXX)}
mkdir -p "$OUT"
command -v fio >/dev/null || { echo "fio not found: run ./setup.sh" >&2; exit 1; }

if [ ! -f "$FILE" ]; then
  echo "making $FILE (1 GiB of random data)" >&2
  dd if=/dev/urandom of="$FILE" bs=16M count=64 oflag=direct status=none
fi
SIZE=$(stat -c %s "$FILE")

cargo build --release -q -p elevator-cli
ELEVATOR=target/release/elevator

echo "machine: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "file: $FILE ($SIZE bytes) on $(df --output=source "$FILE" | tail -1)"
echo "outputs in $OUT"

cat > "$OUT/check.fio" <<EOF
[global]
filename=\${TARGET}
size=\${SIZE}
direct=1
ioengine=io_uring
time_based
runtime=${RUNTIME}

[rand-4k-qd1]
rw=randread
bs=4k
iodepth=1

[rand-4k-qd32]
stonewall
rw=randread
bs=4k
iodepth=32

[seq-1m-qd8]
stonewall
rw=read
bs=1M
iodepth=8

[seq-1m-qd1]
stonewall
rw=read
bs=1M
iodepth=1
EOF

TARGET="$FILE" SIZE="$SIZE" fio --output-format=json "$OUT/check.fio" > "$OUT/fio-before.json"
$ELEVATOR calibrate "$FILE" --budget "$BUDGET" --topology "$OUT/run1.toml" \
  --record "$OUT/run1.rec.json" --output-format json > "$OUT/run1.json"
TARGET="$FILE" SIZE="$SIZE" fio --output-format=json "$OUT/check.fio" > "$OUT/fio-after.json"
DEV=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["device"] or "cal0")' "$OUT/run1.json")
TARGET="$DEV" SIZE="$SIZE" $ELEVATOR run "$OUT/check.fio" --topology "$OUT/run1.toml" \
  --output-format json > "$OUT/sim.json"

$ELEVATOR calibrate "$FILE" --budget "$BUDGET" --topology "$OUT/run2.toml" \
  --record "$OUT/run2.rec.json" --output-format json > "$OUT/run2.json"

python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
def jobs(name):
    return {j["jobname"]: j["read"] for j in json.load(open(f"{out}/{name}.json"))["jobs"]}
before, after, sim = jobs("fio-before"), jobs("fio-after"), jobs("sim")
print(f"{'job':<14} {'fio before':>11} {'fio after':>10} {'drift':>7} {'model':>10} {'error':>7}")
worst = 0.0
for name in ["rand-4k-qd1", "rand-4k-qd32", "seq-1m-qd8", "seq-1m-qd1"]:
    seq = name.startswith("seq")
    key, unit, scale = ("bw_bytes", "MB/s", 1e6) if seq else ("iops", "IOPS", 1)
    a0, a1, b = before[name][key] / scale, after[name][key] / scale, sim[name][key] / scale
    ref = (a0 * a1) ** 0.5
    err = b / ref - 1
    if name != "seq-1m-qd1":
        worst = max(worst, abs(err))
    print(f"{name:<14} {a0:>11.1f} {a1:>10.1f} {(a1/a0-1)*100:>+6.1f}% {b:>10.1f} {err*100:>+6.1f}%  {unit}")
print(f"largest error (against the geometric mean of the two fio runs) of QD1, QD32 and sequential QD8: {worst*100:.1f}% (target 15%)")

r1, r2 = json.load(open(f"{out}/run1.json")), json.load(open(f"{out}/run2.json"))
print(f"model: run 1 {r1['model']}, run 2 {r2['model']}")
def flat(p, pre=""):
    if isinstance(p, dict):
        for k, v in p.items():
            yield from flat(v, f"{pre}{k}.")
    elif isinstance(p, list):
        for i, v in enumerate(p):
            yield from flat(v, f"{pre}{i}.")
    elif isinstance(p, (int, float)) and not isinstance(p, bool):
        yield pre[:-1], float(p)
a, b = dict(flat(r1["params"])), dict(flat(r2["params"]))
diffs = []
for k in sorted(set(a) & set(b)):
    if a[k] != b[k]:
        d = abs(b[k] - a[k]) / max(abs(a[k]), abs(b[k]))
        diffs.append((d, k, a[k], b[k]))
diffs.sort(reverse=True)
for d, k, x, y in diffs[:8]:
    print(f"  {k:<28} {x:>14.4g} {y:>14.4g} {d*100:>6.1f}%")
worst = diffs[0][0] if diffs else 0.0
print(f"largest parameter change between the runs: {worst*100:.1f}% (target 10%)")
for r in (r1, r2):
    print("held-out, run:", ", ".join(f"{c['cell']} {c['iops_error']*100:+.0f}% ({c['demerit_ms']:.3f} ms)" for c in r["holdout"]))
PY

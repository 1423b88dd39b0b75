#!/usr/bin/env bash
# Wall time of `elevator validate-disk` for two builds of elevator, run alternately, one run of
# each per round (the order flipped every round), so that both see the same moods of a
# machine whose speed drifts by a third within minutes; prints each build's median and
# quartile and the ratio of the medians. Page faults and the kernel's share of a run move
# wall time without moving instruction counts (validate-instructions.sh), which is what
# this is for. Usage:
#   bench/validate-ab.sh BASE_BINARY NEW_BINARY [DRIVE_DIR] [ROUNDS]
# DRIVE_DIR defaults to ../shared/data/disksim/barracuda, ROUNDS to 150. Copy the base build
# aside first (cp target/release/elevator /tmp/elevator-base), then build the change.
set -euo pipefail
cd "$(dirname "$0")/.."
BASE=$(realpath "${1:?BASE_BINARY, the elevator binary of the base build}")
NEW=$(realpath "${2:?NEW_BINARY, the elevator binary of the new build}")
DRIVE=$(realpath "${3:-../shared/data/disksim/barracuda}")
ROUNDS=${4:-150}
python3 - "$BASE" "$NEW" "$DRIVE" "$ROUNDS" <<'PY'
import statistics, subprocess, sys, time

base, new, drive, rounds = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
times = {base: [], new: []}
for i in range(rounds):
    for b in (base, new) if i % 2 == 0 else (new, base):
        t0 = time.perf_counter()
        subprocess.run([b, "validate-disk", "--drive", drive], stdout=subprocess.DEVNULL, check=True)
        times[b].append(time.perf_counter() - t0)
for label, b in (("base", base), ("new", new)):
    q = statistics.quantiles(times[b], n=4)
    print(f"{label}: {b}: median {statistics.median(times[b]) * 1e3:.2f} ms "
          f"(quartiles {q[0] * 1e3:.2f}-{q[2] * 1e3:.2f}), {rounds} runs")
ratio = statistics.median(times[new]) / statistics.median(times[base])
print(f"new/base: {ratio:.3f}")
PY

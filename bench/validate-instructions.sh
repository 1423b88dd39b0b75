#!/usr/bin/env bash
# Instructions `elevator validate-disk` runs on one DiskSim drive, counted by callgrind: a
# figure that does not drift with the machine's load as wall time does (issue 16's start-up
# target is wall time against DiskSim 4.0; see disksim-speed.sh). Needs valgrind, which
# setup.sh does not install (`apt-get install valgrind`). Usage:
#   bench/validate-instructions.sh [DRIVE_DIR]
# DRIVE_DIR defaults to ../shared/data/disksim/barracuda. Prints the `I refs` total.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind not found (apt-get install valgrind)" >&2; exit 1; }
DRIVE=$(realpath "${1:-../shared/data/disksim/barracuda}")
cargo build --release -q -p elevator-cli
ELEVATOR=${CARGO_TARGET_DIR:-$PWD/target}/release/elevator
WORK=$(mktemp -d /tmp/validate-instructions.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cp -r "$DRIVE"/. "$WORK"/
valgrind --tool=callgrind --callgrind-out-file="$WORK/callgrind.out" \
    "$ELEVATOR" validate-disk --drive "$WORK" 2>&1 >/dev/null | grep "I   refs"

#!/usr/bin/env bash
# Runs both fuzz targets for a fixed budget each (FUZZ_SECONDS, default 300) and fails if
# either finds a crash. Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#   fuzz/run.sh                          # handshake, then request, 300 s each
#   FUZZ_SECONDS=60 fuzz/run.sh request
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_EACH=${FUZZ_SECONDS:-300}
for target in ${*:-handshake request}; do
  echo "fuzz: $target for ${SECONDS_EACH}s"
  log=$(mktemp)
  status=0
  cargo +nightly fuzz run "$target" -- -max_total_time="$SECONDS_EACH" -print_final_stats=1 \
    >"$log" 2>&1 || status=$?
  grep -E "DONE|stat::number_of_executed_units|stat::peak_rss_mb|ERROR|SUMMARY" "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -20 "$log" >&2
    echo "fuzz: $target failed (exit $status)" >&2
    exit 1
  fi
  rm -f "$log"
done

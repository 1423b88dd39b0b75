#!/usr/bin/env bash
# Runs every fio job file of a directory through `fio --parse-only` and `elevator run`, and
# prints what happened to each, then the table of issue 17:
#   fio accepts | elevator runs | refuses (with the reason) | crashes | times out
# A refusal is exit status 1 with one line on stderr; anything else but 0 is a crash (a panic
# exits 101, a signal 128+N); a run past TIMEOUT seconds of wall time is counted apart.
#
# Usage: bench/fio-examples.sh DIR    (e.g. fio's examples/ at a named commit)
#   env: ELEVATOR=path (default target/release/elevator, built unless ELEVATOR_SKIP_BUILD=1)
#        TIMEOUT=seconds per file (60), FIO=fio, VERBOSE=1 prints every file's line
# Job files run from DIR, so their relative paths and includes resolve as with fio.
set -euo pipefail

DIR=${1:?usage: bench/fio-examples.sh DIR}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
ELEVATOR=${ELEVATOR:-$TARGET/release/elevator}
FIO=${FIO:-fio}
TIMEOUT=${TIMEOUT:-60}
if [ -z "${ELEVATOR_SKIP_BUILD:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet --bin elevator)
fi
ELEVATOR=$(cd "$(dirname "$ELEVATOR")" && pwd)/$(basename "$ELEVATOR")
OUT=$(mktemp -d /tmp/elevator-fioex.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

total=0 accepted=0 runs=0 refused=0 crashed=0 timedout=0
: > "$OUT/reasons"
cd "$DIR"
for f in *.fio; do
    [ -f "$f" ] || continue
    total=$((total + 1))
    if ! timeout 30 "$FIO" --parse-only "$f" > /dev/null 2>&1; then
        [ -n "${VERBOSE:-}" ] && printf '%-36s fio refuses\n' "$f"
        continue
    fi
    accepted=$((accepted + 1))
    rc=0
    timeout "$TIMEOUT" "$ELEVATOR" run "$f" --output /dev/null > /dev/null 2> "$OUT/err" < /dev/null || rc=$?
    case $rc in
        0) runs=$((runs + 1)); what="runs" ;;
        1)
            refused=$((refused + 1))
            what=$(grep -v '^elevator: warning:' "$OUT/err" | tail -n 1 | cut -c1-200)
            printf '%s\t%s\n' "$f" "$what" >> "$OUT/reasons"
            what="refused: $what"
            ;;
        124) timedout=$((timedout + 1)); what="timed out after ${TIMEOUT}s" ;;
        *)
            crashed=$((crashed + 1))
            what="crashed (exit $rc): $(tail -n 1 "$OUT/err" | cut -c1-160)"
            ;;
    esac
    if [ -n "${VERBOSE:-}" ] || [ "$what" != runs ]; then
        printf '%-36s %s\n' "$f" "$what"
    fi
done

echo
echo "$("$FIO" --version), $(basename "$ELEVATOR") $("$ELEVATOR" --version | awk '{print $2}'), TIMEOUT=${TIMEOUT}s"
printf '| job files | fio accepts | elevator runs | refuses | crashes | times out |\n'
printf '| ---: | ---: | ---: | ---: | ---: | ---: |\n'
printf '| %d | %d | %d | %d | %d | %d |\n' "$total" "$accepted" "$runs" "$refused" "$crashed" "$timedout"

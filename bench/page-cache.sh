#!/usr/bin/env bash
# Page-cache simulation speed and memory against issue 14's targets, side by side in one run:
#   seqread    a buffered 4 KiB sequential read of 10 GiB          (target: <= 5 s)
#   largedd    16 GiB of 512-byte buffered writes on ext3          (target: <= 5 s)
#   randhits   60 s of buffered random 4 KiB reads of a cached 1 GiB (target: <= 5 s; they
#              cause no I/O, so they must cost no more than one I/O's worth each run)
#   randwrite  fio's examples/fio-rand-write.fio for 60 s (4 jobs of 4 KiB buffered random
#              writes over one 10 GiB file, libaio, iodepth 16), beside the same jobs with
#              direct=1: wall time per device I/O each caused, and the ratio (the page cache
#              should cost about what the requests it causes cost; no target)
#   interact   `elevator reproduce interactivity`, every table      (target: <= 60 s)
#   scenarios  peak memory of every `elevator reproduce` experiment (target: <= 200 MB)
# Prints wall time, peak RSS and the ratio to the target (below 1.00 meets it).
#
# Usage: bench/page-cache.sh   (env: CARGO_TARGET_DIR=target ELEVATOR=path)
# Needs GNU time (/usr/bin/time, installed by ./setup.sh).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
ELEVATOR=${ELEVATOR:-$TARGET/release/elevator}
if [ -z "${ELEVATOR_SKIP_BUILD:-}" ]; then
    (cd "$ROOT" && cargo build --release --quiet --bin elevator)
fi
OUT=$(mktemp -d /tmp/elevator-pcbench.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

cat > "$OUT/ext3.toml" <<'TOML'
[machine]
memory = "2GiB"
kernel = "3.2"
[[device]]
name = "sda"
model = "hdd"
preset = "sata-7200-2009"
scheduler = "cfq"
[[filesystem]]
on = "sda"
TOML
cat > "$OUT/seqread.fio" <<'FIO'
[seqread]
filename=sda
rw=read
bs=4k
size=10g
FIO
cat > "$OUT/largedd.fio" <<'FIO'
[largedd]
directory=sda
rw=write
bs=512
size=16g
file_append=1
FIO

cat > "$OUT/randhits.fio" <<'FIO'
[randhits]
filename=sda
rw=randread
bs=4k
size=1g
pre_read=1
runtime=60
time_based
FIO

for direct in 0 1; do
    cat > "$OUT/randwrite-direct$direct.fio" <<FIO
[global]
filename=fio-rand-write
rw=randwrite
bs=4K
direct=$direct
numjobs=4
time_based
runtime=60
[file1]
size=10G
ioengine=libaio
iodepth=16
FIO
done

# measure NAME TARGET_SECONDS TARGET_MB CMD...
measure() {
    local name=$1 secs=$2 mb=$3
    shift 3
    /usr/bin/time -f "%e %M" -o "$OUT/$name.time" "$@" > "$OUT/$name.out"
    read -r wall rss < "$OUT/$name.time"
    awk -v n="$name" -v w="$wall" -v r="$rss" -v ts="$secs" -v tm="$mb" 'BEGIN {
        printf "%-34s %8.2f s  %7.1f MB   time/target %5.2f   memory/target %5.2f\n",
            n, w, r / 1024, (ts > 0 ? w / ts : 0), r / 1024 / tm }'
}

measure "seqread 10 GiB, 4 KiB" 5 200 "$ELEVATOR" run "$OUT/seqread.fio" --topology "$OUT/ext3.toml"
measure "largedd 16 GiB, 512 B, ext3" 5 200 "$ELEVATOR" run "$OUT/largedd.fio" --topology "$OUT/ext3.toml"
measure "random hits 60 s, 1 GiB cached" 5 200 "$ELEVATOR" run "$OUT/randhits.fio" --topology "$OUT/ext3.toml"
# Wall time per device I/O of a run measured above (the I/Os from its disk stats line).
per_io() {
    local wall ios
    read -r wall _ < "$OUT/$1.time"
    ios=$(sed -n 's/.*ios=[0-9]*\/\([0-9]*\).*/\1/p' "$OUT/$1.out" | head -n 1)
    awk -v w="$wall" -v n="$ios" 'BEGIN { printf "%.2f", w * 1e6 / n }'
}
(cd "$OUT" && measure "randwrite 60 s, buffered" 0 200 "$ELEVATOR" run randwrite-direct0.fio)
(cd "$OUT" && measure "randwrite 60 s, direct=1" 0 200 "$ELEVATOR" run randwrite-direct1.fio)
b=$(per_io "randwrite 60 s, buffered")
d=$(per_io "randwrite 60 s, direct=1")
awk -v b="$b" -v d="$d" 'BEGIN {
    printf "%-34s %8s us buffered, %s us direct   buffered/direct %5.2f\n",
        "randwrite wall per device I/O", b, d, b / d }'
for e in $("$ELEVATOR" reproduce --list | awk '{print $1}'); do
    target=0
    [ "$e" = interactivity ] && target=60
    measure "reproduce $e" "$target" 200 "$ELEVATOR" reproduce "$e"
done

#!/usr/bin/env bash
# Lays out DiskSim 4.0's validation drives (its `valid/` directory: atlas_III, atlas10k,
# barracuda, cheetah4LP, cheetah9LP, dec_rz26, hp_c2247a, hp_c2490a, hp_c3323a, ibm18es, and
# st41601n) as
# the drive directories `elevator validate-disk` reads: one subdirectory per drive holding its
# .parv and the files that name it (.diskspecs, .model, .seek, .trace) plus `statdefs`.
# DiskSim is not shipped with elevator; get its source yourself, e.g. Western Digital's copy
# (github.com/westerndigitalcorporation/DiskSim, `valid/`). Usage:
#   bench/disksim-drives.sh DISKSIM_VALID_DIR OUT_DIR
# then `elevator validate-disk --all OUT_DIR`, or `ELEVATOR_DISKSIM_DRIVES=OUT_DIR cargo test`
# to run the real-drive tests and benches over all of them. (`elevator validate-disk --all`
# also reads DiskSim's `valid/` as it is.)
set -euo pipefail
VALID=${1:?usage: bench/disksim-drives.sh DISKSIM_VALID_DIR OUT_DIR}
OUT=${2:?usage: bench/disksim-drives.sh DISKSIM_VALID_DIR OUT_DIR}
[ -f "$VALID/statdefs" ] || { echo "disksim-drives.sh: $VALID/statdefs not found (not DiskSim's valid/)" >&2; exit 1; }
n=0
# The ten drives of `runvalid`, and st41601n, which runvalid leaves out (DiskSim 4.0 aborts on
# it at request 3206; see `elevator_disksim::DISKSIM_4_0_ABORTS`).
for d in atlas_III atlas10k barracuda cheetah4LP cheetah9LP dec_rz26 hp_c2247a hp_c2490a hp_c3323a ibm18es st41601n; do
  [ -f "$VALID/$d.parv" ] || { echo "disksim-drives.sh: $VALID/$d.parv missing, skipped" >&2; continue; }
  mkdir -p "$OUT/$d"
  # The drive's files all start with its name (hp_c2247a_validate.model, dec_rz26.seek, ...);
  # DiskSim's own outputs (.outv, .outtrace) are not inputs.
  for f in "$VALID/$d".* "$VALID/${d}"_*; do
    [ -f "$f" ] || continue
    case "$f" in *.outv|*.outtrace) continue ;; esac
    cp "$f" "$OUT/$d/"
  done
  cp "$VALID/statdefs" "$OUT/$d/"
  n=$((n + 1))
done
echo "$n drives in $OUT"

#!/usr/bin/env bash
# Installs what elevator needs on a fresh Debian machine: the Rust toolchain is expected to be
# present (rustup); this adds the real NBD clients and servers the tests drive (fio, qemu-img,
# nbdcopy/nbdsh, nbdkit), GNU time for the bench scripts and Chromium (headless, for the
# report's end-to-end test: crates/cli/tests/report_chromium.rs), blktrace's blkparse and
# btt (which read `elevator run --write-blktrace`'s traces in crates/cli/tests/blktrace.rs)
# and what the Python package's test (crates/cli/tests/python.rs) builds and runs it with
# (venv, pip, the headers pyo3 links against, pandas, pytest, dask and distributed for
# python/elevator/sweep.py: the venv sees Debian's through
# --system-site-packages), from Debian packages; and fio-plot (PyPI, pinned), which draws
# graphs from `elevator run`'s fio log files in crates/cli/tests/fio_plot.rs, in its own venv
# at $ELEVATOR_TOOLS_VENV (default ~/.cache/elevator/tools-venv). Safe to run again.
set -euo pipefail

packages=(fio qemu-utils libnbd-bin python3-libnbd nbdkit time chromium blktrace
  python3-venv python3-pip python3-dev python3-pandas python3-pytest python3-dask
  python3-distributed)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

command -v cargo >/dev/null || { echo "setup.sh: cargo not found; install Rust with rustup first" >&2; exit 1; }

# fio-plot is not packaged by Debian: a venv of its own, from PyPI, at a pinned version.
FIO_PLOT_VERSION=1.1.21
venv=${ELEVATOR_TOOLS_VENV:-$HOME/.cache/elevator/tools-venv}
if ! "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('fio-plot') != '$FIO_PLOT_VERSION')" 2>/dev/null; then
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "fio-plot==$FIO_PLOT_VERSION"
fi

"""Fixtures: the real `elevator` binary, to check the package against the command."""

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def elevator_binary() -> Path:
    """$ELEVATOR_BIN, else cargo's debug build ($CARGO_TARGET_DIR or target/)."""
    given = os.environ.get("ELEVATOR_BIN")
    if given:
        return Path(given)
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))
    return target / "debug" / "elevator"


class Cli:
    def __init__(self, binary: Path):
        self.binary = binary

    def run(self, *args, cwd=None, ok=True):
        out = subprocess.run(
            [str(self.binary), *map(str, args)],
            cwd=cwd or REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if ok:
            assert out.returncode == 0, f"elevator {args}: {out.stderr}"
        return out

    def error(self, *args, cwd=None) -> str:
        """The one line the command prints on failure, without its `elevator: `."""
        out = self.run(*args, cwd=cwd, ok=False)
        assert out.returncode == 1, (out.returncode, out.stderr)
        lines = out.stderr.splitlines()
        assert len(lines) == 1, out.stderr
        assert lines[0].startswith("elevator: "), lines[0]
        return lines[0][len("elevator: "):]

    def warnings(self, *args, cwd=None):
        out = self.run(*args, cwd=cwd)
        prefix = "elevator: warning: "
        return [l[len(prefix):] for l in out.stderr.splitlines() if l.startswith(prefix)]


@pytest.fixture(scope="session")
def cli() -> Cli:
    binary = elevator_binary()
    if not binary.is_file():
        pytest.fail(
            f"no elevator binary at {binary}: run `cargo build -p elevator-cli` or set ELEVATOR_BIN"
        )
    return Cli(binary)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO

"""Type stubs of the native module (crates/python/src/lib.rs). Use the functions of
`elevator` (python/elevator/__init__.py), which wrap these."""

import os
from typing import List, Optional, Sequence, Tuple, Union

_Path = Union[str, os.PathLike[str]]

VERSION: str

class ElevatorError(ValueError):
    """An input elevator cannot run; the message is the line `elevator` prints."""

def run(
    *,
    job_path: Optional[_Path] = None,
    job_text: Optional[str] = None,
    topology_path: Optional[_Path] = None,
    topology_text: Optional[str] = None,
    scheduler: Optional[str] = None,
    iosched: Sequence[str] = (),
    seed: int = 1,
    plus: bool = False,
) -> Tuple[str, List[str]]:
    """`elevator run ... --output-format json` (json+ with `plus`): (JSON text, warnings)."""

def compare(
    *,
    schedulers: Sequence[str],
    job_path: Optional[_Path] = None,
    job_text: Optional[str] = None,
    topology_path: Optional[_Path] = None,
    topology_text: Optional[str] = None,
    seed: int = 1,
) -> Tuple[str, List[str]]:
    """`elevator compare ... --output-format json`: (JSON text, warnings)."""

def reproduce(name: str, *, scenarios: Optional[_Path] = None) -> str:
    """`elevator reproduce NAME --output-format json`: the JSON text."""

def experiments(*, scenarios: Optional[_Path] = None) -> List[Tuple[str, str, str]]:
    """`elevator reproduce --list`: (name, seed mail, title) per experiment."""

"""elevator: block I/O schedulers in a deterministic disk simulator, from Python.

    import elevator
    r = elevator.run("examples/seq-vs-random.fio", scheduler="bfq")
    r.json["jobs"][0]["read"]["bw_bytes"]   # fio's JSON, as `elevator run --output-format json`
    r.to_pandas()                           # one row per job and direction that had I/O
    elevator.compare("job.fio", schedulers=["mq-deadline", "bfq"])   # ... with a scheduler column

Every function runs the same library code as the `elevator` command (crates/python calls
what crates/cli calls), so the same inputs and seed give the same numbers, and the JSON text
is byte for byte the command's. An input elevator cannot run raises :class:`ElevatorError`
(a :class:`ValueError`) with the one line the command prints; what the command prints as
``elevator: warning: ...`` is issued as an :class:`ElevatorWarning`. The simulation runs
with the GIL released.
"""

from __future__ import annotations

import json as _json
import os
import warnings as _warnings
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from . import _elevator
from ._elevator import ElevatorError

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = [
    "ElevatorError",
    "ElevatorWarning",
    "Result",
    "Reproduction",
    "run",
    "compare",
    "reproduce",
    "experiments",
    "DIRECTIONS",
]

__version__: str = _elevator.VERSION


def __getattr__(name: str) -> Any:
    # `elevator.sweep` (the Dask executor, and `elevator.sweep(grid)` → DataFrame) is imported
    # on first use, so that `import elevator` needs no Dask and `python -m elevator.sweep`
    # does not find its module already imported.
    if name == "sweep":
        import importlib

        return importlib.import_module(".sweep", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

#: fio's directions, in the order of its JSON; a DataFrame has a row for each one with I/O.
DIRECTIONS: Tuple[str, ...] = ("read", "write", "trim")

PathOrText = Union[str, "os.PathLike[str]"]
Tunables = Union[None, str, Mapping[str, Any], Iterable[str]]


class ElevatorWarning(UserWarning):
    """What ``elevator`` prints as ``elevator: warning: ...``: options it does not model,
    devices it added for ``/dev/X`` names, a minimum a controller could not meet."""


def _path_or_text(value: Optional[PathOrText], what: str) -> Tuple[Optional[str], Optional[str]]:
    """(path, text): a str with a newline or a ``[`` is the text itself, else a path."""
    if value is None:
        return None, None
    if isinstance(value, os.PathLike):
        return os.fspath(value), None
    if not isinstance(value, str):
        raise TypeError(f"{what}: expected a path or text, got {type(value).__name__}")
    if "\n" in value or "[" in value:
        return None, value
    return value, None


def _tunable(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _iosched(iosched: Tunables) -> List[str]:
    """``KEY=VALUE`` strings from a mapping, one ``KEY=VALUE`` string or several."""
    if iosched is None:
        return []
    if isinstance(iosched, str):
        return [iosched]
    if isinstance(iosched, Mapping):
        return [f"{k}={_tunable(v)}" for k, v in iosched.items()]
    return [str(p) for p in iosched]


def _warn(lines: Iterable[str]) -> None:
    for line in lines:
        _warnings.warn(line, ElevatorWarning, stacklevel=3)


def _flatten(value: Mapping[str, Any], prefix: str, out: Dict[str, Any]) -> None:
    for key, v in value.items():
        name = f"{prefix}{key}"
        if isinstance(v, Mapping):
            if key == "bins":  # json+'s histogram: a column per bucket helps nobody
                continue
            _flatten(v, name + ".", out)
        elif not isinstance(v, list):
            out[name] = v


def fio_rows(fio: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One dict per job and direction that had I/O in fio's JSON (``elevator run``'s or
    real fio's): ``jobname``, ``groupid``, ``direction``, then the direction's fields
    flattened with dots (``clat_ns.mean``, ``clat_ns.percentile.99.000000``)."""
    rows = []
    for job in fio.get("jobs", []):
        for direction in DIRECTIONS:
            stats = job.get(direction)
            if not stats or not (stats.get("total_ios") or stats.get("io_bytes")):
                continue
            row: Dict[str, Any] = {
                "jobname": job.get("jobname"),
                "groupid": job.get("groupid"),
                "direction": direction,
            }
            _flatten(stats, "", row)
            rows.append(row)
    return rows


def _data_frame(rows: List[Dict[str, Any]], columns: Optional[List[str]] = None) -> "pandas.DataFrame":
    try:
        import pandas
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("elevator: DataFrames need pandas (pip install pandas)") from e
    return pandas.DataFrame(rows, columns=columns)


class Result:
    """One run: fio's JSON (``.json``, a dict; ``.json_text``, the command's exact text) and
    its rows as a DataFrame (``.to_pandas()``)."""

    def __init__(self, json_text: str, warnings: List[str]):
        #: The text ``elevator run --output-format json`` prints for the same inputs.
        self.json_text: str = json_text
        #: The warnings the command would print (also issued as ElevatorWarning).
        self.warnings: List[str] = list(warnings)
        self._json: Optional[Dict[str, Any]] = None

    @property
    def json(self) -> Dict[str, Any]:
        """fio's JSON as a dict (``jobs``, ``disk_util``, ``elevator``...)."""
        if self._json is None:
            self._json = _json.loads(self.json_text)
        return self._json

    def rows(self) -> List[Dict[str, Any]]:
        """:func:`fio_rows` of this run."""
        return fio_rows(self.json)

    def to_pandas(self) -> "pandas.DataFrame":
        """One row per job and direction that had I/O (see :func:`fio_rows`)."""
        return _data_frame(self.rows())

    def __repr__(self) -> str:
        jobs = self.json.get("jobs", [])
        return f"<elevator.Result: {len(jobs)} job(s), seed {self.json['elevator']['seed']}>"


def run(
    job: PathOrText,
    topology: Optional[PathOrText] = None,
    scheduler: Optional[str] = None,
    iosched: Tunables = None,
    seed: int = 1,
    *,
    json_plus: bool = False,
) -> Result:
    """``elevator run JOB [--topology T] [--scheduler S] [--iosched K=V]... --seed N
    --output-format json`` (``json+`` with ``json_plus``).

    ``job`` is a job file's path or the job file's text (a str with a newline or a ``[``),
    ``topology`` likewise a TOML file or text (None: the built-in 7200 rpm SATA disk).
    ``iosched`` is ``{"read_expire": 250}``, ``"read_expire=250"`` or a list of such.
    fio's log files (``write_lat_log=``...) are written in the current directory.
    """
    job_path, job_text = _path_or_text(job, "job")
    topology_path, topology_text = _path_or_text(topology, "topology")
    text, warnings = _elevator.run(
        job_path=job_path,
        job_text=job_text,
        topology_path=topology_path,
        topology_text=topology_text,
        scheduler=scheduler,
        iosched=_iosched(iosched),
        seed=seed,
        plus=json_plus,
    )
    _warn(warnings)
    return Result(text, warnings)


def compare_json(
    job: PathOrText,
    schedulers: Iterable[str],
    topology: Optional[PathOrText] = None,
    seed: int = 1,
) -> str:
    """``elevator compare JOB --scheduler A --scheduler B... --output-format json``: its text,
    ``{"runs": [{"scheduler": ..., "result": <fio JSON>}, ...]}``."""
    job_path, job_text = _path_or_text(job, "job")
    topology_path, topology_text = _path_or_text(topology, "topology")
    if isinstance(schedulers, str):
        schedulers = [schedulers]
    text, warnings = _elevator.compare(
        schedulers=list(schedulers),
        job_path=job_path,
        job_text=job_text,
        topology_path=topology_path,
        topology_text=topology_text,
        seed=seed,
    )
    _warn(warnings)
    return text


def compare(
    job: PathOrText,
    schedulers: Iterable[str],
    topology: Optional[PathOrText] = None,
    seed: int = 1,
) -> "pandas.DataFrame":
    """One job file under several schedulers (``NAME`` or ``NAME:KEY=VALUE,...``, e.g.
    ``cfq:group_scheduling=0``): a DataFrame with a ``scheduler`` column before
    :func:`fio_rows`' columns; ``.attrs["json"]`` holds the whole comparison as
    ``elevator compare --output-format json`` gives it."""
    data = _json.loads(compare_json(job, schedulers, topology, seed))
    rows = []
    for r in data["runs"]:
        for row in fio_rows(r["result"]):
            rows.append({"scheduler": r["scheduler"], **row})
    df = _data_frame(rows)
    df.attrs["json"] = data
    return df


class Reproduction(dict):
    """``elevator reproduce NAME --output-format json`` as a dict (``name``, ``seed_mail``,
    ``title``, ``tables``), with :meth:`to_pandas`."""

    def to_pandas(self) -> "pandas.DataFrame":
        """Long form: one row per table, variant, row value and column, with our number,
        the cell as printed, and the published row (as the seed mail printed it)."""
        rows = []
        for t, table in enumerate(self.get("tables", [])):
            headers = table.get("headers") or table.get("columns", [])
            for variant in table.get("variants", []):
                for row in variant.get("rows", []):
                    cells = row.get("cells", [])
                    for c, number in enumerate(row.get("numbers", [])):
                        rows.append(
                            {
                                "table": t,
                                "title": table.get("title"),
                                "variant": variant.get("label"),
                                "scheduler": variant.get("scheduler"),
                                "vary": table.get("vary"),
                                "value": row.get("value"),
                                "column": table["columns"][c] if c < len(table.get("columns", [])) else None,
                                "header": headers[c] if c < len(headers) else None,
                                "number": number,
                                "cell": cells[c] if c < len(cells) else None,
                                "published": row.get("published"),
                            }
                        )
        columns = ["table", "title", "variant", "scheduler", "vary", "value", "column",
                   "header", "number", "cell", "published"]
        return _data_frame(rows, columns)


def reproduce(name: str, scenarios: Optional[PathOrText] = None, table: Optional[str] = None,
              variant: Optional[str] = None) -> Reproduction:
    """``elevator reproduce NAME --output-format json``: a reference experiment from
    ``scenarios/`` (``./scenarios``, else the source tree's, unless ``scenarios`` says);
    ``table`` and ``variant`` keep the tables and variants whose titles and labels hold that
    text, ignoring case (``--table``, ``--variant``)."""
    text = _elevator.reproduce(name, scenarios=None if scenarios is None else os.fspath(scenarios),
                               table=table, variant=variant)
    return Reproduction(_json.loads(text))


def experiments(scenarios: Optional[PathOrText] = None) -> List[Tuple[str, str, str]]:
    """``elevator reproduce --list``: (name, seed mail, title) of each experiment."""
    return _elevator.experiments(scenarios=None if scenarios is None else os.fspath(scenarios))

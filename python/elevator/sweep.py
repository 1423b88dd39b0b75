"""Run a sweep plan's shards on a Dask cluster, then merge them.

    python -m elevator.sweep PLAN.jsonl -o OUTDIR [--shards N]
        [--scheduler-address tcp://host:port] [--retries 2] [--elevator PATH]

    import elevator.sweep
    merged = elevator.sweep.run("plan.jsonl", "out")          # a LocalCluster of this machine
    merged = elevator.sweep.run("plan.jsonl", "out", client=Client("tcp://scheduler:8786"))
    df = elevator.sweep("grid.toml")    # plan, run and merge a grid: its rows as a DataFrame

Each Dask task runs the real ``elevator sweep run PLAN --shard i/N -o OUTDIR`` as a
subprocess (the Rust binary simulates and writes ``OUTDIR/shard-i-of-N.parquet``); a failed
task is retried ``retries`` times by Dask, and since a shard file is resumable a retry runs
only the runs that are not in it yet. Finally ``elevator sweep merge`` joins the N shard files
into ``OUTDIR/merged.parquet``: the same bytes as one serial ``--shard 0/1`` and a merge.

Without ``--scheduler-address`` (``client=None``) a ``LocalCluster`` is started: one worker
per CPU (``os.cpu_count()``), one thread each, inside this process (``processes=False``). A
task only waits for its ``elevator`` subprocess, which does the work, so worker processes
would add nothing but their start-up (about a second of CPU each, taken from the first
shards). N defaults to four shards per worker thread (enough to balance uneven runs), at most
the plan's run count.

The plan, OUTDIR and the ``elevator`` binary must be at the same paths on every worker (a
shared file system), and the workers run ``elevator`` in the directory this function was
called from, as a plan is run from where it was made (its job and topology paths are
relative to it). On another cluster, start its Dask scheduler and workers with the cluster's
own tools and pass the scheduler's address; there is nothing elevator-specific to deploy:

    # Slurm (pip install dask-jobqueue)
    from dask_jobqueue import SLURMCluster
    cluster = SLURMCluster(cores=1, processes=1, memory="2GB", walltime="01:00:00")
    cluster.scale(jobs=32)
    elevator.sweep.run("plan.jsonl", "/shared/out", client=Client(cluster))
    # or: python -m elevator.sweep plan.jsonl -o /shared/out --scheduler-address tcp://...

    # Kubernetes (pip install dask-kubernetes; the image has elevator and this package)
    from dask_kubernetes.operator import KubeCluster
    cluster = KubeCluster(name="sweep", image="...", n_workers=32)
    elevator.sweep.run("plan.jsonl", "/shared/out", client=Client(cluster))

``--elevator`` (or ``$ELEVATOR_BIN``) names the binary; default ``elevator`` on ``PATH``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Union

if TYPE_CHECKING:  # pragma: no cover
    import pandas
    from distributed import Client

__all__ = ["run", "main", "plan_runs", "shard_file"]

PathLike = Union[str, "os.PathLike[str]"]

#: Default shards per worker.
SHARDS_PER_WORKER = 4


def _import_distributed():
    try:
        import distributed
    except ImportError as e:  # pragma: no cover
        raise ImportError(
            "elevator.sweep needs Dask distributed: pip install 'dask[distributed]' "
            "(Debian: python3-dask python3-distributed, which ./setup.sh installs)"
        ) from e
    return distributed


def plan_runs(plan: PathLike) -> int:
    """The number of runs in a plan: its non-empty lines."""
    with open(plan, "rb") as f:
        return sum(1 for line in f if line.strip())


def shard_file(outdir: PathLike, i: int, n: int) -> Path:
    """Where ``elevator sweep run --shard i/n -o outdir`` writes."""
    return Path(outdir) / f"shard-{i}-of-{n}.parquet"


def _elevator_binary(elevator: Optional[PathLike]) -> str:
    given = os.fspath(elevator or os.environ.get("ELEVATOR_BIN") or "elevator")
    if os.sep in given:
        return os.path.abspath(given)
    found = shutil.which(given)
    if not found:
        raise FileNotFoundError(f"no `{given}` on PATH: pass elevator= (--elevator) or set ELEVATOR_BIN")
    return os.path.abspath(found)


def _die_with_parent() -> None:  # pragma: no cover (runs in the child before exec)
    """If the worker process dies, kill its `elevator` too (Linux PR_SET_PDEATHSIG), so a
    retried shard never runs next to an orphan writing the same file."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def run_shard(elevator: str, plan: str, i: int, n: int, outdir: str, cwd: str) -> str:
    """One Dask task: ``elevator sweep run PLAN --shard i/n -o OUTDIR``; its shard file."""
    out = subprocess.run(
        [elevator, "sweep", "run", plan, "--shard", f"{i}/{n}", "-o", outdir],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )
    if out.returncode != 0:
        raise RuntimeError(
            f"elevator sweep run --shard {i}/{n} exited with {out.returncode}: {out.stderr.strip()}"
        )
    return str(shard_file(outdir, i, n))


def _workers(client: "Client") -> int:
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        client.wait_for_workers(1)
        workers = client.scheduler_info().get("workers", {})
    return max(1, sum(w.get("nthreads", 1) for w in workers.values()))


def run(
    plan: PathLike,
    outdir: PathLike,
    shards: Optional[int] = None,
    client: Optional["Client"] = None,
    retries: int = 2,
    elevator: Optional[PathLike] = None,
    progress: bool = True,
) -> Path:
    """Run every shard of ``plan`` as a Dask task, merge them; the merged file's path
    (``outdir/merged.parquet``). ``client=None`` starts (and stops) a LocalCluster."""
    distributed = _import_distributed()
    binary = _elevator_binary(elevator)
    cwd = os.getcwd()
    plan_path = os.path.abspath(os.fspath(plan))
    out = Path(os.path.abspath(os.fspath(outdir)))
    runs = plan_runs(plan_path)
    if runs == 0:
        raise ValueError(f"{plan}: the plan has no runs")
    if shards is not None and shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    out.mkdir(parents=True, exist_ok=True)

    own = None
    if client is None:
        cluster = distributed.LocalCluster(
            n_workers=os.cpu_count() or 1,
            threads_per_worker=1,
            processes=False,
            dashboard_address=None,
        )
        own = (cluster, distributed.Client(cluster))
        client = own[1]
    try:
        n = shards if shards is not None else _workers(client) * SHARDS_PER_WORKER
        n = min(n, runs)
        futures = client.map(
            run_shard,
            [binary] * n,
            [plan_path] * n,
            range(n),
            [n] * n,
            [str(out)] * n,
            [cwd] * n,
            key=[f"elevator-sweep-shard-{i}-of-{n}" for i in range(n)],
            pure=False,
            retries=retries,
        )
        done = 0
        for future in distributed.as_completed(futures):
            future.result()  # raises the shard's error once its retries are spent
            done += 1
            if progress:
                print(f"elevator.sweep: {done}/{n} shards done", file=sys.stderr, flush=True)
    finally:
        if own is not None:
            own[1].close()
            own[0].close()

    merged = out / "merged.parquet"
    files: List[str] = [str(shard_file(out, i, n)) for i in range(n)]
    result = subprocess.run(
        [binary, "sweep", "merge", *files, "-o", str(merged)],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise RuntimeError(f"elevator sweep merge exited with {result.returncode}: {result.stderr.strip()}")
    return merged


def _elevator_text(binary: str, args: List[str]) -> str:
    """``elevator ARGS``'s standard output; its one-line error as :class:`ElevatorError`."""
    from ._elevator import ElevatorError

    out = subprocess.run(
        [binary, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True
    )
    if out.returncode != 0:
        message = out.stderr.strip().removeprefix("elevator: ")
        raise ElevatorError(message or f"elevator {args[0]} exited with {out.returncode}")
    return out.stdout


def frame(
    grid: PathLike,
    outdir: Optional[PathLike] = None,
    shards: Optional[int] = None,
    client: Optional["Client"] = None,
    retries: int = 2,
    elevator: Optional[PathLike] = None,
) -> "pandas.DataFrame":
    """``elevator.sweep(grid)``: plans the grid file (``elevator sweep plan``), runs the plan
    with :func:`run` (``client=None``: a LocalCluster), and returns the merged rows as a
    DataFrame — one row per run, job and direction, the columns of the Parquet file
    (``elevator sweep rows``). The plan, shard files and ``merged.parquet`` stay in ``outdir``
    (default: a new temporary directory). A bad grid raises :class:`ElevatorError` with
    elevator's one-line message, before anything runs."""
    import json
    import tempfile

    import pandas

    binary = _elevator_binary(elevator)
    out = Path(outdir) if outdir is not None else Path(tempfile.mkdtemp(prefix="elevator-sweep-"))
    out.mkdir(parents=True, exist_ok=True)
    plan = out / "plan.jsonl"
    _elevator_text(binary, ["sweep", "plan", os.fspath(grid), "-o", str(plan)])
    merged = run(plan, out, shards=shards, client=client, retries=retries, elevator=binary, progress=False)
    text = _elevator_text(binary, ["sweep", "rows", str(merged)])
    return pandas.DataFrame([json.loads(line) for line in text.splitlines() if line])


class _SweepModule(type(sys)):
    """``elevator.sweep`` is also callable: ``elevator.sweep(grid)`` is :func:`frame`."""

    def __call__(self, grid: PathLike, **kwargs: Any) -> "pandas.DataFrame":
        return frame(grid, **kwargs)


sys.modules[__name__].__class__ = _SweepModule


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m elevator.sweep",
        description="Run a sweep plan's shards (`elevator sweep run`) as Dask tasks and merge them.",
    )
    p.add_argument("plan", help="the plan (`elevator sweep plan GRID.toml -o PLAN.jsonl`)")
    p.add_argument("-o", "--output", required=True, help="directory for the shard files and merged.parquet")
    p.add_argument("--shards", type=int, default=None, help="N (default: 4 per worker, at most the runs)")
    p.add_argument("--scheduler-address", default=None, help="an existing Dask scheduler (default: a LocalCluster)")
    p.add_argument("--retries", type=int, default=2, help="Dask retries of a failed shard (default 2)")
    p.add_argument("--elevator", default=None, help="the elevator binary (default $ELEVATOR_BIN, else PATH)")
    args = p.parse_args(argv)
    client = None
    if args.scheduler_address:
        client = _import_distributed().Client(args.scheduler_address)
    try:
        merged = run(
            args.plan, args.output, shards=args.shards, client=client, retries=args.retries, elevator=args.elevator
        )
    except (RuntimeError, ValueError, OSError) as e:
        print(f"elevator.sweep: {e}", file=sys.stderr)
        return 1
    finally:
        if client is not None:
            client.close()
    print(merged)
    return 0


if __name__ == "__main__":
    # Run as the installed module, so Dask pickles run_shard by reference, not __main__'s.
    from elevator.sweep import main as _main

    sys.exit(_main())

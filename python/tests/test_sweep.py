"""elevator.sweep: a plan's shards as Dask tasks, against the real `elevator` binary.

Each test makes a grid in its temp dir, plans it there, runs it through Dask and compares the
merged Parquet file with a serial `elevator sweep run PLAN --shard 0/1` and `merge` of the same
plan: the same bytes. Every id being there is checked with `elevator` itself (there is no
Parquet reader here): a copy of the merged file as the shard file of `--shard 0/1` must leave
nothing to run ("ran 0, skipped N").
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

JOB = """[r]
filename=sda
rw=randread
bs=4k
direct=1
ioengine=libaio
iodepth=${QD}
runtime=RUNTIME
time_based
"""


@pytest.fixture(scope="module")
def distributed():
    try:
        import distributed
    except ImportError:
        pytest.fail(
            "elevator.sweep needs Dask distributed: run ./setup.sh "
            "(it installs python3-dask and python3-distributed)"
        )
    return distributed


def make_plan(cli, dir: Path, runtime: str, seeds: int) -> Path:
    """3 schedulers × QD 1, 8 × `seeds` seeds of 4 KiB random reads of `runtime`."""
    (dir / "j.fio").write_text(JOB.replace("RUNTIME", runtime))
    (dir / "g.toml").write_text(
        'job = "j.fio"\nscheduler = ["mq-deadline", "bfq", "kyber"]\n'
        f"seeds = {list(range(1, seeds + 1))}\n[vars]\nQD = [\"1\", \"8\"]\n"
    )
    cli.run("sweep", "plan", "g.toml", "-o", "plan.jsonl", cwd=dir)
    return dir / "plan.jsonl"


def serial(cli, dir: Path, plan: Path) -> bytes:
    cli.run("sweep", "run", plan, "--shard", "0/1", "-o", dir / "serial", cwd=dir)
    cli.run("sweep", "merge", dir / "serial", "-o", dir / "serial.parquet", cwd=dir)
    return (dir / "serial.parquet").read_bytes()


def assert_every_id_once(cli, dir: Path, plan: Path, merged: Path, runs: int):
    check = dir / "check"
    check.mkdir()
    shutil.copy(merged, check / "shard-0-of-1.parquet")
    out = cli.run("sweep", "run", plan, "--shard", "0/1", "-o", check, cwd=dir)
    assert f"ran 0, skipped {runs} already in" in out.stderr, out.stderr
    assert merged.read_bytes() == serial(cli, dir, plan)


def test_cli_on_two_workers_equals_serial(cli, tmp_path, distributed):
    plan = make_plan(cli, tmp_path, "200ms", 2)
    assert len(plan.read_text().splitlines()) == 12
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        out = subprocess.run(
            [sys.executable, "-m", "elevator.sweep", plan, "-o", tmp_path / "out",
             "--scheduler-address", cluster.scheduler_address, "--elevator", cli.binary],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
        )
    assert out.returncode == 0, out.stderr
    merged = tmp_path / "out" / "merged.parquet"
    assert out.stdout.strip() == str(merged)
    # 2 workers × 4 shards each; a progress line per shard.
    shards = sorted(p.name for p in (tmp_path / "out").glob("shard-*.parquet"))
    assert shards == sorted(f"shard-{i}-of-8.parquet" for i in range(8))
    assert "elevator.sweep: 8/8 shards done" in out.stderr, out.stderr
    assert_every_id_once(cli, tmp_path, plan, merged, 12)


def test_calling_elevator_sweep_on_a_grid_gives_its_rows(cli, tmp_path, distributed, monkeypatch):
    """`elevator.sweep(grid)`: plan, run on a LocalCluster, merge, and the merged rows as a
    DataFrame — the same rows as `elevator sweep rows` of a serial run; a bad grid raises
    elevator's one-line error before anything runs."""
    import json

    import elevator
    from elevator import ElevatorError

    plan = make_plan(cli, tmp_path, "200ms", 2)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ELEVATOR_BIN", str(cli.binary))
    df = elevator.sweep(tmp_path / "g.toml", outdir=tmp_path / "out", shards=3)
    assert df["id"].nunique() == 12
    serial(cli, tmp_path, plan)
    rows = cli.run("sweep", "rows", tmp_path / "serial.parquet", cwd=tmp_path).stdout
    want = [json.loads(line) for line in rows.splitlines()]
    assert len(df) == len(want)
    assert df.to_dict("records")[0]["id"] == want[0]["id"]
    assert sorted(df["scheduler"].unique()) == ["bfq", "kyber", "mq-deadline"]
    (tmp_path / "bad.toml").write_text('job = "j.fio"\nscheduler = ["cfq2"]\nseeds = [1]\n')
    with pytest.raises(ElevatorError, match="bad.toml.*cfq2"):
        elevator.sweep(tmp_path / "bad.toml", outdir=tmp_path / "bad")
    assert not (tmp_path / "bad" / "merged.parquet").exists()


def test_cli_default_local_cluster(cli, tmp_path, distributed):
    plan = make_plan(cli, tmp_path, "200ms", 2)
    out = subprocess.run(
        [sys.executable, "-m", "elevator.sweep", plan, "-o", tmp_path / "out", "--shards", "5"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "ELEVATOR_BIN": str(cli.binary)},
    )
    assert out.returncode == 0, out.stderr
    assert "elevator.sweep: 5/5 shards done" in out.stderr, out.stderr
    assert_every_id_once(cli, tmp_path, plan, tmp_path / "out" / "merged.parquet", 12)


def test_a_failing_shard_is_an_error(cli, tmp_path, distributed):
    plan = make_plan(cli, tmp_path, "200ms", 1)
    (tmp_path / "j.fio").unlink()  # `run` opens the job file: every shard fails
    out = subprocess.run(
        [sys.executable, "-m", "elevator.sweep", plan, "-o", tmp_path / "out", "--shards", "2",
         "--retries", "1", "--elevator", cli.binary],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 1, out.stderr
    assert "elevator.sweep: elevator sweep run --shard" in out.stderr, out.stderr


def _elevators(plan: Path):
    import psutil

    for p in psutil.process_iter(["cmdline", "create_time"]):
        cmd = p.info["cmdline"] or []
        if str(plan) in cmd and "run" in cmd:
            yield p


def test_killed_shard_and_worker_lose_nothing(cli, tmp_path, distributed, monkeypatch):
    """42 runs of about 0.25 s in 4 shards on 2 workers. Once a shard has finished, one
    shard's `elevator` gets SIGINT (it keeps its finished runs and exits 130: the task
    fails and Dask's retry resumes the file), then the worker running another shard is
    SIGKILLed (its `elevator` dies with it; the nanny restarts the worker and the scheduler
    runs the task again). The merged file has every run once."""
    import elevator.sweep

    plan = make_plan(cli, tmp_path, "3600", 7)
    assert len(plan.read_text().splitlines()) == 42
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    done = {}

    def chaos(client):
        deadline = time.monotonic() + 60
        while not list(out.glob("shard-*.parquet")) and time.monotonic() < deadline:
            time.sleep(0.05)
        # An `elevator` that has run long enough to have finished runs of its shard.
        while "sigint" not in done and time.monotonic() < deadline:
            for p in _elevators(plan):
                if time.time() - p.info["create_time"] > 0.5:
                    p.send_signal(signal.SIGINT)
                    done["sigint"] = " ".join(p.info["cmdline"])
                    break
            time.sleep(0.05)
        time.sleep(0.3)
        while "kill" not in done and time.monotonic() < deadline:
            busy = [w for w, keys in client.processing().items() if keys]
            if busy:
                pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
                os.kill(pid, signal.SIGKILL)
                done["kill"] = busy[0]
            time.sleep(0.05)

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster, distributed.Client(cluster) as client:
        t = threading.Thread(target=chaos, args=(client,), daemon=True)
        t.start()
        merged = elevator.sweep.run(plan, out, shards=4, client=client, elevator=cli.binary)
        t.join(5)
    assert set(done) == {"sigint", "kill"}, done
    assert merged == out / "merged.parquet"
    assert_every_id_once(cli, tmp_path, plan, merged, 42)

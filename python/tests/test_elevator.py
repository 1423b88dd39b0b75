"""The Python package against the `elevator` command: same inputs, same JSON bytes, the
DataFrames' numbers those of the command's JSON, the command's one-line errors."""

import json
import math
import threading
import time
import _thread

import pytest

import elevator

# Two reporting groups on the built-in disk, two simulated seconds: a random reader and a
# sequential writer (reads and writes, so both directions make rows).
JOB = """\
[global]
filename=sda
direct=1
ioengine=psync
runtime=2
time_based

[reader]
rw=randread
bs=4k

[writer]
new_group
rw=write
bs=64k
"""


@pytest.fixture
def job(tmp_path):
    path = tmp_path / "two.fio"
    path.write_text(JOB)
    return path


def cli_json(cli, *args):
    return cli.run("run", *args, "--output-format", "json").stdout


def test_run_is_the_commands_json_byte_for_byte(cli, job):
    r = elevator.run(job)
    assert r.json_text == cli_json(cli, job)
    assert r.json == json.loads(r.json_text)
    assert r.json["elevator"]["seed"] == 1


def test_scheduler_tunables_seed_and_topology_are_the_commands(cli, job, repo, monkeypatch):
    monkeypatch.chdir(repo)  # the topology's path is in the JSON as given
    r = elevator.run(
        str(job),
        topology="examples/ssd.toml",
        scheduler="mq-deadline",
        iosched={"read_expire": 250, "front_merges": False},
        seed=7,
    )
    assert r.json_text == cli_json(
        cli, job, "--topology", "examples/ssd.toml", "--scheduler", "mq-deadline",
        "--iosched", "read_expire=250", "--iosched", "front_merges=0", "--seed", "7",
    )
    assert r.json["elevator"]["seed"] == 7
    assert elevator.run(job, iosched="read_expire=250", seed=7, scheduler="mq-deadline",
                        topology="examples/ssd.toml").json_text == r.json_text


def test_job_and_topology_as_text(cli, job, repo):
    by_path = elevator.run(job, topology=repo / "examples" / "ssd.toml")
    by_text = elevator.run(JOB, topology=(repo / "examples" / "ssd.toml").read_text())
    assert by_text.json["jobs"] == by_path.json["jobs"]
    assert by_text.json["disk_util"] == by_path.json["disk_util"]
    assert by_text.json["elevator"]["topology"] == "<topology text>"


def test_json_plus(cli, job):
    r = elevator.run(job, json_plus=True)
    assert r.json_text == cli.run("run", job, "--output-format", "json+").stdout
    assert "bins" in r.json["jobs"][0]["read"]["clat_ns"]
    assert not any(c.startswith("clat_ns.bins") for c in r.to_pandas().columns)


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(a, b, rel_tol=0, abs_tol=0) or (math.isnan(a) and math.isnan(b))
    return a == b


def check_rows_against(df, fio):
    """Every cell of the DataFrame is the number at its dotted path in the command's JSON,
    and every job and direction with I/O has its row."""
    expected = [
        (j, d) for j in fio["jobs"] for d in ("read", "write", "trim") if j[d]["total_ios"] > 0
    ]
    assert len(df) == len(expected)
    for (job, direction), (_, row) in zip(expected, df.iterrows()):
        assert row["jobname"] == job["jobname"]
        assert row["groupid"] == job["groupid"]
        assert row["direction"] == direction
        for column, value in row.items():
            if column in ("jobname", "groupid", "direction", "scheduler"):
                continue
            node = job[direction]
            key = column
            # Walk the dotted path; percentile keys ("99.000000") contain dots themselves.
            while key not in node:
                head, key = key.split(".", 1)
                node = node[head]
            assert same(value, node[key]), (job["jobname"], direction, column, value, node[key])


def test_to_pandas_numbers_are_the_commands_json(cli, job):
    df = elevator.run(job).to_pandas()
    fio = json.loads(cli_json(cli, job))
    assert list(df[["jobname", "direction"]].itertuples(index=False, name=None)) == [
        ("reader", "read"),
        ("writer", "write"),
    ]
    for column in ["io_bytes", "bw_bytes", "iops", "runtime", "clat_ns.mean",
                   "clat_ns.percentile.99.000000", "lat_ns.max", "bw_mean"]:
        assert column in df.columns, column
    check_rows_against(df, fio)
    reader = df[df.jobname == "reader"].iloc[0]
    assert reader["clat_ns.percentile.99.000000"] == \
        fio["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"]
    assert reader["io_bytes"] > 0 and reader["iops"] > 0


def test_compare(cli, job):
    schedulers = ["mq-deadline", "none", "cfq:slice_idle=0"]
    text = elevator.compare_json(job, schedulers)
    args = ["compare", job, "--output-format", "json"]
    for s in schedulers:
        args += ["--scheduler", s]
    assert text == cli.run(*args).stdout
    df = elevator.compare(job, schedulers)
    assert df.columns[0] == "scheduler"
    assert list(df["scheduler"].unique()) == schedulers
    assert df.attrs["json"] == json.loads(text)
    for run in json.loads(text)["runs"]:
        part = df[df.scheduler == run["scheduler"]].reset_index(drop=True)
        check_rows_against(part, run["result"])
    # Each run is the same as a run of its own.
    alone = elevator.run(job, scheduler="none").json
    assert json.loads(text)["runs"][1]["result"]["jobs"] == alone["jobs"]


def test_errors_are_the_commands_line(cli, job, tmp_path, repo):
    bad = tmp_path / "bad.fio"
    bad.write_text("[j]\nrw=read\nbs=4q\n")
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(bad)
    assert isinstance(e.value, ValueError)
    assert str(e.value) == cli.error("run", bad)
    assert f"{bad}:3" in str(e.value) and "`bs`" in str(e.value)

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run("[j]\nrw=sideways\n")
    assert str(e.value).startswith("<job text>:2: option `rw`")

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(job, scheduler="elevator-of-doom")
    assert str(e.value) == cli.error("run", job, "--scheduler", "elevator-of-doom")

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(job, iosched={"read_expire": "soon"})
    assert str(e.value) == cli.error("run", job, "--iosched", "read_expire=soon")

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(job, iosched="read_expire")
    assert str(e.value) == cli.error("run", job, "--iosched", "read_expire")

    missing = tmp_path / "missing.fio"
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(missing)
    assert str(e.value) == cli.error("run", missing)

    topology = tmp_path / "bad.toml"
    topology.write_text("[[device]]\nname = 'sda'\nmodel = 'tape'\n")
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.run(job, topology=topology)
    assert str(e.value) == cli.error("run", job, "--topology", topology)

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.compare(job, ["mq-deadline", "cfq:slice_idle"])
    assert str(e.value) == cli.error(
        "compare", job, "--scheduler", "mq-deadline", "--scheduler", "cfq:slice_idle"
    )


def test_warnings_are_the_commands(cli, tmp_path):
    path = tmp_path / "warn.fio"
    path.write_text(JOB.replace("runtime=2", "runtime=1\ncpus_allowed=0"))
    with pytest.warns(elevator.ElevatorWarning) as record:
        r = elevator.run(path)
    expected = cli.warnings("run", path, "--output-format", "json")
    assert expected, "the job should warn"
    assert [str(w.message) for w in record] == expected == r.warnings


SCENARIO = """\
name = "tiny"
seed_mail = "999"
title = "Two readers, then N"

[[table]]
title = "readers"
jobfile = "tiny.fio"
vary = "N"
values = ["1", "2"]
columns = ["all.nr", "all.agg_mbs", "all.max_lat"]
headers = ["readers", "MB/s", "max lat"]

[[table.variant]]
label = "DL"
scheduler = "mq-deadline"
published = ["1 1.00", "2 2.00"]

[[table.variant]]
label = "none"
scheduler = "none"
"""

TINY = """\
[global]
filename=sda
direct=1
ioengine=psync
runtime=1
time_based

[reader]
rw=randread
numjobs=${N}
group_reporting
"""


def test_reproduce(cli, tmp_path):
    (tmp_path / "tiny.toml").write_text(SCENARIO)
    (tmp_path / "tiny.fio").write_text(TINY)
    r = elevator.reproduce("tiny", scenarios=tmp_path)
    out = cli.run("reproduce", "tiny", "--scenarios", tmp_path, "--output-format", "json")
    assert r == json.loads(out.stdout)
    assert isinstance(r, dict) and r["name"] == "tiny"
    df = r.to_pandas()
    # 2 variants x 2 rows x 3 columns.
    assert len(df) == 12
    assert set(df["variant"]) == {"DL", "none"}
    for _, row in df.iterrows():
        table = r["tables"][row["table"]]
        variant = next(v for v in table["variants"] if v["label"] == row["variant"])
        cells = next(x for x in variant["rows"] if x["value"] == row["value"])
        c = table["columns"].index(row["column"])
        assert row["number"] == cells["numbers"][c]
        assert row["cell"] == cells["cells"][c]
    assert elevator.experiments(scenarios=tmp_path) == [("tiny", "999", "Two readers, then N")]

    with pytest.raises(elevator.ElevatorError) as e:
        elevator.reproduce("huge", scenarios=tmp_path)
    assert str(e.value) == cli.error("reproduce", "huge", "--scenarios", tmp_path)

    # A part of it: the variants whose label holds "dl", as --variant runs them.
    part = elevator.reproduce("tiny", scenarios=tmp_path, variant="dl")
    out = cli.run("reproduce", "tiny", "--scenarios", tmp_path, "--output-format", "json",
                  "--variant", "dl")
    assert part == json.loads(out.stdout)
    assert set(part.to_pandas()["variant"]) == {"DL"}
    with pytest.raises(elevator.ElevatorError) as e:
        elevator.reproduce("tiny", scenarios=tmp_path, table="no such table")
    assert str(e.value) == cli.error("reproduce", "tiny", "--scenarios", tmp_path, "--table",
                                     "no such table")


def test_the_source_trees_experiments_are_listed():
    names = [name for name, _, _ in elevator.experiments()]
    assert "as-vs-deadline" in names and "modern-isolation" in names


# About 0.5 µs per request in the release build: 5,000 simulated seconds take a few
# tenths of a second, 200,000 several seconds.
WHILE = JOB.replace("runtime=2", "runtime=5000")
LONG = JOB.replace("runtime=2", "runtime=200000")


def test_the_gil_is_released_while_simulating():
    """A thread keeps running Python code while another simulates."""
    ticks = []
    span = {}

    def simulate():
        span["start"] = time.perf_counter()
        elevator.run(WHILE)
        span["end"] = time.perf_counter()

    worker = threading.Thread(target=simulate)
    worker.start()
    while worker.is_alive():
        ticks.append(time.perf_counter())
        time.sleep(0.001)
    worker.join()
    start, end = span["start"], span["end"]
    assert end - start > 0.1, "the run should take a while"
    middle = [t for t in ticks if start + 0.3 * (end - start) < t < start + 0.7 * (end - start)]
    assert len(middle) > 10, (len(middle), end - start)


def test_ctrl_c_stops_a_run():
    timer = threading.Timer(0.3, _thread.interrupt_main)
    timer.start()
    began = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        elevator.run(LONG)
    timer.join()
    assert time.perf_counter() - began < 5


def test_bad_arguments():
    with pytest.raises(TypeError):
        elevator.run(42)
    with pytest.raises(ValueError):
        elevator.compare(JOB, [])

"""Applications on a Spark standalone cluster of two workers on 127.0.0.1
(:mod:`.cluster`), each with its own work and local directories, the application's
home on a directory both see: the demo gives the local outputs, and grouped sums stay
exact when a worker dies between batches (state partitions move to the other
executor, whose local disk then holds their working copies) or an executor or a worker
dies in the middle of a batch (Spark runs the task again).

The applications run in a process of their own (``cluster_apps/app.py``), connected to
the cluster's master; the test produces their input and kills and starts workers.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import select
import signal
import subprocess
import sys
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from deltalake import DeltaTable

from tablestream.demo import OUTPUT_TOPICS
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

from .cluster import Executor, SparkCluster, free_port
from .cluster_apps.app import EVENTS, run_demo

APP = Path(__file__).with_name("cluster_apps") / "app.py"
KEYS = 400
GROUPS = 20
CAUGHT_UP = {"lag": 0}


class AppProcess:
    """``cluster_apps/app.py`` running on the cluster's master in a process (group) of
    its own: :meth:`ask` sends a command and returns its JSON answer."""

    def __init__(self, cluster: SparkCluster, app: str, home: Path, *args: str):
        self.stderr_path = home.parent / f"{app}-app.stderr"
        with open(self.stderr_path, "wb") as stderr:
            self.process = subprocess.Popen(
                [sys.executable, str(APP), app, cluster.master_url, str(home), *args],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                env=cluster.env(), start_new_session=True,
            )

    def stderr_tail(self) -> str:
        return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-40:])

    def ask(self, command: str, timeout: float = 600):
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{command}\n".encode())
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else b""
        assert line, f"no answer to {command!r} in {timeout} s:\n{self.stderr_tail()}"
        return json.loads(line)

    def finish(self, timeout: float = 300) -> None:
        """Close its input (it stops its session and exits); raise if it failed."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(timeout)
        assert code == 0, f"the application exited with code {code}:\n{self.stderr_tail()}"

    def kill(self) -> None:
        """Its process group (the driver's Python, its JVM and Python workers), if left."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(60)

    def __enter__(self) -> AppProcess:
        return self

    def __exit__(self, *exc_info) -> None:
        self.kill()


class Events:
    """Random changes to table ``events`` (keys ``k0``.., value ``grp, amount``, 5%
    tombstones), produced to the embedded store, and the counts and sums per group
    they imply."""

    def __init__(self, home: Path, seed: int):
        self.store = EmbeddedStore(home)
        self.store.create_topic(TopicConfig(EVENTS, partitions=2))
        self.rng = random.Random(seed)
        self.latest: dict[bytes, tuple[str, int]] = {}
        self.timestamp = 0

    def produce(self, count: int) -> None:
        records = []
        for _ in range(count):
            key = b"k%d" % self.rng.randrange(KEYS)
            self.timestamp += 1
            if self.rng.random() < 0.05:
                self.latest.pop(key, None)
                records.append(Record(key, None, self.timestamp))
                continue
            grp, amount = f"g{self.rng.randrange(GROUPS)}", self.rng.randrange(1, 1000)
            self.latest[key] = (grp, amount)
            records.append(Record(key, json.dumps({"grp": grp, "amount": amount}).encode(), self.timestamp))
        self.store.produce(EVENTS, records)

    def tables(self) -> dict:
        counts: dict[str, int] = {}
        sums: dict[str, int] = {}
        for grp, amount in self.latest.values():
            counts[grp] = counts.get(grp, 0) + 1
            sums[grp] = sums.get(grp, 0) + amount
        return {"counts": counts, "sums": sums}


def _changelogs(home: Path, application_id: str) -> dict[str, list[dict]]:
    """Each materialized table's changes (``key, value, ts, batch, seq``), in order."""
    tables = {}
    for path in sorted((home / "apps" / application_id / "tables").iterdir()):
        rows = DeltaTable(str(path)).to_pyarrow_table().to_pylist()
        tables[path.name] = sorted(rows, key=lambda r: (r["batch"], r["seq"]))
    return tables


def _latest(changelog: list[dict]) -> dict:
    """A table's current rows: the last change per key, deleted keys left out."""
    latest = {row["key"]: row["value"] for row in changelog}
    return {k: v for k, v in latest.items() if v is not None}


def _sums(home: Path) -> dict:
    return {name: _latest(rows) for name, rows in _changelogs(home, "sums").items()}


def _rocksdb_databases(directory: Path) -> list[Path]:
    """The RocksDB databases under ``directory`` (each holds a ``CURRENT`` file)."""
    return sorted(p.parent for p in directory.rglob("CURRENT"))


def _demo_outputs(home: Path) -> dict:
    """Every output topic's records and, per materialized table, each key's changes
    (``value, ts, batch``) in the table's order. A change's ``seq`` orders it within
    its batch and file: the executors number each file's changes (on the cluster) and
    the driver the batch's (in local mode), so only the order per key is compared."""
    store = EmbeddedStore(home)
    outputs: dict = {
        topic: [(r.key, r.value, r.timestamp, r.partition, r.offset, r.headers) for r in store.consume(topic)]
        for topic in OUTPUT_TOPICS
    }
    for name, rows in _changelogs(home, "demo").items():
        per_key: dict = {}
        for row in rows:
            per_key.setdefault(row["key"], []).append((row["value"], row["ts"], row["batch"]))
        outputs[name] = per_key
    return outputs


def test_demo_on_the_cluster_gives_the_outputs_of_local_mode(spark, spark_cluster, tmp_path):
    with AppProcess(spark_cluster, "demo", tmp_path / "cluster") as app:
        run_demo(spark, tmp_path / "local")  # in this process, while the cluster runs it
        app.finish()
    expected = _demo_outputs(tmp_path / "local")
    current = {k: changes[-1][0] for k, changes in expected["revenue-per-customer"].items()}
    assert {k: v for k, v in current.items() if v is not None} == {
        1: 120.0, 2: 95.0, 3: 1299.99, 5: 42.0
    }
    assert _demo_outputs(tmp_path / "cluster") == expected


def test_sums_stay_exact_when_a_worker_dies_between_batches(spark_cluster, tmp_path):
    home = tmp_path / "home"
    events = Events(home, seed=21)
    cluster = spark_cluster
    try:
        with AppProcess(cluster, "sums", home) as app:
            # Both executors run the state partitions.
            events.produce(1500)
            assert app.ask("run") == CAUGHT_UP
            assert _sums(home) == events.tables()
            # Worker 0 gone: every partition runs on worker 1's executor.
            cluster.kill_worker(0)
            events.produce(1500)
            assert app.ask("run") == CAUGHT_UP
            assert _sums(home) == events.tables()
            # Worker 0 back (its directories as it left them), worker 1 gone: every
            # partition runs on worker 0's new executor.
            cluster.start_worker(0)
            cluster.wait_for_executors({0, 1})
            cluster.kill_worker(1)
            events.produce(1500)
            assert app.ask("run") == CAUGHT_UP
            assert _sums(home) == events.tables()
            # The stores' working copies live on the local disk of the executor that ran
            # them (worker 0's: it ran every state partition of the last batch).
            assert _rocksdb_databases(cluster.local_dir(0))
            app.finish()
    finally:
        _restart_stopped_workers(cluster)


def _restart_stopped_workers(cluster: SparkCluster) -> None:
    """The next test starts with every worker."""
    for i in range(cluster.workers):
        if i not in cluster.running_workers():
            cluster.start_worker(i)


def _rest(ui_port: int, path: str, attempts: int = 5):
    """Spark's REST API; a driver slow to answer (a loaded machine) is asked again."""
    url = f"http://127.0.0.1:{ui_port}/api/v1/applications{path}"
    for _ in range(attempts - 1):
        try:
            with urllib.request.urlopen(url, timeout=30) as response:
                return json.load(response)
        except TimeoutError:
            continue
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.load(response)


def _busy_executor(cluster: SparkCluster, ui_port: int, timeout: float = 300) -> Executor:
    """The executor of a task that has run for a while (Spark's REST API): the slowed
    filter's task (2 ms a row, seconds in all), not one of the short tasks beside it,
    which may end before the kill lands (killing an executor whose tasks have all ended
    fails none: Spark then only computes its shuffle files again)."""
    app_id = _rest(ui_port, "")[0]["id"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = [
            task
            for stage in _rest(ui_port, f"/{app_id}/stages?status=active")
            for task in _rest(ui_port, f"/{app_id}/stages/{stage['stageId']}/{stage['attemptId']}/taskList?status=running")
        ]
        now = time.time()
        long_running = sorted(
            (_launched(task), task["executorId"]) for task in running if now - _launched(task) >= 1.5
        )
        for _, executor_id in long_running:
            for executor in cluster.executors():
                if executor.app_id == app_id and executor.executor_id == executor_id:
                    return executor
        time.sleep(0.05)
    raise AssertionError(f"no task ran for 1.5 s in {timeout} s")


def _launched(task: dict) -> float:
    """A task's launch time (Spark's REST API: ``2026-11-28T04:31:06.123GMT``), in seconds."""
    return datetime.strptime(task["launchTime"].replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def _failed_tasks(ui_port: int) -> int:
    app_id = _rest(ui_port, "")[0]["id"]
    return sum(stage["numFailedTasks"] for stage in _rest(ui_port, f"/{app_id}/stages"))


def test_sums_stay_exact_when_an_executor_or_a_worker_dies_in_a_batch(spark_cluster, tmp_path):
    home = tmp_path / "home"
    events = Events(home, seed=22)
    cluster = spark_cluster
    ui_port = free_port()
    try:
        with AppProcess(cluster, "sums", home, "--ui-port", str(ui_port), "--delay-ms", "2") as app:
            events.produce(1000)
            app.ask("start")
            assert app.ask("wait") == CAUGHT_UP
            assert _sums(home) == events.tables()
            # An executor killed while it runs a task: its worker starts another.
            failed = _failed_tasks(ui_port)
            events.produce(3000)
            cluster.kill_executor(_busy_executor(cluster, ui_port).pid)
            assert app.ask("wait") == CAUGHT_UP
            assert _sums(home) == events.tables()
            assert _failed_tasks(ui_port) > failed  # the task it ran failed, and ran again
            # A worker killed while its executor runs a task: the other finishes the batch.
            cluster.wait_for_executors({0, 1})
            failed = _failed_tasks(ui_port)
            events.produce(3000)
            cluster.kill_worker(_busy_executor(cluster, ui_port).worker)
            assert app.ask("wait") == CAUGHT_UP
            assert _sums(home) == events.tables()
            assert _failed_tasks(ui_port) > failed
            assert app.ask("stop") == CAUGHT_UP
            assert _sums(home) == events.tables()
            app.finish()
    finally:
        _restart_stopped_workers(cluster)


PROPERTY_TESTS = [
    "tests/properties/test_aggregation_vs_duckdb.py::test_aggregates_equal_sql_after_every_batch",
    "tests/properties/test_joins_vs_duckdb.py::test_foreign_key_joins_equal_sql_after_every_batch",
]


def test_property_tests_on_the_cluster_equal_sql(spark_cluster, tmp_path):
    """Aggregations and foreign-key joins (shuffled and replicated) against DuckDB after
    every batch, run by the cluster's executors (each store's working copy on the local
    directory of the executor that runs it, as the test driver keeps them on a
    cluster), two examples each."""
    root = Path(__file__).resolve().parents[2]
    env = dict(
        spark_cluster.env(),
        TABLESTREAM_TEST_MASTER=spark_cluster.master_url,
        TABLESTREAM_PROPERTY_EXAMPLES="2",
        TMPDIR=str(tmp_path),  # the drivers' state directories, which both workers see
    )
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PROPERTY_TESTS],
        cwd=root, env=env, capture_output=True, text=True, timeout=900,
    )
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    assert run.returncode == 0, f"{summary}\n{run.stdout[-4000:]}\n{run.stderr[-2000:]}"
    assert summary.startswith("3 passed"), summary

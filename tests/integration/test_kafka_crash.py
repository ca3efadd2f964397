"""Crash test on Kafka: an application killed with SIGKILL at random moments and
restarted ends with output topics that a read_committed consumer reads exactly as an
uninterrupted run writes them (no record twice, none missing), and the same tables."""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from deltalake import DeltaTable

from tablestream.storage.kafka_batches import CommitMarker, commits_topic
from tablestream.storage.topic import Record, TopicConfig

APP = Path(__file__).parents[1] / "runtime" / "crash_app.py"
NOW = int(time.time() * 1000) - 3_600_000


def _produce(store, topic: str, records: int) -> None:
    store.create_topic(TopicConfig(topic, partitions=2))
    rng = random.Random(7)
    chunk = []
    for i in range(records):
        key = b"k%d" % rng.randrange(records // 5)
        if rng.random() < 0.05:
            value = None
        elif rng.random() < 0.002:
            value = b'{"grp": '  # malformed: to the processing log
        else:
            value = b'{"grp": "g%d", "amount": %d}' % (rng.randrange(50), rng.randrange(100))
        chunk.append(Record(key, value, NOW + i))
        if len(chunk) == 5_000:
            store.produce(topic, chunk)
            chunk = []
    store.produce(topic, chunk)


def _run(servers: str, home: Path, app_id: str, events: str, per_batch: int, kill_after: float | None = None):
    command = [
        sys.executable, str(APP), str(home), "--bootstrap-servers", servers, "--app-id", app_id,
        "--events", events, "--out", f"{app_id}-out", "--records-per-batch", str(per_batch),
    ]
    # Spark's scratch directories (its executor's copies of the jars) beside ``home``: a
    # killed JVM leaves them behind.
    env = {**os.environ, "SPARK_LOCAL_DIRS": str(home.parent / f"{home.name}-spark-scratch")}
    proc = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env
    )
    if kill_after is None:
        _, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err.decode()[-3000:]
        return
    time.sleep(kill_after)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and Python workers
    proc.wait(60)


def _outputs(store, home: Path, app_id: str):
    topics = {
        name: [(r.partition, r.key, r.value, r.timestamp) for r in store.consume(f"{app_id}-{name}", read_committed=True)]
        for name in ("out", "processing-log")
    }
    tables = {}
    for name in ("counts", "sums"):
        changes = DeltaTable(str(home / "apps" / app_id / "tables" / name)).to_pyarrow_table()
        latest: dict = {}
        for row in sorted(changes.to_pylist(), key=lambda r: (r["batch"], r["seq"])):
            latest[row["key"]] = row["value"]
        tables[name] = {k: v for k, v in latest.items() if v is not None}
    markers = [CommitMarker.parse(r.value).batch_id for r in store.consume(commits_topic(app_id), read_committed=True)]
    return topics, tables, markers


@pytest.mark.parametrize(
    ("records", "per_batch", "kills"),
    [pytest.param(10_000, 2_500, 2, id="10k"), pytest.param(100_000, 20_000, 5, id="100k", marks=pytest.mark.slow)],
)
def test_sigkill_at_random_moments_then_restart_gives_the_uninterrupted_outputs(
    kafka_broker, kafka_store, tmp_path, records, per_batch, kills
):
    servers = kafka_broker.bootstrap_servers
    events = f"crash-events-{uuid.uuid4().hex[:8]}"
    _produce(kafka_store, events, records)
    reference, crashed = f"ref-{uuid.uuid4().hex[:8]}", f"crashed-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    _run(servers, tmp_path / reference, reference, events, per_batch)
    duration = time.monotonic() - began
    rng = random.Random(11)
    for _ in range(kills):
        _run(servers, tmp_path / crashed, crashed, events, per_batch, kill_after=rng.uniform(8, max(duration * 0.8, 10)))
    _run(servers, tmp_path / crashed, crashed, events, per_batch)

    expected_topics, expected_tables, expected_markers = _outputs(kafka_store, tmp_path / reference, reference)
    topics, tables, markers = _outputs(kafka_store, tmp_path / crashed, crashed)
    assert topics == expected_topics
    assert len(set(topics["out"])) == len(topics["out"])
    assert tables == expected_tables
    assert markers == expected_markers == list(range(len(markers))) and len(markers) >= records // per_batch
    assert len(expected_tables["counts"]) == 50 and len(expected_topics["out"]) > 100
    assert len(expected_topics["processing-log"]) > 5


def _wait(until, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not until():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds} s")
        time.sleep(0.2)


@pytest.mark.slow
def test_broker_stopped_and_started_mid_run_is_waited_for_or_fails_in_one_line_and_resumes(
    spark, kafka_broker, kafka_store, tmp_path
):
    """A short outage is waited for; a long one fails the application with one line
    naming the cluster; restarted, it ends with the outputs of an uninterrupted run."""
    from tablestream.runtime.app import Application
    from tablestream.runtime.layout import ApplicationError
    from tablestream.storage.kafka import KafkaStore

    sys.path.insert(0, str(APP.parent))
    from crash_app import topology

    servers = kafka_broker.bootstrap_servers
    events = f"outage-events-{uuid.uuid4().hex[:8]}"
    _produce(kafka_store, events, 10_000)
    reference, interrupted = f"ref-{uuid.uuid4().hex[:8]}", f"outage-{uuid.uuid4().hex[:8]}"

    def application(app_id: str) -> Application:
        # Every client gives up sooner than by default: Spark's after 15 s instead of 60 s,
        # the producer's commit after 30 s instead of 120 s.
        timeouts = {"request.timeout.ms": "10000", "default.api.timeout.ms": "15000", "transaction.timeout.ms": "30000"}
        store = KafkaStore(servers, kafka_options=timeouts)
        return Application(
            topology(events, f"{app_id}-out"), app_id, store=store, home=tmp_path / app_id, spark=spark,
            snapshot_every=3, max_records_per_batch=500, progress=lambda _: None,
        )

    application(reference).run_until_caught_up()

    app = application(interrupted)
    app.start(processing_time="1 second")
    try:
        _wait(lambda: (app._batch or 0) >= 2, 300, "batch 2")
        stopped_in = app._batch
        kafka_broker.stop(keep_data=True)  # SIGTERM to the broker's pid; its ports and log dirs are kept
        time.sleep(5)
        kafka_broker.start()
        _wait(lambda: app._batch >= stopped_in + 3, 300, "three batches after the short outage")
        assert app._query.isActive and app._query.exception() is None

        kafka_broker.stop(keep_data=True)
        # Longer than every client's timeout: Spark's (15 s, 4 tries when it plans a
        # batch; its consumer's poll 120 s), the producer's (30 s).
        time.sleep(150)
        assert not app._query.isActive
        kafka_broker.start()
        with pytest.raises(ApplicationError) as failed:
            app.await_termination(60)
    finally:
        app.stop()
        if not kafka_broker.is_running():
            kafka_broker.start()
    line = str(failed.value)
    assert "\n" not in line
    assert re.fullmatch(
        rf"Application '{interrupted}' failed( in batch \d+)?: Kafka at {re.escape(servers)} did not answer in "
        r"time \(.+\): start the application again once the cluster answers; it goes on from its last "
        r"committed batch",
        line,
    ), line

    application(interrupted).run_until_caught_up()
    expected_topics, expected_tables, expected_markers = _outputs(kafka_store, tmp_path / reference, reference)
    topics, tables, markers = _outputs(kafka_store, tmp_path / interrupted, interrupted)
    assert topics == expected_topics
    assert len(set(topics["out"])) == len(topics["out"])
    assert tables == expected_tables
    assert markers == expected_markers == list(range(len(markers))) and len(markers) >= 20

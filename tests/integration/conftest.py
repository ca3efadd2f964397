"""Integration tests against a real Kafka broker (one broker per test session) and on a
Spark standalone cluster (one cluster per test session).

Every test here that uses the ``kafka_broker`` fixture (directly or through another
fixture) is marked ``kafka``; tests that use ``spark_cluster`` (a Spark standalone
cluster, :mod:`.cluster`) are marked ``cluster``; tests that use ``spark`` are marked
``spark``. Select or skip them with ``-m kafka`` / ``-m "not kafka"`` (``cluster``
alike).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest

from tablestream.testing.kafka_broker import KafkaBroker, ToolMissingError, fetch_broker_jars

from .cluster import JavaMissingError, SparkCluster

_HERE = Path(__file__).parent

#: The SASL/PLAIN login the session's broker takes on its second listener; the password
#: is new each session, so that a test can look for it in logs and errors.
SASL_USER = "tablestream"
SASL_PASSWORD = f"pw-{secrets.token_hex(12)}"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if _HERE not in Path(str(item.path)).parents:
            continue
        fixtures = getattr(item, "fixturenames", ())
        if "kafka_broker" in fixtures:
            item.add_marker(pytest.mark.kafka)
        if "spark_cluster" in fixtures:
            item.add_marker(pytest.mark.cluster)
        if "spark" in fixtures:
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def kafka_broker():
    """A running single-node Kafka broker (KRaft, 127.0.0.1) shared by the whole session,
    with a PLAINTEXT listener (``bootstrap_servers``) and a SASL/PLAIN one
    (``sasl_bootstrap_servers``, login :data:`SASL_USER` / :data:`SASL_PASSWORD`).

    Skips when java or mvn (needed once, to download the jars) is missing.
    """
    try:
        libs = fetch_broker_jars()
    except ToolMissingError as exc:
        pytest.skip(str(exc))
    broker = KafkaBroker(libs, sasl_users={SASL_USER: SASL_PASSWORD})
    try:
        broker.start(timeout=90)
    except ToolMissingError as exc:
        pytest.skip(str(exc))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A running Spark standalone cluster on 127.0.0.1 shared by the whole session: a
    master and two workers of 1 core and 1 GB, each with its own work and local
    directories (:class:`~.cluster.SparkCluster`: ``master_url``, ``kill_worker(i)``,
    ``start_worker(i)``, ``executor_pids()``). A test that kills a worker starts it
    again before it ends. Skips when Java is missing."""
    cluster = SparkCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        try:
            cluster.start()
        except JavaMissingError as exc:
            pytest.skip(str(exc))
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def kafka_store(kafka_broker):
    """A :class:`~tablestream.storage.kafka.KafkaStore` on the session's broker."""
    from tablestream.storage.kafka import KafkaStore

    store = KafkaStore(kafka_broker.bootstrap_servers)
    yield store
    store.close()


@pytest.fixture
def topic_name(request):
    """A topic name unique to this test (the broker is shared by the session)."""
    import uuid

    base = "".join(c if c.isalnum() else "-" for c in request.node.name)[:60]
    return f"{base}-{uuid.uuid4().hex[:8]}"

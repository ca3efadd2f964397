"""The test broker: jars, configuration, start, stop, errors and the command line."""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tablestream.testing import kafka_broker as kb
from tablestream.testing.kafka_broker import (
    BrokerError,
    KafkaBroker,
    ToolMissingError,
    fetch_broker_jars,
    new_cluster_id,
    server_properties,
)


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0): look at its state.
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"


def test_cluster_id_is_16_urlsafe_bytes():
    for _ in range(200):
        cluster_id = new_cluster_id()
        assert len(cluster_id) == 22 and not cluster_id.startswith("-") and "=" not in cluster_id
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16


def test_server_properties_are_loopback_single_node(tmp_path):
    props = server_properties(19092, 19093, tmp_path / "data", {"num.partitions": "3"})
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:19092"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:19093"
    assert props["process.roles"] == "broker,controller"
    assert props["auto.create.topics.enable"] == "false"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["num.network.threads"] == props["num.io.threads"] == "2"
    assert props["log.dirs"] == str(tmp_path / "data")
    assert props["num.partitions"] == "3"
    replication = {k: v for k, v in props.items() if "replication.factor" in k or k.endswith(("isr", "insync.replicas"))}
    assert set(replication) >= {
        "default.replication.factor",
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "min.insync.replicas",
    } and set(replication.values()) == {"1"}


@pytest.mark.kafka
def test_fetch_is_cached_after_success():
    libs = fetch_broker_jars()  # downloads on the very first run
    started = time.monotonic()
    assert fetch_broker_jars() == libs
    assert time.monotonic() - started < 1
    names = {p.name for p in libs.glob("*.jar")}
    assert {"kafka_2.13-4.4.0.jar", "kafka-clients-4.4.0.jar", "log4j-slf4j-impl-2.25.5.jar"} <= names
    assert (libs.parent / "pom.xml").read_text().count("<packaging>pom</packaging>") == 1


def test_incomplete_fetch_is_redone_and_needs_mvn(tmp_path, monkeypatch):
    home = tmp_path / "kafka-home"
    (home / "libs").mkdir(parents=True)
    (home / "libs" / "half-downloaded.jar").write_bytes(b"")  # no marker: not complete
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ToolMissingError, match=r"^Maven \('mvn'\) is not on PATH"):
        fetch_broker_jars(home)
    monkeypatch.setenv("TABLESTREAM_KAFKA_HOME", str(home))
    assert kb.default_kafka_home() == home


def test_missing_java_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(ToolMissingError, match=r"^Java \('java'\) is not on PATH"):
        KafkaBroker(tmp_path).start()


@pytest.mark.kafka
def test_broker_that_cannot_start_reports_its_log():
    broker = KafkaBroker(fetch_broker_jars(), properties={"num.network.threads": "two"})
    with pytest.raises(BrokerError) as info:
        broker.start(timeout=60)
    message = str(info.value)
    assert "two" in message and "num.network.threads" in message
    assert broker.pid is None and broker.work_dir is None


@pytest.mark.kafka
def test_broker_starts_and_stops():
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = KafkaBroker(fetch_broker_jars())
    with pytest.raises(BrokerError, match="not running"):
        _ = broker.bootstrap_servers
    with broker:
        host, port = broker.bootstrap_servers.split(":")
        assert host == "127.0.0.1" and int(port) == broker.port
        pid, work_dir = broker.pid, broker.work_dir
        assert _alive(pid) and work_dir.is_dir()
        assert (work_dir / "broker.pid").read_text().strip() == str(pid)
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            args = cmdline.read().split(b"\0")
        assert b"kafka.Kafka" in args and b"-Xmx512m" in args  # the PID is java's own
        assert _port_open(broker.port) and _port_open(broker.controller_port)

        admin = AdminClient({"bootstrap.servers": broker.bootstrap_servers})
        admin.create_topics([NewTopic("smoke", 2, 1)])["smoke"].result(timeout=30)
        # A created topic reaches the broker's metadata a moment later (KRaft); a busy
        # machine has shown it missing from the first answer.
        deadline = time.monotonic() + 30
        metadata = admin.list_topics(timeout=10)
        while "smoke" not in metadata.topics and time.monotonic() < deadline:
            time.sleep(0.2)
            metadata = admin.list_topics(timeout=10)
        assert len(metadata.brokers) == 1
        assert len(metadata.topics["smoke"].partitions) == 2
        assert "Kafka Server started" in broker.log_tail(200)
    assert not broker.is_running() and broker.pid is None
    assert not _alive(pid)
    assert not _port_open(broker.port) and not _port_open(broker.controller_port)
    assert not work_dir.exists()
    broker.stop()  # idempotent


@pytest.mark.kafka
def test_command_line_run_until_ctrl_c():
    fetch_broker_jars()
    process = subprocess.Popen(
        [sys.executable, "-m", "tablestream.testing.kafka_broker", "run"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        address = process.stdout.readline().strip()
        if not address:
            process.wait(timeout=30)
            pytest.fail(f"the broker command printed no address: {process.stderr.read()}")
        host, port = address.split(":")
        assert host == "127.0.0.1" and _port_open(int(port))
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert not _port_open(int(port))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.kafka
def test_broker_stopped_with_its_data_starts_again_on_the_same_port_with_its_records():
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = KafkaBroker(fetch_broker_jars())
    try:
        broker.start()
        servers, pid, work_dir = broker.bootstrap_servers, broker.pid, broker.work_dir
        admin = AdminClient({"bootstrap.servers": servers})
        admin.create_topics([NewTopic("kept", 1, 1)])["kept"].result(timeout=30)
        producer = Producer({"bootstrap.servers": servers})
        producer.produce("kept", key=b"k", value=b"before the stop")
        assert producer.flush(30) == 0

        broker.stop(keep_data=True)
        assert not broker.is_running() and broker.pid is None and not _alive(pid)
        assert not _port_open(int(servers.split(":")[1])) and broker.work_dir == work_dir and work_dir.is_dir()
        with pytest.raises(BrokerError, match="not running"):
            _ = broker.bootstrap_servers

        broker.start()
        assert broker.bootstrap_servers == servers and broker.pid != pid and broker.work_dir == work_dir
        assert (work_dir / "broker.pid").read_text().strip() == str(broker.pid)
        producer.produce("kept", key=b"k", value=b"after the start")  # the same client reconnects
        assert producer.flush(30) == 0
        consumer = Consumer({"bootstrap.servers": servers, "group.id": "kept", "enable.partition.eof": True})
        consumer.assign([TopicPartition("kept", 0, 0)])
        values = []
        while (msg := consumer.poll(30)) is not None and msg.error() is None:
            values.append(msg.value())
        consumer.close()
        assert values == [b"before the stop", b"after the start"]
        assert broker.log_tail(10_000).count("Kafka Server started") == 2
    finally:
        broker.stop()
    assert broker.work_dir is None and not work_dir.exists()

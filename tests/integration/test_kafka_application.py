"""Applications on a real Kafka broker: the demo gives what it gives on the embedded
store; a batch replayed after its Kafka transaction writes nothing again; Kafka client
settings reach both clients and no secret is shown."""

from __future__ import annotations

import json
import logging
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from tablestream.cli import app as cli
from tablestream.demo import OUTPUT_TOPICS
from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.runtime.layout import ApplicationError
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.formats import get_format
from tablestream.storage.kafka import KafkaStore, KafkaStoreError
from tablestream.storage.kafka_batches import CommitMarker, KafkaBatchWriter, commits_topic
from tablestream.storage.partitioner import partition_for_key
from tablestream.storage.tables import DeltaTables
from tablestream.storage.topic import Record, TopicConfig

from .conftest import SASL_PASSWORD, SASL_USER

NOW = int(time.time() * 1000) - 3_600_000  # recent: within any broker retention


def _rows(records):
    return [(r.partition, r.key, r.value, r.timestamp) for r in records]


def _table(spark, root: Path, name: str) -> dict:
    rows = DeltaTables(root / "apps" / "demo" / "tables", "demo").read(spark, name).collect()
    return {r.key: r.value.asDict() if hasattr(r.value, "asDict") else r.value for r in rows}


def test_demo_over_kafka_gives_the_tables_and_records_of_the_embedded_store(spark, kafka_broker, kafka_store, tmp_path):
    runner = CliRunner()
    embedded, on_kafka = tmp_path / "embedded", tmp_path / "kafka"
    shown = runner.invoke(cli, ["demo", "--dir", str(embedded)])
    assert shown.exit_code == 0, shown.output
    shown = runner.invoke(cli, ["demo", "--dir", str(on_kafka), "--bootstrap-servers", kafka_broker.bootstrap_servers])
    assert shown.exit_code == 0, shown.output
    assert f"(Kafka cluster at {kafka_broker.bootstrap_servers}, application files in {on_kafka})" in shown.output

    for name in ("current-orders", "revenue-per-customer", "customers-per-tier", "priced-lines"):
        assert _table(spark, on_kafka, name) == _table(spark, embedded, name), name
    assert _table(spark, on_kafka, "revenue-per-customer") == {1: 120.0, 2: 95.0, 3: 1299.99, 5: 42.0}

    store = EmbeddedStore(embedded)
    for topic in OUTPUT_TOPICS:
        expected = _rows(store.consume(topic))
        assert _rows(kafka_store.consume(topic, read_committed=True)) == expected, topic
        # Nothing was aborted: an uncommitted read sees the same records.
        assert _rows(kafka_store.consume(topic)) == expected, topic
    revenue = kafka_store.consume("revenue-changes", read_committed=True)
    assert len(revenue) == 7 and all(r.partition == partition_for_key(r.key, 3) for r in revenue)
    assert [CommitMarker.parse(r.value).batch_id for r in kafka_store.consume(commits_topic("demo"))] == [0, 1]

    again = runner.invoke(cli, ["demo", "--bootstrap-servers", kafka_broker.bootstrap_servers])
    assert again.exit_code == 1
    assert again.stderr.strip() == (
        f"Error: The demo's topics already exist on {kafka_broker.bootstrap_servers}: customers, demo-batch-commits, "
        "demo-processing-log, enriched-orders, order-lines, orders, products, revenue-changes "
        "(delete them with 'tablestream topics delete NAME --bootstrap-servers ...' to run it again)"
    )


# ----------------------------------------------------------------------- replays
SCHEMA = "grp STRING, amount BIGINT"


def _sums_topology(source: str, out: str):
    builder = StreamsBuilder()
    events = builder.table(source, value_schema=SCHEMA)
    events.group_by(("grp", "value")).sum("amount", materialized_as="sums").to_stream().to(out)
    return builder.build()


def _events(n: int, start: int = 0) -> list[Record]:
    records = [
        Record(b"k%d" % i, b'{"grp": "g%d", "amount": %d}' % (i % 3, i), NOW + i) for i in range(start, start + n)
    ]
    records.append(Record(b"bad-%d" % start, b'{"grp": ', NOW + start + n))  # to the processing log
    return records


def _committed(store: KafkaStore, topic: str) -> list[tuple]:
    return _rows(store.consume(topic, read_committed=True))


def _names(topic_name: str) -> tuple[str, str, str]:
    return f"{topic_name}-in", f"{topic_name}-out", f"app-{uuid.uuid4().hex[:8]}"


def test_a_batch_replayed_after_its_kafka_commit_writes_nothing_again(spark, kafka_store, topic_name, tmp_path):
    source, out, app_id = _names(topic_name)
    kafka_store.create_topic(TopicConfig(source, partitions=2))
    kafka_store.produce(source, _events(30))
    app = Application(_sums_topology(source, out), app_id, store=kafka_store, home=tmp_path, spark=spark)
    app.run_until_caught_up()
    outputs, log = _committed(kafka_store, out), _committed(kafka_store, f"{app_id}-processing-log")
    number = get_format("JSON", None)
    assert sorted((r[1], number.deserialize(r[2])) for r in outputs) == [
        (b"g0", sum(range(0, 30, 3))), (b"g1", sum(range(1, 30, 3))), (b"g2", sum(range(2, 30, 3)))
    ]
    assert [json.loads(r[2])["error"] for r in log] == ["value: line 1 column 9: Expecting value"]

    # A crash after the batch's Kafka transaction, before Spark recorded the batch as done:
    # the restarted application runs batch 0 again, finds its marker and writes nothing.
    for name in ("0", ".0.crc"):
        (app.paths.checkpoint / "commits" / name).unlink()
    restarted = Application(_sums_topology(source, out), app_id, store=kafka_store, home=tmp_path, spark=spark)
    restarted.run_until_caught_up()
    assert (app.paths.checkpoint / "commits" / "0").exists()
    for topic, expected in ((out, outputs), (f"{app_id}-processing-log", log)):
        assert _committed(kafka_store, topic) == expected
        assert _rows(kafka_store.consume(topic)) == expected  # not even an aborted record
    markers = [CommitMarker.parse(r.value) for r in kafka_store.consume(commits_topic(app_id))]
    assert markers == [CommitMarker(app_id, app.run, 0)]
    assert {r.key: r.value for r in restarted.table("sums").collect()} == {
        "g0": sum(range(0, 30, 3)), "g1": sum(range(1, 30, 3)), "g2": sum(range(2, 30, 3))
    }


def test_a_batch_id_processed_twice_is_written_once(spark, kafka_store, topic_name, tmp_path):
    source, out, app_id = _names(topic_name)
    kafka_store.create_topic(TopicConfig(source, partitions=2))
    kafka_store.produce(source, _events(6))
    app = Application(_sums_topology(source, out), app_id, store=kafka_store, home=tmp_path, spark=spark)
    records = kafka_store.read_batch(spark, [source])
    app.process_batch(records, 0)
    assert app._sink.writer.wait_visible()
    first = _committed(kafka_store, out)
    app.process_batch(records, 0)
    assert _committed(kafka_store, out) == first and len(first) == 3
    assert _rows(kafka_store.consume(out)) == first
    assert app._sink.writer.last_committed() == 0


def test_a_transactional_source_is_read_committed(spark, kafka_store, topic_name, tmp_path):
    """An upstream exactly-once writer's topic: its aborted transaction is never read,
    and the transaction markers after the last record count in no lag."""
    source, out, app_id = _names(topic_name)
    kafka_store.create_topic(TopicConfig(source, partitions=2))
    upstream = KafkaBatchWriter(kafka_store, f"{app_id}-upstream", run="r")
    upstream.create_topic()

    def events(amounts):
        values = [b'{"grp": "g%d", "amount": %d}' % (i % 2, a) for i, a in enumerate(amounts)]
        keys = [b"k%d" % i for i in range(len(amounts))]
        return pa.table({"key": keys, "value": values, "timestamp": [NOW + i for i in range(len(amounts))]})

    upstream.write(source, events([1, 2, 3, 4]))
    upstream.commit(0)
    producer = upstream._started()
    producer.begin_transaction()
    upstream._produce(producer, source, events([1000, 1000, 1000, 1000]))
    producer.abort_transaction()
    upstream.write(source, events([10, 20]))
    upstream.commit(1)
    assert upstream.wait_visible()

    app = Application(_sums_topology(source, out), app_id, store=kafka_store, home=tmp_path, spark=spark, progress=lambda _: None)
    app.run_until_caught_up()
    assert {r.key: r.value for r in app.table("sums").collect()} == {"g0": 10 + 3, "g1": 20 + 4}
    assert app.lag() == 0


def _group_offsets(servers: str, group: str) -> dict[tuple[str, int], int]:
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": servers})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=30)
    return {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions}


def test_each_batch_commits_its_positions_to_the_application_consumer_group(spark, kafka_broker, kafka_store, topic_name, tmp_path):
    """As Kafka Streams, the group named after the application holds its consumed
    positions, so Kafka's tools show its lag; they are committed with the batch."""
    source, out, app_id = _names(topic_name)
    kafka_store.create_topic(TopicConfig(source, partitions=2))
    kafka_store.produce(source, _events(30))
    app = Application(_sums_topology(source, out), app_id, store=kafka_store, home=tmp_path, spark=spark, progress=lambda _: None)
    app.run_until_caught_up()
    ends = kafka_store.end_offsets(source)
    assert sum(ends.values()) == 31
    assert _group_offsets(kafka_broker.bootstrap_servers, app_id) == {(source, p): o for p, o in ends.items()}

    kafka_store.produce(source, _events(5, start=30))
    app.run_until_caught_up()
    ends = kafka_store.end_offsets(source)
    assert sum(ends.values()) == 37
    assert _group_offsets(kafka_broker.bootstrap_servers, app_id) == {(source, p): o for p, o in ends.items()}


# ----------------------------------------------------------------------- settings
def _jaas(user: str, password: str) -> str:
    return f'org.apache.kafka.common.security.plain.PlainLoginModule required username="{user}" password="{password}";'


def test_sasl_settings_reach_spark_and_the_producer_and_no_secret_is_shown(
    spark, kafka_broker, kafka_store, topic_name, tmp_path, caplog, capfd
):
    caplog.set_level(logging.DEBUG, logger="tablestream")
    source, out, app_id = _names(topic_name)
    kafka_store.create_topic(TopicConfig(source, partitions=2))
    kafka_store.produce(source, _events(6))
    servers = kafka_broker.sasl_bootstrap_servers
    options = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": _jaas(SASL_USER, SASL_PASSWORD)}
    app = Application(
        _sums_topology(source, out), app_id, bootstrap_servers=servers, kafka_options=options,
        home=tmp_path / "ok", spark=spark,
    )
    app.run_until_caught_up()
    assert len(_committed(kafka_store, out)) == 3
    assert repr(app.store) == (
        f"KafkaStore('{servers}', security.protocol='SASL_PLAINTEXT', sasl.mechanism='PLAIN', sasl.jaas.config=<hidden>)"
    )

    wrong = f"wrong-{uuid.uuid4().hex}"
    with pytest.raises(KafkaStoreError) as refused:
        KafkaStore(servers, kafka_options={**options, "sasl.jaas.config": _jaas(SASL_USER, wrong)}, timeout=5).list_topics()
    assert str(refused.value) == (
        f"Could not reach Kafka at {servers} within 5 s: sasl_plaintext://{servers}/bootstrap: "
        "SASL authentication error: Authentication failed: Invalid username or password"
    )
    # Spark's client is refused while tablestream's is let in (each given its own login).
    split = {**options, "sasl.jaas.config": _jaas(SASL_USER, wrong), "sasl.username": SASL_USER, "sasl.password": SASL_PASSWORD}
    refused_app = Application(
        _sums_topology(source, f"{out}-2"), f"{app_id}-2", bootstrap_servers=servers, kafka_options=split,
        home=tmp_path / "refused", spark=spark,
    )
    with pytest.raises(ApplicationError) as failed:
        refused_app.run_until_caught_up()
    assert str(failed.value) == (
        f"Application '{app_id}-2' failed: StreamingQueryException: org.apache.kafka.common.errors."
        "SaslAuthenticationException: Authentication failed: Invalid username or password"
    )
    captured = capfd.readouterr()
    shown = [str(refused.value), str(failed.value), repr(app), repr(refused_app.store), caplog.text, captured.out, captured.err]
    for text in shown:
        assert SASL_PASSWORD not in text and wrong not in text


def test_store_and_batch_arguments_are_checked_before_anything_starts(tmp_path):
    topology = _sums_topology("in", "out")
    cases = [
        (dict(store=EmbeddedStore(tmp_path), bootstrap_servers="127.0.0.1:1"), "Give an Application either store= or bootstrap_servers=, not both"),
        (dict(kafka_options={"security.protocol": "SSL"}), "kafka_options= applies to a Kafka cluster: give bootstrap_servers= too (or a KafkaStore created with them as store=)"),
        (dict(bootstrap_servers="127.0.0.1:1", max_records_per_batch=0), "max_records_per_batch must be a positive integer or None (unbounded), got 0"),
        (dict(max_records_per_batch=2.5), "max_records_per_batch must be a positive integer or None (unbounded), got 2.5"),
    ]
    for arguments, message in cases:
        with pytest.raises(ApplicationError) as refused:
            Application(topology, "args", home=tmp_path, **arguments)
        assert str(refused.value) == message

"""The embedded store and a real Kafka broker behave alike through the same Topic API."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tablestream.cli import app
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

RECORDS = [
    Record(b"alice", b'{"n":1}', 1_000, headers=(("source", b"cdc"),)),
    Record(b"bob", b'{"n":2}', 1_001),
    Record(b"alice", None, 1_002),
    Record(b"\x00\x00\x00\x00\x00\x00\x00\x2a", b"42", 1_003),
    Record(b"carol", b'{"n":3}', 1_004, partition=2),
]


def _stream_rows(spark, frame, checkpoint):
    rows = []
    query = (
        frame.writeStream.trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(lambda df, _: rows.extend(df.drop("topic").collect()))
        .start()
    )
    query.awaitTermination()
    return sorted(rows, key=lambda r: (r.partition, r.offset))


def test_same_records_read_back_through_spark_streaming_as_identical_rows(
    spark, kafka_store, topic_name, tmp_path
):
    embedded = EmbeddedStore(tmp_path / "home")
    # The records carry 1970 timestamps: under a time-based retention the broker deletes
    # them at its first retention check (30 s after it starts), maybe before Spark reads.
    config = TopicConfig(topic_name, partitions=3, retention_ms=-1)
    embedded.create_topic(config)
    kafka_store.create_topic(config)
    written_embedded = embedded.produce(topic_name, RECORDS)
    written_kafka = kafka_store.produce(topic_name, RECORDS)
    assert written_embedded == written_kafka

    from_embedded = _stream_rows(spark, embedded.read_stream(spark, [topic_name]), tmp_path / "ck-e")
    from_kafka = _stream_rows(spark, kafka_store.read_stream(spark, [topic_name]), tmp_path / "ck-k")
    assert (
        embedded.read_stream(spark, [topic_name]).schema.simpleString()
        == kafka_store.read_stream(spark, [topic_name]).schema.simpleString()
    )
    assert from_embedded == from_kafka
    assert [(r.key, r.value, r.timestamp, r.partition, r.offset) for r in from_kafka] == sorted(
        ((r.key, r.value, r.timestamp, r.partition, r.offset) for r in written_kafka),
        key=lambda t: (t[3], t[4]),
    )
    assert embedded.consume(topic_name) == kafka_store.consume(topic_name)


def test_cli_produce_then_consume_on_kafka(kafka_broker, topic_name):
    runner = CliRunner()
    servers = ["--bootstrap-servers", kafka_broker.bootstrap_servers]
    created = runner.invoke(app, ["topics", "create", topic_name, "--partitions", "2", *servers])
    assert created.exit_code == 0, created.output
    lines = [
        {"key": "alice", "value": {"qty": 1}, "timestamp": 5_000},
        {"key": 7, "value": None, "timestamp": 5_001},
        {"key": "bob", "value": [1, 2], "timestamp": 5_002, "partition": 1},
    ]
    produced = runner.invoke(app, ["produce", topic_name, *servers], input="\n".join(map(json.dumps, lines)))
    assert produced.exit_code == 0, produced.output
    consumed = runner.invoke(app, ["consume", topic_name, "--from-beginning", "--timeout", "2", *servers])
    assert consumed.exit_code == 0, consumed.output
    from tablestream.storage.partitioner import partition_for_key

    expected = [
        {"key": "alice", "value": {"qty": 1}, "timestamp": 5_000, "partition": partition_for_key(b"alice", 2)},
        {"key": 7, "value": None, "timestamp": 5_001, "partition": partition_for_key((7).to_bytes(8, "big"), 2)},
        {"key": "bob", "value": [1, 2], "timestamp": 5_002, "partition": 1},
    ]
    offsets: dict[int, int] = {}
    for item in expected:
        item["offset"] = offsets.get(item["partition"], 0)
        offsets[item["partition"]] = item["offset"] + 1
    assert [json.loads(line) for line in consumed.stdout.splitlines()] == sorted(
        expected, key=lambda r: (r["partition"], r["offset"])
    )


def test_cli_consume_on_kafka_reads_committed_records_unless_asked_for_uncommitted(kafka_broker, kafka_store, topic_name, tmp_path):
    import pyarrow as pa

    from tablestream.storage.kafka_batches import KafkaBatchWriter

    kafka_store.create_topic(TopicConfig(topic_name, partitions=1))
    writer = KafkaBatchWriter(kafka_store, f"{topic_name}-app", run="r")
    writer.create_topic()

    def batch(*values: bytes) -> pa.Table:
        return pa.table({"key": [b"k"] * len(values), "value": list(values), "timestamp": [7_000] * len(values)})

    writer.write(topic_name, batch(b'"committed"'))
    assert writer.commit(0)
    producer = writer._started()
    producer.begin_transaction()
    writer._produce(producer, topic_name, batch(b'"aborted"'))
    assert producer.flush(30) == 0  # in the partition before the abort
    producer.abort_transaction()
    assert writer.wait_visible()
    writer.close()

    runner = CliRunner()
    servers = ["--bootstrap-servers", kafka_broker.bootstrap_servers]
    committed = runner.invoke(app, ["consume", topic_name, "--from-beginning", "--timeout", "2", *servers])
    assert committed.exit_code == 0, committed.output
    assert [json.loads(line) for line in committed.stdout.splitlines()] == [
        {"key": "k", "value": "committed", "timestamp": 7_000, "partition": 0, "offset": 0}
    ]
    every = runner.invoke(app, ["consume", topic_name, "--from-beginning", "--timeout", "2", "--read-uncommitted", *servers])
    assert every.exit_code == 0, every.output
    # Offset 1 is the first transaction's commit marker, which no consumer is given.
    assert [json.loads(line) for line in every.stdout.splitlines()] == [
        {"key": "k", "value": "committed", "timestamp": 7_000, "partition": 0, "offset": 0},
        {"key": "k", "value": "aborted", "timestamp": 7_000, "partition": 0, "offset": 2},
    ]
    embedded = runner.invoke(app, ["consume", topic_name, "--read-uncommitted", "--home", str(tmp_path)])
    assert embedded.exit_code == 1
    assert embedded.stderr.strip() == (
        "Error: --read-uncommitted applies to topics on a Kafka cluster: give --bootstrap-servers too "
        "(the embedded store has no transactions to leave open)"
    )

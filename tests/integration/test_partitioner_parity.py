"""Kafka's default partitioner, three ways: Spark's Kafka sink (the Java client, the
reference), KafkaStore.produce (librdkafka with murmur2_random) and tablestream's own
``partition_for_key`` agree on every key; Spark's Kafka source returns the records
exactly, with the normalized columns."""

from __future__ import annotations

import math
import random
import struct
import uuid

import pytest

from tablestream.storage.kafka import KAFKA_COLUMNS, KafkaStore
from tablestream.storage.partitioner import partition_for_key, partitions_for_keys
from tablestream.storage.topic import Record, TopicConfig

PARTITIONS = 7


def _keys() -> list[bytes]:
    """1,000 serialized keys, as Kafka's serializers write them."""
    rng = random.Random(20240607)
    alphabet = "abcXYZ019 -_.é߀中文😀Ωж\u00a0"
    strings = ["", "a", "21", "héllo wörld", "中文キー", "😀"] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 24))) for _ in range(194)
    ]
    longs = [0, 1, -1, 2**63 - 1, -(2**63), 42, -42] + [
        rng.randint(-(2**63), 2**63 - 1) for _ in range(143)
    ] + [rng.randint(-10_000, 10_000) for _ in range(50)]
    ints = [0, -1, 2**31 - 1, -(2**31)] + [rng.randint(-(2**31), 2**31 - 1) for _ in range(146)]
    doubles = [0.0, -0.0, 1.5, -2.25, math.inf, -math.inf, math.nan, 1e-300] + [
        rng.uniform(-1e9, 1e9) for _ in range(142)
    ]
    uuids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(100)]
    raw = [bytes(rng.getrandbits(8) for _ in range(n)) for n in range(41)] + [
        bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 40))) for _ in range(159)
    ]
    keys = (
        [s.encode("utf-8") for s in strings]                 # StringSerializer
        + [struct.pack(">q", v) for v in longs]              # LongSerializer
        + [struct.pack(">i", v) for v in ints]               # IntegerSerializer
        + [struct.pack(">d", v) for v in doubles]            # DoubleSerializer
        + [u.encode("ascii") for u in uuids]                 # UUIDSerializer (a string)
        + raw                                                # ByteArraySerializer, 0..40 bytes
    )
    assert len(keys) == 1000
    return keys


KEYS = _keys()


def _rows(records: list[Record], topic: str) -> list[tuple]:
    return [
        (r.key, r.value, topic, r.partition, r.offset, r.timestamp, [(k, v) for k, v in r.headers])
        for r in records
    ]


def _normalize(rows) -> list[tuple]:
    def b(x):
        return None if x is None else bytes(x)

    return [
        (b(r.key), b(r.value), r.topic, r.partition, r.offset, r.timestamp,
         [(h.key, b(h.value)) for h in r.headers])
        for r in rows
    ]


@pytest.fixture(scope="module")
def parity_topics(spark, kafka_store: KafkaStore):
    """Two 7-partition topics with the same 1,000 keys: one written by Spark's Kafka sink,
    one by KafkaStore.produce, both without explicit partitions."""
    suffix = uuid.uuid4().hex[:8]
    spark_topic, store_topic = f"parity-spark-{suffix}", f"parity-store-{suffix}"
    for name in (spark_topic, store_topic):
        kafka_store.create_topic(TopicConfig(name, partitions=PARTITIONS))

    values = [f"{i}".encode() for i in range(len(KEYS))]
    (
        spark.createDataFrame(list(zip(KEYS, values, strict=True)), "key binary, value binary")
        .coalesce(1)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", kafka_store.bootstrap_servers)
        .option("topic", spark_topic)
        .save()
    )
    store_written = kafka_store.produce(
        store_topic,
        [
            # Some records carry headers (one with a null value), most none.
            Record(k, v, headers=(("i", v), ("none", None)) if i % 50 == 0 else ())
            for i, (k, v) in enumerate(zip(KEYS, values, strict=True))
        ],
    )
    yield spark_topic, store_topic, store_written
    for name in (spark_topic, store_topic):
        kafka_store.delete_topic(name)


def test_every_key_lands_where_murmur2_says(parity_topics, kafka_store):
    spark_topic, store_topic, store_written = parity_topics
    expected = [partition_for_key(k, PARTITIONS) for k in KEYS]
    assert partitions_for_keys(KEYS, PARTITIONS).tolist() == expected
    assert len(set(expected)) == PARTITIONS

    by_spark = {int(r.value): r for r in kafka_store.consume(spark_topic)}
    assert sorted(by_spark) == list(range(len(KEYS)))
    assert [by_spark[i].key for i in range(len(KEYS))] == KEYS
    assert [by_spark[i].partition for i in range(len(KEYS))] == expected  # Java client == ours

    assert [r.partition for r in store_written] == expected  # librdkafka murmur2_random == ours
    by_store = {int(r.value): r for r in kafka_store.consume(store_topic)}
    assert [by_store[i] for i in range(len(KEYS))] == store_written


def test_read_stream_returns_exact_rows(spark, parity_topics, kafka_store, tmp_path):
    spark_topic, store_topic, store_written = parity_topics
    expected = sorted(
        _rows(kafka_store.consume(spark_topic), spark_topic) + _rows(store_written, store_topic),
        key=lambda row: (row[2], row[3], row[4]),
    )
    assert len(expected) == 2 * len(KEYS)
    with_headers = sorted(row[6] for row in expected if row[6])
    assert with_headers == sorted([("i", f"{i}".encode()), ("none", None)] for i in range(0, 1000, 50))

    df = kafka_store.read_stream(spark, [spark_topic, store_topic])
    assert df.isStreaming
    assert df.dtypes == list(KAFKA_COLUMNS)
    name = f"parity_{uuid.uuid4().hex[:8]}"
    query = (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None
    finally:
        query.stop()
    table = spark.table(name)
    assert table.dtypes == list(KAFKA_COLUMNS)
    got = sorted(_normalize(table.collect()), key=lambda row: (row[2], row[3], row[4]))
    assert got == expected
    spark.sql(f"DROP VIEW IF EXISTS {name}")

    batch = kafka_store.read_batch(spark, [store_topic])
    assert not batch.isStreaming and batch.dtypes == list(KAFKA_COLUMNS)
    got_batch = sorted(_normalize(batch.collect()), key=lambda row: (row[3], row[4]))
    assert got_batch == [row for row in expected if row[2] == store_topic]

"""KafkaStore against a real broker: exact records, offsets, timestamps, headers and errors."""

from __future__ import annotations

import time

import pytest

from tablestream.errors import (
    InvalidPartitionError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from tablestream.storage.kafka import KafkaStore, KafkaStoreError
from tablestream.storage.partitioner import partition_for_key
from tablestream.storage.topic import Record, TopicConfig, TopicDescription

DAY = 24 * 3600 * 1000


def test_topic_lifecycle(kafka_store: KafkaStore, topic_name):
    config = TopicConfig(topic_name, partitions=3, cleanup_policy="compact", retention_ms=3_600_000,
                         delete_retention_ms=60_000, key_format="KAFKA", value_format="JSON")
    assert kafka_store.create_topic(config) == config
    assert topic_name in kafka_store.list_topics()
    assert not [t for t in kafka_store.list_topics() if t.startswith("__")]
    assert kafka_store.topic_config(topic_name) == config

    description = kafka_store.describe_topic(topic_name)
    assert description == TopicDescription(
        config=config,
        end_offsets={0: 0, 1: 0, 2: 0},
        start_offsets={0: 0, 1: 0, 2: 0},
        record_counts={0: 0, 1: 0, 2: 0},
    )
    assert description.record_count == 0

    kafka_store.delete_topic(topic_name)
    assert topic_name not in kafka_store.list_topics()
    with pytest.raises(UnknownTopicError, match=rf"^Unknown topic '{topic_name}'$"):
        kafka_store.topic_config(topic_name)


def test_default_config_round_trips(kafka_store, topic_name):
    config = TopicConfig(topic_name)
    kafka_store.create_topic(config)
    assert kafka_store.topic_config(topic_name) == TopicConfig(
        topic_name, partitions=1, cleanup_policy="delete", retention_ms=7 * DAY, delete_retention_ms=DAY
    )
    kafka_store.delete_topic(topic_name)


def test_create_errors(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=2))
    with pytest.raises(TopicExistsError) as info:
        kafka_store.create_topic(TopicConfig(topic_name, partitions=5))
    assert str(info.value) == f"Topic '{topic_name}' already exists"
    assert kafka_store.topic_config(topic_name).partitions == 2

    # Kafka treats '.' and '_' alike (metric names): the broker rejects the second one.
    dotted = topic_name.replace("-", ".") + ".x_y"
    kafka_store.create_topic(TopicConfig(dotted))
    with pytest.raises(InvalidTopicError) as info:
        kafka_store.create_topic(TopicConfig(dotted.replace(".", "_")))
    assert str(info.value).startswith(f"Topic name '{dotted.replace('.', '_')}' is illegal: ")
    assert "collides" in str(info.value)

    with pytest.raises(InvalidTopicError) as info:
        TopicConfig("bad name!")
    assert str(info.value) == (
        "Topic name 'bad name!' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
    )
    with pytest.raises(InvalidTopicError):
        kafka_store.topic_config("bad name!")
    for name in (topic_name, dotted):
        kafka_store.delete_topic(name)


def test_unknown_topic_errors(kafka_store, topic_name):
    message = rf"^Unknown topic '{topic_name}'$"
    calls = [
        lambda: kafka_store.topic_config(topic_name),
        lambda: kafka_store.describe_topic(topic_name),
        lambda: kafka_store.delete_topic(topic_name),
        lambda: kafka_store.produce(topic_name, [Record(b"k", b"v")]),
        lambda: kafka_store.produce(topic_name, []),
        lambda: kafka_store.consume(topic_name),
    ]
    for call in calls:
        with pytest.raises(UnknownTopicError, match=message):
            call()
    assert topic_name not in kafka_store.list_topics()  # nothing auto-created


def test_produce_consume_exact_round_trip(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=3))
    t0 = 1_700_000_000_000
    records = [
        Record(b"alice", b'{"n":1}', timestamp=t0, partition=1),
        Record(b"bob", b'{"n":2}', timestamp=t0 + 5, partition=0,
               headers=(("trace", b"\x00\x01"), ("trace", b"again"), ("empty", b""), ("none", None))),
        Record(b"alice", None, timestamp=t0 + 10, partition=1),  # tombstone
        Record(None, b"keyless", timestamp=t0 + 15, partition=2, headers=(("h\u00e9", b"\xff"),)),
        Record(b"", b"empty key", timestamp=t0 + 20, partition=2),
        Record(b"carol", b"", timestamp=t0 + 1, partition=1),  # timestamps need not increase
    ]
    written = kafka_store.produce(topic_name, records)
    assert written == [
        Record(b"alice", b'{"n":1}', t0, 1, 0),
        Record(b"bob", b'{"n":2}', t0 + 5, 0, 0,
               (("trace", b"\x00\x01"), ("trace", b"again"), ("empty", b""), ("none", None))),
        Record(b"alice", None, t0 + 10, 1, 1),
        Record(None, b"keyless", t0 + 15, 2, 0, (("h\u00e9", b"\xff"),)),
        Record(b"", b"empty key", t0 + 20, 2, 1),
        Record(b"carol", b"", t0 + 1, 1, 2),
    ]
    # Keyed records without a partition go where Java's murmur2 partitioner puts them.
    keyed = [Record(k, b"x" + k, timestamp=t0 + 100) for k in (b"k0", b"k1", b"k2", b"k3", b"\xe2\x82\xac")]
    more = kafka_store.produce(topic_name, keyed)
    assert [r.partition for r in more] == [partition_for_key(r.key, 3) for r in keyed]
    next_offset = {0: 1, 1: 3, 2: 2}
    for r in more:
        assert r.offset == next_offset[r.partition]
        next_offset[r.partition] += 1

    consumed = kafka_store.consume(topic_name)
    expected = sorted(written + more, key=lambda r: (r.partition, r.offset))
    assert consumed == expected

    description = kafka_store.describe_topic(topic_name)
    assert description.end_offsets == next_offset
    assert description.start_offsets == {0: 0, 1: 0, 2: 0}
    assert description.record_counts == next_offset
    assert description.record_count == len(records) + len(keyed)

    assert kafka_store.consume(topic_name, max_records=3) == expected[:3]
    assert kafka_store.consume(topic_name, max_records=len(expected) + 10) == expected
    assert kafka_store.consume(topic_name, max_records=0) == []
    kafka_store.delete_topic(topic_name)


def test_follow_reads_what_the_topic_held_before_its_timeout_counts(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=2))
    t0 = 1_700_000_000_000
    kafka_store.produce(topic_name, [Record(b"k", b"%d" % i, timestamp=t0 + i, partition=i % 2) for i in range(4)])
    # A timeout shorter than the consumer's first fetch still reads every record there is.
    chunks = list(kafka_store.follow(topic_name, timeout=0.001))
    # (Chunks are each in partition order; which partition's records come first varies.)
    assert sorted((r.partition, r.offset, r.value, r.timestamp) for chunk in chunks for r in chunk) == [
        (0, 0, b"0", t0), (0, 1, b"2", t0 + 2), (1, 0, b"1", t0 + 1), (1, 1, b"3", t0 + 3),
    ]
    started = time.monotonic()
    assert list(kafka_store.follow(topic_name, from_beginning=False, timeout=0.5)) == []
    assert time.monotonic() - started < 5


def test_produce_without_timestamp_gets_the_broker_time(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name))
    before = int(time.time() * 1000)
    (written,) = kafka_store.produce(topic_name, [Record(b"k", b"v")])
    after = int(time.time() * 1000)
    assert before <= written.timestamp <= after
    assert (written.partition, written.offset) == (0, 0)
    assert kafka_store.consume(topic_name) == [written]
    kafka_store.delete_topic(topic_name)


def test_bad_partition_and_timestamp_write_nothing(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=3))
    with pytest.raises(InvalidPartitionError) as info:
        kafka_store.produce(topic_name, [Record(b"a", b"1", partition=0), Record(b"b", b"2", partition=3)])
    assert str(info.value) == f"Partition 3 does not exist in topic '{topic_name}' (it has 3 partitions: 0..2)"
    with pytest.raises(InvalidPartitionError) as info:
        kafka_store.produce(topic_name, [Record(b"a", b"1", partition=-1)])
    assert str(info.value) == f"Partition -1 does not exist in topic '{topic_name}' (it has 3 partitions: 0..2)"
    with pytest.raises(KafkaStoreError, match="timestamp 0 cannot be written"):
        kafka_store.produce(topic_name, [Record(b"a", b"1", timestamp=0)])
    assert kafka_store.describe_topic(topic_name).record_count == 0
    assert kafka_store.consume(topic_name, timeout=2) == []
    kafka_store.delete_topic(topic_name)


def test_single_partition_message_text(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=1))
    with pytest.raises(InvalidPartitionError) as info:
        kafka_store.produce(topic_name, [Record(b"a", b"1", partition=1)])
    assert str(info.value) == f"Partition 1 does not exist in topic '{topic_name}' (it has 1 partition: 0..0)"
    kafka_store.delete_topic(topic_name)


def test_recreated_topic_with_other_partition_count(kafka_store, topic_name):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=4))
    kafka_store.produce(topic_name, [Record(b"k", b"old", timestamp=1, partition=3)])
    kafka_store.delete_topic(topic_name)
    kafka_store.create_topic(TopicConfig(topic_name, partitions=2))
    keys = [f"key-{i}".encode() for i in range(20)]
    written = kafka_store.produce(topic_name, [Record(k, b"new", timestamp=2) for k in keys])
    assert [r.partition for r in written] == [partition_for_key(k, 2) for k in keys]
    consumed = kafka_store.consume(topic_name)
    assert sorted(consumed, key=lambda r: r.key) == sorted(written, key=lambda r: r.key)
    assert {r.value for r in consumed} == {b"new"}
    kafka_store.delete_topic(topic_name)


def test_compacted_topic_keeps_tombstones_until_cleaned(kafka_store, topic_name):
    config = TopicConfig(topic_name, partitions=1, cleanup_policy="compact")
    kafka_store.create_topic(config)
    written = kafka_store.produce(
        topic_name,
        [Record(b"k", b"v1", timestamp=10), Record(b"k", b"v2", timestamp=20), Record(b"k", None, timestamp=30)],
    )
    assert [(r.offset, r.value) for r in kafka_store.consume(topic_name)] == [(0, b"v1"), (1, b"v2"), (2, None)]
    assert written[2] == Record(b"k", None, 30, 0, 2)
    assert kafka_store.topic_config(topic_name).cleanup_policy == "compact"
    kafka_store.delete_topic(topic_name)

"""The embedded topic store: Kafka's log semantics on Delta tables (no Spark needed)."""

from __future__ import annotations

import multiprocessing
import random
import shutil
import threading

import pyarrow as pa
import pytest

from tablestream.errors import (
    DamagedTopicError,
    InvalidHomeError,
    InvalidPartitionError,
    InvalidTopicError,
    TopicExistsError,
    UnknownTopicError,
)
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.partitioner import partition_for_key
from tablestream.storage.topic import Record, TopicConfig


@pytest.fixture
def store(tmp_path):
    return EmbeddedStore(tmp_path / "home")


def test_catalog_create_list_describe_delete(store):
    store.create_topic(TopicConfig("orders", partitions=3))
    store.create_topic(TopicConfig("customers", partitions=2, cleanup_policy="compact"))
    assert store.list_topics() == ["customers", "orders"]
    described = store.describe_topic("orders")
    assert described.config == TopicConfig("orders", partitions=3)
    assert described.end_offsets == {0: 0, 1: 0, 2: 0}
    assert described.record_counts == {0: 0, 1: 0, 2: 0}
    store.delete_topic("orders")
    assert store.list_topics() == ["customers"]


def test_catalog_errors_have_exact_text(store):
    store.create_topic(TopicConfig("orders"))
    with pytest.raises(TopicExistsError, match="^Topic 'orders' already exists$"):
        store.create_topic(TopicConfig("orders", partitions=2))
    with pytest.raises(UnknownTopicError, match="^Unknown topic 'nope'$"):
        store.describe_topic("nope")
    with pytest.raises(UnknownTopicError, match="^Unknown topic 'nope'$"):
        store.delete_topic("nope")
    with pytest.raises(UnknownTopicError, match="^Unknown topic 'nope'$"):
        store.produce("nope", [Record(b"k", b"v")])
    with pytest.raises(InvalidTopicError) as bad_name:
        TopicConfig("bad name")
    assert str(bad_name.value) == (
        "Topic name 'bad name' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
    )
    with pytest.raises(InvalidTopicError) as bad_parts:
        TopicConfig("t", partitions=0)
    assert str(bad_parts.value) == "Topic 't': the number of partitions must be at least 1, got 0"


def test_produce_assigns_kafka_partitions_offsets_and_keeps_fields(store):
    store.create_topic(TopicConfig("t", partitions=4))
    written = store.produce(
        "t",
        [
            Record(b"alice", b"1", timestamp=1000),
            Record(b"bob", b"2", timestamp=1001),
            Record(b"alice", None, timestamp=999, headers=(("source", b"cdc"), ("empty", None))),
            Record(b"carol", b"4", timestamp=1003, partition=3),
        ],
    )
    # murmur2 of the key bytes, as Kafka's default partitioner.
    assert (partition_for_key(b"alice", 4), partition_for_key(b"bob", 4)) == (1, 2)
    assert written == [
        Record(b"alice", b"1", 1000, 1, 0),
        Record(b"bob", b"2", 1001, 2, 0),
        Record(b"alice", None, 999, 1, 1, (("source", b"cdc"), ("empty", None))),
        Record(b"carol", b"4", 1003, 3, 0),
    ]
    assert store.consume("t") == sorted(written, key=lambda r: (r.partition, r.offset))
    assert store.describe_topic("t").end_offsets == {0: 0, 1: 2, 2: 1, 3: 1}


def test_missing_timestamp_is_the_append_time(store):
    store.create_topic(TopicConfig("t"))
    import time

    before = time.time_ns() // 1_000_000
    (record,) = store.produce("t", [Record(b"k", b"v")])
    after = time.time_ns() // 1_000_000
    assert before <= record.timestamp <= after


def test_invalid_partition_writes_nothing(store):
    store.create_topic(TopicConfig("t", partitions=2))
    with pytest.raises(InvalidPartitionError) as err:
        store.produce("t", [Record(b"a", b"1"), Record(b"b", b"2", partition=2)])
    assert str(err.value) == "Partition 2 does not exist in topic 't' (it has 2 partitions: 0..1)"
    assert store.consume("t") == []
    assert store.describe_topic("t").end_offsets == {0: 0, 1: 0}


def test_keyless_records_spread_over_partitions(store):
    store.create_topic(TopicConfig("t", partitions=3))
    written = store.produce("t", [Record(None, b"%d" % i) for i in range(300)])
    per_partition = {p: sum(1 for r in written if r.partition == p) for p in range(3)}
    assert sorted(per_partition.values()) == [100, 100, 100]


def test_compacted_topic_rejects_a_record_without_key(store):
    store.create_topic(TopicConfig("c", cleanup_policy="compact"))
    with pytest.raises(InvalidTopicError, match="^Compacted topic 'c' cannot accept a record without a key$"):
        store.produce("c", [Record(None, b"v")])


def _produce_many(home: str, producer: int, appends: int, per_append: int) -> None:
    store = EmbeddedStore(home)
    rng = random.Random(producer)
    for a in range(appends):
        store.produce(
            "shared",
            [
                Record(b"key-%d" % rng.randrange(500), b"%d:%d:%d" % (producer, a, i))
                for i in range(per_append)
            ],
        )


def test_two_producer_processes_leave_offsets_contiguous(tmp_path):
    home = str(tmp_path / "home")
    EmbeddedStore(home).create_topic(TopicConfig("shared", partitions=3))
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_produce_many, args=(home, p, 100, 100)) for p in (1, 2)]
    for proc in procs:
        proc.start()
    for proc in procs:
        proc.join(120)
        assert proc.exitcode == 0
    records = EmbeddedStore(home).consume("shared")
    assert len(records) == 20_000
    for p in range(3):
        offsets = [r.offset for r in records if r.partition == p]
        assert offsets == list(range(len(offsets)))
    assert sorted(r.value for r in records) == sorted(
        b"%d:%d:%d" % (p, a, i) for p in (1, 2) for a in range(100) for i in range(100)
    )
    # Each producer's records keep their order within a partition.
    for producer in (b"1", b"2"):
        for p in range(3):
            seq = [
                tuple(int(x) for x in r.value.split(b":")[1:])
                for r in records
                if r.partition == p and r.value.startswith(producer + b":")
            ]
            assert seq == sorted(seq)
    assert EmbeddedStore(home).describe_topic("shared").record_count == 20_000


def test_compaction_keeps_latest_per_key_with_offsets_and_drops_expired_tombstones(store):
    store.create_topic(
        TopicConfig("c", partitions=1, cleanup_policy="compact", delete_retention_ms=1_000)
    )
    store.produce(
        "c",
        [
            Record(b"a", b"a1", timestamp=100),  # 0: superseded
            Record(b"b", b"b1", timestamp=110),  # 1: kept
            Record(b"a", b"a2", timestamp=120),  # 2: kept
            Record(b"c", b"c1", timestamp=130),  # 3: superseded by a tombstone
            Record(b"c", None, timestamp=140),  # 4: tombstone, expired at now=5000
            Record(b"d", b"d1", timestamp=150),  # 5: superseded by a fresh tombstone
            Record(b"d", None, timestamp=4_500),  # 6: tombstone within delete.retention.ms
            Record(b"e", None, timestamp=4_600),  # 7: last record of the partition, expired later
        ],
    )
    assert store.compact("c", now=5_000) == {"before": 8, "after": 4}
    assert store.consume("c") == [
        Record(b"b", b"b1", 110, 0, 1),
        Record(b"a", b"a2", 120, 0, 2),
        Record(b"d", None, 4_500, 0, 6),
        Record(b"e", None, 4_600, 0, 7),
    ]
    # Later, every tombstone has expired; the end offset stays where it was.
    assert store.compact("c", now=10_000) == {"before": 4, "after": 2}
    assert store.consume("c") == [Record(b"b", b"b1", 110, 0, 1), Record(b"a", b"a2", 120, 0, 2)]
    described = store.describe_topic("c")
    assert described.end_offsets == {0: 8}
    assert described.start_offsets == {0: 1}
    (next_record,) = store.produce("c", [Record(b"f", b"f1", timestamp=10_001)])
    assert next_record.offset == 8


def test_delete_policy_applies_retention(store):
    store.create_topic(TopicConfig("d", partitions=1, retention_ms=1_000))
    store.produce("d", [Record(b"k", b"%d" % t, timestamp=t) for t in (100, 2_000, 3_000)])
    assert store.compact("d", now=2_900) == {"before": 3, "after": 2}
    assert [r.offset for r in store.consume("d")] == [1, 2]


def test_append_with_transaction_is_idempotent(store):
    store.create_topic(TopicConfig("out", partitions=2))
    batch = pa.table({"key": [b"x", b"y"], "value": [b"1", b"2"], "timestamp": [5, 6]})
    first = store.append("out", batch, txn=("app-1", 7))
    assert first.num_rows == 2
    assert store.append("out", batch, txn=("app-1", 7)).num_rows == 0
    assert store.append("out", batch, txn=("app-1", 6)).num_rows == 0
    assert len(store.consume("out")) == 2
    assert store.append("out", batch, txn=("app-1", 8)).num_rows == 2
    assert len(store.consume("out")) == 4


def test_records_appended_to_several_topics_are_seen_together(store, monkeypatch):
    store.create_topic(TopicConfig("orders", partitions=1))
    store.create_topic(TopicConfig("products", partitions=1))
    reader = EmbeddedStore(store.home)  # another reader of the same home, as a query's source
    seen, readers = {}, []
    appended = EmbeddedStore.append

    def append(self, name, batch, **kwargs):
        written = appended(self, name, batch, **kwargs)
        if name == "orders":  # between the two topics' appends: a trigger reads the ends
            thread = threading.Thread(target=lambda: seen.update(reader.end_offsets_of(["orders", "products"])))
            thread.start()
            thread.join(0.5)
            seen["waited"] = thread.is_alive()
            readers.append(thread)
        return written

    monkeypatch.setattr(EmbeddedStore, "append", append)
    written = store.append_many({
        "orders": pa.table({"key": [b"o1", b"o2"], "value": [b"1", b"2"], "timestamp": [5, 6]}),
        "products": pa.table({"key": [b"p1"], "value": [b"3"], "timestamp": [7]}),
    })
    readers[0].join(10)
    assert seen == {"waited": True, "orders": {0: 2}, "products": {0: 1}}
    assert {name: rows.select(["key", "offset", "timestamp"]).to_pylist() for name, rows in written.items()} == {
        "orders": [{"key": b"o1", "offset": 0, "timestamp": 5}, {"key": b"o2", "offset": 1, "timestamp": 6}],
        "products": [{"key": b"p1", "offset": 0, "timestamp": 7}],
    }
    assert [r.key for r in store.consume("orders")] == [b"o1", b"o2"]
    assert [r.key for r in store.consume("products")] == [b"p1"]


def test_appending_to_several_topics_one_of_which_is_unknown_writes_nothing(store):
    store.create_topic(TopicConfig("orders", partitions=1))
    with pytest.raises(UnknownTopicError, match="^Unknown topic 'nope'$"):
        store.append_many({
            "orders": pa.table({"key": [b"o1"], "value": [b"1"]}),
            "nope": pa.table({"key": [b"x"], "value": [b"2"]}),
        })
    assert store.end_offsets_of(["orders"]) == {"orders": {0: 0}}


def _damage(store, name, how):
    topic_dir = store.topics_dir / name
    if how == "settings":
        (topic_dir / "topic.json").write_text("garbage")
        return topic_dir / "topic.json", "not valid JSON (Expecting value at line 1 column 1)"
    if how == "log":
        shutil.rmtree(topic_dir / "log" / "_delta_log")
        return topic_dir / "log", "no Delta log (_delta_log is missing or empty)"
    if how == "other topic":
        (topic_dir / "topic.json").write_text('{"name": "other", "partitions": 1}')
        return topic_dir / "topic.json", "it names another topic, 'other'"
    (topic_dir / "topic.json").write_text('{"name": "t", "partitions": 0}')
    return topic_dir / "topic.json", "Topic 't': the number of partitions must be at least 1, got 0"


@pytest.mark.parametrize("how", ["settings", "log", "other topic", "bad setting"])
def test_a_damaged_topic_is_reported_by_every_method_and_can_be_deleted(store, how):
    store.create_topic(TopicConfig("t"))
    store.create_topic(TopicConfig("ok"))
    store.produce("t", [Record(b"k", b"1")])
    path, problem = _damage(store, "t", how)
    message = f"Topic 't' is damaged: {path}: {problem} (delete it with 'tablestream topics delete t')"
    calls = {
        "check_topic": lambda: store.check_topic("t"),
        "describe_topic": lambda: store.describe_topic("t"),
        "end_offsets": lambda: store.end_offsets("t"),
        "produce": lambda: store.produce("t", [Record(b"k", b"2")]),
        "read": lambda: store.read("t"),
        "consume": lambda: store.consume("t"),
        "poll": lambda: store.poll("t", {0: 0}),
        "compact": lambda: store.compact("t"),
    }
    for method, call in calls.items():
        with pytest.raises(DamagedTopicError) as damaged:
            call()
        assert str(damaged.value) == message, method
    assert store.list_topics() == ["ok", "t"]
    store.check_topic("ok")
    store.delete_topic("t")
    assert store.list_topics() == ["ok"]
    store.create_topic(TopicConfig("t"))
    assert [(r.key, r.value, r.offset) for r in store.produce("t", [Record(b"k", b"3")])] == [(b"k", b"3", 0)]


def test_a_missing_data_file_is_reported_with_its_path(store):
    store.create_topic(TopicConfig("t"))
    store.produce("t", [Record(b"k", b"1")])
    (data,) = (store.topics_dir / "t" / "log").glob("partition=0/*.parquet")
    data.unlink()
    with pytest.raises(DamagedTopicError) as damaged:
        store.read("t")
    assert str(damaged.value).startswith(
        f"Topic 't' is damaged: {store.topics_dir / 't' / 'log'}: unreadable Delta table: "
    )
    assert str(data) in str(damaged.value)
    assert str(damaged.value).endswith("(delete it with 'tablestream topics delete t')")


def test_a_home_that_is_a_file_is_an_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(InvalidHomeError) as error:
        EmbeddedStore(tmp_path / "file")
    assert str(error.value) == (
        f"Home {tmp_path / 'file'} is not a directory (give --home or $TABLESTREAM_HOME a directory)"
    )

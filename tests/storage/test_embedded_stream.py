"""The embedded store read as a Spark stream: where a query begins, and what it reads
after compaction and restarts."""

from __future__ import annotations

import pytest

from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark


def _read(spark, store, topics, checkpoint):
    """One availableNow run: the records read, as (topic, key, value, offset, timestamp)."""
    rows = []
    query = (
        store.read_stream(spark, topics)
        .writeStream.trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(lambda df, _: rows.extend(df.collect()))
        .start()
    )
    query.awaitTermination()
    return sorted((r.topic, r.key, r.value, r.offset, r.timestamp) for r in rows)


def _produce(store, topic, records):
    store.produce(topic, [Record(k, v, timestamp=ts) for k, v, ts in records])


def test_a_new_query_reads_every_record_of_an_uncompacted_topic_and_only_the_kept_ones_of_a_compacted_one(
    spark, tmp_path
):
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("plain", partitions=1))
    store.create_topic(TopicConfig("cleaned", partitions=1, cleanup_policy="compact"))
    for topic in ("plain", "cleaned"):
        _produce(store, topic, [(b"a", b"1", 10), (b"b", b"1", 11)])
        _produce(store, topic, [(b"a", b"2", 12)])
    assert store.compact("cleaned", now=100) == {"before": 3, "after": 2}

    assert _read(spark, store, ["plain", "cleaned"], tmp_path / "ck") == [
        ("cleaned", b"a", b"2", 2, 12),
        ("cleaned", b"b", b"1", 1, 11),
        ("plain", b"a", b"1", 0, 10),
        ("plain", b"a", b"2", 2, 12),
        ("plain", b"b", b"1", 1, 11),
    ]
    # Restarted: only what came after, in both; a compaction meanwhile adds nothing.
    for topic in ("plain", "cleaned"):
        _produce(store, topic, [(b"b", b"2", 13)])
    assert store.compact("cleaned", now=100) == {"before": 3, "after": 2}
    assert store.compact("plain", now=100) == {"before": 4, "after": 4}  # delete policy, no retention
    assert _read(spark, store, ["plain", "cleaned"], tmp_path / "ck") == [
        ("cleaned", b"b", b"2", 3, 13),
        ("plain", b"b", b"2", 3, 13),
    ]
    _produce(store, "plain", [(b"c", b"1", 14)])
    assert _read(spark, store, ["plain", "cleaned"], tmp_path / "ck") == [("plain", b"c", b"1", 4, 14)]


def _source_rows(store, topics, start, end):
    """The records the streaming source's Python reader gives between two positions."""
    from tablestream.storage.embedded_source import EmbeddedTopicReader

    reader = EmbeddedTopicReader(str(store.home), topics, None)
    start = {t: {str(p): o for p, o in parts.items()} for t, parts in start.items()}
    end = {t: {str(p): o for p, o in parts.items()} for t, parts in end.items()}
    return sorted(
        (r for part in reader.partitions(start, end) for batch in reader.read(part) for r in batch.to_pylist()),
        key=_position,
    )


def _position(row):
    return row["topic"], row["partition"], row["offset"]


def test_read_between_gives_the_records_of_the_source_between_two_positions(spark, tmp_path):
    import pyarrow as pa

    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("events", partitions=2))
    store.create_topic(TopicConfig("users", partitions=1, cleanup_policy="compact"))
    for first in (0, 4, 8):  # three files per partition
        _produce(store, "events", [(b"k%d" % (first + i), b"v%d" % (first + i), 100 + first + i) for i in range(8)])
    store.append(
        "events",
        pa.table({
            "key": [b"h", None], "value": [None, b"n"], "timestamp": [500, 501], "partition": [0, 0],
            "headers": pa.array([[{"key": "h", "value": b"x"}], None], pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        }),
    )
    _produce(store, "users", [(b"a", b"1", 1), (b"b", b"1", 2), (b"a", b"2", 3), (b"c", b"1", 4)])
    store.compact("users", now=100)  # offset 0 superseded: a gap
    ends = {"events": store.end_offsets("events"), "users": store.end_offsets("users")}
    cases = [
        ({}, ends),  # everything (the first batch)
        ({"events": {0: 3, 1: 5}}, {"events": {0: 9, 1: 6}}),  # inside files: filtered by offset
        ({"events": {0: 4}}, {"events": {0: 8, 1: 2}}),  # partition 1 absent from the start
        ({"events": {0: ends["events"][0], 1: 0}}, {"events": {0: ends["events"][0], 1: 0}}),  # nothing
        ({"users": {0: 0}}, {"users": {0: 4}}),  # compacted: the kept records only
    ]
    for start, end in cases:
        got = sorted((r.asDict(recursive=True) for r in store.read_between(spark, start, end).collect()), key=_position)
        assert got == _source_rows(store, list(end), start, end), (start, end)
        assert len(got) == sum(max(0, o - start.get(t, {}).get(p, 0)) for t, parts in end.items() for p, o in parts.items()) - (
            1 if "users" in end else 0
        )
    last = ends["events"][0]  # after the records with headers and nulls
    frame = store.read_between(spark, {"events": {0: last - 2}, "users": {0: 0}}, {"events": {0: last}, "users": {0: 2}})
    assert frame.schema.simpleString() == (
        "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,timestamp:bigint,"
        "headers:array<struct<key:string,value:binary>>>"
    )
    assert sorted((r.asDict(recursive=True) for r in frame.collect()), key=_position) == [
        {"key": b"h", "value": None, "topic": "events", "partition": 0, "offset": last - 2, "timestamp": 500,
         "headers": [{"key": "h", "value": b"x"}]},
        {"key": None, "value": b"n", "topic": "events", "partition": 0, "offset": last - 1, "timestamp": 501, "headers": []},
        {"key": b"b", "value": b"1", "topic": "users", "partition": 0, "offset": 1, "timestamp": 2, "headers": []},
    ]

"""The embedded store's streaming source without Spark: Kafka-like offsets, the bound on
a batch shared among partitions, input partitions, and the records each one reads."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from tablestream.storage import embedded_source
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.embedded_source import (
    ARROW_SCHEMA,
    EmbeddedTopicReader,
    TopicRange,
    bounded_ends,
    read_range,
)
from tablestream.storage.topic import TopicConfig


def _append(store, topic, partition, keys, ts0=0, values=None):
    n = len(keys)
    store.append(
        topic,
        pa.table({
            "key": [k.encode() for k in keys],
            "value": values or [b"v%d" % (ts0 + i) for i in range(n)],
            "timestamp": list(range(ts0, ts0 + n)),
            "partition": [partition] * n,
        }),
    )


def _store(tmp_path, partitions=3):
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("events", partitions=partitions))
    return store


def _rows(reader, start, end):
    rows = []
    for part in reader.partitions(start, end):
        for batch in reader.read(part):
            assert batch.schema.equals(ARROW_SCHEMA)
            rows += [(r["topic"], r["partition"], r["offset"], r["key"], r["timestamp"]) for r in batch.to_pylist()]
    return sorted(rows)


def test_the_bound_is_shared_in_proportion_to_each_partitions_backlog_and_is_exact():
    begin = {"a": {0: 0, 1: 100, 2: 7}, "b": {0: 0}}
    ends = {"a": {0: 834, 1: 933, 2: 7}, "b": {0: 833}}
    # 2,500 offsets to read, 1,000 allowed: 333.6, 333.2 and 333.2 rounded to 1,000.
    assert bounded_ends(begin, ends, 1_000) == {"a": {0: 334, 1: 433, 2: 7}, "b": {0: 333}}
    # Enough room: the ends as they are.
    assert bounded_ends(begin, ends, 2_500) == ends
    # Skewed: 2,000 offsets against 10; the small partition is not starved.
    assert bounded_ends({"a": {0: 0, 1: 0}}, {"a": {0: 2_000, 1: 10}}, 1_000) == {"a": {0: 995, 1: 5}}
    # A bound below the number of partitions: the largest backlogs first.
    assert bounded_ends({"a": {0: 0, 1: 0, 2: 0}}, {"a": {0: 5, 1: 9, 2: 7}}, 2) == {"a": {0: 0, 1: 1, 2: 1}}


def test_a_backlog_is_planned_in_bounded_batches_up_to_the_end_found_at_start(tmp_path):
    store = _store(tmp_path)
    _append(store, "events", 0, ["a"] * 1_200)
    _append(store, "events", 1, ["b"] * 800)
    _append(store, "events", 2, ["c"] * 500)
    reader = EmbeddedTopicReader(str(store.home), ["events"], 1_000)
    assert reader.getDefaultReadLimit() == ReadMaxRows(1_000)
    assert EmbeddedTopicReader(str(store.home), ["events"], None).getDefaultReadLimit() == ReadAllAvailable()

    start = reader.initialOffset()
    assert start == {"events": {"0": 0, "1": 0, "2": 0}}
    reader.prepareForTriggerAvailableNow()
    _append(store, "events", 0, ["late"] * 10)  # after the start: not read in this run
    planned = [start]
    while True:
        end = reader.latestOffset(planned[-1], ReadMaxRows(1_000))
        if end == planned[-1]:
            break
        planned.append(end)
    assert planned[1:] == [
        {"events": {"0": 480, "1": 320, "2": 200}},
        {"events": {"0": 960, "1": 640, "2": 400}},
        {"events": {"0": 1_200, "1": 800, "2": 500}},
    ]
    assert reader.latestOffset(planned[1], ReadAllAvailable()) == planned[-1]
    assert reader.reportLatestOffset() == {"events": {"0": 1_210, "1": 800, "2": 500}}

    rows = _rows(reader, planned[1], planned[2])
    assert len(rows) == 1_000
    assert rows[0] == ("events", 0, 480, b"a", 480)
    assert rows[-1] == ("events", 2, 399, b"c", 399)
    assert [r[:3] for r in rows] == (
        [("events", 0, o) for o in range(480, 960)]
        + [("events", 1, o) for o in range(320, 640)]
        + [("events", 2, o) for o in range(200, 400)]
    )


def test_records_removed_by_compaction_are_absent_and_a_new_query_starts_at_the_first_one_kept(tmp_path):
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("users", partitions=1, cleanup_policy="compact"))
    _append(store, "users", 0, ["a", "b", "a", "c", "a", "b"])
    assert store.compact("users", now=100) == {"before": 6, "after": 3}
    reader = EmbeddedTopicReader(str(store.home), ["users"], None)
    assert reader.initialOffset() == {"users": {"0": 3}}  # offsets 0-2 were all superseded
    assert _rows(reader, {"users": {"0": 0}}, {"users": {"0": 6}}) == [
        ("users", 0, 3, b"c", 3),
        ("users", 0, 4, b"a", 4),
        ("users", 0, 5, b"b", 5),
    ]
    # The bound counts offsets, gaps included, as Kafka's maxOffsetsPerTrigger does.
    assert reader.latestOffset({"users": {"0": 0}}, ReadMaxRows(4)) == {"users": {"0": 4}}


def test_a_topic_or_partition_missing_from_the_start_begins_at_its_first_record(tmp_path):
    store = _store(tmp_path, partitions=2)
    store.create_topic(TopicConfig("more", partitions=1))
    _append(store, "events", 0, ["a"] * 3)
    _append(store, "events", 1, ["b"] * 2)
    _append(store, "more", 0, ["m"] * 4)
    reader = EmbeddedTopicReader(str(store.home), ["events", "more"], None)
    assert reader.latestOffset({"events": {"0": 2}}, ReadAllAvailable()) == {
        "events": {"0": 3, "1": 2},
        "more": {"0": 4},
    }
    assert [r[:3] for r in _rows(reader, {"events": {"0": 2}}, {"events": {"0": 3, "1": 2}, "more": {"0": 4}})] == [
        ("events", 0, 2), ("events", 1, 0), ("events", 1, 1),
        ("more", 0, 0), ("more", 0, 1), ("more", 0, 2), ("more", 0, 3),
    ]


def test_input_partitions_follow_the_files_and_split_large_ranges(tmp_path, monkeypatch):
    monkeypatch.setattr(embedded_source, "SPLIT_RECORDS", 250)
    store = _store(tmp_path, partitions=2)
    for i in range(4):
        _append(store, "events", 0, ["a"] * 100, ts0=100 * i)
    _append(store, "events", 0, ["big"] * 600, ts0=400)
    _append(store, "events", 1, ["b"] * 30)
    reader = EmbeddedTopicReader(str(store.home), ["events"], None)
    parts = reader.partitions({"events": {"0": 150, "1": 0}}, {"events": {"0": 700, "1": 30}})
    assert [(p.topic, p.partition, p.start, p.end, len(p.files)) for p in parts] == [
        ("events", 0, 150, 700, 2),  # the files of offsets 100-199 and 200-299
        ("events", 0, 150, 700, 1),  # 300-399 (with the next one: more than 250)
        ("events", 0, 150, 700, 1),  # 400-999, a file larger than the split alone
        ("events", 1, 0, 30, 1),
    ]
    counts = [sum(b.num_rows for b in reader.read(p)) for p in parts]
    assert counts == [150, 100, 300, 30]
    assert all(isinstance(p, TopicRange) for p in parts)
    # Nothing to read: no partition.
    assert reader.partitions({"events": {"0": 700, "1": 30}}, {"events": {"0": 700, "1": 30}}) == []


def test_headers_and_null_values_read_as_the_stream_gives_them(tmp_path):
    store = _store(tmp_path, partitions=1)
    store.append(
        "events",
        pa.table({
            "key": [b"k1", None],
            "value": [None, b"v"],
            "timestamp": [5, 6],
            "headers": pa.array([[{"key": "h", "value": b"x"}], None], ARROW_SCHEMA.field("headers").type),
        }),
    )
    rows = [
        b.to_pylist()
        for b in read_range(TopicRange("events", 0, 0, 2, [str(store.log_path("events") / p) for p in store.data_files("events").column("path").to_pylist()]))
    ]
    assert rows == [[
        {"key": b"k1", "value": None, "topic": "events", "partition": 0, "offset": 0, "timestamp": 5,
         "headers": [{"key": "h", "value": b"x"}]},
        {"key": None, "value": b"v", "topic": "events", "partition": 0, "offset": 1, "timestamp": 6, "headers": []},
    ]]


@pytest.mark.parametrize("bound", [None, 1])
def test_an_empty_topic_plans_nothing(tmp_path, bound):
    store = _store(tmp_path, partitions=2)
    reader = EmbeddedTopicReader(str(store.home), ["events"], bound)
    start = reader.initialOffset()
    assert start == {"events": {"0": 0, "1": 0}}
    assert reader.latestOffset(start, reader.getDefaultReadLimit()) == start
    assert reader.partitions(start, start) == []

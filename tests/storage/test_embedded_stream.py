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

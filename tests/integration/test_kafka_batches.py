"""Batches into Kafka in one transaction each, with their commit marker: replays write
nothing, a zombie producer is fenced, ``read_committed`` readers never see an aborted
batch (``read_uncommitted`` ones do)."""

from __future__ import annotations

import time
import uuid

import pyarrow as pa
import pytest

from tablestream.storage.kafka import KafkaStoreError
from tablestream.storage.kafka_batches import CommitMarker, KafkaBatchWriter, ProducerFencedError
from tablestream.storage.partitioner import partition_for_key
from tablestream.storage.topic import TopicConfig

NOW = int(time.time() * 1000) - 60_000


def _records(*pairs: tuple[bytes, bytes]) -> pa.Table:
    return pa.table(
        {
            "key": pa.array([k for k, _ in pairs], pa.binary()),
            "value": pa.array([v for _, v in pairs], pa.binary()),
            "timestamp": pa.array([NOW + i for i in range(len(pairs))], pa.int64()),
        }
    )


def _read(store, topic, **kwargs):
    return [(r.partition, r.key, r.value, r.timestamp) for r in store.consume(topic, **kwargs)]


@pytest.fixture
def app_id():
    return f"batches-{uuid.uuid4().hex[:8]}"


def test_a_batch_is_one_transaction_and_a_replay_writes_nothing(kafka_store, topic_name, app_id):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=3))
    writer = KafkaBatchWriter(kafka_store, app_id, run="r1")
    writer.create_topic()
    batch = _records((b"a", b"1"), (b"b", b"2"), (b"a", b"3"))
    writer.write(topic_name, _records((b"failed", b"batch")))
    writer.discard()  # the batch failed before its commit; it runs again
    writer.write(topic_name, batch)
    assert writer.commit(0) is True
    assert writer.wait_visible()
    expected = sorted(
        [(partition_for_key(b"a", 3), b"a", b"1", NOW), (partition_for_key(b"b", 3), b"b", b"2", NOW + 1),
         (partition_for_key(b"a", 3), b"a", b"3", NOW + 2)],
        key=lambda r: (r[0], r[3]),
    )
    assert _read(kafka_store, topic_name, read_committed=True) == expected

    writer.write(topic_name, batch)
    assert writer.commit(0) is False  # the same process replays the batch
    restarted = KafkaBatchWriter(kafka_store, app_id, run="r1")
    assert restarted.last_committed() == 0  # a new instance learns it from the marker
    restarted.write(topic_name, batch)
    assert restarted.commit(0) is False
    assert _read(kafka_store, topic_name) == expected  # nothing written, not even aborted

    other_run = KafkaBatchWriter(kafka_store, app_id, run="r2")  # after a reset
    assert other_run.last_committed() is None
    markers = [CommitMarker.parse(r.value) for r in kafka_store.consume(writer.topic, read_committed=True)]
    assert markers == [CommitMarker(app_id, "r1", 0)]
    assert kafka_store.topic_config(writer.topic).cleanup_policy == "compact"


class _CommitLater:
    """A producer whose commit first delivers the transaction's records, then runs
    ``before`` (a newer instance starting while this one's transaction is open)."""

    def __init__(self, producer, before):
        self._producer, self._before = producer, before

    def commit_transaction(self, *args):
        assert self._producer.flush(30) == 0
        self._before()
        return self._producer.commit_transaction(*args)

    def __getattr__(self, name):
        return getattr(self._producer, name)


def test_a_zombie_is_fenced_and_its_open_batch_aborted(kafka_store, topic_name, app_id):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=1))
    zombie = KafkaBatchWriter(kafka_store, app_id, run="r1")
    zombie.create_topic()
    zombie.write(topic_name, _records((b"k", b"batch-0")))
    assert zombie.commit(0)

    newer = KafkaBatchWriter(kafka_store, app_id, run="r1")
    zombie._producer = _CommitLater(zombie._producer, newer.last_committed)
    zombie.write(topic_name, _records((b"k", b"zombie-batch-1")))
    with pytest.raises(ProducerFencedError) as fenced:
        zombie.commit(1)
    assert str(fenced.value) == (
        "Fenced: a newer instance of the application started its producer "
        f"(transactional id '{app_id}-batch-producer'), so this one stops; batch 1 was not committed"
    )
    assert newer.last_committed() == 0  # the zombie's batch 1 was aborted when the newer one started
    newer.write(topic_name, _records((b"k", b"batch-1")))
    assert newer.commit(1) and newer.wait_visible()

    committed = [r[2] for r in _read(kafka_store, topic_name, read_committed=True)]
    assert committed == [b"batch-0", b"batch-1"]
    # A read_uncommitted consumer also sees the aborted batch's records.
    assert [r[2] for r in _read(kafka_store, topic_name)] == [b"batch-0", b"zombie-batch-1", b"batch-1"]
    markers = [CommitMarker.parse(r.value).batch_id for r in kafka_store.consume(newer.topic, read_committed=True)]
    assert markers == [0, 1]


def test_a_record_kafka_cannot_store_fails_the_batch_before_anything_is_written(kafka_store, topic_name, app_id):
    kafka_store.create_topic(TopicConfig(topic_name, partitions=1))
    writer = KafkaBatchWriter(kafka_store, app_id, run="r1")
    writer.create_topic()
    stamped_zero = pa.table({"key": [b"k"], "value": [b"v"], "timestamp": pa.array([0], pa.int64())})
    with pytest.raises(KafkaStoreError) as refused:
        writer.write(topic_name, stamped_zero)
    assert str(refused.value) == (
        f"Topic '{topic_name}': a record of application '{app_id}' has timestamp 0, which Kafka cannot "
        "store (timestamps are >= 1 ms; librdkafka reads 0 as 'now')"
    )
    writer.write(f"{topic_name}-missing", _records((b"k", b"v")))
    writer.write(topic_name, _records((b"k", b"v")))
    with pytest.raises(KafkaStoreError) as failed:
        writer.commit(0)
    assert str(failed.value) == (
        f"Batch 0 cannot write to topic '{topic_name}-missing': it does not exist (nothing of the batch is written)"
    )
    assert kafka_store.consume(topic_name) == [] and kafka_store.consume(writer.topic) == []
    assert writer.last_committed() is None

"""Exactly once into Kafka: each batch of an application in one Kafka transaction.

Kafka Streams commits a task's outputs and its input positions in one transaction
(exactly-once v2, KIP-447: ``StreamsProducer``, ``TaskManager``). An application's
positions live in Spark's checkpoint instead, which no Kafka transaction can hold, so
the transaction holds what says the batch is done: every record of the batch for a
Kafka topic (output topics and the processing log) and a *commit marker*, the record
``(application id, run, batch id)`` in the application's internal compacted topic
``<application id>-batch-commits`` (:func:`commits_topic`, named like Kafka Streams'
internal topics). Either all of them are visible to ``read_committed`` consumers, or
none.

The producer is transactional, with ``transactional.id`` ``<application id>-batch-producer``
(:func:`transactional_id`). Starting it (``init_transactions``) fences every older
producer of the application, wherever it runs: the broker bumps the producer epoch,
aborts that producer's open transaction (or finishes one it had asked to commit), and
refuses anything it sends afterwards. Only then is the last marker read, with a
``read_committed`` read, so what it says is final: a replayed batch (the query restarted
after the transaction committed but before Spark recorded the batch as done) finds its
marker and writes nothing again. That is why the check happens here, when the batch
commits, after the producer started, and not before the batch runs: until
``init_transactions`` returns, a transaction of a crashed instance may still be open,
and whether it commits is not yet known.

Once the transaction is committed, the batch's consumed positions (where it ends in
each source partition) are committed to the consumer group named after the application,
as Kafka Streams does, so Kafka's own tools show the application's lag
(``kafka-consumer-groups --describe --group <application id>``). They are a report:
Spark's checkpoint stays what a restart resumes from, so they are committed by a
consumer of the group, asynchronously, and not inside the transaction with
``send_offsets_to_transaction`` nor with the admin client: both are librdkafka
coordinator requests, which ignore their timeout and wait for ever when the group's
coordinator went away (confluentinc/librdkafka#5456, #5511), and after a broker stopped
mid-batch aborted the process with a failed assertion (``eonce->refcnt > 0``). Positions
that could not be committed are logged and committed with the next batch's.

After any error the producer is dropped; the next batch starts a new one, which learns
from the markers what the failed one did. Records are produced with Kafka's murmur2
partitioner (as Kafka's Java producer and Kafka Streams), keyed and timestamped as the
batch's outputs are.

>>> writer = KafkaBatchWriter(store, "revenue", run="5f0c")           # doctest: +SKIP
>>> writer.write("revenue-changes", records)                          # doctest: +SKIP
>>> writer.commit(7, {("orders", 0): 1200, ("orders", 1): 1187})       # doctest: +SKIP
True
>>> writer.write("revenue-changes", records); writer.commit(7)        # doctest: +SKIP
False
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from ..errors import TopicExistsError
from .kafka import KafkaStore, KafkaStoreError
from .topic import TopicConfig

__all__ = [
    "COMMITS_SUFFIX",
    "CommitMarker",
    "KafkaBatchWriter",
    "ProducerFencedError",
    "commits_topic",
    "transactional_id",
]

_LOG = logging.getLogger(__name__)

COMMITS_SUFFIX = "-batch-commits"
PRODUCER_SUFFIX = "-batch-producer"
#: A batch's transaction may stay open this long (ms) before the broker aborts it; it
#: spans producing the batch's records, not computing them.
TRANSACTION_TIMEOUT_MS = 120_000

# librdkafka's codes for a cluster that does not answer (its clients retry until then).
_UNREACHABLE_CODES = {
    KafkaError._TIMED_OUT,  # noqa: SLF001
    KafkaError._TRANSPORT,  # noqa: SLF001
    KafkaError._ALL_BROKERS_DOWN,  # noqa: SLF001
    KafkaError._MSG_TIMED_OUT,  # noqa: SLF001
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError.NOT_COORDINATOR,
}
_FENCED_CODES = {
    KafkaError._FENCED,  # noqa: SLF001 - librdkafka's local codes start with '_'
    KafkaError.PRODUCER_FENCED,
    KafkaError.INVALID_PRODUCER_EPOCH,
}


def commits_topic(application_id: str) -> str:
    """The internal compacted topic of an application's commit markers.

    >>> commits_topic("revenue")
    'revenue-batch-commits'
    """
    return f"{application_id}{COMMITS_SUFFIX}"


def transactional_id(application_id: str) -> str:
    """The ``transactional.id`` of an application's producer: the same for every instance,
    so that a new instance fences the old ones.

    >>> transactional_id("revenue")
    'revenue-batch-producer'
    """
    return f"{application_id}{PRODUCER_SUFFIX}"


class ProducerFencedError(KafkaStoreError):
    """Another instance of the application started its producer: this one may write no more."""


@dataclass(frozen=True)
class CommitMarker:
    """The record saying a batch of a run of an application is committed: key the
    application id, value ``{"application", "run", "batch"}`` as JSON.

    >>> CommitMarker("revenue", "5f0c", 7).value()
    b'{"application":"revenue","run":"5f0c","batch":7}'
    """

    application_id: str
    run: str | None
    batch_id: int

    def key(self) -> bytes:
        return self.application_id.encode()

    def value(self) -> bytes:
        entry = {"application": self.application_id, "run": self.run, "batch": self.batch_id}
        return json.dumps(entry, separators=(",", ":")).encode()

    @classmethod
    def parse(cls, value: bytes | None) -> CommitMarker | None:
        """The marker a record's value holds, or None when it holds none."""
        try:
            entry = json.loads(value) if value is not None else None
        except (json.JSONDecodeError, UnicodeDecodeError):
            return None
        if not isinstance(entry, dict) or not isinstance(entry.get("batch"), int):
            return None
        return cls(str(entry.get("application")), entry.get("run"), entry["batch"])


class KafkaBatchWriter:
    """One application's batches into Kafka topics, each batch in one transaction with
    its commit marker (see the module's docstring).

    ``write(topic, records)`` stages records (Arrow: ``key``, ``value`` bytes,
    ``timestamp`` ms); ``commit(batch_id, positions)`` writes everything staged since
    the last commit and the batch's marker in one transaction, or nothing when the
    batch's marker is already there (it returns False then); then it commits the
    batch's consumed positions to the consumer group :attr:`group_id` (the application
    id).
    """

    def __init__(self, store: KafkaStore, application_id: str, run: str | None):
        self.store = store
        self.application_id = application_id
        self.run = run
        self.topic = commits_topic(application_id)
        self.transactional_id = transactional_id(application_id)
        self.group_id = application_id  # as Kafka Streams' application.id
        self._group: Consumer | None = None  # commits the positions, never joins the group
        self._commits = 0  # position commits not yet answered
        self._staged: list[tuple[str, pa.Table]] = []
        self._written: set[str] = set()  # the topics of the last committed transaction
        self._known: set[str] = set()  # topics seen to exist
        self._producer: Producer | None = None
        self._last: int | None = None  # the run's last committed batch, known once started
        self._failed: tuple[str, KafkaError] | None = None  # first failed delivery
        self._commit_timeout = self.store.timeout

    def __repr__(self) -> str:
        return f"KafkaBatchWriter({self.application_id!r}, transactional id {self.transactional_id!r})"

    def create_topic(self) -> None:
        """Create the commit markers' topic (compacted, one partition) when it is missing."""
        if self.topic in self.store.list_topics():
            return
        try:
            self.store.create_topic(TopicConfig(self.topic, partitions=1, cleanup_policy="compact"))
        except TopicExistsError:
            pass  # created meanwhile by another instance

    # ---------------------------------------------------------------- writing
    def write(self, topic: str, records: pa.Table) -> None:
        """Stage a batch's records for ``topic`` until :meth:`commit`.

        Kafka stores no timestamp below 1 ms (librdkafka reads 0 as "now"), so such a
        record is refused here, before anything is written."""
        if records.num_rows and "timestamp" in records.column_names:
            low = pc.min(records.column("timestamp")).as_py()
            if low is not None and low < 1:
                raise KafkaStoreError(
                    f"Topic '{topic}': a record of application '{self.application_id}' has timestamp {low}, "
                    "which Kafka cannot store (timestamps are >= 1 ms; librdkafka reads 0 as 'now')"
                )
        self._staged.append((topic, records))

    def commit(self, batch_id: int, positions: Mapping[tuple[str, int], int] | None = None) -> bool:
        """Write the staged records and the batch's marker in one transaction; False (and
        nothing written) when this run already committed the batch. ``positions`` (source
        topic and partition to the offset after the batch's end there) are committed to
        the consumer group :attr:`group_id` after the transaction (also for a batch
        already committed: a crash may have come between the two).

        Raises :class:`ProducerFencedError` when a newer instance fenced this one, and
        :class:`~tablestream.storage.kafka.KafkaStoreError` when the transaction fails
        (it is aborted, or its outcome is left to the next producer to find out)."""
        staged, self._staged = self._staged, []
        producer = self._started()
        if self._last is not None and batch_id <= self._last:
            self._report(positions)
            return False
        self._check_topics({topic for topic, _ in staged}, batch_id)
        try:
            producer.begin_transaction()
            for topic, records in staged:
                self._produce(producer, topic, records)
            marker = CommitMarker(self.application_id, self.run, batch_id)
            self._produce_one(producer, self.topic, marker.key(), marker.value(), 0)
            # The commit first delivers every record: a large batch may take a while.
            producer.commit_transaction(self._commit_timeout)
        except KafkaException as exc:
            producer = None  # see _drop
            self._fail(exc, batch_id)
        except BaseException:
            producer = None
            self._drop()
            raise
        self._last = batch_id
        self._written = {topic for topic, records in staged if records.num_rows} | {self.topic}
        self._report(positions)
        return True

    def wait_visible(self, timeout: float = 10.0) -> bool:
        """Wait until ``read_committed`` consumers can read the last committed batch: the
        broker writes a transaction's commit markers into its partitions just after the
        commit returns, and until then those consumers stop before its records. True
        when every partition written is stable (nothing else holds a transaction open
        in the application's topics), False after ``timeout`` seconds. The batch's
        positions are committed to the consumer group by then, too (or failed)."""
        deadline = time.monotonic() + timeout
        while self._group is not None and self._commits and time.monotonic() < deadline:
            self._group.poll(0.05)  # the positions too
        pending = sorted(self._written)
        while pending:
            topic = pending[0]
            if self.store.end_offsets(topic, committed=True) == self.store.end_offsets(topic):
                pending.pop(0)
            elif time.monotonic() > deadline:
                return False
            else:
                time.sleep(0.02)
        return True

    def discard(self) -> None:
        """Forget what was staged (the batch failed before its commit)."""
        self._staged = []

    def last_committed(self) -> int | None:
        """The last batch of this run committed to Kafka (None before the first), as the
        markers say once every older producer is fenced."""
        self._started()
        return self._last

    def close(self) -> None:
        """Drop the producer (an open transaction is aborted by the next producer)."""
        self.discard()
        self._drop()
        group, self._group = self._group, None
        if group is not None:
            group.close()

    # ---------------------------------------------------------------- internals
    def _started(self) -> Producer:
        if self._producer is not None:
            return self._producer
        settings = {
            "transactional.id": self.transactional_id,
            # Java's partitioner (murmur2), as Kafka Streams' outputs; librdkafka's default differs.
            "partitioner": "murmur2_random",
            "delivery.report.only.error": True,
            "on_delivery": self._delivered,
        }
        given = self.store.options.librdkafka().get("transaction.timeout.ms")
        if given is None:
            settings["transaction.timeout.ms"] = TRANSACTION_TIMEOUT_MS
        producer = self.store.client(Producer, settings)  # refuses a bad setting in one line
        self._commit_timeout = max(self.store.timeout, int(given or TRANSACTION_TIMEOUT_MS) / 1000)
        try:
            producer.init_transactions(self.store.timeout)
        except KafkaException as exc:
            error = self._error(exc, "the transactional producer could not start")
            producer = None  # see _drop
            raise error from None
        try:
            marker = self._last_marker()
        except BaseException:
            producer = None  # see _drop
            raise
        self._producer = producer
        self._last = marker.batch_id if marker is not None and marker.run == self.run else None
        return producer

    def _report(self, positions: Mapping[tuple[str, int], int] | None) -> None:
        """Commit a committed batch's positions to the application's consumer group,
        without waiting: a failure is logged when it is answered (the next batch commits
        newer positions)."""
        if not positions:
            return
        if self._group is None:
            self._group = self.store.client(
                Consumer, {"group.id": self.group_id, "enable.auto.commit": False, "on_commit": self._answered}
            )
        self._group.poll(0)  # serve the answers to earlier commits
        offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(positions.items())]
        try:
            self._group.commit(offsets=offsets, asynchronous=True)
            self._commits += 1
        except KafkaException as exc:
            _LOG.warning("Could not commit the positions of consumer group '%s': %s", self.group_id, self.store.say(exc))

    def _answered(self, err, partitions) -> None:
        self._commits = max(0, self._commits - 1)
        if err is not None:
            _LOG.warning(
                "Could not commit the positions of consumer group '%s' to Kafka at %s: %s",
                self.group_id, self.store.bootstrap_servers, self.store.say(str(err)),
            )

    def _check_topics(self, topics: set[str], batch_id: int) -> None:
        """Every topic the batch writes exists (librdkafka would hold a record for a
        missing topic until the transaction times out)."""
        unknown = topics - self._known
        if unknown:
            self._known |= unknown & set(self.store.list_topics())
        missing = sorted(topics - self._known)
        if missing:
            raise KafkaStoreError(
                f"Batch {batch_id} cannot write to topic '{missing[0]}': it does not exist "
                "(nothing of the batch is written)"
            )

    def _last_marker(self) -> CommitMarker | None:
        record = self.store.last_record(self.topic)
        return None if record is None else CommitMarker.parse(record.value)

    def _delivered(self, err, msg) -> None:
        if err is not None and self._failed is None:
            self._failed = (msg.topic(), err)

    def _produce(self, producer: Producer, topic: str, records: pa.Table) -> None:
        keys = records.column("key").to_pylist()
        values = records.column("value").to_pylist()
        stamps = (
            records.column("timestamp").to_pylist()
            if "timestamp" in records.column_names
            else [None] * records.num_rows
        )
        for key, value, stamp in zip(keys, values, stamps, strict=True):
            self._produce_one(producer, topic, key, value, stamp or 0)

    @staticmethod
    def _produce_one(producer: Producer, topic: str, key, value, timestamp: int) -> None:
        while True:
            try:
                producer.produce(topic, value=value, key=key, timestamp=timestamp)
                return
            except BufferError:  # the local queue is full: serve delivery reports, then retry
                producer.poll(0.1)

    def _fail(self, exc: KafkaException, batch_id: int) -> None:
        """Abort what can be aborted, drop the producer, raise one line."""
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        producer = self._producer
        if err is not None and err.txn_requires_abort() and producer is not None:
            try:
                producer.abort_transaction(self.store.timeout)
            except KafkaException:
                pass  # the next producer aborts it when it starts
        producer = None  # see _drop
        failed, self._failed = self._failed, None
        self._drop()
        if failed is not None and not (err is not None and err.code() in _FENCED_CODES):
            topic, cause = failed
            if cause.code() in _UNREACHABLE_CODES:
                raise self.store.unreachable(cause.str()) from None
            raise KafkaStoreError(
                f"Batch {batch_id} could not write to topic '{topic}': {self.store.say(cause.str())} "
                "(nothing of the batch is committed)"
            ) from None
        raise self._error(exc, f"batch {batch_id} was not committed") from None

    def _error(self, exc: KafkaException, what: str) -> KafkaStoreError:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if err is not None and err.code() in _FENCED_CODES:
            return ProducerFencedError(
                "Fenced: a newer instance of the application started its producer "
                f"(transactional id '{self.transactional_id}'), so this one stops; {what}"
            )
        reason = err.str() if err is not None else str(exc)
        if err is not None and err.code() in _UNREACHABLE_CODES:
            return self.store.unreachable(reason)
        return KafkaStoreError(f"{what[0].upper()}{what[1:]}: {self.store.say(reason)}")

    def _drop(self) -> None:
        """Purge and free the producer, here and now. No frame of an exception's
        traceback may keep it: a producer freed later by Python's garbage collector,
        which may run on one of librdkafka's threads (in a log callback), aborts the
        process there (librdkafka refuses to destroy a client from its own thread)."""
        producer, self._producer = self._producer, None
        self._last = None
        if producer is not None:
            producer.purge()

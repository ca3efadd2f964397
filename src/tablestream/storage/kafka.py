"""The Topic API (:class:`~tablestream.storage.topic.TopicStore`) on a real Kafka cluster.

Admin, produce and consume go through confluent-kafka (librdkafka); Spark reads
topics through its own Kafka connector (:meth:`KafkaStore.read_stream`,
:meth:`KafkaStore.read_batch`) with normalized columns.

>>> store = KafkaStore("127.0.0.1:9092")                              # doctest: +SKIP
>>> store.create_topic(TopicConfig("orders", partitions=3))           # doctest: +SKIP
>>> store.produce("orders", [Record(b"k1", b'{"qty": 2}', timestamp=1700000000000)])  # doctest: +SKIP
[Record(key=b'k1', value=b'{"qty": 2}', timestamp=1700000000000, partition=1, offset=0, headers=())]

Differences from the embedded store, all Kafka's own behaviour:

* ``produce`` is not atomic: when a record fails, records already delivered stay.
* Key and value formats are not stored in Kafka: ``topic_config`` reports the
  :class:`TopicConfig` defaults (``KAFKA`` keys, ``JSON`` values).
* librdkafka reads timestamp 0 as "now", so records must carry a timestamp >= 1 (or none).
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec, ResourceType

from ..errors import (
    InvalidPartitionError,
    InvalidTopicError,
    TablestreamError,
    TopicExistsError,
    UnknownTopicError,
)
from .kafka_options import KafkaOptions
from .topic import (
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_RETENTION_MS,
    RECORD_COLUMNS,
    Record,
    TopicConfig,
    TopicDescription,
    validate_topic_name,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The columns (and their Spark SQL types) of :meth:`KafkaStore.read_stream` / ``read_batch``.
KAFKA_COLUMNS: tuple[tuple[str, str], ...] = RECORD_COLUMNS

_LIBRDKAFKA_LOG = logging.getLogger(__name__ + ".librdkafka")

#: Seconds without a record after which :meth:`KafkaStore.follow` gives up on reading the
#: records a topic held when it started (its ``timeout`` applies once they are read).
CATCH_UP_PATIENCE = 30.0
_TOPIC_CONFIG_KEYS = ("cleanup.policy", "retention.ms", "delete.retention.ms")
# librdkafka's local error codes are spelled with a leading underscore.
_PARTITION_EOF = KafkaError._PARTITION_EOF  # noqa: SLF001
_NOT_READY_CODES = (
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,
)
_UNKNOWN_TOPIC_CODES = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)  # noqa: SLF001
_AFTER = re.compile(r" \(after \d+ms in state \w+\)$")
# Kafka's Java client (Spark's source) gave up waiting for the cluster, or Spark's
# consumer did (its poll, kafkaConsumer.pollTimeoutMs).
_JAVA_TIMEOUT = re.compile(
    r"org\.apache\.kafka\.common\.errors\.TimeoutException: ([^\n]+)"
    r"|java\.util\.concurrent\.TimeoutException: (Cannot fetch record [^\n]+)"
)
_LOGIN_CODES = (
    KafkaError._AUTHENTICATION,  # noqa: SLF001
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._SSL,  # noqa: SLF001
)


class KafkaStoreError(TablestreamError):
    """Kafka refused or failed a request (delivery failure, timeout, broker error)."""


def _kafka_error(exc: BaseException) -> KafkaError | None:
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        return exc.args[0]
    return None


class KafkaStore:
    """Topics on a Kafka cluster, with the same API and errors as the embedded store.

    ``bootstrap_servers`` is a Kafka bootstrap list (``"host:port,host:port"``);
    ``kafka_options`` are Kafka client settings by Kafka's names (security protocol,
    SASL, SSL, any other), given to Spark's Kafka source (as ``kafka.<name>``) and to
    tablestream's own clients, translated where the two clients spell them differently
    (:class:`~tablestream.storage.kafka_options.KafkaOptions`); their secret values
    appear in no repr and no error. ``client_config`` adds librdkafka settings to
    tablestream's clients only. ``timeout`` bounds each admin request and each produce
    (seconds).

    >>> store = KafkaStore("127.0.0.1:9092")          # doctest: +SKIP
    >>> store.list_topics()                           # doctest: +SKIP
    ['orders']
    >>> KafkaStore("broker:9093", kafka_options={     # doctest: +SKIP
    ...     "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
    ...     "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
    ...                         'required username="app" password="...";'})
    KafkaStore('broker:9093', security.protocol='SASL_SSL', sasl.mechanism='PLAIN', sasl.jaas.config=<hidden>)
    """

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        kafka_options: KafkaOptions | Mapping[str, Any] | None = None,
        client_config: Mapping[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.timeout = timeout
        self.options = kafka_options if isinstance(kafka_options, KafkaOptions) else KafkaOptions(kafka_options)
        # librdkafka's own log lines (reconnects, retries) go to Python logging, not stderr.
        self._base = {
            "bootstrap.servers": bootstrap_servers,
            "logger": _LIBRDKAFKA_LOG,
            "error_cb": self._client_error,
            **self.options.librdkafka(),
            **dict(client_config or {}),
        }
        self._login_error: str | None = None  # a refused login, as a client last reported it
        self._admin = self.client(AdminClient)
        self._producer: Producer | None = None

    def __repr__(self) -> str:
        shown = repr(self.options)[len("KafkaOptions(") : -1]
        return f"KafkaStore({self.bootstrap_servers!r}{', ' + shown if shown else ''})"

    def client(self, kind, extra: Mapping[str, Any] | None = None):
        """A confluent-kafka client (``Producer``, ``Consumer``, ``AdminClient``) with the
        store's settings and ``extra``; settings librdkafka refuses raise one line, with
        no secret value in it."""
        try:
            return kind({**self._base, **dict(extra or {})})
        except (KafkaException, ValueError, TypeError) as exc:
            err = _kafka_error(exc)
            raise KafkaStoreError(
                "Kafka client settings refused by tablestream's Kafka client (librdkafka): "
                f"{self.say(err.str() if err is not None else exc)}"
            ) from None

    def say(self, exc: BaseException | str) -> str:
        """An error's text, one line, with every secret setting's value hidden."""
        text = exc if isinstance(exc, str) else str(exc)
        return self.options.redact(" ".join(text.split()))

    def unreachable(self, detail: str) -> KafkaStoreError:
        """The error for a cluster that did not answer within a client's timeout: one
        line naming the cluster, the client's own words (secrets hidden) and what to do.

        >>> str(KafkaStore("broker:9093").unreachable("Local: Timed out"))   # doctest: +SKIP
        'Kafka at broker:9093 did not answer in time (Local: Timed out): start the application again once the cluster answers; it goes on from its last committed batch'
        """
        return KafkaStoreError(
            f"Kafka at {self.bootstrap_servers} did not answer in time ({self.say(detail)}): start the "
            "application again once the cluster answers; it goes on from its last committed batch"
        )

    def client_timeout(self, error: BaseException) -> KafkaStoreError | None:
        """:meth:`unreachable` for a failure of Spark's Kafka client (Kafka's Java client)
        that timed out waiting for the cluster, found in the failure's text or the text
        of its causes (Spark wraps it in its own exceptions); None for any other failure."""
        seen: set[int] = set()
        while error is not None and id(error) not in seen:
            seen.add(id(error))
            found = _JAVA_TIMEOUT.search(str(error))
            if found is not None:
                return self.unreachable((found.group(1) or found.group(2)).strip())
            error = error.__cause__ or error.__context__
        return None

    # -- topics ---------------------------------------------------------------------
    def create_topic(self, config: TopicConfig) -> TopicConfig:
        """Create a topic (replication factor 1) with its partitions, cleanup policy and
        retention settings; return ``config`` once every partition has a leader.

        Raises :class:`TopicExistsError` or :class:`InvalidTopicError`.

        >>> store.create_topic(TopicConfig("users", partitions=3, cleanup_policy="compact"))  # doctest: +SKIP
        TopicConfig(name='users', partitions=3, cleanup_policy='compact', ...)
        """
        validate_topic_name(config.name)
        topic = NewTopic(
            config.name,
            num_partitions=config.partitions,
            replication_factor=1,
            config={
                "cleanup.policy": config.cleanup_policy,
                "retention.ms": str(config.retention_ms),
                "delete.retention.ms": str(config.delete_retention_ms),
            },
        )
        future = self._admin.create_topics(
            [topic], operation_timeout=self.timeout, request_timeout=self.timeout
        )[config.name]
        try:
            future.result()
        except KafkaException as exc:
            err = _kafka_error(exc)
            code = err.code() if err is not None else None
            if code == KafkaError.TOPIC_ALREADY_EXISTS:
                raise TopicExistsError(config.name) from None
            if code == KafkaError.TOPIC_EXCEPTION:
                raise InvalidTopicError(f"Topic name '{config.name}' is illegal: {err.str()}") from None
            if code in (KafkaError.INVALID_CONFIG, KafkaError.INVALID_PARTITIONS):
                raise InvalidTopicError(f"Topic '{config.name}': {err.str()}") from None
            raise KafkaStoreError(f"Could not create topic '{config.name}': {self.say(exc)}") from None
        self._wait_for(config.name, present=True)
        self._watermarks(config.name, config.partitions)  # every leader answers
        return config

    def list_topics(self) -> list[str]:
        """Names of the cluster's topics, sorted, without internal topics (``__*``)."""
        metadata = self._metadata()
        return sorted(name for name in metadata.topics if not name.startswith("__"))

    def topic_config(self, name: str) -> TopicConfig:
        """A topic's partitions, cleanup policy and retention, read back from the broker.

        Kafka does not store key/value formats: they are the :class:`TopicConfig`
        defaults. A ``compact,delete`` policy is reported as ``compact``.
        """
        partitions = self._partition_count(name)
        resource = ConfigResource(ResourceType.TOPIC, name)
        try:
            entries = self._admin.describe_configs([resource], request_timeout=self.timeout)[
                resource
            ].result()
        except KafkaException as exc:
            err = _kafka_error(exc)
            if err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise UnknownTopicError(name) from None
            raise KafkaStoreError(f"Could not read the configuration of topic '{name}': {self.say(exc)}") from None
        values = {key: entries[key].value for key in _TOPIC_CONFIG_KEYS if key in entries}
        policies = {p.strip() for p in (values.get("cleanup.policy") or "delete").split(",")}
        return TopicConfig(
            name,
            partitions=partitions,
            cleanup_policy="compact" if "compact" in policies else "delete",
            retention_ms=int(values.get("retention.ms", DEFAULT_RETENTION_MS)),
            delete_retention_ms=int(values.get("delete.retention.ms", DEFAULT_DELETE_RETENTION_MS)),
        )

    def end_offsets(self, name: str, *, committed: bool = False) -> dict[int, int]:
        """Each partition's end offset (high watermark): the offset the next record gets.
        With ``committed``, the last stable offsets: where a ``read_committed`` consumer
        stops, before the first record of a transaction still open (or whose commit
        markers the broker is still writing)."""
        return self._watermarks(name, self._partition_count(name), committed=committed)[1]

    def describe_topic(self, name: str) -> TopicDescription:
        """The config plus, per partition, end offset (high watermark), start offset (low
        watermark) and record count (high - low; on compacted topics an upper bound)."""
        config = self.topic_config(name)
        low, high = self._watermarks(name, config.partitions)
        return TopicDescription(
            config=config,
            end_offsets=high,
            start_offsets=low,
            record_counts={p: high[p] - low[p] for p in high},
        )

    def delete_topic(self, name: str) -> None:
        """Delete a topic and wait until the cluster no longer lists it.

        Raises :class:`UnknownTopicError` when there is no such topic.
        """
        self._partition_count(name)  # UnknownTopicError
        future = self._admin.delete_topics(
            [name], operation_timeout=self.timeout, request_timeout=self.timeout
        )[name]
        try:
            future.result()
        except KafkaException as exc:
            err = _kafka_error(exc)
            if err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise UnknownTopicError(name) from None
            raise KafkaStoreError(f"Could not delete topic '{name}': {self.say(exc)}") from None
        self._wait_for(name, present=False)
        # A topic of the same name may come back with another partition count: drop the
        # producer's cached metadata with the producer.
        self._close_producer()

    # -- records --------------------------------------------------------------------
    def produce(self, name: str, records: Sequence[Record]) -> list[Record]:
        """Write records; return them, in input order, with partition, offset and timestamp
        taken from the broker's delivery reports.

        A record without a partition goes where Kafka's Java producer would put it
        (murmur2 of the key; keyless records are spread). An explicit partition is
        used as is. ``timestamp=None`` means "now"; headers are kept.

        Raises :class:`UnknownTopicError`, :class:`InvalidPartitionError` (before
        anything is written) and :class:`KafkaStoreError` when a delivery fails.

        >>> store.produce("users", [Record(b"alice", b'{"age": 30}'), Record(b"bob", None)])  # doctest: +SKIP
        [Record(key=b'alice', ..., partition=2, offset=0, ...), Record(key=b'bob', value=None, ...)]
        """
        partitions = self._partition_count(name)
        for i, record in enumerate(records):
            if record.partition is not None and not 0 <= record.partition < partitions:
                raise InvalidPartitionError(name, record.partition, partitions)
            if record.timestamp is not None and record.timestamp < 1:
                raise KafkaStoreError(
                    f"Record {i} for topic '{name}': timestamp {record.timestamp} cannot be written "
                    "to Kafka (it must be >= 1 ms; librdkafka reads 0 as 'now')"
                )
        if not records:
            return []
        producer = self._get_producer()
        reports: list[tuple[KafkaError | None, int, int, int | None] | None] = [None] * len(records)

        def on_delivery(index: int):
            def report(err, msg) -> None:
                ts_type, ts = msg.timestamp()
                reports[index] = (
                    err,
                    msg.partition(),
                    msg.offset(),
                    None if ts_type == TIMESTAMP_NOT_AVAILABLE else ts,
                )

            return report

        for i, record in enumerate(records):
            kwargs: dict[str, Any] = {"key": record.key, "value": record.value, "on_delivery": on_delivery(i)}
            if record.partition is not None:
                kwargs["partition"] = record.partition
            if record.timestamp is not None:
                kwargs["timestamp"] = record.timestamp
            if record.headers:
                kwargs["headers"] = [(k, v) for k, v in record.headers]
            while True:
                try:
                    producer.produce(name, **kwargs)
                    break
                except BufferError:  # local queue full: serve delivery reports, then retry
                    producer.poll(0.1)
            producer.poll(0)
        remaining = producer.flush(self.timeout)
        if remaining:
            raise KafkaStoreError(
                f"Timed out after {self.timeout} s writing to topic '{name}': "
                f"{remaining} of {len(records)} records not acknowledged"
            )
        out: list[Record] = []
        for i, (record, rep) in enumerate(zip(records, reports, strict=True)):
            if rep is None:
                raise KafkaStoreError(f"Record {i} for topic '{name}' got no delivery report")
            err, partition, offset, ts = rep
            if err is not None:
                if err.code() in _UNKNOWN_TOPIC_CODES:
                    raise UnknownTopicError(name)
                raise KafkaStoreError(f"Could not write record {i} to topic '{name}': {self.say(err.str())}")
            out.append(
                Record(
                    key=record.key,
                    value=record.value,
                    timestamp=ts if ts is not None else record.timestamp,
                    partition=partition,
                    offset=offset,
                    headers=tuple(record.headers),
                )
            )
        return out

    def consume(
        self,
        name: str,
        *,
        max_records: int | None = None,
        timeout: float = 10.0,
        read_committed: bool = False,
    ) -> list[Record]:
        """Read a topic from the beginning up to each partition's end offset at the time of
        the call, ordered by partition then offset.

        ``max_records`` keeps the first records in that order. Reading stops at
        ``timeout`` seconds; what was read by then is returned. Records of open or
        aborted transactions are read too (``read_uncommitted``, as Spark does) unless
        ``read_committed``: then only records of committed transactions (and records
        written without one), up to the last stable offset of each partition.

        >>> [(r.partition, r.offset, r.key) for r in store.consume("users")]  # doctest: +SKIP
        [(0, 0, b'bob'), (2, 0, b'alice')]
        """
        if max_records is not None and max_records <= 0:
            self._partition_count(name)
            return []
        deadline = time.monotonic() + timeout
        partitions = self._partition_count(name)
        low, high = self._watermarks(name, partitions, committed=read_committed)
        pending = {p for p in range(partitions) if high[p] > low[p]}
        collected: dict[int, list[Record]] = {p: [] for p in range(partitions)}
        if pending:
            consumer = self.client(
                Consumer,
                {
                    "group.id": f"tablestream-consume-{uuid.uuid4().hex}",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                    "fetch.wait.max.ms": 100,
                },
            )
            try:
                consumer.assign([TopicPartition(name, p, low[p]) for p in sorted(pending)])
                while pending and not self._enough(collected, pending, max_records):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        break
                    # poll() returns at the first record; consume(timeout=0) drains what is queued
                    # (consume() with a timeout would wait for all 1000 records).
                    first = consumer.poll(min(left, 0.5))
                    batch = [] if first is None else [first, *consumer.consume(1000, timeout=0)]
                    for msg in batch:
                        p = msg.partition()
                        err = msg.error()
                        if err is not None:
                            if err.code() == _PARTITION_EOF:
                                if msg.offset() >= high.get(p, 0):
                                    pending.discard(p)
                                continue
                            if err.code() in _UNKNOWN_TOPIC_CODES:
                                raise UnknownTopicError(name)
                            if err.fatal():
                                raise KafkaStoreError(f"Could not read topic '{name}': {self.say(err.str())}")
                            continue  # transient (reconnects are retried by librdkafka)
                        if p not in pending or msg.offset() >= high[p]:
                            continue
                        collected[p].append(_record(msg))
                        if msg.offset() + 1 >= high[p] or (
                            max_records is not None and len(collected[p]) >= max_records
                        ):
                            pending.discard(p)
            finally:
                consumer.close()
        out = [record for p in range(partitions) for record in collected[p]]
        return out if max_records is None else out[:max_records]

    @staticmethod
    def _enough(collected: dict[int, list[Record]], pending: set[int], max_records: int | None) -> bool:
        """True when the first ``max_records`` in (partition, offset) order are all read."""
        if max_records is None:
            return False
        total = 0
        for p in sorted(collected):
            if p in pending:
                return False
            total += len(collected[p])
            if total >= max_records:
                return True
        return False

    def last_record(self, name: str, partition: int = 0, *, timeout: float | None = None) -> Record | None:
        """The last record of a partition that a ``read_committed`` consumer sees (None
        when there is none): records of open or aborted transactions are skipped.

        It is read backwards in growing windows from the last stable offset, so a long
        partition whose last records are committed costs one short read.

        >>> store.last_record("revenue-batch-commits")                  # doctest: +SKIP
        Record(key=b'revenue', value=b'{"application":"revenue","run":"5f0c...","batch":41}', ...)
        """
        partitions = self._partition_count(name)
        if not 0 <= partition < partitions:
            raise InvalidPartitionError(name, partition, partitions)
        low, stable = self._watermarks(name, partitions, committed=True)
        first, end = low[partition], stable[partition]
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        consumer = self.client(
            Consumer,
            {
                "group.id": f"tablestream-last-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": True,
                "isolation.level": "read_committed",
                "fetch.wait.max.ms": 100,
            },
        )
        try:
            window = 64
            while end > first:
                start = max(first, end - window)
                found = self._last_in(consumer, name, partition, start, end, deadline)
                if found is not None or start == first:
                    return found
                window *= 8
            return None
        finally:
            consumer.close()

    def _last_in(
        self, consumer: Consumer, name: str, partition: int, start: int, end: int, deadline: float
    ) -> Record | None:
        """The last record a committed read finds in ``[start, end)``."""
        consumer.assign([TopicPartition(name, partition, start)])
        last = None
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaStoreError(
                    f"Timed out after {self.timeout} s reading partition {partition} of topic '{name}'"
                )
            msg = consumer.poll(min(left, 0.5))
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == _PARTITION_EOF and msg.offset() >= end:
                    return last
                if err.code() in _UNKNOWN_TOPIC_CODES:
                    raise UnknownTopicError(name)
                if err.fatal():
                    raise KafkaStoreError(f"Could not read topic '{name}': {self.say(err.str())}")
                continue
            if msg.offset() >= end:
                return last
            last = _record(msg)
            if msg.offset() + 1 >= end:
                return last

    # -- Spark ----------------------------------------------------------------------
    def follow(
        self,
        name: str,
        *,
        from_beginning: bool = True,
        timeout: float | None = None,
        read_committed: bool = False,
    ) -> Iterator[list[Record]]:
        """Yield chunks of records as they arrive (each ordered by partition then offset),
        from the beginning or from the current end offsets; stop once no record has
        arrived for ``timeout`` seconds (``None``: never) after the records the topic held
        at the start have been read (until then a pause ends it only after
        :data:`CATCH_UP_PATIENCE` seconds, so a slow first fetch never cuts them off).
        ``read_committed``: records of committed transactions only, as :meth:`consume`."""
        partitions = self._partition_count(name)
        low, high = self._watermarks(name, partitions, committed=read_committed)
        start = low if from_beginning else high
        consumer = self.client(
            Consumer,
            {
                "group.id": f"tablestream-follow-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "isolation.level": "read_committed" if read_committed else "read_uncommitted",
                "fetch.wait.max.ms": 100,
            },
        )
        try:
            assigned = [TopicPartition(name, p, start[p]) for p in range(partitions)]
            consumer.assign(assigned)
            quiet_since = time.monotonic()
            caught_up = False
            while True:
                first = consumer.poll(0.2)
                batch = [] if first is None else [first, *consumer.consume(1000, timeout=0)]
                records = []
                for msg in batch:
                    err = msg.error()
                    if err is None:
                        records.append(_record(msg))
                    elif err.code() in _UNKNOWN_TOPIC_CODES:
                        raise UnknownTopicError(name)
                    elif err.fatal():
                        raise KafkaStoreError(f"Could not read topic '{name}': {self.say(err.str())}")
                if records:
                    records.sort(key=lambda r: (r.partition, r.offset))
                    yield records
                    quiet_since = time.monotonic()
                elif timeout is not None:
                    # Positions count the transaction markers no consumer is given, so a
                    # partition read to its end reaches the end offset known at the start.
                    caught_up = caught_up or all(
                        tp.offset >= high[tp.partition] or start[tp.partition] >= high[tp.partition]
                        for tp in consumer.position(assigned)
                    )
                    if time.monotonic() - quiet_since >= (timeout if caught_up else max(timeout, CATCH_UP_PATIENCE)):
                        return
        finally:
            consumer.close()

    def read_stream(
        self,
        spark: SparkSession,
        topics: list[str],
        starting_offsets: str = "earliest",
        *,
        options: Mapping[str, str] | None = None,
    ) -> DataFrame:
        """A streaming DataFrame over ``topics`` through Spark's Kafka connector, with the
        columns of :data:`KAFKA_COLUMNS`: ``key``, ``value`` (binary), ``topic``,
        ``partition`` (int), ``offset`` (bigint), ``timestamp`` (bigint epoch ms) and
        ``headers`` (``array<struct<key:string,value:binary>>``, empty when absent).

        ``starting_offsets`` is ``"earliest"``, ``"latest"`` or Spark's JSON offsets;
        ``options`` adds or overrides Kafka source options (e.g. ``maxOffsetsPerTrigger``;
        ``kafka.fetch.max.wait.ms`` defaults to 50 here instead of Kafka's 500).

        >>> df = store.read_stream(spark, ["orders"])                  # doctest: +SKIP
        >>> q = (df.writeStream.format("memory").queryName("orders_rows")   # doctest: +SKIP
        ...      .trigger(availableNow=True).start())
        """
        reader = spark.readStream.format("kafka")
        settings = self._source_options(topics)
        settings["startingOffsets"] = starting_offsets
        settings.update(options or {})
        for key, value in settings.items():
            reader = reader.option(key, value)
        return normalize_kafka_columns(reader.load())

    def read_batch(
        self,
        spark: SparkSession,
        topics: list[str],
        *,
        options: Mapping[str, str] | None = None,
    ) -> DataFrame:
        """A batch DataFrame of every record now in ``topics`` (earliest to latest), with
        the same columns as :meth:`read_stream`.

        >>> store.read_batch(spark, ["orders"]).select("partition", "offset").collect()  # doctest: +SKIP
        [Row(partition=0, offset=0)]
        """
        reader = spark.read.format("kafka")
        settings = self._source_options(topics)
        settings.update({"startingOffsets": "earliest", "endingOffsets": "latest"})
        settings.update(options or {})
        for key, value in settings.items():
            reader = reader.option(key, value)
        return normalize_kafka_columns(reader.load())

    def _source_options(self, topics: list[str]) -> dict[str, str]:
        if isinstance(topics, str):
            topics = [topics]
        if not topics:
            raise InvalidTopicError("At least one topic must be given to read from Kafka")
        for topic in topics:
            validate_topic_name(topic)
        return {
            # Spark's consumer otherwise ends each partition's read with a fetch the broker
            # holds for fetch.max.wait.ms (500 ms): 1,000 records in 7 partitions took 3 s
            # instead of 0.7 s.
            "kafka.fetch.max.wait.ms": "50",
            **self.options.spark(),
            "kafka.bootstrap.servers": self.bootstrap_servers,
            "subscribe": ",".join(topics),
            "includeHeaders": "true",
        }

    # -- internals ------------------------------------------------------------------
    def _metadata(self, topic: str | None = None):
        try:
            if topic is None:
                return self._admin.list_topics(timeout=self.timeout)
            return self._admin.list_topics(topic=topic, timeout=self.timeout)
        except KafkaException as exc:
            err = _kafka_error(exc)
            reason = err.str() if err is not None else str(exc)
            self._admin.poll(0)  # serve the clients' error reports (_client_error)
            if self._login_error is not None:
                reason = self._login_error  # a refused login shows as a transport failure
            raise KafkaStoreError(
                f"Could not reach Kafka at {self.bootstrap_servers} within {self.timeout} s: {self.say(reason)}"
            ) from None

    def _client_error(self, err: KafkaError) -> None:
        """librdkafka's report of a client-wide error (its clients retry on their own)."""
        if err.code() in _LOGIN_CODES:
            self._login_error = _AFTER.sub("", err.str())
        _LIBRDKAFKA_LOG.info("%s", self.say(err.str()))

    def _partition_count(self, name: str) -> int:
        validate_topic_name(name)
        topic = self._metadata(name).topics.get(name)
        if topic is None or (topic.error is not None and topic.error.code() in _UNKNOWN_TOPIC_CODES):
            raise UnknownTopicError(name)
        if topic.error is not None:
            raise KafkaStoreError(f"Could not read the metadata of topic '{name}': {topic.error.str()}")
        return len(topic.partitions)

    def _watermarks(
        self, name: str, partitions: int, *, committed: bool = False
    ) -> tuple[dict[int, int], dict[int, int]]:
        """Low and high watermarks of every partition (with ``committed``, the last
        stable offsets instead of the high watermarks).

        Right after a topic is created, the broker can list a partition's leader a moment
        before that leader answers offset requests: transient errors are retried.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return self._list_offsets(name, partitions, OffsetSpec.earliest()), self._list_offsets(
                    name, partitions, OffsetSpec.latest(), committed=committed
                )
            except KafkaException as exc:
                err = _kafka_error(exc)
                if err is not None and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    raise UnknownTopicError(name) from None
                transient = err is not None and (err.retriable() or err.code() in _NOT_READY_CODES)
                if not transient or time.monotonic() > deadline:
                    raise KafkaStoreError(f"Could not read the offsets of topic '{name}': {self.say(exc)}") from None
                time.sleep(0.05)

    def _list_offsets(
        self, name: str, partitions: int, spec: OffsetSpec, *, committed: bool = False
    ) -> dict[int, int]:
        request = {TopicPartition(name, p): spec for p in range(partitions)}
        isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        futures = self._admin.list_offsets(request, isolation_level=isolation, request_timeout=self.timeout)
        return dict(sorted((tp.partition, future.result().offset) for tp, future in futures.items()))

    def _wait_for(self, name: str, *, present: bool) -> None:
        """Wait until the topic is (with a leader for every partition) or is not listed."""
        deadline = time.monotonic() + self.timeout
        while True:
            topic = self._metadata(name).topics.get(name)
            exists = topic is not None and topic.error is None
            if present and exists and topic.partitions and all(
                p.leader >= 0 and p.error is None for p in topic.partitions.values()
            ):
                return
            if not present and not exists:
                return
            if time.monotonic() > deadline:
                state = "appear" if present else "disappear"
                raise KafkaStoreError(f"Topic '{name}' did not {state} within {self.timeout} s")
            time.sleep(0.05)

    def _get_producer(self) -> Producer:
        if self._producer is None:
            self._producer = self.client(
                Producer,
                {
                    # Java's partitioner (murmur2); librdkafka's default (CRC32) disagrees.
                    "partitioner": "murmur2_random",
                    "enable.idempotence": True,
                    "message.timeout.ms": int(self.timeout * 1000),
                },
            )
        return self._producer

    def _close_producer(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.flush(self.timeout)

    def close(self) -> None:
        """Flush and drop the cached producer (the store stays usable)."""
        self._close_producer()


def _record(msg) -> Record:
    ts_type, ts = msg.timestamp()
    return Record(
        key=msg.key(),
        value=msg.value(),
        timestamp=None if ts_type == TIMESTAMP_NOT_AVAILABLE else ts,
        partition=msg.partition(),
        offset=msg.offset(),
        headers=tuple((k, v) for k, v in (msg.headers() or ())),
    )


def normalize_kafka_columns(df: DataFrame) -> DataFrame:
    """Select Spark's Kafka source columns as :data:`KAFKA_COLUMNS`: ``timestamp`` becomes
    epoch milliseconds (bigint) and a missing header array becomes an empty array.

    >>> normalize_kafka_columns(spark.read.format("kafka")...load()).dtypes  # doctest: +SKIP
    [('key', 'binary'), ('value', 'binary'), ('topic', 'string'), ('partition', 'int'), ...]
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, BinaryType, StringType, StructField, StructType

    header_type = ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    )
    headers = (
        F.coalesce(F.col("headers"), F.array().cast(header_type))
        if "headers" in df.columns
        else F.array().cast(header_type)
    )
    return df.select(
        F.col("key").cast("binary").alias("key"),
        F.col("value").cast("binary").alias("value"),
        F.col("topic").cast("string").alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("bigint").alias("offset"),
        F.unix_millis(F.col("timestamp")).alias("timestamp"),
        headers.alias("headers"),
    )

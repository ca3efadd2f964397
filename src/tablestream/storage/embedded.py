"""The embedded topic store: Kafka's log semantics on Delta tables in a directory: a
local one, or a durable location given as a URI (:mod:`tablestream.storage.location`:
deltalake opens it with its storage options, Spark by its URI).

Layout under the tablestream home (``$TABLESTREAM_HOME``, default ``./.tablestream``)::

    topics/<name>/topic.json   the topic's settings; the topic exists iff this file does
    topics/<name>/log/         a Delta table, partitioned by ``partition``, one row per record
    topics/<name>/.lock        held from reading the end offsets to the commit of an append

A topic whose ``topic.json`` or Delta log cannot be read is *damaged*: every method
that reads it raises :class:`~tablestream.errors.DamagedTopicError` naming the file,
and :meth:`EmbeddedStore.delete_topic` still removes it.

Offsets are contiguous per partition and never reused: the end offset of every partition
travels in each commit's ``userMetadata``, so compaction (which removes records, maybe the
last one of a partition) never moves it back. Appends from several processes serialize on
the topic's lock file, an ``fcntl`` lock: on a home that is not local (an object store,
HDFS) there is none, and one writer per topic is the deployment's job (Delta's commit
protocol, not this store, then decides between concurrent appends). Readers never take
the lock: every commit is atomic.

The store needs no JVM (delta-rs); Spark reads the topics as streams by Kafka's offsets
(:meth:`EmbeddedStore.read_stream`, :mod:`tablestream.storage.embedded_source`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake
from deltalake.exceptions import DeltaError, TableNotFoundError

from .. import config as ts_config
from ..errors import (
    DamagedTopicError,
    InvalidPartitionError,
    InvalidTopicError,
    TablestreamError,
    TopicExistsError,
    UnknownTopicError,
    first_line,
)
from .delta_files import DataFile, commit_data_files
from .location import Durable, Location, delta_options, local_path, remove_tree, write_atomic
from .partitioner import partitions_for_keys, spread_keyless
from .topic import Record, TopicConfig, TopicDescription, validate_topic_name

HEADER_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

LOG_SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", HEADER_TYPE),
    ]
)

_CHECKPOINT_EVERY = 100  # Delta versions between log checkpoints (keeps table loads fast)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class EmbeddedStore:
    """Topics as Delta tables under a home directory.

    >>> store = EmbeddedStore("/tmp/ts-doc")                          # doctest: +SKIP
    >>> store.create_topic(TopicConfig("orders", partitions=3))       # doctest: +SKIP
    >>> store.produce("orders", [Record(b"k1", b'{"qty": 2}')])       # doctest: +SKIP
    [Record(key=b'k1', value=b'{"qty": 2}', timestamp=..., partition=2, offset=0, headers=())]
    """

    def __init__(
        self, home: str | os.PathLike[str] | Location | None = None, *, storage_options: dict[str, str] | None = None
    ):
        self.home = ts_config.home(home, storage_options)
        self.topics_dir = self.home / "topics"
        self._options = delta_options(self.home)  # deltalake's storage options

    # ----------------------------------------------------------------- paths and locks
    def _topic_dir(self, name: str) -> Durable:
        validate_topic_name(name)
        return self.topics_dir / name

    def log_path(self, name: str) -> Durable:
        """The Delta table holding the topic's records."""
        self.topic_config(name)
        return self._topic_dir(name) / "log"

    @contextlib.contextmanager
    def _lock(self, at: Durable, *, shared: bool = False) -> Iterator[None]:
        path = local_path(at)
        if path is None:  # no lock on a home that is not local
            yield
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _visibility_lock(self, *, shared: bool) -> contextlib.AbstractContextManager[None]:
        """Held exclusively by :meth:`append_many` across its topics, and shared by
        :meth:`end_offsets_of` while it reads their ends."""
        return self._lock(self.topics_dir / ".visibility.lock", shared=shared)

    def _catalog_lock(self) -> contextlib.AbstractContextManager[None]:
        return self._lock(self.topics_dir / ".catalog.lock")

    def _topic_lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        return self._lock(self._topic_dir(name) / ".lock")

    @contextlib.contextmanager
    def _reading_log(self, name: str) -> Iterator[Durable]:
        """The topic's log path, for reads that report a damaged log as such (a missing
        or unreadable Delta log, a missing or unreadable data file)."""
        path = self._topic_dir(name) / "log"
        try:
            yield path
        except TableNotFoundError as err:
            raise DamagedTopicError(name, path, "no Delta log (_delta_log is missing or empty)") from err
        except (DeltaError, OSError, pa.ArrowException) as err:
            raise DamagedTopicError(name, path, f"unreadable Delta table: {first_line(err)}") from err

    def _open_log(self, name: str) -> DeltaTable:
        with self._reading_log(name) as path:
            return DeltaTable(str(path), storage_options=self._options)

    # ------------------------------------------------------------------------ catalog
    def create_topic(self, config: TopicConfig) -> TopicConfig:
        """Create a topic; raises :class:`TopicExistsError` if it exists."""
        topic_dir = self._topic_dir(config.name)
        with self._catalog_lock():
            if (topic_dir / "topic.json").exists():
                raise TopicExistsError(config.name)
            if topic_dir.exists():  # left over by a create that did not finish
                remove_tree(topic_dir)
            topic_dir.mkdir(parents=True)
            DeltaTable.create(
                str(topic_dir / "log"),
                schema=LOG_SCHEMA,
                partition_by=["partition"],
                name=config.name,
                commit_properties=_commit_properties({}, None),
                storage_options=self._options,
            )
            write_atomic(topic_dir / "topic.json", json.dumps(asdict(config), indent=2, sort_keys=True).encode())
        return config

    def list_topics(self) -> list[str]:
        """Every topic's name, damaged ones included (:meth:`check_topic` tells them)."""
        if isinstance(self.topics_dir, Path) and not self.topics_dir.exists():
            return []
        return sorted(p.parent.name for p in self.topics_dir.glob("*/topic.json"))

    def topic_config(self, name: str) -> TopicConfig:
        path = self._topic_dir(name) / "topic.json"
        try:
            text = path.read_text()
        except FileNotFoundError:
            raise UnknownTopicError(name) from None
        except (OSError, UnicodeDecodeError) as err:
            raise DamagedTopicError(name, path, f"unreadable: {first_line(err)}") from err
        try:
            settings = json.loads(text)
        except json.JSONDecodeError as err:
            raise DamagedTopicError(name, path, f"not valid JSON ({err.msg} at line {err.lineno} column {err.colno})") from err
        if not isinstance(settings, dict):
            raise DamagedTopicError(name, path, "not a JSON object of topic settings")
        unknown = sorted(set(settings) - set(TopicConfig.__dataclass_fields__))
        if unknown:
            raise DamagedTopicError(name, path, f"unknown setting '{unknown[0]}'")
        try:
            config = TopicConfig(**settings)
        except TypeError:  # a required setting missing
            raise DamagedTopicError(name, path, "the setting 'name' is missing") from None
        except TablestreamError as err:
            raise DamagedTopicError(name, path, str(err)) from err
        if config.name != name:
            raise DamagedTopicError(name, path, f"it names another topic, '{config.name}'")
        return config

    def check_topic(self, name: str) -> None:
        """Raise :class:`~tablestream.errors.DamagedTopicError` when the topic's settings
        or its Delta log cannot be read (:class:`~tablestream.errors.UnknownTopicError`
        when there is no such topic).

        >>> store.check_topic("orders")                               # doctest: +SKIP
        Traceback (most recent call last):
        tablestream.errors.DamagedTopicError: Topic 'orders' is damaged: /tmp/ts/topics/orders/log: no Delta log (_delta_log is missing or empty) (delete it with 'tablestream topics delete orders')
        """
        self.end_offsets(name)

    def delete_topic(self, name: str) -> None:
        """Delete a topic and its records, also a damaged one."""
        topic_dir = self._topic_dir(name)
        with self._catalog_lock():
            if not (topic_dir / "topic.json").is_file():
                raise UnknownTopicError(name)
            with self._topic_lock(name):
                (topic_dir / "topic.json").unlink()
            remove_tree(topic_dir)

    def describe_topic(self, name: str) -> TopicDescription:
        config = self.topic_config(name)
        with self._reading_log(name):
            table = self._open_log(name)
            end = _end_offsets(table, config)
            files = _add_actions(table)
        counts = dict.fromkeys(range(config.partitions), 0)
        starts = dict(end)
        if files.num_rows:
            for part, n, low in zip(
                files.column("partition.partition").to_pylist(),
                files.column("num_records").to_pylist(),
                files.column("min.offset").to_pylist(),
                strict=True,
            ):
                counts[int(part)] += n
                if n:
                    starts[int(part)] = min(starts[int(part)], low)
        return TopicDescription(config, end, starts, counts)

    def end_offsets(self, name: str) -> dict[int, int]:
        config = self.topic_config(name)
        with self._reading_log(name):
            return _end_offsets(self._open_log(name), config)

    def end_offsets_of(self, names: Sequence[str]) -> dict[str, dict[int, int]]:
        """Each topic's end offsets, read together: records that :meth:`append_many`
        writes to several of them are in all of their ends or in none (on a local home;
        elsewhere each topic's end is read as :meth:`end_offsets` reads it)."""
        with self._visibility_lock(shared=True):
            return {name: self.end_offsets(name) for name in names}

    # ------------------------------------------------------------------------- append
    def produce(self, name: str, records: Sequence[Record]) -> list[Record]:
        """Append records atomically (all or none); returns them with partition, offset
        and timestamp assigned, in input order."""
        batch = pa.table(
            {
                "key": pa.array([r.key for r in records], pa.binary()),
                "value": pa.array([r.value for r in records], pa.binary()),
                "timestamp": pa.array([r.timestamp for r in records], pa.int64()),
                "partition": pa.array([r.partition for r in records], pa.int32()),
                "headers": pa.array(
                    [[{"key": k, "value": v} for k, v in r.headers] for r in records], HEADER_TYPE
                ),
            }
        )
        written = self.append(name, batch)
        return [
            replace(r, partition=p, offset=o, timestamp=t)
            for r, p, o, t in zip(
                records,
                written.column("partition").to_pylist(),
                written.column("offset").to_pylist(),
                written.column("timestamp").to_pylist(),
                strict=True,
            )
        ]

    def append(
        self, name: str, batch: pa.Table, *, txn: tuple[str, int] | None = None
    ) -> pa.Table:
        """Append an Arrow table of records (columns ``key``, ``value``; optional
        ``timestamp``, ``partition``, ``headers``) in one atomic commit.

        Partitions follow Kafka's default partitioner; missing timestamps become the
        append time. With ``txn=(app_id, version)`` the append is idempotent: it is
        skipped when that application already committed that version (a replayed
        batch), and an empty table is returned.
        Returns the rows as written (with ``partition``, ``offset``, ``timestamp``).
        """
        config = self.topic_config(name)
        batch = _normalize(batch, config, now_ms())
        path = str(self._topic_dir(name) / "log")
        with self._topic_lock(name):
            with self._reading_log(name):
                table = DeltaTable(path, storage_options=self._options)
                done = None if txn is None else table.transaction_version(txn[0])
                end = _end_offsets(table, config)
            if done is not None and txn is not None and done >= txn[1]:
                return LOG_SCHEMA.empty_table()
            offsets, new_end = _assign_offsets(batch.column("partition").to_numpy(), end)
            rows = batch.append_column("offset", pa.array(offsets, pa.int64())).select(
                LOG_SCHEMA.names
            )
            if rows.num_rows or txn is not None:
                write_deltalake(
                    path,
                    rows,
                    mode="append",
                    partition_by=["partition"],
                    commit_properties=_commit_properties(new_end, txn),
                    storage_options=self._options,
                )
                _maybe_checkpoint(path, self._options)
        return rows

    def append_many(self, batches: Mapping[str, pa.Table]) -> dict[str, pa.Table]:
        """Append records to several topics (topic name -> records as :meth:`append`
        takes them), so that readers of end offsets see them together: while it runs,
        :meth:`end_offsets_of` (what a streaming query's source reads at each trigger)
        waits, so one micro-batch gets all of them, as ``read_committed`` consumers see
        the writes of one Kafka transaction. Each topic's records are one atomic append;
        a process that dies part-way leaves the topics appended before it. Returns each
        topic's rows as written (see :meth:`append`).

        >>> store.append_many({"orders": order_changes, "products": product_changes})  # doctest: +SKIP
        """
        for name in batches:
            self.topic_config(name)  # every topic exists before any is written
        with self._visibility_lock(shared=False):
            return {name: self.append(name, batch) for name, batch in batches.items()}

    @contextlib.contextmanager
    def appending_files(self, name: str, txn: tuple[str, int]) -> Iterator[FileAppend]:
        """Hold the topic's lock while records are written as data files elsewhere (by
        Spark tasks) and committed with :meth:`commit_files`: yields where the files go
        and the end offsets the new records follow, read under the lock, so no other
        append comes between. ``done`` when ``txn`` (application, batch id) is already
        committed: a replayed batch writes nothing.

        >>> with store.appending_files("totals", ("tablestream:revenue:r1", 7)) as target:   # doctest: +SKIP
        ...     files = write_in_tasks(target)          # offsets target.end[p] + i
        ...     store.commit_files(target, files)
        """
        config = self.topic_config(name)
        path = str(self._topic_dir(name) / "log")
        with self._topic_lock(name):
            with self._reading_log(name):
                table = DeltaTable(path, storage_options=self._options)
                done = table.transaction_version(txn[0])
                end = _end_offsets(table, config)
            yield FileAppend(
                name, path, config.partitions, end, done is not None and done >= txn[1], txn, now_ms(), self._options
            )

    def commit_files(self, target: FileAppend, files: Sequence[DataFile]) -> None:
        """Commit the data files written for ``target`` (one file per partition's new
        records, offsets from ``target.end``) in one Delta commit carrying the new end
        offsets and the batch's transaction; nothing when the batch was committed
        before. Call inside :meth:`appending_files`."""
        if target.done:
            return
        new_end = dict(target.end)
        for file in files:
            partition = int(file.partition_values["partition"])
            new_end[partition] += file.rows
        commit_data_files(
            target.path, files, LOG_SCHEMA, _commit_properties(new_end, target.txn), partition_by=["partition"],
            storage_options=target.storage_options,
        )
        _maybe_checkpoint(target.path, target.storage_options)

    # ------------------------------------------------------------------------ read
    def read(self, name: str) -> pa.Table:
        """Every record the topic holds, ordered by partition then offset."""
        self.topic_config(name)
        with self._reading_log(name) as path:
            table = DeltaTable(str(path), storage_options=self._options).to_pyarrow_table()
        return table.select(LOG_SCHEMA.names).sort_by([("partition", "ascending"), ("offset", "ascending")])

    def consume(
        self, name: str, *, max_records: int | None = None, timeout: float = 10.0
    ) -> list[Record]:
        """Records from the beginning, ordered by partition then offset (``timeout`` is
        accepted for API parity with the Kafka backend: the embedded log is read at once)."""
        table = self.read(name)
        if max_records is not None:
            table = table.slice(0, max_records)
        return _records(table)

    def poll(
        self, name: str, positions: dict[int, int], *, timeout: float = 0.0, interval: float = 0.2
    ) -> list[Record]:
        """Records at or after ``positions`` (partition -> next offset), waiting up to
        ``timeout`` seconds for the first one; ordered by partition then offset.
        ``positions`` is advanced past what is returned."""
        deadline = time.monotonic() + timeout
        while True:
            if any(self.end_offsets(name)[p] > o for p, o in positions.items()):
                with self._reading_log(name) as path:
                    # Filter on the partition column only: a pyarrow filter on a data
                    # column can abort the interpreter at exit (a scanner thread outlives it).
                    rows = DeltaTable(str(path), storage_options=self._options).to_pyarrow_table(
                        filters=[[("partition", "=", p)] for p in positions]
                    ).select(LOG_SCHEMA.names)
                start = pa.array([positions[p] for p in rows.column("partition").to_pylist()], pa.int64())
                rows = rows.filter(pc.greater_equal(rows.column("offset"), start))
                records = _records(rows.sort_by([("partition", "ascending"), ("offset", "ascending")]))
                for record in records:
                    positions[record.partition] = record.offset + 1
                if records:
                    return records
            if time.monotonic() >= deadline:
                return []
            time.sleep(interval)

    def follow(
        self, name: str, *, from_beginning: bool = True, timeout: float | None = None
    ) -> Iterator[list[Record]]:
        """Yield chunks of records as they arrive (each ordered by partition then offset),
        from the beginning or from the current end; stop once no record has arrived for
        ``timeout`` seconds (``None``: never)."""
        described = self.describe_topic(name)
        positions = dict(described.start_offsets if from_beginning else described.end_offsets)
        while True:
            records = self.poll(name, positions, timeout=1.0 if timeout is None else timeout)
            if records:
                yield records
            elif timeout is not None:
                return

    def read_stream(self, spark, topics: Sequence[str], *, max_records_per_batch: int | None = None):
        """A Spark streaming DataFrame over topics, with the columns ``key, value, topic,
        partition, offset, timestamp, headers`` (timestamp in epoch ms), as
        :meth:`tablestream.storage.kafka.KafkaStore.read_stream` gives for Kafka.

        The query's position is Kafka's, the next offset of each topic partition
        (:mod:`tablestream.storage.embedded_source`). A query without a checkpoint begins
        at each partition's first record still held, as a new Kafka consumer at
        ``earliest`` does. ``max_records_per_batch`` bounds each micro-batch in offsets
        (records, but for the gaps compaction leaves), shared among the partitions in
        proportion to their backlog, as Spark's Kafka source's ``maxOffsetsPerTrigger``;
        ``None`` reads all there is in one batch.

        >>> store.read_stream(spark, ["orders"], max_records_per_batch=1_000_000)  # doctest: +SKIP
        DataFrame[key: binary, value: binary, topic: string, partition: int, offset: bigint, timestamp: bigint, headers: array<struct<key:string,value:binary>>]
        """
        from .embedded_source import EmbeddedTopicSource

        for topic in topics:
            self.check_topic(topic)  # a damaged topic is told as such, not by Spark
        spark.dataSource.register(EmbeddedTopicSource)
        reader = (
            spark.readStream.format(EmbeddedTopicSource.name())
            .option("home", str(self.home))
            .option("topics", json.dumps(list(topics)))
        )
        if max_records_per_batch is not None:
            reader = reader.option("maxRecordsPerBatch", str(max_records_per_batch))
        return reader.load()

    def read_between(self, spark, start: Mapping[str, Mapping[int, int]], end: Mapping[str, Mapping[int, int]]):
        """The records between two positions of :meth:`read_stream`'s query (per topic
        and partition, the first offset and the one after the last; a partition
        ``start`` lacks begins at its first record), read by Spark's Parquet reader:
        what the query's micro-batch between them holds, read in the JVM (see
        :func:`tablestream.storage.embedded_source.read_between`).

        >>> store.read_between(spark, {"orders": {"0": 120}}, {"orders": {"0": 180, "1": 40}})  # doctest: +SKIP
        DataFrame[key: binary, value: binary, topic: string, partition: int, offset: bigint, timestamp: bigint, headers: array<struct<key:string,value:binary>>]
        """
        from .embedded_source import read_between

        return read_between(spark, self, start, end)

    def data_files(self, name: str) -> pa.Table:
        """The topic's current data files: Delta's add actions, flattened (``path``
        relative to :meth:`log_path`, ``partition.partition``, ``num_records``,
        ``min.offset``, ``max.offset``, ...)."""
        self.topic_config(name)
        with self._reading_log(name):
            return _add_actions(self._open_log(name))

    def read_batch(self, spark, topics: Sequence[str]):
        """The topics' current records as a Spark DataFrame with the stream's columns."""
        for topic in topics:
            self.check_topic(topic)
        return _union(
            normalized_columns(spark.read.format("delta").load(str(self.log_path(t))), t) for t in topics
        )

    # -------------------------------------------------------------------- cleanup
    def compact(self, name: str, *, now: int | None = None) -> dict[str, int]:
        """Apply the topic's cleanup policy once, as Kafka's log cleaner does.

        ``compact``: keep the latest record of each key (original offsets, order kept) and
        drop tombstones older than ``delete.retention.ms``. ``delete``: drop records older
        than ``retention.ms`` (-1 keeps everything). End offsets never change.
        Returns ``{"before": n, "after": m}``.
        """
        config = self.topic_config(name)
        now = now_ms() if now is None else now
        path = str(self._topic_dir(name) / "log")
        with self._topic_lock(name):
            with self._reading_log(name):
                table = DeltaTable(path, storage_options=self._options)
                end = _end_offsets(table, config)
                records = table.to_pyarrow_table().select(LOG_SCHEMA.names)
            keep = _cleanup_mask(records, config, now)
            kept = records.filter(keep).sort_by([("partition", "ascending"), ("offset", "ascending")])
            if kept.num_rows != records.num_rows:
                write_deltalake(
                    path,
                    kept,
                    mode="overwrite",
                    partition_by=["partition"],
                    commit_properties=_commit_properties(end, None),
                    storage_options=self._options,
                )
                _maybe_checkpoint(path, self._options)
        return {"before": records.num_rows, "after": kept.num_rows}


@dataclass(frozen=True)
class FileAppend:
    """One batch's append to a topic written as data files (see
    :meth:`EmbeddedStore.appending_files`): the log's Delta table (a path string), the
    topic's partition count, each partition's end offset before the batch, whether the
    batch is already committed, its transaction, and the timestamp of records that have
    none (the append time)."""

    topic: str
    path: str
    partitions: int
    end: dict[int, int]
    done: bool
    txn: tuple[str, int]
    now: int
    storage_options: dict[str, str] | None = None


def default_partitions(keys: pa.Array | pa.ChunkedArray, partitions: int) -> np.ndarray:
    """Kafka's default partitioner over serialized keys: murmur2 of a key, records
    without one spread as the sticky partitioner spreads them."""
    parts = partitions_for_keys(keys.to_pylist(), partitions)
    keyless = np.flatnonzero(parts < 0)
    if len(keyless):
        parts[keyless] = spread_keyless(len(keyless), partitions)
    return parts


def log_rows(records: pa.Table, partition: int, first_offset: int, now: int) -> pa.Table:
    """One partition's new records (``key``, ``value`` bytes, ``timestamp``, in order) as
    the log's data file holds them: offsets from ``first_offset``, missing timestamps
    ``now``, no headers (the partition is the file's directory)."""
    n = records.num_rows
    return pa.table(
        {
            "offset": pa.array(np.arange(first_offset, first_offset + n, dtype=np.int64)),
            "timestamp": pc.fill_null(records.column("timestamp").cast(pa.int64()), now),
            "key": records.column("key").cast(pa.binary()),
            "value": records.column("value").cast(pa.binary()),
            "headers": pa.ListArray.from_arrays(
                pa.array(np.zeros(n + 1, np.int32)), pa.array([], HEADER_TYPE.value_type)
            ),
        },
        schema=pa.schema([f for f in LOG_SCHEMA if f.name != "partition"]),
    )


# ------------------------------------------------------------------------------ helpers
def _offsets_metadata(end: dict[int, int]) -> str:
    return json.dumps({"endOffsets": {str(p): o for p, o in sorted(end.items())}})


def _commit_properties(end: dict[int, int], txn: tuple[str, int] | None) -> CommitProperties:
    return CommitProperties(
        custom_metadata={"userMetadata": _offsets_metadata(end)},
        app_transactions=[Transaction(app_id=txn[0], version=txn[1])] if txn else None,
    )


def _add_actions(table: DeltaTable) -> pa.Table:
    """The log's add actions, flattened, read through the Arrow stream interface
    (``pa.table`` of them would import pandas first, a third of a second in the fresh
    Python process that plans a streaming source's batches)."""
    return pa.RecordBatchReader.from_stream(table.get_add_actions(flatten=True)).read_all()


def _end_offsets(table: DeltaTable, config: TopicConfig) -> dict[int, int]:
    info = table.history(1)[0]
    try:
        stored = json.loads(info.get("userMetadata") or "{}").get("endOffsets")
    except (json.JSONDecodeError, AttributeError):
        stored = None
    if stored is None:
        raise DamagedTopicError(
            config.name,
            table.table_uri,
            f"version {info.get('version')} was written without tablestream's end offsets "
            "(write topics only through tablestream)",
        )
    end = dict.fromkeys(range(config.partitions), 0)
    end.update({int(p): int(o) for p, o in stored.items()})
    return end


def _normalize(batch: pa.Table, config: TopicConfig, default_ts: int) -> pa.Table:
    """Validate and complete an append: types, partitions (Kafka's partitioner) and timestamps."""
    n = batch.num_rows
    names = set(batch.column_names)
    keys = batch.column("key").cast(pa.binary()) if "key" in names else pa.nulls(n, pa.binary())
    values = batch.column("value").cast(pa.binary())
    if "timestamp" in names:
        ts = pc.fill_null(batch.column("timestamp").cast(pa.int64()), default_ts)
    else:
        ts = pa.array(np.full(n, default_ts, dtype=np.int64))
    headers = batch.column("headers").cast(HEADER_TYPE) if "headers" in names else pa.nulls(n, HEADER_TYPE)
    headers = pc.if_else(pc.is_null(headers), pa.scalar([], HEADER_TYPE), headers)

    if config.compacted and n and keys.null_count:
        raise InvalidTopicError(
            f"Compacted topic '{config.name}' cannot accept a record without a key"
        )
    chosen = batch.column("partition").cast(pa.int32()) if "partition" in names else pa.nulls(n, pa.int32())
    given = pc.is_valid(chosen).to_numpy(zero_copy_only=False)
    explicit = pc.fill_null(chosen, -1).to_numpy()
    bad = given & ((explicit < 0) | (explicit >= config.partitions))
    if bad.any():
        raise InvalidPartitionError(config.name, int(explicit[bad][0]), config.partitions)
    parts = np.where(given, explicit, default_partitions(keys, config.partitions))
    return pa.table(
        {
            "partition": pa.array(parts, pa.int32()),
            "timestamp": ts,
            "key": keys,
            "value": values,
            "headers": headers,
        }
    )


def _assign_offsets(parts: np.ndarray, end: dict[int, int]) -> tuple[np.ndarray, dict[int, int]]:
    """Next offsets per partition in input order: a stable sort groups each partition's
    rows, and a running count within the group adds to the partition's end offset."""
    offsets = np.empty(len(parts), dtype=np.int64)
    new_end = dict(end)
    if len(parts) == 0:
        return offsets, new_end
    order = np.argsort(parts, kind="stable")
    sorted_parts = parts[order]
    starts = np.flatnonzero(np.r_[True, sorted_parts[1:] != sorted_parts[:-1]])
    lengths = np.diff(np.r_[starts, len(parts)])
    for start, length in zip(starts, lengths, strict=True):
        p = int(sorted_parts[start])
        offsets[order[start : start + length]] = end[p] + np.arange(length, dtype=np.int64)
        new_end[p] = end[p] + int(length)
    return offsets, new_end


def _cleanup_mask(records: pa.Table, config: TopicConfig, now: int) -> pa.Array:
    if records.num_rows == 0:
        return pa.array([], pa.bool_())
    ts = records.column("timestamp").to_numpy()
    if not config.compacted:
        if config.retention_ms < 0:
            return pa.array(np.ones(records.num_rows, dtype=bool))
        return pa.array(ts >= now - config.retention_ms)
    # Latest record of each (partition, key) by offset; a key lives in one partition
    # unless a producer chose partitions explicitly, and Kafka compacts per partition.
    frame = records.select(["partition", "key", "offset"]).to_pandas()
    latest = frame.groupby(["partition", "key"], sort=False)["offset"].transform("max")
    keep = (frame["offset"] == latest).to_numpy()
    tombstone = pc.is_null(records.column("value")).to_numpy(zero_copy_only=False)
    expired = tombstone & (ts < now - config.delete_retention_ms)
    return pa.array(keep & ~expired)


def _maybe_checkpoint(path: str, options: dict[str, str] | None) -> None:
    table = DeltaTable(path, storage_options=options)
    if table.version() % _CHECKPOINT_EVERY == 0:
        table.create_checkpoint()


def _records(table: pa.Table) -> list[Record]:
    return [
        Record(
            key=row["key"],
            value=row["value"],
            timestamp=row["timestamp"],
            partition=row["partition"],
            offset=row["offset"],
            headers=tuple((h["key"], h["value"]) for h in (row["headers"] or ())),
        )
        for row in table.to_pylist()
    ]


def normalized_columns(frame, topic: str):
    """A topic's log rows (a Spark DataFrame) in the stream's columns."""
    from pyspark.sql import functions as F

    return frame.select(
        F.col("key"),
        F.col("value"),
        F.lit(topic).alias("topic"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset"),
        F.col("timestamp"),
        F.coalesce(F.col("headers"), F.array().cast("array<struct<key:string,value:binary>>")).alias("headers"),
    )


def _union(frames):
    frames = list(frames)
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result

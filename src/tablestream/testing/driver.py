"""A test driver for topologies, after Kafka's ``TopologyTestDriver``.

It runs the real Spark runtime rules, but calls the compiled batch function directly on
in-memory input: no topic round trip, no streaming query, no broker. By default every
piped record is its own batch, which gives Kafka Streams' per-record changelog; with
``batched=True`` records are collected until :meth:`TestDriver.advance` (or a read)
runs them as one batch.

>>> from tablestream.dsl import StreamsBuilder                    # doctest: +SKIP
>>> builder = StreamsBuilder()                                    # doctest: +SKIP
>>> builder.stream("words").filter("value != 'skip'").to("out")   # doctest: +SKIP
>>> with TestDriver(builder.build()) as driver:                   # doctest: +SKIP
...     driver.create_input_topic("words").pipe_input("k", "hello", timestamp=5)
...     driver.create_output_topic("out").read_key_values()
[('k', 'hello')]
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..plan.sinks import ToTopic
from ..plan.topology import Topology
from ..storage.formats import Format, get_format
from ..storage.partitioner import partition_for_key
from ..storage.undeclared import undeclared_kafka_value, undeclared_key

if TYPE_CHECKING:
    from ..runtime.output import TableEncoding
    from ..sql.compiler import CompiledSql

__all__ = ["TestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord"]

_INPUT_SCHEMA = pa.schema(
    [
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.int64()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
    ]
)


@dataclass(frozen=True)
class TestRecord:
    """A record read from an output topic: key and value decoded, timestamp in ms."""

    __test__ = False  # not a pytest test class

    key: Any
    value: Any
    timestamp: int


class TestDriver:
    """Drive a topology with records and read what it writes.

    ``partitions``: state partitions of every store (the application's task count);
    ``batched``: run piped records only when asked (:meth:`advance`), as one batch;
    ``spark``: the session to use (default: the active one, or a new local session).
    ``processing_errors`` and ``log_skipped_records`` as for
    :class:`~tablestream.runtime.app.Application`; ``topic_partitions``: the partition
    counts of input topics (by default each has what :meth:`create_input_topic` gives).
    """

    __test__ = False

    def __init__(
        self,
        topology: Topology,
        *,
        partitions: int = 1,
        batched: bool = False,
        spark=None,
        state_dir: str | Path | None = None,
        processing_errors: str = "log_and_continue",
        log_skipped_records: bool = True,
        topic_partitions: dict[str, int] | None = None,
    ):
        from ..runtime.failures import ProcessingSettings
        from ..runtime.runner import BatchRunner
        from ..runtime.state import StoreLayout
        from ..spark import get_spark

        self.topology = topology
        self.spark = spark or get_spark()
        self.batched = batched
        self._owned_dir = state_dir is None
        self.state_dir = Path(state_dir or tempfile.mkdtemp(prefix="tablestream-driver-"))
        self.layout = StoreLayout(
            _working_dir(self.spark, self.state_dir),
            self.state_dir / "changelog",
            application_id="test-driver",
            run=self.state_dir.name,
        )
        # The partition counts of the input topics, known before the checks that need
        # them (a join's co-partitioning); create_input_topic adds the others.
        self._topic_partitions: dict[str, int] = dict(topic_partitions or {})
        settings = ProcessingSettings(processing_errors, log_skipped_records)
        self.runner = BatchRunner(
            topology, self.layout, partitions, self._topic_partitions, settings, spark=self.spark
        )
        self.batch_id = 0
        self._pending: list[dict[str, Any]] = []
        self._offsets: dict[tuple[str, int], int] = {}
        self._outputs: dict[str, list[tuple[bytes | None, bytes | None, int]]] = {}
        self._tables: dict[str, dict[Any, Any]] = {}
        self._table_times: dict[str, dict[Any, int]] = {}
        self.processing_log: list[dict[str, Any]] = []
        self._sink = _MemorySink(self._outputs, self._tables, self.processing_log, self._table_times)
        self.sql: CompiledSql | None = None  # set by from_sql
        self._declared_partitions: dict[str, int] = {}

    @classmethod
    def from_sql(cls, statements: str | Sequence[str], **options: Any) -> TestDriver:
        """A driver for ksqlDB statements: a script, or a list of statements (the
        ``;`` after each is optional). Options as for :class:`TestDriver`.

        Input topics have the partition count their ``CREATE`` gives (``PARTITIONS``,
        else 1); the records of ``INSERT INTO ... VALUES`` are piped in statement order
        once the driver is built. Read a query's output with :meth:`sql_output` (by the
        name of the stream or table it creates, or by query id; a push query's
        ``transient_C_0`` gives its rows as the records' values) or with
        :meth:`create_output_topic` on its topic. ``driver.sql`` is what the statements
        compiled to (:class:`~tablestream.sql.compiler.CompiledSql`).

        >>> with TestDriver.from_sql(                                           # doctest: +SKIP
        ...     "CREATE STREAM clicks (user_id BIGINT KEY, url STRING) "
        ...     "WITH (kafka_topic='clicks', value_format='json');"
        ...     "CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '%shop%';"
        ...     "INSERT INTO clicks (user_id, url) VALUES (7, '/shop/cart');"
        ... ) as driver:
        ...     driver.sql_output("SHOP").read_key_values()
        [(7, {'URL': '/shop/cart'})]
        """
        from ..sql.compiler import compile_sql
        from ..sql.pull import materialized_topology

        compiled = compile_sql(statements)
        # Every CREATE TABLE ... AS SELECT is queryable by its name, as in ksqlDB.
        tables = {q.sink_topic: q.target for q in compiled.queries if q.id.startswith("CTAS_")}
        read = {t for node in compiled.topology.sources for t in node.topics}
        declared = {t: n for t, n in compiled.topics.items() if t in read}
        driver = cls(materialized_topology(compiled.topology, tables), topic_partitions=declared, **options)
        driver.sql = compiled
        driver._declared_partitions.update(compiled.topics)
        for record in compiled.inserts:
            if record.topic in read:
                driver.create_input_topic(record.topic).pipe_input(
                    record.key, record.value, record.timestamp or 0
                )
        return driver

    def sql_output(self, name: str) -> TestOutputTopic:
        """The output of a stream or table a SQL query created (by its name as ksqlDB
        names it, ``OUTPUT``) or of a query (by its id: ``CSAS_OUTPUT_0``, or a push
        query's ``transient_C_0``)."""
        if self.sql is None:
            raise KeyError("sql_output() reads the outputs of a driver made by TestDriver.from_sql()")
        info = self.sql.sources.get(name)
        if info is not None and info.query_id is not None:
            return self.create_output_topic(info.topic)
        for query in self.sql.queries:
            if query.id == name:
                return self.create_output_topic(query.sink_topic)
        known = [q.id for q in self.sql.queries] + [q.target for q in self.sql.queries if q.target]
        raise KeyError(f"No SQL query or query output named '{name}' (known: {', '.join(known) or 'none'})")

    def pull(self, statement: str) -> list[tuple[Any, ...]]:
        """The rows of a pull query (``SELECT ... FROM table [WHERE ...]``, no ``EMIT``)
        on a table the SQL statements keep (a ``CREATE TABLE ... AS SELECT``'s or a
        ``CREATE SOURCE TABLE``), after the input piped so far; ksqlDB's errors
        otherwise (see :mod:`tablestream.sql.pull`).

        >>> with TestDriver.from_sql(                                           # doctest: +SKIP
        ...     "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='s', value_format='json');"
        ...     "CREATE TABLE c AS SELECT v, COUNT(*) AS n FROM s GROUP BY v;"
        ... ) as driver:
        ...     driver.create_input_topic("s").pipe_input(1, {"V": "a"}, timestamp=5)
        ...     driver.pull("SELECT v, n, ROWTIME FROM c WHERE v = 'a';")
        [('a', 1, 5)]
        """
        from ..sql import statements as st
        from ..sql.dialect import parse_script
        from ..sql.errors import SqlError
        from ..sql.pull import PullQuery

        if self.sql is None:
            raise KeyError("pull() runs pull queries on a driver made by TestDriver.from_sql()")
        parsed = parse_script(statement)
        if len(parsed) != 1 or not isinstance(parsed[0], st.SelectStatement) or parsed[0].query.emit == "CHANGES":
            first = parsed[0] if parsed else None
            raise SqlError(
                "pull() takes one SELECT without EMIT CHANGES",
                line=first.position.line if first else 1, column=first.position.column if first else 1,
                statement=first.text if first else statement,
            )
        query = PullQuery.plan(parsed[0], statement, self.sql.sources, self.sql.queries, properties=self.sql.properties)
        self.advance()
        contents = self._tables.get(query.source.name, {})
        times = self._table_times.get(query.source.name, {})
        return query.evaluate_on([(_unhashable(k), v, times.get(k)) for k, v in contents.items()])

    # ---------------------------------------------------------------- topics
    def create_input_topic(self, topic: str, *, partitions: int | None = None) -> TestInputTopic:
        """An input topic the topology reads; keys and values are serialized with the
        formats its source declares. ``partitions``: its partition count (default: what
        the SQL statements declared for it, else 1)."""
        if partitions is None:
            partitions = self._declared_partitions.get(topic, 1)
        for node in self.topology.sources:
            topics = node.topics
            if topic in topics:
                self._topic_partitions[topic] = partitions
                return TestInputTopic(
                    self,
                    topic,
                    get_format(node.key_format, node.key_schema),
                    get_format(node.value_format, node.value_schema),
                    partitions,
                )
        raise KeyError(
            f"The topology reads no topic '{topic}' (it reads {', '.join(self.runner.topics)})"
        )

    def create_output_topic(
        self, topic: str, *, key_format: Format | None = None, value_format: Format | None = None
    ) -> TestOutputTopic:
        """An output topic the topology writes; records are decoded with the sink's formats
        (by default KAFKA keys and JSON values)."""
        sinks = [n for n in self.topology.nodes if isinstance(n, ToTopic) and n.topic == topic]
        if not sinks:
            raise KeyError(f"The topology writes no topic '{topic}'")
        sink = sinks[0]
        key = key_format or (
            get_format(sink.key_format, sink.key_schema) if sink.key_format else None
        )
        value = value_format or get_format(sink.value_format or "JSON", sink.value_schema)
        return TestOutputTopic(self, topic, key, value)

    def table(self, store: str) -> dict[Any, Any]:
        """The current contents of a materialized table (``materialized_as`` name)."""
        self.advance()
        names = {s.name for s in self.topology.stores if s.queryable}
        if store not in names:
            raise KeyError(
                f"No queryable store '{store}' (queryable stores: {', '.join(sorted(names)) or 'none'})"
            )
        return dict(self._tables.get(store, {}))

    # ---------------------------------------------------------------- running
    def pipe_bytes(
        self, topic: str, key: bytes | None, value: bytes | None, timestamp: int, partition: int
    ) -> None:
        """Append one serialized record to ``topic`` (run at once unless batched)."""
        offset = self._offsets.get((topic, partition), 0)
        self._offsets[(topic, partition)] = offset + 1
        self._pending.append(
            {
                "key": key,
                "value": value,
                "topic": topic,
                "partition": partition,
                "offset": offset,
                "timestamp": timestamp,
                "headers": [],
            }
        )
        if not self.batched:
            self.advance()

    def advance(self) -> None:
        """Run the records piped since the last batch as one batch."""
        if not self._pending:
            return
        from ..runtime.commit import commit_batch

        records = pa.Table.from_pylist(self._pending, schema=_INPUT_SCHEMA)
        self._pending = []
        frame = self.spark.createDataFrame(records)
        collected = self.runner.process(frame, self.batch_id, at_most=records.num_rows)
        commit_batch(collected, self._sink, self.batch_id)
        self.batch_id += 1

    def take_output(self, topic: str) -> list[tuple[bytes | None, bytes | None, int]]:
        """Run pending input, then remove and return the records written to ``topic``."""
        self.advance()
        records = self._outputs.get(topic, [])
        self._outputs[topic] = []
        return records

    def restore_output(
        self, topic: str, records: list[tuple[bytes | None, bytes | None, int]]
    ) -> None:
        """Put records taken with :meth:`take_output` back in front of the topic's queue."""
        self._outputs[topic] = records + self._outputs.get(topic, [])

    def close(self) -> None:
        if self._owned_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self) -> TestDriver:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _MemorySink:
    """A batch's outputs into the driver's memory: ``(key, value, timestamp)`` per topic,
    tables as dicts (JSON-text keys and values decoded), processing-log entries as dicts."""

    def __init__(
        self,
        outputs: dict[str, list[tuple[bytes | None, bytes | None, int]]],
        tables: dict[str, dict[Any, Any]],
        processing_log: list[dict[str, Any]],
        times: dict[str, dict[Any, int]] | None = None,
    ):
        self.outputs = outputs
        self.tables = tables
        self.processing_log = processing_log
        self.times = times if times is not None else {}

    def executor_writes(self, batch_id: int, records: int) -> None:
        """Every output comes to the driver's memory as rows."""
        return None

    def write_records(self, topic: str, records: pa.Table, batch_id: int) -> None:
        self.outputs.setdefault(topic, []).extend(
            zip(
                records.column("key").to_pylist(),
                records.column("value").to_pylist(),
                records.column("timestamp").to_pylist(),
                strict=True,
            )
        )

    def write_changes(
        self, store: str, changes: pa.Table, encoding: TableEncoding, batch_id: int
    ) -> None:
        contents = self.tables.setdefault(store, {})
        keys = changes.column("key")
        if encoding.key_undeclared:
            # Read from their bytes, which may not be UTF-8, as the table's topic gives them.
            keys = [None if k is None else undeclared_key(k) for k in keys.cast(pa.binary()).to_pylist()]
        elif encoding.key_json:
            keys = [None if k is None else json.loads(k) for k in keys.to_pylist()]
        else:
            keys = keys.to_pylist()
        times = self.times.setdefault(store, {})
        for key, new, ts in zip(keys, changes.column("new").to_pylist(), changes.column("ts").to_pylist(), strict=True):
            key = _hashable(key)
            if new is None:
                contents.pop(key, None)
                times.pop(key, None)
            else:
                contents[key] = json.loads(new) if encoding.value_json else new
                times[key] = ts

    def write_processing_log(self, entries: pa.Table, batch_id: int) -> None:
        self.processing_log.extend(entries.to_pylist())

    def commit(self, batch_id: int) -> None:
        """Every write above is already in memory."""


class TestInputTopic:
    """Pipe records into a topic the topology reads (``TestInputTopic``)."""

    __test__ = False

    def __init__(
        self,
        driver: TestDriver,
        topic: str,
        key_format: Format,
        value_format: Format,
        partitions: int,
    ):
        self.driver = driver
        self.topic = topic
        self.key_format = key_format
        self.value_format = value_format
        self.partitions = partitions

    def pipe_input(
        self, key: Any, value: Any, timestamp: int = 0, *, partition: int | None = None
    ) -> None:
        """Write one record (``value=None`` is a tombstone)."""
        key_bytes = None if key is None else self.key_format.serialize(key)
        value_bytes = None if value is None else self.value_format.serialize(value)
        if partition is None:
            partition = 0 if key_bytes is None else partition_for_key(key_bytes, self.partitions)
        self.driver.pipe_bytes(self.topic, key_bytes, value_bytes, timestamp, partition)

    def pipe_raw(
        self, key: bytes | None, value: bytes | None, timestamp: int = 0, *, partition: int = 0
    ) -> None:
        """Write one record's bytes as they are (for testing undecodable input)."""
        self.driver.pipe_bytes(self.topic, key, value, timestamp, partition)

    def pipe_key_value_list(
        self, pairs: Iterable[tuple[Any, Any]], timestamp: int = 0, advance_ms: int = 0
    ) -> None:
        """Write ``(key, value)`` pairs; timestamps start at ``timestamp`` and grow by
        ``advance_ms`` per record."""
        for i, (key, value) in enumerate(pairs):
            self.pipe_input(key, value, timestamp + i * advance_ms)

    def pipe_records(self, records: Iterable[Sequence[Any]]) -> None:
        """Write ``(key, value, timestamp)`` triples."""
        for key, value, timestamp in records:
            self.pipe_input(key, value, timestamp)


class TestOutputTopic:
    """Read what the topology wrote to a topic (``TestOutputTopic``)."""

    __test__ = False

    def __init__(
        self, driver: TestDriver, topic: str, key_format: Format | None, value_format: Format
    ):
        self.driver = driver
        self.topic = topic
        self.key_format = key_format
        self.value_format = value_format

    def _decode_key(self, data: bytes | None) -> Any:
        if data is None:
            return None
        if self.key_format is not None:
            return self.key_format.deserialize(data)
        return undeclared_kafka_value(data)

    def read_records(self) -> list[TestRecord]:
        """Every record written since the last read, in order."""
        return [
            TestRecord(self._decode_key(k), self.value_format.deserialize(v), ts)
            for k, v, ts in self.driver.take_output(self.topic)
        ]

    def read_key_values(self) -> list[tuple[Any, Any]]:
        return [(r.key, r.value) for r in self.read_records()]

    def read_key_values_to_map(self) -> dict[Any, Any]:
        """The latest value per key; a tombstone removes the key."""
        result: dict[Any, Any] = {}
        for record in self.read_records():
            key = _hashable(record.key)
            if record.value is None:
                result.pop(key, None)
            else:
                result[key] = record.value
        return result

    def is_empty(self) -> bool:
        """True when no record is waiting to be read (pending input is run first)."""
        records = self.driver.take_output(self.topic)
        self.driver.restore_output(self.topic, records)
        return not records


def _hashable(key: Any) -> Any:
    if isinstance(key, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in key.items()))
    if isinstance(key, list):
        return tuple(_hashable(v) for v in key)
    return key


def _unhashable(key: Any) -> Any:
    """A struct key back from :func:`_hashable`'s pairs."""
    if isinstance(key, tuple) and key and all(isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in key):
        return {k: _unhashable(v) for k, v in key}
    return key


def _working_dir(spark, state_dir: Path) -> Path | None:
    """Where the stores' working copies live: under ``state_dir`` in local mode; on a
    cluster, on each executor's local disk (``state_dir`` must then be a directory every
    executor sees: it holds the changelogs the copies are rebuilt from)."""
    from ..spark import session_runs_locally

    return state_dir / "stores" if session_runs_locally(spark) else None

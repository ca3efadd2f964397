"""``StreamsBuilder``: where a program starts (sources) and ends (``build()``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tablestream.dsl._common import (
    check_format,
    check_name,
    check_source_format,
    check_topic,
    schema_text,
    timestamp_sql,
)
from tablestream.dsl.kstream import KStream
from tablestream.dsl.ktable import GlobalKTable, KTable
from tablestream.plan import naming
from tablestream.plan.builder import PlanBuilder
from tablestream.plan.errors import InvalidArgumentError, InvalidTypeError
from tablestream.plan.expr import SqlExpr
from tablestream.plan.sources import GlobalTableSource, StreamSource, TableSource
from tablestream.plan.topology import Topology

__all__ = ["StreamsBuilder"]


class StreamsBuilder:
    """Builds a topology with Kafka Streams' DSL, in Python naming.

    Start from topics with :meth:`stream`, :meth:`table` and :meth:`global_table`, chain
    operations on the returned :class:`KStream` / :class:`KTable`, then :meth:`build` the
    :class:`~tablestream.plan.Topology`. Node names follow Kafka Streams
    (``KSTREAM-SOURCE-0000000000``, ...), so two builds of one program give equal
    topologies and ``describe()`` prints what Kafka Streams would.

    >>> builder = StreamsBuilder()
    >>> orders = builder.stream("orders", value_schema="id BIGINT, customer STRING, amount DOUBLE")
    >>> revenue = orders.group_by("customer").sum("amount", materialized_as="revenue")
    >>> revenue.to_stream().to("revenue-per-customer")
    >>> topology = builder.build()
    >>> [store.name for store in topology.stores]
    ['revenue']
    """

    __slots__ = ("_plan",)

    def __init__(self) -> None:
        self._plan = PlanBuilder()

    @property
    def plan(self) -> PlanBuilder:
        """The plan being built (shared with every stream and table made from here)."""
        return self._plan

    def stream(
        self,
        topics: str | Sequence[str],
        *,
        key_format: str = "KAFKA",
        value_format: str = "JSON",
        key_schema: Any = None,
        value_schema: Any = None,
        timestamp_extractor: Any = None,
        name: str | None = None,
    ) -> KStream:
        """A stream of the records of ``topics`` (a topic name or a list of them).

        Formats are ksqlDB names (``KAFKA``, ``JSON``, ``AVRO``, ``DELIMITED``, ...);
        schemas are ksqlDB column lists (``"id BIGINT, name STRING"``; for a ``KAFKA`` key
        a single type such as ``"BIGINT"``) or pyspark ``StructType`` s. Without a value
        schema a JSON value is kept as JSON text. Reading the same topics twice gives the
        same source, as in Kafka Streams.

        Records keep the timestamps they were written with, unless ``timestamp_extractor``
        (Kafka Streams' ``TimestampExtractor``) gives each record's timestamp from its
        contents: a SQL expression over ``key``, ``value`` (and its fields) and
        ``rowtime`` (the written timestamp) that is a ``BIGINT`` of epoch milliseconds or
        a ``TIMESTAMP``. The extracted timestamp is the record's timestamp everywhere:
        ``rowtime`` in later expressions, the order in which records of different
        partitions and topics meet (a stream-table join's "as of" time), output records,
        joins and aggregates. A record whose extracted timestamp is null or negative, or
        cannot be computed (a cast of bad text), is not processed and goes to the
        processing log with the reason (Kafka Streams skips a negative one with a
        warning).

        >>> builder = StreamsBuilder()
        >>> builder.stream(["clicks-eu", "clicks-us"], value_format="json").node
        StreamSource(name='KSTREAM-SOURCE-0000000000', topics=('clicks-eu', 'clicks-us'), key_format='KAFKA', value_format='JSON', key_schema=None, value_schema=None, timestamp_extractor=None)
        >>> clicks = builder.stream("clicks", value_schema="page STRING, at TIMESTAMP",
        ...                         timestamp_extractor="at")
        >>> clicks.node.timestamp_extractor
        SqlExpr(sql='at')
        """
        method = "StreamsBuilder.stream()"
        topic_list = self._topics(topics, method)
        key, value, key_text, value_text = self._formats(
            method, key_format, value_format, key_schema, value_schema
        )
        extractor = self._extractor(timestamp_extractor, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_SOURCE)
        node = StreamSource(
            name=node_name,
            topics=topic_list,
            key_format=key,
            value_format=value,
            key_schema=key_text,
            value_schema=value_text,
            timestamp_extractor=extractor,
        )
        return KStream(self._plan, self._plan.add_stream_source(node).name)

    def table(
        self,
        topic: str,
        *,
        key_format: str = "KAFKA",
        value_format: str = "JSON",
        key_schema: Any = None,
        value_schema: Any = None,
        timestamp_extractor: Any = None,
        materialized_as: str | None = None,
        name: str | None = None,
    ) -> KTable:
        """A table of the latest value per key of the changelog ``topic``: a record
        upserts its key, a ``null`` value deletes it, a ``null`` key is dropped.

        ``materialized_as`` names the table's store (otherwise
        ``<topic>-STATE-STORE-<n>``, kept only when needed); ``name`` names the table's
        processor (its source becomes ``<name>-source``). Other arguments as in
        :meth:`stream`.

        >>> builder = StreamsBuilder()
        >>> builder.table("users", value_schema="name STRING, region STRING").node.store
        'users-STATE-STORE-0000000000'
        """
        method = "StreamsBuilder.table()"
        return KTable(
            self._plan,
            self._table_source(
                TableSource,
                method,
                topic,
                key_format,
                value_format,
                key_schema,
                value_schema,
                timestamp_extractor,
                materialized_as,
                name,
            ),
        )

    def global_table(
        self,
        topic: str,
        *,
        key_format: str = "KAFKA",
        value_format: str = "JSON",
        key_schema: Any = None,
        value_schema: Any = None,
        timestamp_extractor: Any = None,
        materialized_as: str | None = None,
        name: str | None = None,
    ) -> GlobalKTable:
        """A table of ``topic`` replicated in full to every task (arguments as in
        :meth:`table`). Its store is always materialized.

        >>> builder = StreamsBuilder()
        >>> builder.global_table("countries", materialized_as="countries")
        <GlobalKTable KTABLE-SOURCE-0000000001>
        >>> print(builder.build().describe())
        Topologies:
           Sub-topology: 0 for global store (will not generate tasks)
            Source: KSTREAM-SOURCE-0000000000 (topics: [countries])
              --> KTABLE-SOURCE-0000000001
            Processor: KTABLE-SOURCE-0000000001 (stores: [countries])
              --> none
              <-- KSTREAM-SOURCE-0000000000
        <BLANKLINE>
        """
        method = "StreamsBuilder.global_table()"
        return GlobalKTable(
            self._plan,
            self._table_source(
                GlobalTableSource,
                method,
                topic,
                key_format,
                value_format,
                key_schema,
                value_schema,
                timestamp_extractor,
                materialized_as,
                name,
            ),
        )

    def build(self) -> Topology:
        """The topology built so far: immutable, comparable and printable.

        >>> builder = StreamsBuilder()
        >>> builder.stream("in").to("out")
        >>> builder.build() == builder.build()
        True
        """
        return self._plan.build()

    # -- helpers ------------------------------------------------------------------------

    def _table_source(
        self,
        node_class: type[TableSource | GlobalTableSource],
        method: str,
        topic: str,
        key_format: str,
        value_format: str,
        key_schema: Any,
        value_schema: Any,
        timestamp_extractor: Any,
        materialized_as: str | None,
        name: str | None,
    ) -> str:
        # StreamsBuilder.table / globalTable: store name, then source, then processor.
        check_topic(topic, method)
        key, value, key_text, value_text = self._formats(
            method, key_format, value_format, key_schema, value_schema
        )
        extractor = self._extractor(timestamp_extractor, method)
        given = check_name(name, method)
        store = check_name(materialized_as, method, "store name")
        if store is None:
            store = self._plan.names.new_store_name(f"{topic}-")
        self._plan.claim_store(store)
        names = self._plan.names
        source_name = names.suffix_or_generate(
            given, naming.TABLE_SOURCE_SUFFIX, naming.KSTREAM_SOURCE
        )
        node_name = names.or_generate(given, naming.KTABLE_SOURCE)
        node = node_class(
            name=node_name,
            source_name=source_name,
            topics=(topic,),
            store=store,
            queryable=materialized_as is not None,
            key_format=key,
            value_format=value,
            key_schema=key_text,
            value_schema=value_text,
            timestamp_extractor=extractor,
        )
        return self._plan.add(node).name

    @staticmethod
    def _topics(topics: Any, method: str) -> tuple[str, ...]:
        if isinstance(topics, str):
            return (check_topic(topics, method),)
        if topics is None:
            raise InvalidTypeError(f"{method}: topics can't be None")
        if not isinstance(topics, Sequence):
            raise InvalidTypeError(
                f"{method}: topics must be a topic name or a list of them, got {type(topics).__name__}"
            )
        if not topics:
            raise InvalidArgumentError(f"{method}: topics must not be empty")
        checked = tuple(check_topic(t, method) for t in topics)
        if len(set(checked)) != len(checked):
            raise InvalidArgumentError(f"{method}: topics must not repeat, got {list(checked)}")
        return checked

    @staticmethod
    def _formats(
        method: str, key_format: Any, value_format: Any, key_schema: Any, value_schema: Any
    ) -> tuple[str, str, str | None, str | None]:
        key = check_format(key_format, method, "key format")
        value = check_format(value_format, method, "value format")
        assert key is not None and value is not None
        key_text = schema_text(key_schema, method, "key schema")
        value_text = schema_text(value_schema, method, "value schema")
        check_source_format(key, key_text, method, "key format")
        check_source_format(value, value_text, method, "value format")
        return key, value, key_text, value_text

    @staticmethod
    def _extractor(extractor: Any, method: str) -> SqlExpr | None:
        return None if extractor is None else timestamp_sql(extractor, method, "timestamp_extractor")

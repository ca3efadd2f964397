"""``KStream``: an unbounded stream of records, every record an independent event."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tablestream.dsl import functions as fn
from tablestream.dsl import grouped, ktable
from tablestream.dsl._common import (
    PlanFacade,
    check_format,
    check_name,
    check_partitions,
    check_topic,
    schema_text,
    timestamp_sql,
)
from tablestream.plan import naming
from tablestream.plan.errors import InvalidArgumentError, InvalidTypeError
from tablestream.plan.joins import StreamGlobalTableJoin, StreamTableJoin
from tablestream.plan.sinks import ToTopic
from tablestream.plan.stateless import (
    Branch,
    Filter,
    FlatMap,
    FlatMapValues,
    Map,
    MapValues,
    Merge,
    Peek,
    SelectKey,
    Split,
    ToTable,
    WithTimestamp,
)

if TYPE_CHECKING:
    from tablestream.plan import Expr, PlanBuilder, PlanNode

__all__ = ["BranchedKStream", "KStream"]


class KStream(PlanFacade):
    """A record stream: each record is an event on its own (an insert), unlike a
    :class:`~tablestream.dsl.KTable` where a record updates its key.

    Made by :meth:`StreamsBuilder.stream <tablestream.dsl.StreamsBuilder.stream>` or by
    an operation on another stream or table. Every method adds one node to the plan and
    returns a new stream; nothing runs until the topology is executed.

    Operations that may change the key (:meth:`map`, :meth:`flat_map`,
    :meth:`select_key`) mark the result for repartitioning; the mark survives
    :meth:`filter`, :meth:`map_values`, :meth:`peek`, :meth:`flat_map_values`,
    :meth:`merge` and :meth:`split`, and the next :meth:`group_by_key`, :meth:`to_table`
    (and later joins) sends the records through an internal ``-repartition`` topic first.

    Expressions are SQL text (Spark SQL over ``key``, ``value`` and the value's fields),
    Spark Columns, or Python callables with Kafka Streams' parameters.

    >>> from tablestream.dsl import StreamsBuilder
    >>> builder = StreamsBuilder()
    >>> orders = builder.stream("orders", value_schema="id BIGINT, customer STRING, amount DOUBLE")
    >>> orders.filter("amount > 100").map_values("amount * 2").to("big-orders")
    >>> print(builder.build().describe())
    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
          --> KSTREAM-FILTER-0000000001
        Processor: KSTREAM-FILTER-0000000001 (stores: [])
          --> KSTREAM-MAPVALUES-0000000002
          <-- KSTREAM-SOURCE-0000000000
        Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])
          --> KSTREAM-SINK-0000000003
          <-- KSTREAM-FILTER-0000000001
        Sink: KSTREAM-SINK-0000000003 (topic: big-orders)
          <-- KSTREAM-MAPVALUES-0000000002
    <BLANKLINE>
    <BLANKLINE>
    """


    __slots__ = ("_join_repartition", "_repartition_required")

    def __init__(self, plan: PlanBuilder, name: str, repartition_required: bool = False) -> None:
        super().__init__(plan, name)
        self._repartition_required = repartition_required
        self._join_repartition: tuple[str, str] | None = None  # (prefix, repartition node)

    @property
    def repartition_required(self) -> bool:
        """Whether the key may have changed since the records were last partitioned by it."""
        return self._repartition_required

    def __repr__(self) -> str:
        mark = " (repartition required)" if self._repartition_required else ""
        return f"<KStream {self._name}{mark}>"

    def _derive(self, node: PlanNode, repartition_required: bool | None = None) -> KStream:
        self._plan.add(node)
        mark = self._repartition_required if repartition_required is None else repartition_required
        return KStream(self._plan, node.name, mark)

    def _bind(self, prepared: fn.Prepared, node_name: str, argument: str) -> Expr:
        return prepared.bind(self._plan, f"{node_name}.{argument}")

    # -- stateless -----------------------------------------------------------------------

    def filter(self, predicate: Any, *, name: str | None = None) -> KStream:
        """A stream of the records that satisfy ``predicate``.

        ``predicate`` is a SQL boolean expression, a Spark Column, or a callable
        ``(key, value) -> bool``. ``name`` replaces the generated node name
        (``KSTREAM-FILTER-<n>``), as Kafka's ``Named``.

        A SQL or Column predicate must be ``BOOLEAN`` (another type is an
        :class:`~tablestream.runtime.expressions.ExpressionError` when the application or
        test driver is created). A record whose predicate is null (``amount > 100`` with
        no amount) counts as not satisfying it, as in SQL's ``WHERE``: ``filter`` drops it,
        :meth:`filter_not` keeps it.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> big = builder.stream("orders").filter("amount > 100")
        >>> big.node
        Filter(name='KSTREAM-FILTER-0000000001', parent='KSTREAM-SOURCE-0000000000', predicate=SqlExpr(sql='amount > 100'), negate=False)
        >>> builder.stream("events").filter(lambda key, value: value["ok"], name="ok-events").node.predicate
        ExprRef(ref='ok-events.predicate', kind='callable', arity=2, description='<lambda>(key, value)')
        """
        return self._filter(predicate, name, negate=False, method="KStream.filter()")

    def filter_not(self, predicate: Any, *, name: str | None = None) -> KStream:
        """A stream of the records that do *not* satisfy ``predicate`` (see :meth:`filter`),
        including those whose predicate is null.

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("orders").filter_not("amount > 100").node.negate
        True
        """
        return self._filter(predicate, name, negate=True, method="KStream.filter_not()")

    def _filter(self, predicate: Any, name: str | None, *, negate: bool, method: str) -> KStream:
        prepared = fn.prepare(predicate, fn.PREDICATE, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_FILTER)
        return self._derive(
            Filter(
                name=node_name,
                parent=self._name,
                predicate=self._bind(prepared, node_name, "predicate"),
                negate=negate,
            )
        )

    def map_values(self, mapper: Any, *, name: str | None = None) -> KStream:
        """A stream with a new value per record and the same key (no repartition needed).

        ``mapper`` is a SQL expression (use ``struct(... AS field)`` for a struct value), a
        Spark Column, or a callable ``(value)`` or ``(key, value)`` returning the new value.

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("orders").map_values(lambda v: v["amount"])
        >>> s.node.mapper.arity, s.repartition_required
        (1, False)
        """
        method = "KStream.map_values()"
        prepared = fn.prepare(mapper, fn.VALUE_MAPPER, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_MAPVALUES)
        return self._derive(
            MapValues(
                name=node_name, parent=self._name, mapper=self._bind(prepared, node_name, "mapper")
            )
        )

    def with_timestamp(self, timestamp: str, *, name: str | None = None) -> KStream:
        """A stream of the same records, each with the timestamp ``timestamp`` gives: a SQL
        expression over the record (``key``, ``value`` and its fields, ``rowtime``) that is
        a ``BIGINT`` of epoch milliseconds or a ``TIMESTAMP``. As a Kafka Streams
        processor forwarding ``record.withTimestamp(...)`` (ksqlDB's ``CREATE STREAM ...
        WITH (TIMESTAMP='col') AS SELECT``): the records written and the operators after
        it see the new timestamp; the order in which records are processed stays the
        source's. A record whose new timestamp is null, negative or cannot be computed
        goes to the processing log; a tombstone keeps its timestamp.

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("orders", value_schema="id BIGINT, placed BIGINT")
        >>> s.with_timestamp("placed").node
        WithTimestamp(name='KSTREAM-PROCESSOR-0000000001', parent='KSTREAM-SOURCE-0000000000', timestamp=SqlExpr(sql='placed'))
        """
        method = "KStream.with_timestamp()"
        expr = timestamp_sql(timestamp, method, "timestamp")
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_PROCESSOR)
        return self._derive(WithTimestamp(name=node_name, parent=self._name, timestamp=expr))

    def map(self, mapper: Any, *, name: str | None = None) -> KStream:
        """A stream with a new key and value per record; the result is marked for
        repartitioning.

        ``mapper`` is a callable ``(key, value) -> (new_key, new_value)`` or a pair of
        expressions ``(key expression, value expression)`` (SQL text or Columns).

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("orders").map(("customer", "amount"))
        >>> s.node.mapper
        KeyValueExpr(key=SqlExpr(sql='customer'), value=SqlExpr(sql='amount'))
        >>> s.repartition_required
        True
        """
        method = "KStream.map()"
        prepared = fn.prepare_key_value(mapper, fn.KEY_VALUE_MAPPER, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_MAP)
        bound = prepared.bind(self._plan, f"{node_name}.mapper")
        return self._derive(
            Map(name=node_name, parent=self._name, mapper=bound), repartition_required=True
        )

    def flat_map(self, mapper: Any, *, name: str | None = None) -> KStream:
        """Zero or more records per record, each with its own key; the result is marked for
        repartitioning.

        ``mapper`` is a callable ``(key, value) -> iterable of (key, value)``, or a SQL
        expression / Column giving an array of ``struct<key, value>``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("lines").flat_map(
        ...     lambda k, line: [(word, 1) for word in line.split()])
        >>> s.repartition_required
        True
        """
        method = "KStream.flat_map()"
        prepared = fn.prepare(mapper, fn.FLAT_MAPPER, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_FLATMAP)
        node = FlatMap(
            name=node_name, parent=self._name, mapper=self._bind(prepared, node_name, "mapper")
        )
        return self._derive(node, repartition_required=True)

    def flat_map_values(self, mapper: Any, *, name: str | None = None) -> KStream:
        """Zero or more values per record, each keeping the record's key (no repartition).

        ``mapper`` is a callable ``(value)`` or ``(key, value)`` returning an iterable, or
        a SQL array expression / Column.

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("lines").flat_map_values("split(value, ' ')").node.mapper
        SqlExpr(sql="SPLIT(value, ' ')")
        """
        method = "KStream.flat_map_values()"
        prepared = fn.prepare(mapper, fn.FLAT_VALUE_MAPPER, method)
        node_name = self._plan.names.or_generate(
            check_name(name, method), naming.KSTREAM_FLATMAPVALUES
        )
        return self._derive(
            FlatMapValues(
                name=node_name, parent=self._name, mapper=self._bind(prepared, node_name, "mapper")
            )
        )

    def select_key(self, selector: Any, *, name: str | None = None) -> KStream:
        """A stream re-keyed by ``selector`` (values unchanged); marked for repartitioning.

        ``selector`` is a SQL expression, a Column, or a callable ``(key, value) -> new_key``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("orders").select_key("customer")
        >>> s
        <KStream KSTREAM-KEY-SELECT-0000000001 (repartition required)>
        """
        method = "KStream.select_key()"
        prepared = fn.prepare(selector, fn.KEY_SELECTOR, method)
        node_name = self._plan.names.or_generate(
            check_name(name, method), naming.KSTREAM_KEY_SELECT
        )
        node = SelectKey(
            name=node_name, parent=self._name, selector=self._bind(prepared, node_name, "selector")
        )
        return self._derive(node, repartition_required=True)

    def peek(self, action: Any, *, name: str | None = None) -> KStream:
        """Call ``action(key, value)`` for every record and pass the records on unchanged
        (for logging or metrics; the runtime calls it on batches of records, so side
        effects are not ordered across partitions).

        >>> from tablestream.dsl import StreamsBuilder
        >>> seen = []
        >>> StreamsBuilder().stream("orders").peek(lambda k, v: seen.append(k)).node.action.kind
        'callable'
        """
        method = "KStream.peek()"
        prepared = fn.prepare(action, fn.ACTION, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_PEEK)
        return self._derive(
            Peek(
                name=node_name, parent=self._name, action=self._bind(prepared, node_name, "action")
            )
        )

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """The records of this stream and ``other`` as one stream, in no order across the
        two. Marked for repartitioning if either input is.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> web, shop = builder.stream("web-orders"), builder.stream("shop-orders")
        >>> web.merge(shop).node
        Merge(name='KSTREAM-MERGE-0000000002', parents=('KSTREAM-SOURCE-0000000000', 'KSTREAM-SOURCE-0000000001'))
        """
        method = "KStream.merge()"
        if not isinstance(other, KStream):
            raise InvalidTypeError(
                f"{method}: stream must be a KStream, got {type(other).__name__}"
            )
        if other.plan is not self._plan:
            raise InvalidArgumentError(f"{method}: stream belongs to another StreamsBuilder")
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_MERGE)
        mark = self._repartition_required or other.repartition_required
        return self._derive(
            Merge(name=node_name, parents=(self._name, other.name)), repartition_required=mark
        )

    def split(self, *, name: str | None = None) -> BranchedKStream:
        """Split the stream into branches: each record goes to the first branch whose
        predicate it satisfies, in the order the branches were added; records matching
        none go to the default branch, or are dropped without one.

        Branch streams are named ``<split name><branch name>`` (the split's name is
        ``KSTREAM-BRANCH-<n>`` unless ``name`` is given), or ``<split name><position>``
        for unnamed branches, counting from 1; an unnamed default branch is position 0.

        >>> from tablestream.dsl import StreamsBuilder
        >>> branches = (StreamsBuilder().stream("orders").split(name="by-size-")
        ...     .branch("amount > 1000", name="large")
        ...     .branch("amount > 100", name="medium")
        ...     .default_branch(name="small"))
        >>> list(branches)
        ['by-size-large', 'by-size-medium', 'by-size-small']
        """
        method = "KStream.split()"
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_BRANCH)
        self._plan.add(Split(name=node_name, parent=self._name))
        return BranchedKStream(self._plan, node_name, self._repartition_required)

    def repartition(self, *, name: str | None = None, partitions: int | None = None) -> KStream:
        """The same records read back from an internal topic ``<name>-repartition``
        partitioned by their current key (Kafka's ``repartition()``). The result is not
        marked. ``partitions`` sets the topic's partition count (default: the upstream
        count).

        >>> from tablestream.dsl import StreamsBuilder
        >>> s = StreamsBuilder().stream("orders").select_key("customer").repartition(partitions=4)
        >>> s.node.topic, s.node.partitions, s.repartition_required
        ('KSTREAM-REPARTITION-0000000002-repartition', 4, False)
        """
        method = "KStream.repartition()"
        given = check_name(name, method)
        count = check_partitions(partitions, method)
        prefix = (
            given
            if given is not None
            else self._plan.names.new_processor_name(naming.KSTREAM_REPARTITION)
        )
        node = self._plan.repartition(self._name, prefix, partitions=count, explicit=True)
        return KStream(self._plan, node.name, False)

    def _repartitioned(self, prefix: str) -> str:
        """The node to read from: this one, or a repartition of it if the key may have
        changed (``KStreamImpl`` before a stateful operation)."""
        if not self._repartition_required:
            return self._name
        return self._plan.repartition(self._name, prefix).name

    # -- into tables and groups --------------------------------------------------------------

    def to_table(
        self, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """A table of the latest value per key: each record upserts its key and a ``null``
        value deletes it. A stream marked for repartitioning goes through
        ``<name>-repartition`` first. ``materialized_as`` names (and so exposes) the
        table's store.

        >>> from tablestream.dsl import StreamsBuilder
        >>> table = StreamsBuilder().stream("customers").to_table(materialized_as="customers-by-id")
        >>> table.node
        ToTable(name='KSTREAM-TOTABLE-0000000001', parent='KSTREAM-SOURCE-0000000000', store='customers-by-id', queryable=True)
        """
        method = "KStream.to_table()"
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_TOTABLE)
        store = check_name(materialized_as, method, "store name")
        if store is None:
            store = self._plan.names.new_store_name(naming.KSTREAM_TOTABLE)
        self._plan.claim_store(store)
        parent = self._repartitioned(node_name)
        node = ToTable(
            name=node_name, parent=parent, store=store, queryable=materialized_as is not None
        )
        self._plan.add(node)
        return ktable.KTable(self._plan, node_name)

    def group_by_key(self, *, name: str | None = None) -> grouped.KGroupedStream:
        """Group records by their current key for an aggregation. No node is added; if the
        stream is marked for repartitioning, the aggregation reads through a repartition
        topic named ``<name>-repartition`` (default: after the aggregation's store).

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("orders").group_by_key().count()
        <KTable KSTREAM-AGGREGATE-0000000002>
        """
        method = "KStream.group_by_key()"
        given = check_name(name, method)
        return grouped.KGroupedStream(self._plan, self._name, self._repartition_required, given)

    def group_by(self, selector: Any, *, name: str | None = None) -> grouped.KGroupedStream:
        """Group records by a new key from ``selector`` (SQL, Column or callable
        ``(key, value) -> group key``). Always repartitions before aggregating. ``name``
        names both the key-selecting node and the repartition topic, as Kafka's
        ``Grouped.as``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> per_customer = StreamsBuilder().stream("orders").group_by("customer").sum("amount")
        >>> per_customer.node.parent
        'KSTREAM-SOURCE-0000000006'
        """
        method = "KStream.group_by()"
        prepared = fn.prepare(selector, fn.KEY_SELECTOR, method)
        given = check_name(name, method)
        node_name = self._plan.names.or_generate(given, naming.KSTREAM_KEY_SELECT)
        self._plan.add(
            SelectKey(
                name=node_name,
                parent=self._name,
                selector=self._bind(prepared, node_name, "selector"),
            )
        )
        return grouped.KGroupedStream(self._plan, node_name, True, given)

    # -- joins ---------------------------------------------------------------------------

    def join(
        self,
        table: ktable.KTable | ktable.GlobalKTable,
        joiner: Any,
        *,
        key_selector: Any = None,
        name: str | None = None,
        strict: bool = False,
    ) -> KStream:
        """Join each record with the ``table`` row of its key, as of the record's time
        (table updates with earlier timestamps count, later ones do not); records
        without a row produce nothing. Only stream records produce output, with the
        stream record's key and timestamp and ``joiner(value, table value)`` as value
        (SQL over ``left`` and ``right``, a Column, or a callable ``(left, right)``).

        Against a :class:`~tablestream.dsl.GlobalKTable`, ``key_selector`` (SQL, Column or
        callable ``(key, value)``) picks the table key; no repartitioning is needed. A
        stream marked for repartitioning is repartitioned before a table join, through
        ``<name>-repartition`` (a second join of the same stream reuses the topic).
        ``strict`` rejects a table whose topic has another partition count than the
        stream's (ksqlDB's co-partitioning rule); by default Spark's shuffle aligns them.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> customers = builder.table("customers", value_schema="name STRING")
        >>> orders = builder.stream("orders", value_schema="customer STRING, amount DOUBLE")
        >>> orders.select_key("customer").join(customers, "struct(left.amount, right.name)").node.name
        'KSTREAM-JOIN-0000000005'
        """
        return self._join(table, joiner, key_selector, name, strict, "inner", "KStream.join()")

    def left_join(
        self,
        table: ktable.KTable | ktable.GlobalKTable,
        joiner: Any,
        *,
        key_selector: Any = None,
        name: str | None = None,
        strict: bool = False,
    ) -> KStream:
        """Like :meth:`join`, but a record without a table row (or with a null key, or a
        key selector returning null) produces ``joiner(value, None)``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> countries = builder.global_table("countries", value_schema="name STRING")
        >>> visits = builder.stream("visits", value_schema="country STRING")
        >>> visits.left_join(countries, lambda v, c: [v, c], key_selector="country").node.name
        'KSTREAM-LEFTJOIN-0000000004'
        """
        return self._join(table, joiner, key_selector, name, strict, "left", "KStream.left_join()")

    def _join(self, table, joiner, key_selector, name, strict, kind, method) -> KStream:
        if not isinstance(table, (ktable.KTable, ktable.GlobalKTable)):
            raise InvalidTypeError(f"{method}: table must be a KTable or a GlobalKTable")
        if table.plan is not self._plan:
            raise InvalidArgumentError(f"{method}: the table belongs to another StreamsBuilder")
        prepared = fn.prepare(joiner, fn.JOINER, method)
        given = check_name(name, method)
        prefix = naming.KSTREAM_LEFTJOIN if kind == "left" else naming.KSTREAM_JOIN
        node_name = self._plan.names.or_generate(given, prefix)
        joiner_expr = self._bind(prepared, node_name, "joiner")
        if isinstance(table, ktable.GlobalKTable):
            if key_selector is None:
                raise InvalidArgumentError(f"{method}: a GlobalKTable join needs a key_selector")
            selector = self._bind(
                fn.prepare(key_selector, fn.KEY_SELECTOR, method), node_name, "key_selector"
            )
            self._plan.add(
                StreamGlobalTableJoin(
                    name=node_name,
                    parent=self._name,
                    table=table.name,
                    key_selector=selector,
                    joiner=joiner_expr,
                    kind=kind,
                )
            )
            self._plan.add_store_reader(table.name, node_name)
            return KStream(self._plan, node_name, self._repartition_required)
        if key_selector is not None:
            raise InvalidArgumentError(f"{method}: key_selector is for GlobalKTable joins; a KTable joins on the key")
        parent = self._name
        if self._repartition_required:
            parent = self._join_repartitioned(given if given is not None else self._name)
        self._plan.add(
            StreamTableJoin(
                name=node_name,
                parent=parent,
                table=table.name,
                joiner=joiner_expr,
                kind=kind,
                strict=bool(strict),
            )
        )
        self._plan.add_store_reader(table.name, node_name)
        return KStream(self._plan, node_name, False)

    def _join_repartitioned(self, prefix: str) -> str:
        """``KStreamImpl.repartitionForJoin``: one repartition per stream and name."""
        if self._join_repartition is None or self._join_repartition[0] != prefix:
            self._join_repartition = (prefix, self._plan.repartition(self._name, prefix).name)
        return self._join_repartition[1]

    # -- out -----------------------------------------------------------------------------

    def to(
        self,
        topic: str,
        *,
        key_format: str | None = None,
        value_format: str | None = None,
        key_schema: Any = None,
        value_schema: Any = None,
        name: str | None = None,
    ) -> None:
        """Write the records to ``topic``. Formats are ksqlDB names (``KAFKA``, ``JSON``,
        ``AVRO``, ``DELIMITED``, ...); ``None`` uses the topic's own settings.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> builder.stream("orders").to("orders-copy", value_format="avro")
        >>> builder.build().sinks
        (ToTopic(name='KSTREAM-SINK-0000000001', parent='KSTREAM-SOURCE-0000000000', topic='orders-copy', key_format=None, value_format='AVRO', key_schema=None, value_schema=None),)
        """
        method = "KStream.to()"
        check_topic(topic, method)
        key = check_format(key_format, method, "key format", required=False)
        value = check_format(value_format, method, "value format", required=False)
        key_text = schema_text(key_schema, method, "key schema")
        value_text = schema_text(value_schema, method, "value schema")
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KSTREAM_SINK)
        self._plan.add(
            ToTopic(
                name=node_name,
                parent=self._name,
                topic=topic,
                key_format=key,
                value_format=value,
                key_schema=key_text,
                value_schema=value_text,
            )
        )


class BranchedKStream:
    """The branches of a :meth:`KStream.split`, added in order with :meth:`branch` and
    closed with :meth:`default_branch` or :meth:`no_default_branch`, which return the
    branch streams by name.

    >>> from tablestream.dsl import StreamsBuilder
    >>> branches = StreamsBuilder().stream("orders").split().branch("amount < 0").no_default_branch()
    >>> branches
    {'KSTREAM-BRANCH-00000000011': <KStream KSTREAM-BRANCH-00000000011>}
    """

    __slots__ = ("_branches", "_closed", "_name", "_plan", "_predicates", "_repartition_required")

    def __init__(self, plan: PlanBuilder, name: str, repartition_required: bool) -> None:
        self._plan = plan
        self._name = name
        self._repartition_required = repartition_required
        self._predicates: list[Expr] = []
        self._branches: dict[str, KStream] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"<BranchedKStream {self._name} {list(self._branches)}>"

    def branch(self, predicate: Any, *, name: str | None = None) -> BranchedKStream:
        """Add a branch taking the records that satisfy ``predicate`` (SQL, Column or
        callable ``(key, value) -> bool``) and no earlier branch's predicate. ``name`` is
        appended to the split's name to name the branch (default: its position, from 1).
        Predicates are as in :meth:`KStream.filter`: BOOLEAN, a null result not satisfied.

        >>> from tablestream.dsl import StreamsBuilder
        >>> b = StreamsBuilder().stream("orders").split(name="s-").branch("amount > 10", name="big")
        >>> b.branch("amount > 5", name="mid").no_default_branch()["s-mid"].node.preceding
        (SqlExpr(sql='amount > 10'),)
        """
        method = "BranchedKStream.branch()"
        self._check_open(method)
        prepared = fn.prepare(predicate, fn.PREDICATE, method)
        node_name = self._branch_name(name, len(self._predicates) + 1, method)
        bound = prepared.bind(self._plan, f"{node_name}.predicate")
        self._add(
            Branch(
                name=node_name,
                parent=self._name,
                predicate=bound,
                preceding=tuple(self._predicates),
            )
        )
        self._predicates.append(bound)
        return self

    def default_branch(self, *, name: str | None = None) -> dict[str, KStream]:
        """Close the split with a branch for the records no predicate matched, and return
        every branch by name, in the order added.

        >>> from tablestream.dsl import StreamsBuilder
        >>> b = StreamsBuilder().stream("orders").split().branch("amount > 10")
        >>> list(b.default_branch())
        ['KSTREAM-BRANCH-00000000011', 'KSTREAM-BRANCH-00000000010']
        """
        method = "BranchedKStream.default_branch()"
        self._check_open(method)
        node_name = self._branch_name(name, 0, method)
        self._add(
            Branch(
                name=node_name, parent=self._name, predicate=None, preceding=tuple(self._predicates)
            )
        )
        self._closed = True
        return dict(self._branches)

    def no_default_branch(self) -> dict[str, KStream]:
        """Close the split; records no predicate matched are dropped. Returns every branch
        by name, in the order added."""
        self._check_open("BranchedKStream.no_default_branch()")
        self._closed = True
        return dict(self._branches)

    def _check_open(self, method: str) -> None:
        if self._closed:
            raise InvalidArgumentError(
                f"{method}: the split {self._name} is already closed by default_branch() or no_default_branch()"
            )

    def _branch_name(self, name: str | None, position: int, method: str) -> str:
        suffix = str(position) if name is None else name
        if not isinstance(suffix, str):
            raise InvalidTypeError(f"{method}: name must be a str, got {type(suffix).__name__}")
        branch_name = check_name(self._name + suffix, method, "branch name")
        assert branch_name is not None
        self._plan.names.new_processor_name(branch_name)  # Kafka spends a name per branch
        return branch_name

    def _add(self, node: Branch) -> None:
        self._plan.add(node)
        self._branches[node.name] = KStream(self._plan, node.name, self._repartition_required)

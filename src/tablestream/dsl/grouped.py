"""Grouped streams and tables: the step between ``group_by`` and an aggregation."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from tablestream.dsl import functions as fn
from tablestream.dsl import ktable
from tablestream.dsl._common import check_name
from tablestream.dsl.aggregates import Aggregation
from tablestream.plan import aggregate as agg
from tablestream.plan import naming
from tablestream.plan.aggregate import (
    Aggregate,
    AggregateNode,
    Avg,
    Count,
    Max,
    Min,
    NumericAggregate,
    NumericAggregates,
    Reduce,
    Sum,
)
from tablestream.plan.base import InputKind
from tablestream.plan.errors import InvalidArgumentError, InvalidTypeError
from tablestream.plan.stateless import Repartition

if TYPE_CHECKING:
    from tablestream.plan import PlanBuilder

__all__ = ["KGroupedStream", "KGroupedTable"]

# (name, parent, store, queryable) -> node
_MakeNode = Callable[[str, str, str, bool], AggregateNode]


class _Grouped:
    """What both groupings share: ``count`` and ksqlDB's built-in aggregates."""

    __slots__ = ("_grouping_name", "_parent", "_plan", "_repartition")

    _TYPE: ClassVar[str]
    _KIND: ClassVar[InputKind]
    _AGGREGATE: ClassVar[str]  # Kafka's processor (and count's store) prefix

    def __init__(self, plan: PlanBuilder, parent: str, grouping_name: str | None) -> None:
        self._plan = plan
        self._parent = parent
        self._grouping_name = grouping_name
        self._repartition: str | None = None  # shared by the aggregations of a named grouping

    @property
    def plan(self) -> PlanBuilder:
        """The plan this grouping belongs to."""
        return self._plan

    def count(
        self, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """The number of records (stream) or rows (table) per group. For a table, a group
        with no rows left is deleted.

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("clicks").group_by_key().count(materialized_as="clicks-per-user").node
        Count(name='KSTREAM-AGGREGATE-0000000001', parent='KSTREAM-SOURCE-0000000000', input_kind='stream', store='clicks-per-user', queryable=True)
        """
        return self._builtin_node(f"{self._TYPE}.count()", name, materialized_as, Count, lambda n: {})

    def agg(
        self,
        aggregations: Mapping[str, Aggregation] | None = None,
        /,
        *,
        name: str | None = None,
        materialized_as: str | None = None,
        **named: Aggregation,
    ) -> ktable.KTable:
        """Several of count, sum and avg per group at once (pyspark's ``agg``), in one
        store and one stage, as ksqlDB computes ``COUNT(*), SUM(x) ... GROUP BY``: the
        value is a struct of the results, named by the keywords (or the keys of
        ``aggregations``, for a result called ``name`` or ``materialized_as``), in order.
        Each result is exactly what its own :meth:`count`, :meth:`sum` or :meth:`avg`
        gives (types, nulls); a group with no rows left is deleted; its timestamp is the
        largest that reached it.

        >>> from tablestream.dsl import StreamsBuilder
        >>> from tablestream.dsl import aggregates as agg
        >>> builder = StreamsBuilder()
        >>> views = builder.stream("pageviews", value_schema="region STRING, ms BIGINT")
        >>> per_region = views.group_by("region").agg(
        ...     views=agg.count(), total_ms=agg.sum("ms"), mean_ms=agg.avg("ms"))
        >>> [str(a) for a in per_region.node.aggregations]
        ['views=count()', 'total_ms=sum(ms)', 'mean_ms=avg(ms)']
        >>> print(builder.build().describe())  # doctest: +ELLIPSIS
        Topologies:
        ...
            Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
              --> none
              <-- KSTREAM-SOURCE-0000000006
        <BLANKLINE>
        <BLANKLINE>
        """
        method = f"{self._TYPE}.agg()"
        given: dict[str, Aggregation] = {}
        if aggregations is not None:
            if not isinstance(aggregations, Mapping):
                raise InvalidTypeError(
                    f"{method}: aggregations must be a mapping of result names to aggregations, "
                    f"got {type(aggregations).__name__}"
                )
            given.update(aggregations)
        for result, aggregation in named.items():
            if result in given:
                raise InvalidArgumentError(f"{method}: the result {result!r} is given twice")
            given[result] = aggregation
        if not given:
            raise InvalidArgumentError(
                f"{method}: no aggregation given (e.g. agg(views=aggregates.count()))"
            )
        prepared = []
        for result, aggregation in given.items():
            if not isinstance(aggregation, Aggregation):
                raise InvalidTypeError(
                    f"{method}: {result!r} must be an aggregation of tablestream.dsl.aggregates "
                    f"(count(), sum(column), avg(column)); got {type(aggregation).__name__}"
                )
            column = aggregation.column
            if column is None and aggregation.function != "count":
                raise InvalidTypeError(f"{method}: {result}: {aggregation.function}() needs a column")
            where = f"{method}: {result}"
            prepared.append((result, aggregation.function, None if column is None else fn.prepare(column, fn.COLUMN, where)))
        return self._builtin_node(
            method, name, materialized_as, NumericAggregates,
            lambda n: {"aggregations": tuple(
                NumericAggregate(result, function, None if column is None else column.bind(self._plan, f"{n}.{result}"))
                for result, function, column in prepared
            )},
        )

    def sum(
        self, column: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """ksqlDB's ``SUM(column)`` per group; ``column`` is SQL (a field name or an
        expression) or a Spark Column. For a table, a group with no rows left is deleted.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().table("orders").group_by(("customer", "value")).sum("amount")
        >>> type(t.node).__name__, t.node.input_kind, t.node.column
        ('Sum', 'table', SqlExpr(sql='amount'))
        """
        return self._builtin(Sum, column, name, materialized_as)

    def avg(
        self, column: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """ksqlDB's ``AVG(column)`` per group (see :meth:`sum`)."""
        return self._builtin(Avg, column, name, materialized_as)

    def min(
        self, column: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """ksqlDB's ``MIN(column)`` per group (see :meth:`sum`)."""
        return self._builtin(Min, column, name, materialized_as)

    def max(
        self, column: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """ksqlDB's ``MAX(column)`` per group (see :meth:`sum`)."""
        return self._builtin(Max, column, name, materialized_as)

    def collect_list(
        self,
        column: Any,
        *,
        limit: int | None = 1000,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """ksqlDB's ``COLLECT_LIST(column)`` per group: an array of every value, nulls
        included, in arrival order; values past ``limit`` are left out (``None``: no
        limit; ksqlDB's ``ksql.functions.collect_list.limit``). For a table, an update
        removes the row's old value from its old group's array (its last occurrence) and
        adds the new one to its new group's; a group with no rows left is deleted.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().stream("orders").group_by("customer").collect_list("item", limit=10)
        >>> type(t.node).__name__, t.node.column, t.node.limit
        ('CollectList', SqlExpr(sql='item'), 10)
        """
        return self._builtin(agg.CollectList, column, name, materialized_as, "collect_list", limit=limit)

    def collect_set(
        self,
        column: Any,
        *,
        limit: int | None = 1000,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """ksqlDB's ``COLLECT_SET(column)`` per group: an array of the distinct values
        (null is one of them) in order of first arrival, at most ``limit``. For a table,
        a value leaves its group's array when no row of the group holds it any more.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().table("users").group_by(("region", "value")).collect_set("city")
        >>> type(t.node).__name__, t.node.input_kind, t.node.limit
        ('CollectSet', 'table', 1000)
        """
        return self._builtin(agg.CollectSet, column, name, materialized_as, "collect_set", limit=limit)

    def count_distinct(
        self, column: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """ksqlDB's ``COUNT_DISTINCT(column)`` per group, exact (ksqlDB's is an estimate):
        the number of distinct non-null values; a group of nulls counts 0.

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("clicks").group_by_key().count_distinct("url").node.column
        SqlExpr(sql='url')
        """
        return self._builtin(agg.CountDistinct, column, name, materialized_as, "count_distinct")

    def _builtin(
        self,
        node_class: type[AggregateNode],
        column: Any,
        name: str | None,
        materialized_as: str | None,
        method_name: str | None = None,
        **options: Any,
    ) -> ktable.KTable:
        method = f"{self._TYPE}.{method_name or node_class.__name__.lower()}()"
        prepared = fn.prepare(column, fn.COLUMN, method)
        return self._builtin_node(
            method, name, materialized_as, node_class,
            lambda n: {"column": prepared.bind(self._plan, f"{n}.column"), **options},
        )

    def _builtin_node(
        self,
        method: str,
        name: str | None,
        materialized_as: str | None,
        node_class: type[AggregateNode],
        fields: Callable[[str], dict[str, Any]],
    ) -> ktable.KTable:
        """A built-in aggregation's node; ``fields(node name)``: its own fields."""
        kind = self._KIND
        return self._build(
            method,
            name,
            materialized_as,
            self._AGGREGATE,
            lambda n, p, s, q: node_class(
                name=n, parent=p, input_kind=kind, store=s, queryable=q, **fields(n)
            ),
        )

    def _build(
        self,
        method: str,
        name: str | None,
        materialized_as: str | None,
        prefix: str,
        make: _MakeNode,
    ) -> ktable.KTable:
        raise NotImplementedError


class KGroupedStream(_Grouped):
    """A stream grouped by key, waiting for an aggregation. Every aggregation makes a
    table keyed by group, kept in a store named ``materialized_as`` (default: generated,
    e.g. ``KSTREAM-AGGREGATE-STATE-STORE-<n>``); ``name`` replaces the generated
    processor name.

    If the grouping may have changed the key, each aggregation reads through a
    repartition topic: ``<grouping name>-repartition`` if the grouping was named (shared
    by every aggregation of this grouping), else ``<store>-repartition``.

    >>> from tablestream.dsl import StreamsBuilder
    >>> builder = StreamsBuilder()
    >>> builder.stream("orders").select_key("customer").group_by_key().count()
    <KTable KSTREAM-AGGREGATE-0000000003>
    >>> print(builder.build().describe())
    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000000 (topics: [orders])
          --> KSTREAM-KEY-SELECT-0000000001
        Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
          --> KSTREAM-FILTER-0000000005
          <-- KSTREAM-SOURCE-0000000000
        Processor: KSTREAM-FILTER-0000000005 (stores: [])
          --> KSTREAM-SINK-0000000004
          <-- KSTREAM-KEY-SELECT-0000000001
        Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)
          <-- KSTREAM-FILTER-0000000005
    <BLANKLINE>
      Sub-topology: 1
        Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])
          --> KSTREAM-AGGREGATE-0000000003
        Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
          --> none
          <-- KSTREAM-SOURCE-0000000006
    <BLANKLINE>
    <BLANKLINE>
    """

    __slots__ = ("_repartition_required",)

    _TYPE = "KGroupedStream"
    _KIND = "stream"
    _AGGREGATE = naming.KSTREAM_AGGREGATE

    def __init__(
        self, plan: PlanBuilder, parent: str, repartition_required: bool, grouping_name: str | None
    ) -> None:
        super().__init__(plan, parent, grouping_name)
        self._repartition_required = repartition_required

    @property
    def repartition_required(self) -> bool:
        """Whether aggregations read through a repartition topic."""
        return self._repartition_required

    def __repr__(self) -> str:
        mark = " (repartition required)" if self._repartition_required else ""
        return f"<KGroupedStream {self._parent}{mark}>"

    def latest_by_offset(
        self,
        column: Any,
        n: int | None = None,
        *,
        ignore_nulls: bool = True,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """ksqlDB's ``LATEST_BY_OFFSET(column[, n][, ignore_nulls])`` per group: the value
        of the group's last record by offset (within a batch, the ordering key's order;
        a later batch after an earlier one). With ``n``, an array of the last ``n``
        values, oldest first. Null values are skipped unless ``ignore_nulls`` is false; a
        group whose result is null has no row.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().stream("prices").group_by_key().latest_by_offset("price", 3)
        >>> type(t.node).__name__, t.node.n, t.node.ignore_nulls
        ('LatestByOffset', 3, True)
        """
        return self._builtin(
            agg.LatestByOffset, column, name, materialized_as, "latest_by_offset", n=n, ignore_nulls=ignore_nulls
        )

    def earliest_by_offset(
        self,
        column: Any,
        n: int | None = None,
        *,
        ignore_nulls: bool = True,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """ksqlDB's ``EARLIEST_BY_OFFSET(column[, n][, ignore_nulls])`` per group: the
        value of the group's first record by offset, or an array of the first ``n`` (see
        :meth:`latest_by_offset`).

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().stream("logins").group_by_key().earliest_by_offset("at").node.ignore_nulls
        True
        """
        return self._builtin(
            agg.EarliestByOffset, column, name, materialized_as, "earliest_by_offset", n=n, ignore_nulls=ignore_nulls
        )

    def reduce(
        self, reducer: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> ktable.KTable:
        """Combine each key's values with ``reducer(aggregate, value)``; the first value of a
        key is its first aggregate.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().stream("prices").group_by_key().reduce(lambda agg, v: max(agg, v))
        >>> t.node.store
        'KSTREAM-REDUCE-STATE-STORE-0000000001'
        """
        method = "KGroupedStream.reduce()"
        prepared = fn.prepare(reducer, fn.REDUCER, method)
        return self._build(
            method,
            name,
            materialized_as,
            naming.KSTREAM_REDUCE,
            lambda n, p, s, q: Reduce(
                name=n,
                parent=p,
                input_kind="stream",
                store=s,
                queryable=q,
                adder=prepared.bind(self._plan, f"{n}.adder"),
            ),
        )

    def aggregate(
        self,
        initializer: Any,
        aggregator: Any,
        *,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """Fold each key's records into an aggregate: ``initializer()`` starts it,
        ``aggregator(key, value, aggregate)`` adds a record (a fourth parameter, if
        declared, receives the record's key before grouping). Both are Python callables;
        for SQL expressions or Spark Columns use :meth:`count`, :meth:`sum`, :meth:`avg`,
        :meth:`min` or :meth:`max`.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().stream("orders").group_by_key().aggregate(
        ...     lambda: 0.0, lambda key, order, total: total + order["amount"])
        >>> t.node.initializer.arity, t.node.adder.arity
        (0, 3)
        """
        method = "KGroupedStream.aggregate()"
        init = fn.prepare(initializer, fn.INITIALIZER, method)
        adder = fn.prepare(aggregator, fn.AGGREGATOR, method)
        return self._build(
            method,
            name,
            materialized_as,
            naming.KSTREAM_AGGREGATE,
            lambda n, p, s, q: Aggregate(
                name=n,
                parent=p,
                input_kind="stream",
                store=s,
                queryable=q,
                initializer=init.bind(self._plan, f"{n}.initializer"),
                adder=adder.bind(self._plan, f"{n}.adder"),
            ),
        )

    def _build(
        self,
        method: str,
        name: str | None,
        materialized_as: str | None,
        prefix: str,
        make: _MakeNode,
    ) -> ktable.KTable:
        # KGroupedStreamImpl + GroupedStreamAggregateBuilder: store, processor, repartition.
        given = check_name(name, method)
        store = check_name(materialized_as, method, "store name")
        store = self._plan.claim_store(
            store if store is not None else self._plan.names.new_store_name(prefix)
        )
        node_name = self._plan.names.or_generate(given, prefix)
        parent = self._parent
        if self._repartition_required:
            if self._repartition is not None and self._grouping_name is not None:
                self._plan.repartition_names(self._grouping_name)  # spent, the topic is shared
            else:
                self._repartition = self._plan.repartition(
                    self._parent, self._grouping_name or store
                ).name
            parent = self._repartition
        node = make(node_name, parent, store, materialized_as is not None)
        self._plan.add(node)
        return ktable.KTable(self._plan, node.name)


class KGroupedTable(_Grouped):
    """A table re-keyed by :meth:`KTable.group_by <tablestream.dsl.KTable.group_by>`, waiting
    for an aggregation. Aggregations always read through a repartition topic
    (``<grouping name>-repartition``, shared by every aggregation of a named grouping,
    else ``<store>-repartition``) and keep their result in a store; an update that moves a
    row subtracts it from its old group before adding it to its new one (KIP-241).

    >>> from tablestream.dsl import StreamsBuilder
    >>> builder = StreamsBuilder()
    >>> builder.table("input-topic").group_by(lambda key, value: (value, value)).count()
    <KTable KTABLE-AGGREGATE-0000000007>
    >>> print(builder.build().describe())
    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])
          --> KTABLE-SOURCE-0000000002
        Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])
          --> KTABLE-SELECT-0000000003
          <-- KSTREAM-SOURCE-0000000001
        Processor: KTABLE-SELECT-0000000003 (stores: [])
          --> KSTREAM-SINK-0000000005
          <-- KTABLE-SOURCE-0000000002
        Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)
          <-- KTABLE-SELECT-0000000003
    <BLANKLINE>
      Sub-topology: 1
        Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])
          --> KTABLE-AGGREGATE-0000000007
        Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])
          --> none
          <-- KSTREAM-SOURCE-0000000006
    <BLANKLINE>
    <BLANKLINE>
    """

    __slots__ = ()

    _TYPE = "KGroupedTable"
    _KIND = "table"
    _AGGREGATE = naming.KTABLE_AGGREGATE

    def __repr__(self) -> str:
        return f"<KGroupedTable {self._parent}>"

    def reduce(
        self,
        adder: Any,
        subtractor: Any,
        *,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """Combine each group's values: ``adder(aggregate, value)`` adds a new row's value,
        ``subtractor(aggregate, value)`` removes an old one. The group is deleted when the
        subtractor returns ``None``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().table("balances").group_by(lambda k, v: ("all", v)).reduce(
        ...     lambda agg, v: agg + v, lambda agg, v: agg - v)
        >>> t.node.name, t.node.store
        ('KTABLE-REDUCE-0000000007', 'KTABLE-AGGREGATE-STATE-STORE-0000000004')
        """
        method = "KGroupedTable.reduce()"
        add = fn.prepare(adder, fn.REDUCE_ADDER, method)
        sub = fn.prepare(subtractor, fn.REDUCE_SUBTRACTOR, method)
        return self._build(
            method,
            name,
            materialized_as,
            naming.KTABLE_REDUCE,
            lambda n, p, s, q: Reduce(
                name=n,
                parent=p,
                input_kind="table",
                store=s,
                queryable=q,
                adder=add.bind(self._plan, f"{n}.adder"),
                subtractor=sub.bind(self._plan, f"{n}.subtractor"),
            ),
        )

    def aggregate(
        self,
        initializer: Any,
        adder: Any,
        subtractor: Any,
        *,
        name: str | None = None,
        materialized_as: str | None = None,
    ) -> ktable.KTable:
        """Fold each group: ``initializer()`` starts it, ``adder(key, value, aggregate)``
        adds a row, ``subtractor(key, value, aggregate)`` removes one. Both may declare a
        fourth parameter receiving the source row's key (KIP-241). The group is deleted
        when the subtractor returns ``None``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().table("users").group_by(lambda k, v: (v["region"], v)).aggregate(
        ...     lambda: [],
        ...     lambda region, user, names, user_id: names + [user_id],
        ...     lambda region, user, names, user_id: [n for n in names if n != user_id])
        >>> t.node.adder.arity, t.node.subtractor.arity
        (4, 4)
        """
        method = "KGroupedTable.aggregate()"
        init = fn.prepare(initializer, fn.INITIALIZER, method)
        add = fn.prepare(adder, fn.ADDER, method)
        sub = fn.prepare(subtractor, fn.SUBTRACTOR, method)
        return self._build(
            method,
            name,
            materialized_as,
            naming.KTABLE_AGGREGATE,
            lambda n, p, s, q: Aggregate(
                name=n,
                parent=p,
                input_kind="table",
                store=s,
                queryable=q,
                initializer=init.bind(self._plan, f"{n}.initializer"),
                adder=add.bind(self._plan, f"{n}.adder"),
                subtractor=sub.bind(self._plan, f"{n}.subtractor"),
            ),
        )

    def _build(
        self,
        method: str,
        name: str | None,
        materialized_as: str | None,
        prefix: str,
        make: _MakeNode,
    ) -> ktable.KTable:
        # KGroupedTableImpl.doAggregate: store (always KTABLE-AGGREGATE-), sink, source, processor.
        given = check_name(name, method)
        store = check_name(materialized_as, method, "store name")
        if store is None:
            store = self._plan.names.new_store_name(naming.KTABLE_AGGREGATE)
        self._plan.claim_store(store)
        names = self._plan.names
        sink = names.suffix_or_generate(given, "-sink", naming.KSTREAM_SINK)
        source = names.suffix_or_generate(given, "-source", naming.KSTREAM_SOURCE)
        node_name = names.or_generate(given, prefix)
        if self._repartition is None or self._grouping_name is None:
            topic = naming.validate_name(
                (self._grouping_name or store) + naming.REPARTITION_TOPIC_SUFFIX,
                "Repartition topic name",
            )
            self._plan.add(
                Repartition(
                    name=source, parent=self._parent, topic=topic, sink_name=sink, filter_name=None
                )
            )
            self._repartition = source
        node = make(node_name, self._repartition, store, materialized_as is not None)
        self._plan.add(node)
        return ktable.KTable(self._plan, node.name)

"""``KTable`` and ``GlobalKTable``: changelogs seen as tables, one current value per key."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tablestream.dsl import functions as fn
from tablestream.dsl import grouped, kstream
from tablestream.dsl._common import PlanFacade, check_name
from tablestream.plan import naming
from tablestream.plan.aggregate import AggregateNode, TableGroupBy
from tablestream.plan.errors import InvalidArgumentError, InvalidTypeError
from tablestream.plan.joins import ForeignKeyJoin, TableTableJoin
from tablestream.plan.sources import GlobalTableSource, TableSource
from tablestream.plan.stateless import TableFilter, TableMapValues, ToStream, ToTable

if TYPE_CHECKING:
    from tablestream.plan import PlanNode

__all__ = ["GlobalKTable", "KTable"]

# The nodes a KTable can stand for.
_TABLE_NODES = (
    TableSource,
    ToTable,
    AggregateNode,
    TableFilter,
    TableMapValues,
    TableTableJoin,
    ForeignKeyJoin,
)


class KTable(PlanFacade):
    """A table: a changelog in which each record is an update of its key (an upsert), a
    ``null`` value a deletion. Operations see both the old and the new value of each
    change, so a filter deletes a row that stops passing and an aggregation subtracts
    what a row contributed before adding what it contributes now.

    Made by :meth:`StreamsBuilder.table <tablestream.dsl.StreamsBuilder.table>`,
    :meth:`KStream.to_table <tablestream.dsl.KStream.to_table>` or an aggregation.

    >>> from tablestream.dsl import StreamsBuilder
    >>> builder = StreamsBuilder()
    >>> users = builder.table("users", value_schema="name STRING, region STRING")
    >>> users.group_by(("region", "name")).count(materialized_as="users-per-region")
    <KTable KTABLE-AGGREGATE-0000000006>
    >>> [store.name for store in builder.build().stores]
    ['users-STATE-STORE-0000000000', 'users-per-region']
    """

    __slots__ = ()


    @property
    def queryable_store_name(self) -> str | None:
        """The store a user named for this table (``materialized_as``), else ``None``."""
        node = self.node
        assert isinstance(node, _TABLE_NODES)
        return node.store if node.queryable else None

    def __repr__(self) -> str:
        return f"<KTable {self._name}>"

    def filter(
        self, predicate: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> KTable:
        """A table of the rows that satisfy ``predicate``; when a row stops satisfying it,
        the row is deleted. ``predicate`` is SQL, a Column or a callable
        ``(key, value) -> bool``; ``materialized_as`` keeps the result in a store of that
        name. As for :meth:`KStream.filter <tablestream.dsl.KStream.filter>`, a SQL or
        Column predicate must be ``BOOLEAN``, and a row whose predicate is null does not
        satisfy it.

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().table("users").filter("age >= 18").node
        TableFilter(name='KTABLE-FILTER-0000000003', parent='KTABLE-SOURCE-0000000002', predicate=SqlExpr(sql='age >= 18'), negate=False, store=None, queryable=False)
        """
        return self._filter(
            predicate, name, materialized_as, negate=False, method="KTable.filter()"
        )

    def filter_not(
        self, predicate: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> KTable:
        """A table of the rows that do *not* satisfy ``predicate`` (see :meth:`filter`).

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().table("users").filter_not("banned").node.negate
        True
        """
        return self._filter(
            predicate, name, materialized_as, negate=True, method="KTable.filter_not()"
        )

    def _filter(
        self,
        predicate: Any,
        name: str | None,
        materialized_as: str | None,
        *,
        negate: bool,
        method: str,
    ) -> KTable:
        prepared = fn.prepare(predicate, fn.PREDICATE, method)
        store = self._store(materialized_as, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KTABLE_FILTER)
        predicate_expr = prepared.bind(self._plan, f"{node_name}.predicate")
        return self._derive(
            TableFilter(
                name=node_name,
                parent=self._name,
                predicate=predicate_expr,
                negate=negate,
                store=store,
                queryable=store is not None,
            )
        )

    def map_values(
        self, mapper: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> KTable:
        """A table with a new value per row (SQL, Column, or callable ``(value)`` or
        ``(key, value)``); keys are unchanged.

        >>> from tablestream.dsl import StreamsBuilder
        >>> t = StreamsBuilder().table("users").map_values("upper(name)", materialized_as="names")
        >>> t.node.store, t.queryable_store_name
        ('names', 'names')
        """
        method = "KTable.map_values()"
        prepared = fn.prepare(mapper, fn.VALUE_MAPPER, method)
        store = self._store(materialized_as, method)
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KTABLE_MAPVALUES)
        mapper_expr = prepared.bind(self._plan, f"{node_name}.mapper")
        return self._derive(
            TableMapValues(
                name=node_name,
                parent=self._name,
                mapper=mapper_expr,
                store=store,
                queryable=store is not None,
            )
        )

    def to_stream(self, *, name: str | None = None) -> kstream.KStream:
        """The table's changes as a stream: each update a record, each deletion a
        tombstone (a record with a ``null`` value).

        >>> from tablestream.dsl import StreamsBuilder
        >>> StreamsBuilder().table("users").to_stream()
        <KStream KTABLE-TOSTREAM-0000000003>
        """
        method = "KTable.to_stream()"
        node_name = self._plan.names.or_generate(check_name(name, method), naming.KTABLE_TOSTREAM)
        self._plan.add(ToStream(name=node_name, parent=self._name))
        return kstream.KStream(self._plan, node_name, False)

    def group_by(self, mapper: Any, *, name: str | None = None) -> grouped.KGroupedTable:
        """Group rows by a new key for an aggregation, with a key-value mapper
        ``(key, value) -> (group key, value)`` (a callable, or a pair of SQL expressions /
        Columns). Always repartitions; an update that moves a row subtracts it from its
        old group and adds it to its new one. ``name`` names the mapping node and the
        repartition topic (Kafka's ``Grouped.as``).

        >>> from tablestream.dsl import StreamsBuilder
        >>> g = StreamsBuilder().table("users").group_by(lambda k, v: (v["region"], v))
        >>> g.count().node.parent
        'KSTREAM-SOURCE-0000000006'
        """
        method = "KTable.group_by()"
        prepared = fn.prepare_key_value(mapper, fn.KEY_VALUE_MAPPER, method)
        given = check_name(name, method)
        node_name = self._plan.names.or_generate(given, naming.KTABLE_SELECT)
        self._plan.add(
            TableGroupBy(
                name=node_name,
                parent=self._name,
                mapper=prepared.bind(self._plan, f"{node_name}.mapper"),
            )
        )
        self._plan.require_old_values(self._name)
        return grouped.KGroupedTable(self._plan, node_name, given)

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
        """Write the table's changelog to ``topic``: ``to_stream().to(topic, ...)``.
        ``name`` names the sink.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> builder.table("users").to("users-copy")
        >>> [node.name for node in builder.build().nodes]
        ['KTABLE-SOURCE-0000000002', 'KTABLE-TOSTREAM-0000000003', 'KSTREAM-SINK-0000000004']
        """
        self.to_stream().to(
            topic,
            key_format=key_format,
            value_format=value_format,
            key_schema=key_schema,
            value_schema=value_schema,
            name=name,
        )

    # -- joins ---------------------------------------------------------------------------

    def join(
        self,
        other: KTable,
        joiner: Any,
        *,
        foreign_key: Any = None,
        name: str | None = None,
        materialized_as: str | None = None,
        replicate_right: bool | None = None,
    ) -> KTable:
        """A table of the rows of both tables with the same key, valued
        ``joiner(left value, right value)`` (SQL over ``left`` and ``right``, a Column, or
        a callable ``(left, right)``); updates of either side update the result and a
        deletion on either side deletes it. The result's timestamp is the larger of the
        two rows'.

        With ``foreign_key`` (SQL over the left value, a Column, or a callable ``(value)``
        or ``(key, value)``), each left row joins the right row whose key is its foreign
        key (KIP-213); the result is keyed by the left key, a null foreign key matches
        nothing, and the two topics need not be co-partitioned. ``replicate_right=True``
        keeps the whole right table in every state partition, beside the left rows that
        reference it: a batch is then one stage instead of three (no shuffle by foreign
        key and back), for a right table small enough to hold once per partition (a
        dimension table such as products or customers). ``False`` keeps Kafka's layout
        (subscriptions by foreign key), for a right table of any size. By default
        (``None``) the application chooses at its first start, from the size of the
        right table's topic (see ``Application(replicate_right_up_to=)``).

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> lines = builder.table("order-lines", value_schema="product STRING, qty BIGINT")
        >>> products = builder.table("products", value_schema="name STRING, price DOUBLE")
        >>> priced = lines.join(products, "struct(left.qty, right.price)", foreign_key="product")
        >>> priced.node.name
        'KTABLE-FK-JOIN-OUTPUT-0000000006'
        >>> lines.join(products, "right.price", foreign_key="product", replicate_right=True).node.replicate_right
        True
        """
        return self._join(other, joiner, foreign_key, name, materialized_as, "inner", "KTable.join()", replicate_right)

    def left_join(
        self,
        other: KTable,
        joiner: Any,
        *,
        foreign_key: Any = None,
        name: str | None = None,
        materialized_as: str | None = None,
        replicate_right: bool | None = None,
    ) -> KTable:
        """Like :meth:`join`, but every left row has a result: ``joiner(left, None)``
        while no right row matches (KIP-962: also for a null foreign key).

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> a, b = builder.table("a"), builder.table("b")
        >>> a.left_join(b, lambda l, r: [l, r]).node.name
        'KTABLE-MERGE-0000000006'
        """
        return self._join(other, joiner, foreign_key, name, materialized_as, "left", "KTable.left_join()", replicate_right)

    def outer_join(
        self, other: KTable, joiner: Any, *, name: str | None = None, materialized_as: str | None = None
    ) -> KTable:
        """Like :meth:`join`, but a key of either table has a result; the missing side
        is ``None``.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> a, b = builder.table("a"), builder.table("b")
        >>> a.outer_join(b, "coalesce(left, right)", materialized_as="either").queryable_store_name
        'either'
        """
        return self._join(other, joiner, None, name, materialized_as, "outer", "KTable.outer_join()")

    def _join(self, other, joiner, foreign_key, name, materialized_as, kind, method, replicate_right=None) -> KTable:
        if not isinstance(other, KTable):
            raise InvalidTypeError(f"{method}: other must be a KTable")
        if not (replicate_right is None or isinstance(replicate_right, bool)):
            raise InvalidArgumentError(f"{method}: replicate_right must be True, False or None (chosen), got {replicate_right!r}")
        if replicate_right and foreign_key is None:
            raise InvalidArgumentError(f"{method}: replicate_right applies to foreign-key joins only")
        if other.plan is not self._plan:
            raise InvalidArgumentError(f"{method}: the other table belongs to another StreamsBuilder")
        prepared = fn.prepare(joiner, fn.JOINER, method)
        given = check_name(name, method)
        if foreign_key is not None:
            extractor = fn.prepare(foreign_key, fn.FOREIGN_KEY_EXTRACTOR, method)
            node_name = self._plan.names.or_generate(given, naming.KTABLE_FK_JOIN_OUTPUT)
            subscriptions = self._plan.claim_store(
                self._plan.names.new_store_name(naming.KTABLE_FK_JOIN_SUBSCRIPTION)
                if given is None else f"{given}-subscription-store"
            )
            store = self._store(materialized_as, method)
            node = ForeignKeyJoin(
                name=node_name,
                left=self._name,
                right=other.name,
                foreign_key=extractor.bind(self._plan, f"{node_name}.foreign_key"),
                joiner=prepared.bind(self._plan, f"{node_name}.joiner"),
                kind=kind,
                subscriptions=subscriptions,
                store=store,
                queryable=store is not None,
                replicate_right=replicate_right,
            )
            self._plan.add(node)
            self._plan.add_store_reader(self._name, node_name)
            self._plan.add_store_reader(other.name, node_name)
            return KTable(self._plan, node_name)
        this_prefix, other_prefix = {
            "inner": (naming.KTABLE_JOINTHIS, naming.KTABLE_JOINOTHER),
            "left": (naming.KTABLE_LEFTTHIS, naming.KTABLE_LEFTOTHER),
            "outer": (naming.KTABLE_OUTERTHIS, naming.KTABLE_OUTEROTHER),
        }[kind]
        # KTableImpl.doJoin: the merge name first, then this and other.
        merge_name = self._plan.names.or_generate(given, naming.KTABLE_MERGE)
        this_name = self._plan.names.suffix_or_generate(given, "-join-this", this_prefix)
        other_name = self._plan.names.suffix_or_generate(given, "-join-other", other_prefix)
        store = self._store(materialized_as, method)
        joiner_expr = prepared.bind(self._plan, f"{merge_name}.joiner")
        self._plan.add(
            TableTableJoin(
                name=merge_name,
                left=self._name,
                right=other.name,
                joiner=joiner_expr,
                kind=kind,
                this_name=this_name,
                other_name=other_name,
                store=store,
                queryable=store is not None,
            )
        )
        self._plan.add_store_reader(other.name, this_name)
        self._plan.add_store_reader(self._name, other_name)
        return KTable(self._plan, merge_name)

    def _store(self, materialized_as: str | None, method: str) -> str | None:
        store = check_name(materialized_as, method, "store name")
        return None if store is None else self._plan.claim_store(store)

    def _derive(self, node: PlanNode) -> KTable:
        self._plan.add(node)
        return KTable(self._plan, node.name)


class GlobalKTable(PlanFacade):
    """A table replicated in full to every task, so stream records can look it up by any
    key without repartitioning.

    >>> from tablestream.dsl import StreamsBuilder
    >>> StreamsBuilder().global_table("countries").node.store
    'countries-STATE-STORE-0000000000'
    """

    __slots__ = ()


    @property
    def queryable_store_name(self) -> str | None:
        """The store name a user gave (``materialized_as``), else ``None``; the store itself
        always exists, as in Kafka Streams."""
        node = self.node
        assert isinstance(node, GlobalTableSource)
        return node.store if node.queryable else None

    def __repr__(self) -> str:
        return f"<GlobalKTable {self._name}>"

"""Grouping and aggregation of streams and tables.

Stream ``group_by_key`` makes no node (as in Kafka Streams); stream ``group_by`` is a
:class:`~tablestream.plan.stateless.SelectKey`, and the aggregation that follows reads
through a :class:`~tablestream.plan.stateless.Repartition` when the key may have changed.
Table ``group_by`` is a :class:`TableGroupBy`, always followed by a repartition.

One node per aggregate function, for both inputs (``input_kind``): a stream record only
adds to its group; a table change subtracts the old row from its old group and adds the
new row to its new group (KIP-241), so the table rule is the stream rule with
retraction. :class:`NumericAggregates` computes several of count, sum and avg of one
grouping in one node and one store, as ksqlDB's aggregate step does. ksqlDB's ``LATEST_BY_OFFSET`` and ``EARLIEST_BY_OFFSET`` take streams only
(a table's rows have no offsets to order them by).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tablestream.plan.base import InputKind, UnaryNode, check_input_kind, check_store
from tablestream.plan.errors import InvalidArgumentError
from tablestream.plan.expr import Expr, ExprRef, KeyValueExpr

__all__ = [
    "Aggregate",
    "AggregateNode",
    "Avg",
    "ByOffset",
    "CollectList",
    "CollectSet",
    "Collection",
    "Count",
    "CountDistinct",
    "EarliestByOffset",
    "LatestByOffset",
    "Max",
    "Min",
    "NumericAggregate",
    "NumericAggregates",
    "Reduce",
    "Sum",
    "TableGroupBy",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class TableGroupBy(UnaryNode):
    """Re-key a table's rows for aggregation with a key-value mapper
    ``(key, value) -> (group key, value)`` (``KTABLE-SELECT-``). Each change becomes a
    subtraction of the old row's mapping and an addition of the new row's."""

    mapper: KeyValueExpr | ExprRef


@dataclass(frozen=True, slots=True, kw_only=True)
class AggregateNode(UnaryNode):
    """An aggregation per group key into the store ``store``; its output is a table.

    ``queryable`` is set when the user named the store (``materialized_as``)."""

    input_kind: InputKind
    store: str | None = None
    queryable: bool = False

    def __post_init__(self) -> None:
        check_input_kind(self.input_kind, self.name)
        check_store(self, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Count(AggregateNode):
    """The number of records (stream) or rows (table) per group."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Reduce(AggregateNode):
    """Combine the values of a group with ``adder(aggregate, value)``; for a table,
    ``subtractor(aggregate, old value)`` removes a row (required for tables, ``None`` for
    streams)."""

    adder: Expr
    subtractor: Expr | None = None

    def __post_init__(self) -> None:
        AggregateNode.__post_init__(self)
        _check_subtractor(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Aggregate(AggregateNode):
    """Fold a group from ``initializer()`` with ``adder(key, value, aggregate)`` (a stream's
    aggregator); a table also has ``subtractor(key, value, aggregate)``. Either may take a
    fourth argument, the source record's key (KIP-241)."""

    initializer: Expr
    adder: Expr
    subtractor: Expr | None = None

    def __post_init__(self) -> None:
        AggregateNode.__post_init__(self)
        _check_subtractor(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Sum(AggregateNode):
    """ksqlDB's ``SUM(column)`` per group."""

    column: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Avg(AggregateNode):
    """ksqlDB's ``AVG(column)`` per group."""

    column: Expr


NumericFunction = Literal["count", "sum", "avg"]


@dataclass(frozen=True, slots=True)
class NumericAggregate:
    """One result of :class:`NumericAggregates`: ``name`` (its field in the result's
    struct), ``function`` and ``column``. ``count`` without a column counts rows, with
    one the rows whose column is not null; ``sum`` and ``avg`` skip nulls (``SUM`` of
    only nulls is 0, ``AVG`` null), as :class:`Count`, :class:`Sum` and :class:`Avg`."""

    name: str
    function: NumericFunction
    column: Expr | None = None

    def __str__(self) -> str:
        return f"{self.name}={self.function}({self.column if self.column is not None else ''})"


@dataclass(frozen=True, slots=True, kw_only=True)
class NumericAggregates(AggregateNode):
    """Several of count, sum and avg per group in one store: the value is a struct of
    the named results (``aggregations``, in order). The store keeps, per group, its
    member count and, per distinct column, the non-null count and the total, so each
    result is exactly what its own :class:`Count`, :class:`Sum` or :class:`Avg` gives;
    a group with no members left is deleted."""

    aggregations: tuple[NumericAggregate, ...]

    def __post_init__(self) -> None:
        AggregateNode.__post_init__(self)
        if not self.aggregations:
            raise InvalidArgumentError(f"{self.name}: at least one aggregation is needed")
        seen: dict[str, str] = {}
        for a in self.aggregations:
            if not isinstance(a, NumericAggregate):
                raise InvalidArgumentError(f"{self.name}: {a!r} is not a NumericAggregate")
            if not isinstance(a.name, str) or not a.name:
                raise InvalidArgumentError(f"{self.name}: a result's name must be a non-empty str, got {a.name!r}")
            # Spark resolves struct fields without regard to case.
            if a.name.lower() in seen:
                raise InvalidArgumentError(f"{self.name}: two results named {seen[a.name.lower()]!r} and {a.name!r}")
            seen[a.name.lower()] = a.name
            if a.function not in ("count", "sum", "avg"):
                raise InvalidArgumentError(f"{self.name}: {a.name}: unknown function {a.function!r} (count, sum or avg)")
            if a.function != "count" and a.column is None:
                raise InvalidArgumentError(f"{self.name}: {a.name}: {a.function} needs a column")

    @property
    def columns(self) -> tuple[Expr, ...]:
        """The distinct columns the results read, in order of first use (one non-null
        count and one total each in the store)."""
        return tuple(dict.fromkeys(a.column for a in self.aggregations if a.column is not None))


@dataclass(frozen=True, slots=True, kw_only=True)
class Min(AggregateNode):
    """ksqlDB's ``MIN(column)`` per group."""

    column: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Max(AggregateNode):
    """ksqlDB's ``MAX(column)`` per group."""

    column: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class ByOffset(AggregateNode):
    """What the by-offset aggregates share: the column, ``n`` (``None``: one value, else
    an array of ``n``), and whether null values are skipped."""

    column: Expr
    n: int | None = None
    ignore_nulls: bool = True

    def __post_init__(self) -> None:
        AggregateNode.__post_init__(self)
        if self.input_kind == "table":
            raise InvalidArgumentError(f"{self.name}: {type(self).__name__} takes a stream (a table's rows have no offsets)")
        if self.n is not None and (isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1):
            raise InvalidArgumentError(f"{self.name}: n must be 1 or greater, got {self.n!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class LatestByOffset(ByOffset):
    """ksqlDB's ``LATEST_BY_OFFSET(column[, n][, ignore_nulls])`` per group of a stream:
    the value of the group's last record in offset order (the ordering key's order within
    a batch, and a later batch after an earlier one); with ``n``, an array of the last
    ``n`` values, oldest first. Null values are skipped unless ``ignore_nulls`` is false."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EarliestByOffset(ByOffset):
    """ksqlDB's ``EARLIEST_BY_OFFSET(column[, n][, ignore_nulls])`` per group of a
    stream: the value of the group's first record (with ``n``, the first ``n``), see
    :class:`LatestByOffset`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Collection(AggregateNode):
    """What the collecting aggregates share: the column and ``limit``, the most values
    the array holds (later ones are left out; ``None``: no limit)."""

    column: Expr
    limit: int | None = 1000

    def __post_init__(self) -> None:
        AggregateNode.__post_init__(self)
        if self.limit is not None and (isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 0):
            raise InvalidArgumentError(f"{self.name}: limit must be 0 or greater (None: no limit), got {self.limit!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectList(Collection):
    """ksqlDB's ``COLLECT_LIST(column)`` per group: every value (nulls included) in
    arrival order, at most ``limit``. A table row's old value is removed from its old
    group's list (its last occurrence, as ksqlDB's undo does)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectSet(Collection):
    """ksqlDB's ``COLLECT_SET(column)`` per group: the distinct values in order of first
    arrival, at most ``limit``. A table row's old value leaves the set when no row of the
    group holds it any more."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CountDistinct(AggregateNode):
    """ksqlDB's ``COUNT_DISTINCT(column)`` per group, counted exactly (ksqlDB estimates
    it with HyperLogLog); nulls are not counted."""

    column: Expr


def _check_subtractor(node: Reduce | Aggregate) -> None:
    if node.input_kind == "table" and node.subtractor is None:
        raise InvalidArgumentError(f"{node.name}: a table aggregation needs a subtractor")
    if node.input_kind == "stream" and node.subtractor is not None:
        raise InvalidArgumentError(f"{node.name}: a stream aggregation has no subtractor")

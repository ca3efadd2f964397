"""Aggregations described for :meth:`KGroupedStream.agg
<tablestream.dsl.KGroupedStream.agg>` and :meth:`KGroupedTable.agg
<tablestream.dsl.KGroupedTable.agg>`: several of count, sum and avg of one grouping,
computed in one store and one stage (as ksqlDB computes ``COUNT(*), SUM(x) ... GROUP
BY``), named like pyspark's ``functions``.

>>> from tablestream.dsl import StreamsBuilder
>>> from tablestream.dsl import aggregates as agg
>>> views = StreamsBuilder().stream("pageviews", value_schema="region STRING, ms BIGINT")
>>> per_region = views.group_by("region").agg(views=agg.count(), total_ms=agg.sum("ms"))
>>> [str(a) for a in per_region.node.aggregations]
['views=count()', 'total_ms=sum(ms)']

A column is SQL text (a field name or an expression over the value) or a Spark Column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tablestream.plan.aggregate import NumericFunction

__all__ = ["Aggregation", "avg", "count", "sum"]


@dataclass(frozen=True, slots=True)
class Aggregation:
    """An aggregation not yet given to a grouping: its function and column (SQL text, a
    Spark Column, or ``None`` for ``count()`` of rows)."""

    function: NumericFunction
    column: Any = None

    def __repr__(self) -> str:
        column = "" if self.column is None else repr(self.column)
        return f"{self.function}({column})"


def count(column: Any = None) -> Aggregation:
    """The number of rows (records of a stream) per group; with ``column``, the number
    whose ``column`` is not null (ksqlDB's ``COUNT(col)``; a group of nulls counts 0).

    >>> count(), count("email")
    (count(), count('email'))
    """
    return Aggregation("count", column)


def sum(column: Any) -> Aggregation:  # noqa: A001 - pyspark's name
    """ksqlDB's ``SUM(column)`` per group: nulls skipped, 0 for a group of nulls; a
    ``BIGINT``, ``INT`` or ``SMALLINT`` column sums to a ``BIGINT``, a ``DOUBLE`` or
    ``FLOAT`` one to a ``DOUBLE``, a ``DECIMAL(p, s)`` one exactly to a
    ``DECIMAL(38, s)`` (a total beyond it fails the batch, naming the group).

    >>> sum("amount * 2")
    sum('amount * 2')
    """
    return Aggregation("sum", column)


def avg(column: Any) -> Aggregation:
    """ksqlDB's ``AVG(column)`` per group, a ``DOUBLE``: nulls skipped, null for a group
    of nulls.

    >>> avg("ms")
    avg('ms')
    """
    return Aggregation("avg", column)


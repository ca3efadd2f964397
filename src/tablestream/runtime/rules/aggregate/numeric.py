"""count, sum and avg: signed deltas applied to one numeric state per group
(:mod:`tablestream.runtime.kernels.numeric`); a group without members is deleted. The
single aggregates and :class:`~tablestream.plan.aggregate.NumericAggregates` (several of
them of one grouping, a struct of their results) share one rule: one store, one stage.

A large batch's deltas of integer totals are summed per group by Spark before they
reach the store stage (:meth:`NumericRule.summed`), as Spark sums a ``GROUP BY``: each
task sums its own rows first, so the stage gets a row per group and task instead of one
per change (a bootstrap of 1M rows into 10,000 groups: 40,000 rows instead of 1M).
Sums of integers are exact in any order; those of doubles and decimals keep the
changes' own rows."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_type
from pyspark.sql.types import (
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StructField,
    StructType,
)

from ....plan import aggregate as agg
from ....plan.expr import Expr
from ...batch import BatchContext
from ...expressions import ValueShape
from ...frames import ORDER, Columns, Frame, changed, named, result_order, select
from ...kernels import numeric
from ..values import is_guarded_expr
from .group_by import AggregateRule


class AggregateTypeError(TypeError):
    """An aggregate over a column of a type it cannot take."""


@dataclass(frozen=True)
class _Result:
    """One result: its name (a struct field, or None for a single aggregate's value),
    function and the index of its column in the state (None: rows counted)."""

    name: str | None
    function: str
    column: int | None


class NumericRule(AggregateRule):
    """Results read from the kernel's member count and, per column, non-null count and
    total. A single :class:`~tablestream.plan.aggregate.Count` keeps one column of
    nulls, so its state is the one count, sum and avg have always shared."""

    nodes = (agg.Count, agg.Sum, agg.Avg, agg.NumericAggregates)

    def __init__(self, node, physical) -> None:
        super().__init__(node, physical)
        if isinstance(node, agg.NumericAggregates):
            self.columns_in: tuple[Expr | None, ...] = node.columns
            self.results = tuple(
                _Result(a.name, a.function, None if a.column is None else self.columns_in.index(a.column))
                for a in node.aggregations
            )
            self.wrapped = True
        else:
            function = {agg.Count: "count", agg.Sum: "sum", agg.Avg: "avg"}[type(node)]
            self.columns_in = (getattr(node, "column", None),)
            self.results = (_Result(None, function, None if function == "count" else 0),)
            self.wrapped = False

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        values = {
            f"v{i}": self.column_of(column, frame) if column is not None else (lambda _: F.lit(None).cast("long"))
            for i, column in enumerate(self.columns_in)
        }
        guarded = [f"v{i}" for i, column in enumerate(self.columns_in) if column is not None and is_guarded_expr(column)]
        rows = self.signed_rows(frame, values, guarded=guarded)
        if not hasattr(self, "kernel"):
            self._prepare(rows, frame)
        if batch.large and self.summed_kernel is not None:
            summed, summed_in = self.summed(rows)
            stage = self.run_stage(batch, summed, summed_in, self.summed_kernel, self.schema)
        else:
            stage = self.run_stage(batch, rows, self.stage_in, self.kernel, self.schema)
        changes = batch.persist(stage, self.node.name)
        # A state can change while its results do not (a null joins a sum): emit on change.
        return self.result(batch, select(changes, self.columns).where(self.changed), frame)

    def _prepare(self, rows, frame: Frame) -> None:
        self.key_type = rows.schema["gk"].dataType
        summed = {r.column for r in self.results if r.function != "count"}
        totals, inputs, counted_only = [], [], []
        for i in range(len(self.columns_in)):
            name = f"v{i}"
            vtype = rows.schema[name].dataType
            counted_only.append(i not in summed)
            if i not in summed:
                # Only its nulls count: a non-null value adds 0 to its (unread) total.
                totals.append(pa.int64())
                inputs.append(F.when(F.col(name).isNotNull(), F.lit(0)).cast("long").alias(name))
                continue
            if isinstance(vtype, (LongType, IntegerType, ShortType)):
                totals.append(pa.int64())
            elif isinstance(vtype, (DoubleType, FloatType)):
                totals.append(pa.float64())
            elif isinstance(vtype, DecimalType):  # exact: DECIMAL(38, s), as Spark's sum widens
                totals.append(pa.decimal128(38, vtype.scale))
            else:
                which = next(r.name for r in self.results if r.column == i and r.function != "count")
                where = f"{self.node.name}: {which}" if which is not None else self.node.name
                raise AggregateTypeError(f"{where}: cannot sum or average a {vtype.simpleString()} column")
            inputs.append(F.col(name).cast(from_arrow_type(totals[-1])).alias(name))
        self.kernel = functools.partial(numeric.aggregate_deltas, totals=tuple(totals))
        self.schema = numeric.schema(totals)
        self.stage_in = named(["gkb", "sign", *inputs, "ts", *ORDER])
        self.summed_kernel = None
        if all(pa.types.is_integer(t) for t in totals):
            self.summed_kernel = functools.partial(numeric.aggregate_summed, totals=tuple(totals))
            self._summing = self._summed_columns(counted_only)
        if self.wrapped:
            types = [_type(r, totals) for r in self.results]
            old, new = (
                F.when(F.col(f"{side}_members") > 0, F.struct(*[_value(r, side).alias(r.name) for r in self.results]))
                for side in ("old", "new")
            )
            rtype: DataType = StructType([StructField(r.name, t) for r, t in zip(self.results, types, strict=True)])
        else:
            (result,) = self.results
            old, new, rtype = _value(result, "old"), _value(result, "new"), _type(result, totals)
        self.columns = named([
            self.group_key(frame, self.key_type).alias("key"), old.alias("old"), new.alias("new"), "ts", *result_order(),
        ])
        self.changed = changed()
        self.shape = ValueShape(rtype)

    @staticmethod
    def _summed_columns(counted_only: list[bool]):
        """The grouping and the sums of :meth:`summed`, and the columns the stage reads
        (``counted_only``: per column, whether only its non-null values are counted)."""
        skipped = F.col("_skip").isNotNull()
        sign = F.col("sign").cast("long")
        zero = F.lit(0).cast("long")
        # A skipped row stays a row of its own (its position is its group), to be reported.
        grouping = named(["gkb", "_skip", *[F.when(skipped, F.col(c)).alias(c) for c in _POSITION]])
        sums = [F.sum(sign).alias("dm"), F.max("ts").alias("ts")]
        read = []
        for i, counted in enumerate(counted_only):
            value = F.col(f"v{i}")
            sums.append(F.sum(F.when(value.isNotNull(), sign).otherwise(zero)).alias(f"dn{i}"))
            if counted:
                read += [f"dn{i}", F.lit(0).cast(_SUMS).alias(f"ds{i}")]
                continue
            # A long is summed as its high and low 32 bits, two sums of longs that cannot
            # wrap around, then put together as a decimal: exact whatever
            # spark.sql.ansi.enabled says (a sum of longs wraps without it), as fast as
            # one sum of longs (a sum of decimals this wide leaves Spark's generated code).
            value = F.coalesce(value.cast("long"), zero)
            sums += [
                F.sum(sign * F.shiftright(value, 32)).alias(f"dh{i}"),
                F.sum(sign * value.bitwiseAND(_LOW_BITS)).alias(f"dl{i}"),
            ]
            high = F.col(f"dh{i}").cast("decimal(20,0)") * F.lit(_LOW_BITS + 1).cast("decimal(11,0)")
            read += [f"dn{i}", (high + F.col(f"dl{i}")).cast(_SUMS).alias(f"ds{i}")]
        names = ["gkb", "dm", "ts", *read, *_POSITION]
        return grouping, sums, named(names)

    def summed(self, rows: DataFrame) -> tuple[DataFrame, Columns]:
        """The signed rows summed per group (members, non-null counts and totals added
        less those retracted, the largest timestamp; a skipped row stays a row of its
        own), and the columns the stage reads of them."""
        grouping, sums, stage_in = self._summing
        return rows.groupBy(*grouping).agg(*sums), stage_in


_POSITION = ["o_src", "o_part", "o_off", "o_idx"]
_LOW_BITS = 2**32 - 1
# The summed path's totals, as the kernel adds them (a batch's sum of longs fits).
_SUMS = from_arrow_type(numeric.INTEGER_SUMS)


def _value(result: _Result, side: str) -> Column:
    """A result on one side of the kernel's output (null where the group has no members:
    count and sum have a value for every group with rows, avg for one with a value)."""
    members = F.col(f"{side}_members")
    if result.column is None:
        return F.when(members > 0, members)
    nonnull, total = F.col(f"{side}_nonnull{result.column}"), F.col(f"{side}_total{result.column}")
    if result.function == "count":
        return F.when(members > 0, nonnull)
    if result.function == "sum":
        return F.when(members > 0, total)
    return F.when(nonnull > 0, total.cast("double") / nonnull)


def _type(result: _Result, totals: list[pa.DataType]) -> DataType:
    if result.function == "count":
        return LongType()
    if result.function == "avg":
        return DoubleType()
    return from_arrow_type(totals[result.column])

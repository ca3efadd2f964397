"""count, sum and avg: signed deltas applied to one numeric state per group
(:mod:`tablestream.runtime.kernels.numeric`); a group without members is deleted."""

from __future__ import annotations

import functools

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
)

from ....plan import aggregate as agg
from ...batch import BatchContext
from ...expressions import ValueShape
from ...frames import ORDER, Frame, named, result_order
from ...kernels import numeric
from ..values import is_guarded_expr
from .group_by import AggregateRule


class AggregateTypeError(TypeError):
    """An aggregate over a column of a type it cannot take."""


class NumericRule(AggregateRule):
    """``old`` and ``new`` are the result's value before and after, from the kernel's
    member count, non-null count and total."""

    def old(self) -> Column:
        raise NotImplementedError

    def new(self) -> Column:
        raise NotImplementedError

    def result_type(self, floating: bool) -> DataType:
        raise NotImplementedError

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        column = getattr(self.node, "column", None)
        value = self.column_of(column, frame) if column is not None else (lambda _: F.lit(None).cast("long"))
        rows = self.signed_rows(frame, value, guarded=column is not None and is_guarded_expr(column))
        if not hasattr(self, "kernel"):
            self._prepare(rows, column is None, frame)
        stage = self.run_stage(batch, rows, self.stage_in, self.kernel, self.schema)
        changes = batch.persist(stage, self.node.name)
        return self.result(batch, changes.select(*self.columns), frame)

    def _prepare(self, rows, counting: bool, frame: Frame) -> None:
        vtype, self.key_type = rows.schema["v"].dataType, rows.schema["gk"].dataType
        if counting or isinstance(vtype, (LongType, IntegerType, ShortType)):
            floating = False
        elif isinstance(vtype, (DoubleType, FloatType, DecimalType)):
            floating = True
        else:
            raise AggregateTypeError(f"{self.node.name}: cannot sum or average a {vtype.simpleString()} column")
        self.kernel = functools.partial(numeric.aggregate_deltas, floating=floating)
        self.schema = numeric.schema(floating)
        self.stage_in = named(["gkb", "sign", F.col("v").cast("double" if floating else "long").alias("v"), "ts", *ORDER])
        self.columns = named([
            self.group_key(frame, self.key_type).alias("key"),
            self.old().alias("old"),
            self.new().alias("new"),
            "ts",
            *result_order(),
        ])
        self.shape = ValueShape(self.result_type(floating))


class CountRule(NumericRule):
    nodes = (agg.Count,)

    def old(self) -> Column:
        return F.when(F.col("old_members") > 0, F.col("old_members"))

    def new(self) -> Column:
        return F.when(F.col("new_members") > 0, F.col("new_members"))

    def result_type(self, floating: bool) -> DataType:
        return LongType()


class SumRule(NumericRule):
    """ksqlDB's SUM ignores nulls and starts at 0: a group of null values sums to 0."""

    nodes = (agg.Sum,)

    def old(self) -> Column:
        return F.when(F.col("old_members") > 0, F.col("old_total"))

    def new(self) -> Column:
        return F.when(F.col("new_members") > 0, F.col("new_total"))

    def result_type(self, floating: bool) -> DataType:
        return DoubleType() if floating else LongType()


class AvgRule(NumericRule):
    nodes = (agg.Avg,)

    def old(self) -> Column:
        return F.when(F.col("old_nonnull") > 0, F.col("old_total").cast("double") / F.col("old_nonnull"))

    def new(self) -> Column:
        return F.when(F.col("new_nonnull") > 0, F.col("new_total").cast("double") / F.col("new_nonnull"))

    def result_type(self, floating: bool) -> DataType:
        return DoubleType()

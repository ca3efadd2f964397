"""min and max with retraction: a sorted index of each group's members in the
aggregate's store (:mod:`tablestream.runtime.kernels.extreme`)."""

from __future__ import annotations

import functools

from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampType,
)

from ....plan import aggregate as agg
from ...batch import BatchContext
from ...expressions import ValueShape
from ...frames import ORDER, Frame, canonical_bytes, from_canonical, named, result_order
from ...kernels import extreme
from ..values import is_guarded_expr
from .group_by import AggregateRule
from .numeric import AggregateTypeError

_ORDERED_TYPES = (
    LongType, IntegerType, ShortType, DoubleType, FloatType, StringType, BooleanType, DateType, TimestampType,
)


def _position_bytes():
    """A stream record's identity among its group's members: its source position."""
    parts = []
    for c in ("o_src", "o_part", "o_off", "o_idx"):
        if parts:
            parts.append(F.lit(b"|"))
        parts.append(F.col(c).cast("string").cast("binary"))
    return F.concat(*parts)


class ExtremeRule(AggregateRule):
    which = ""

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        column = self.node.column
        rows = self.signed_rows(frame, self.column_of(column, frame), guarded=is_guarded_expr(column))
        if not hasattr(self, "kernel"):
            self._prepare(rows, frame)
        stage = self.run_stage(batch, rows, self.stage_in, self.kernel, extreme.SCHEMA)
        changes = batch.persist(stage, self.node.name)
        return self.result(batch, changes.select(*self.columns), frame)

    def _prepare(self, rows, frame: Frame) -> None:
        vtype, self.key_type = rows.schema["v"].dataType, rows.schema["gk"].dataType
        if not isinstance(vtype, _ORDERED_TYPES):
            raise AggregateTypeError(f"{self.node.name}: cannot take the {self.which} of a {vtype.simpleString()} column")
        self.kernel = functools.partial(extreme.extreme_groups, which=self.which, stream=frame.kind == "stream")
        self.stage_in = named([
            "gkb", "sign", canonical_bytes(F.col("v")).alias("vb"), F.col("v"),
            F.coalesce(F.col("skb"), _position_bytes()).alias("skb"), "ts", *ORDER,
        ])
        self.columns = named([
            self.group_key(frame, self.key_type).alias("key"),
            from_canonical(F.col("old_vb"), vtype).alias("old"),
            from_canonical(F.col("new_vb"), vtype).alias("new"),
            "ts",
            *result_order(),
        ])
        self.shape = ValueShape(vtype)


class MinRule(ExtremeRule):
    nodes = (agg.Min,)
    which = "min"


class MaxRule(ExtremeRule):
    nodes = (agg.Max,)
    which = "max"

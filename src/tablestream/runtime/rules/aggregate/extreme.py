"""min and max with retraction: a sorted index of each group's members in the
aggregate's store (:mod:`tablestream.runtime.kernels.extreme`)."""

from __future__ import annotations

import functools

from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampType,
)

from ....plan import aggregate as agg
from ...frames import ORDER, Frame, canonical_bytes, named
from ...kernels import extreme
from .group_by import ColumnAggregateRule
from .numeric import AggregateTypeError

_ORDERED_TYPES = (
    LongType, IntegerType, ShortType, DoubleType, FloatType, DecimalType, StringType, BooleanType, DateType, TimestampType,
)


def _position_bytes():
    """A stream record's identity among its group's members: its source position."""
    parts = []
    for c in ("o_src", "o_part", "o_off", "o_idx"):
        if parts:
            parts.append(F.lit(b"|"))
        parts.append(F.col(c).cast("string").cast("binary"))
    return F.concat(*parts)


class ExtremeRule(ColumnAggregateRule):
    which = ""
    schema = extreme.SCHEMA

    def prepare(self, vtype: DataType, frame: Frame) -> None:
        if not isinstance(vtype, _ORDERED_TYPES):
            raise AggregateTypeError(f"{self.node.name}: cannot take the {self.which} of a {vtype.simpleString()} column")
        self.kernel = functools.partial(extreme.extreme_groups, which=self.which, stream=frame.kind == "stream")
        self.stage_in = named([
            "gkb", "sign", canonical_bytes(F.col("v")).alias("vb"), F.col("v"),
            F.coalesce(F.col("skb"), _position_bytes()).alias("skb"), "ts", *ORDER,
        ])
        self.decoded(frame, vtype)


class MinRule(ExtremeRule):
    nodes = (agg.Min,)
    which = "min"


class MaxRule(ExtremeRule):
    nodes = (agg.Max,)
    which = "max"

"""LATEST_BY_OFFSET and EARLIEST_BY_OFFSET over a grouped stream: each group's last or
first values in offset order (:mod:`tablestream.runtime.kernels.offset`)."""

from __future__ import annotations

import functools

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType

from ....plan import aggregate as agg
from ...frames import ORDER, Frame, canonical_bytes, named
from ...kernels import offset
from .group_by import ColumnAggregateRule


class ByOffsetRule(ColumnAggregateRule):
    latest = True
    schema = offset.SCHEMA

    def prepare(self, vtype: DataType, frame: Frame) -> None:
        node = self.node
        self.kernel = functools.partial(
            offset.by_offset_groups, latest=self.latest, n=node.n, ignore_nulls=node.ignore_nulls
        )
        self.stage_in = named(["gkb", canonical_bytes(F.col("v")).alias("vb"), "ts", *ORDER])
        self.decoded(frame, vtype if node.n is None else ArrayType(vtype, True))


class LatestByOffsetRule(ByOffsetRule):
    nodes = (agg.LatestByOffset,)
    latest = True


class EarliestByOffsetRule(ByOffsetRule):
    nodes = (agg.EarliestByOffset,)
    latest = False

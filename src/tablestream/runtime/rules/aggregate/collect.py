"""COLLECT_LIST, COLLECT_SET and COUNT_DISTINCT, with retraction: each group's collected
values (:mod:`tablestream.runtime.kernels.collect`) or its distinct values' holders
(:mod:`tablestream.runtime.kernels.distinct`)."""

from __future__ import annotations

import functools

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, DataType, LongType

from ....plan import aggregate as agg
from ...expressions import ValueShape
from ...frames import ORDER, Frame, canonical_bytes, named, result_order
from ...kernels import collect, distinct
from .group_by import ColumnAggregateRule


class CollectRule(ColumnAggregateRule):
    distinct = False
    schema = collect.SCHEMA

    def prepare(self, vtype: DataType, frame: Frame) -> None:
        self.kernel = functools.partial(collect.collect_groups, distinct=self.distinct, limit=self.node.limit)
        self.stage_in = named(["gkb", "sign", canonical_bytes(F.col("v")).alias("vb"), "ts", *ORDER])
        self.decoded(frame, ArrayType(vtype, True))


class CollectListRule(CollectRule):
    nodes = (agg.CollectList,)


class CollectSetRule(CollectRule):
    nodes = (agg.CollectSet,)
    distinct = True


class CountDistinctRule(ColumnAggregateRule):
    nodes = (agg.CountDistinct,)
    schema = distinct.SCHEMA

    def prepare(self, vtype: DataType, frame: Frame) -> None:
        self.kernel = distinct.count_distinct_groups
        self.stage_in = named(["gkb", "sign", canonical_bytes(F.col("v")).alias("vb"), "ts", *ORDER])
        self.columns = named([
            self.group_key(frame, self.key_type).alias("key"),
            F.col("old_count").alias("old"),
            F.col("new_count").alias("new"),
            "ts",
            *result_order(),
        ])
        self.shape = ValueShape(LongType())

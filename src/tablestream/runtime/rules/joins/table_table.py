"""Primary-key table-table join: a stage over both sides' changes keeps a copy of each
side (:mod:`tablestream.runtime.kernels.table_join`) and gives every changed key's rows
before and after; the joiner runs on both, and only real changes leave."""

from __future__ import annotations

from pyspark.sql import functions as F

from ....plan import joins
from ...batch import BatchContext
from ...frames import (
    ORDER,
    Frame,
    canonical_bytes,
    evaluated_once,
    from_canonical,
    key_bytes,
    key_from_bytes,
    named,
)
from ...kernels import table_join
from ...physical import PhysicalPlan
from ..base import Rule, StoreUse
from .joiner import TableJoiner


class TableTableRule(Rule):
    nodes = (joins.TableTableJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.joiner = TableJoiner(node.joiner, node.kind, self.resolve)
        self.inputs = None

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        return tuple(StoreUse(f"{node.name}-{side}", "table copy", node.name) for side in ("LEFT", "RIGHT"))

    def apply(self, batch: BatchContext, left: Frame, right: Frame) -> Frame:
        if self.inputs is None:
            self.inputs = named((
                *[
                    [key_bytes(frame).alias("kb"), F.lit(side).cast("tinyint").alias("side"),
                     canonical_bytes(F.col("new")).alias("vb"), "ts", *ORDER]
                    for side, frame in ((0, left), (1, right))
                ],
                [
                    key_from_bytes(F.col("kb"), left).alias("key"),
                    *[from_canonical(F.col(f"{s}_{w}"), shape.dtype).alias(f"{s}_{w}")
                      for s, shape in (("l", left.value), ("r", right.value)) for w in ("old", "new")],
                    F.greatest("change_ts", "l_new_ts", "r_new_ts").alias("ts"),
                ],
            ))
        left_in, right_in, decoded_cols = self.inputs
        rows = left.df.select(*left_in).unionByName(right.df.select(*right_in))
        changes = batch.persist(
            batch.stage(self.store_names).run(rows, "kb", table_join.table_join, table_join.SCHEMA), self.node.name
        )
        decoded = evaluated_once(changes, decoded_cols)
        df = self.joiner.changes(decoded, left.value, right.value)
        frame = Frame(df, "table", left.key_type, self.joiner.shape, key_json=left.key_json, positioned=False)
        if self.node.queryable:
            batch.materialize(self.node.store, frame)
        return frame

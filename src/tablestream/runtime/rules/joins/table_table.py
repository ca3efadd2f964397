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
    named,
)
from ...kernels import table_join
from ...keys import canonical_text, join_keys, key_columns, logged, record_bytes
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
            self.inputs = self._inputs(left, right)
        keyed, log, left_in, right_in, decoded_cols, keyless, lost = self.inputs
        left_rows = logged(batch, left.df.withColumns(keyed), log)  # a key that does not convert keeps its row apart
        rows = left_rows.select(*left_in).unionByName(right.df.select(*right_in))
        stage = batch.stage(self.store_names).run(rows, "kb", table_join.table_join, table_join.SCHEMA)
        if lost is None:
            changes = batch.persist(stage, self.node.name)
        else:
            # A right key no left key can equal has no outer result: logged, not emitted.
            changes = batch.persist(stage)
            present, columns = lost
            batch.output.errors.append(changes.where(present).select(*columns))
        decoded = evaluated_once(changes, decoded_cols)
        if keyless:
            decoded = decoded.where(F.col("key").isNotNull())  # a right key alone, of no left key
        df = self.joiner.changes(decoded, left.value, right.value, key_undeclared=left.key_undeclared)
        frame = Frame(
            df, "table", left.key_type, self.joiner.shape, key_json=left.key_json, key_undeclared=left.key_undeclared,
            positioned=False,
        )
        if self.node.queryable:
            batch.materialize(self.node.store, frame)
        return frame

    def _inputs(self, left: Frame, right: Frame):
        keys = join_keys(self.node, self.physical.topology, left, right, "key")
        converted = keys.source_or_own(F.col("key"), key_bytes(left))
        keyed, log = key_columns(converted, "_kb", left, "new", self.physical, self.node.left)
        key = keys.back(F.col("kb"), left)
        lost = None
        if self.node.kind == "outer" and not keys.same:
            # The result key of a right row alone is its key as a left key.
            alone = F.col("kb").isNotNull() & key.isNull() & (F.col("r_old").isNotNull() | F.col("r_new").isNotNull())
            lost = (alone, [
                *[F.lit(None).cast(t).alias(c) for c, t in (("topic", "string"), ("partition", "int"), ("offset", "bigint"))],
                F.coalesce("change_ts", "r_new_ts", "r_old_ts").alias("timestamp"),
                keys.back_reason(F.col("kb")).alias("error"),
                canonical_text(F.col("kb")).cast("binary").alias("key"),
                record_bytes(
                    from_canonical(F.coalesce("r_new", "r_old"), right.value.dtype), right.value.dtype,
                    json=right.value.json_text,
                ).alias("value"),
            ])
        return named((
            keyed,
            log,
            [F.col("_kb").alias("kb"), F.lit(0).cast("tinyint").alias("side"), canonical_bytes(F.col("new")).alias("vb"),
             "ts", *ORDER],
            [keys.target_bytes(F.col("key")).alias("kb"), F.lit(1).cast("tinyint").alias("side"),
             canonical_bytes(F.col("new")).alias("vb"), "ts", *ORDER],
            [
                key.alias("key"),
                *[from_canonical(F.col(f"{s}_{w}"), shape.dtype).alias(f"{s}_{w}")
                  for s, shape in (("l", left.value), ("r", right.value)) for w in ("old", "new")],
                F.greatest("change_ts", "l_new_ts", "r_new_ts").alias("ts"),
            ],
            not keys.same,
            lost,
        ))

"""Tables from streams and streams from tables; filters and mappers of table rows,
applied to each change's old and new row."""

from __future__ import annotations

from dataclasses import replace

from pyspark.sql import Column
from pyspark.sql import functions as F

from ...plan import stateless
from ..batch import BatchContext
from ..expressions import guarded_result, predicate_column, results
from ..frames import (
    ORDER,
    Frame,
    canonical_bytes,
    canonical_key,
    changed,
    from_canonical,
    from_canonical_key,
    named,
    select,
)
from ..kernels import upsert
from ..physical import PhysicalPlan
from .base import Rule, StoreUse
from .values import is_guarded_expr, table_side_steps, value_expr, with_sides


def table_result(batch: BatchContext, node, frame: Frame) -> Frame:
    """A table operator's changes, also written to its materialized table if it has one."""
    if node.queryable:
        batch.materialize(node.store, frame)
    return frame


class ToTableRule(Rule):
    """Each record upserts its key in the table's store (a null value deletes it)."""

    nodes = (stateless.ToTable,)
    consumer = True

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        return (StoreUse(node.store, "table", node.name),)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "stage_in"):
            self.stage_in = named([
                F.when(F.col("key").isNull(), F.lit("null key: a table record needs a key (record skipped)"))
                .alias("_skip"),
                canonical_key(F.col("key"), frame.key_undeclared).alias("kb"), canonical_bytes(F.col("value")).alias("vb"),
                "ts", *ORDER,
            ])
            self.result = named([
                from_canonical_key(F.col("kb"), frame.key_type, frame.key_undeclared).alias("key"),
                from_canonical(F.col("old"), frame.value.dtype).alias("old"),
                from_canonical(F.col("new"), frame.value.dtype).alias("new"),
                "ts",
                *ORDER,
            ])
        rows = select(frame.df, self.stage_in)
        stage = batch.stage(self.node.store).run(rows, "kb", upsert.upsert, upsert.SCHEMA, skipped="_skip")
        changes = batch.persist(stage, self.node.name)
        # Every record of the batch, for a reader that meets the table as of each one's time.
        versions = None
        if self.physical.needs_every_version(self.node.name):
            versions = frame.df.where(F.col("key").isNotNull()).select("key", F.col("value").alias("new"), "ts", *ORDER)
        table = Frame(
            select(changes, self.result), "table", frame.key_type, frame.value, key_json=frame.key_json,
            key_undeclared=frame.key_undeclared, versions=versions, positioned=frame.positioned,
        )
        if self.node.queryable:
            batch.materialize(self.node.store, table)
        return table


class ToStreamRule(Rule):
    nodes = (stateless.ToStream,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        df = frame.df.select("key", F.col("new").alias("value"), "ts", *ORDER)
        return Frame(
            df, "stream", frame.key_type, frame.value, key_json=frame.key_json, key_undeclared=frame.key_undeclared,
            positioned=frame.positioned,
        )


class TableFilterRule(Rule):
    """A row that stops passing becomes a deletion; a change that leaves the result as it
    was emits nothing."""

    nodes = (stateless.TableFilter,)
    passes_versions = True

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        node = self.node
        if not hasattr(self, "steps"):
            keep = {
                "keep": lambda: predicate_column(
                    node.predicate, frame.value, self.resolve, key_json=frame.key_json,
                    key_undeclared=frame.key_undeclared, skip_null=True,
                )
            }
            self.every = self.hands_versions_on(frame)
            self.steps, self.version_steps = table_side_steps(keep, self.every)

            guarded = is_guarded_expr(node.predicate)

            def passes(side: str) -> Column:
                holds = guarded_result(f"_{side}_keep") if guarded else F.col(f"_{side}_keep")
                keep = F.coalesce(holds, F.lit(False))
                return ~keep if node.negate else keep
            # A row the predicate fails on does not pass (the failure is in the processing log).

            self.columns = named([
                "key",
                F.when(passes("old"), F.col("old")).alias("old"),
                F.when(passes("new"), F.col("new")).alias("new"),
                "ts",
                *ORDER,
            ])
            # A version the filter rejects deletes the key.
            self.version_columns = named(["key", F.when(passes("new"), F.col("new")).alias("new"), "ts", *ORDER])
            self.changed = changed()
        df = select(with_sides(frame.df, self.steps), self.columns).where(self.changed)
        result = frame.with_df(df)
        if self.every:
            result = replace(result, versions=select(with_sides(frame.versions, self.version_steps), self.version_columns))
        return table_result(batch, node, result)


class TableMapValuesRule(Rule):
    nodes = (stateless.TableMapValues,)
    passes_versions = True

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "steps"):
            self.shape = value_expr(self.node.mapper, frame, self.resolve)[1]
            mapped = {"v": lambda: value_expr(self.node.mapper, frame, self.resolve, skip_null=True)[0]}
            self.every = self.hands_versions_on(frame)
            self.steps, self.version_steps = table_side_steps(mapped, self.every)
            self.columns = named(["key", F.col("_old_v").alias("old"), F.col("_new_v").alias("new"), "ts", *ORDER])
            self.version_columns = named(["key", F.col("_new_v").alias("new"), "ts", *ORDER])
            self.changed = changed()
            self.guarded = ["_old_v", "_new_v"] if is_guarded_expr(self.node.mapper) else []
        df = select(results(with_sides(frame.df, self.steps), self.guarded), self.columns).where(self.changed)
        result = frame.with_df(df, value=self.shape)
        if self.every:
            versions = results(with_sides(frame.versions, self.version_steps), self.guarded[1:])
            result = replace(result, versions=select(versions, self.version_columns))
        return table_result(batch, self.node, result)

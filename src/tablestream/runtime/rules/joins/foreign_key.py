"""Foreign-key join (KIP-213), in one of two layouts:

- shuffled (Kafka's): left changes go by foreign key to a stage that keeps the
  subscriptions and the join's copy of the right table
  (:mod:`tablestream.runtime.kernels.foreign_key.shuffled`), then back by left key, where
  each left key's rows meet;
- replicated (``replicate_right``): every state partition keeps the whole right table
  beside its left rows, so one stage per batch computes the results
  (:mod:`tablestream.runtime.kernels.foreign_key.replicated`).
"""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type

from ....plan import joins
from ...batch import BatchContext
from ...expressions import guarded_failed, guarded_result
from ...failures import quietly
from ...frames import (
    ORDER,
    Frame,
    arrow_decodable,
    canonical_bytes,
    evaluated_once,
    from_canonical,
    key_bytes,
    key_from_bytes,
    named,
    nullable,
    select,
    with_columns,
)
from ...kernels.foreign_key import replicated, shuffled
from ...kernels.foreign_key.subscriptions import (
    LEFT_CHANGE,
    OLD_LOOKUP,
    RIGHT_CHANGE,
    ROLE_LEFT,
    SUBSCRIBE,
)
from ...keys import join_keys, key_columns, logged
from ...physical import PhysicalPlan
from ...stage import placing_values
from ..base import Rule, StoreUse
from ..values import is_guarded_expr, selected_key, side_steps, with_sides
from .joiner import TableJoiner


class ForeignKeyRule(Rule):
    nodes = (joins.ForeignKeyJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.joiner = TableJoiner(node.joiner, node.kind, self.resolve)
        self.routed = F.col("_r").isNotNull()
        self.prepared = None
        self.log = None  # the processing-log entries of foreign keys that do not convert

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        subscriptions = StoreUse(node.subscriptions, "subscriptions", node.name)
        right = StoreUse(f"{node.subscriptions}-RIGHT", "table copy", node.name)
        if node.replicate_right:
            return (StoreUse(f"{node.subscriptions}-LEFT", "table copy", node.name), right, subscriptions)
        return (right, subscriptions)

    @classmethod
    def keeps(cls, node) -> tuple[str, ...]:
        """The right table always (the join keeps a copy of it), and the left one when
        replicated; a table joined with itself is kept by its own store."""
        if node.left == node.right:
            return ()
        return (node.right, node.left) if node.replicate_right else (node.right,)

    def apply(self, batch: BatchContext, left: Frame, right: Frame) -> Frame:
        run = self._replicated if self.node.replicate_right else self._shuffled
        df = run(batch, left, right)
        changes = self.joiner.changes(df, left.value, right.value, key_undeclared=left.key_undeclared)
        frame = Frame(
            changes, "table", left.key_type, self.joiner.shape, key_json=left.key_json,
            key_undeclared=left.key_undeclared, positioned=False,
        )
        if self.node.queryable:
            batch.materialize(self.node.store, frame)
        return frame

    def _fk_form(self, left: Frame):
        """The form of the foreign keys the extractor gives (see :class:`KeyForm`)."""
        with quietly():  # a column built for its type only reports nothing
            return selected_key(self.node.foreign_key, left, self.resolve)[1]

    def _absent_where_failed(self, *sides: str) -> list[dict[str, Column]]:
        """A step making a left row the extractor fails on absent, as a row a filter
        leaves out (its failure is in the processing log): the side is null, and
        ``_<side>_fk`` the extractor's result."""
        if not is_guarded_expr(self.node.foreign_key):
            return []
        step = {}
        for side in sides:
            step[side] = F.when(~guarded_failed(f"_{side}_fk"), F.col(side))
            step[f"_{side}_fk"] = guarded_result(f"_{side}_fk")
        return [step]

    def _kernel(self, left: Frame, right: Frame, kernel, schema, *, decode_key: bool = False):
        """A kernel, its output schema, which values it hands over decoded (those whose
        type Arrow reads exactly) and, with ``decode_key``, whether the left key leaves
        it decoded too."""
        types = [to_arrow_type(nullable(f.value.dtype)) if arrow_decodable(f.value.dtype) else None for f in (left, right)]
        key = {}
        if decode_key and not left.key_json and not left.key_undeclared and arrow_decodable(left.key_type):
            key = {"key_type": to_arrow_type(nullable(left.key_type))}
        run = functools.partial(kernel, left_type=types[0], right_type=types[1], **key)
        return run, schema(*types, **key), [t is not None for t in types], bool(key)

    # -------------------------------------------------------------- shuffled
    def _shuffled(self, batch: BatchContext, left: Frame, right: Frame) -> DataFrame:
        if self.prepared is None:
            self.prepared = self._shuffled_columns(left, right)
        steps, converted, left_rows, left_cols, right_cols, kernel, schema, aggregates, decoded_cols, picked = self.prepared
        sided = logged(batch, with_columns(with_sides(left.df, steps), converted), self.log)
        rows = select(select(sided, left_rows).where(self.routed), left_cols).unionByName(select(right.df, right_cols))
        # Back by left key: a changed left row meets the right rows of its old and new
        # foreign keys; an unchanged one the change of the right row it references.
        combined = batch.persist(batch.stage(self.store_names).run(rows, "fkb", kernel, schema), self.node.name)
        grouped = combined.groupBy("lkb").agg(*aggregates)
        return select(evaluated_once(grouped, decoded_cols), picked)

    def _shuffled_columns(self, left: Frame, right: Frame):
        self.keys = join_keys(self.node, self.physical.topology, self._fk_form(left), right, "foreign key")
        steps = [*side_steps({"fk": lambda: selected_key(self.node.foreign_key, left, self.resolve)[0]}),
                 *self._absent_where_failed("old", "new")]
        # The old and new foreign keys as the right table's keys; why the new one is none.
        new_fk = self.keys.source_bytes(F.col("_new_fk"))
        converted, self.log = key_columns(new_fk, "_new_fk", left, "new", self.physical, self.node.left)
        converted["_old_fk"] = self.keys.source_bytes(F.col("_old_fk")).bytes
        lkb = key_bytes(left)
        nothing = F.lit(None).cast("binary")

        def row(kind: int, fkb: Column, vb: Column, unsubscribe: Column, l_old: Column, l_new: Column) -> Column:
            return F.struct(
                fkb.alias("fkb"), F.lit(kind).cast("tinyint").alias("kind"), vb.alias("vb"),
                unsubscribe.alias("unsubscribe"), l_old.alias("l_old"), l_new.alias("l_new"),
            )

        # Each left change is read once: its old foreign key's lookup, its new foreign
        # key's subscription, and the change itself (placed by its left key; it passes
        # through the stage to meet the lookups' results).
        old_row = F.when(
            F.col("old").isNotNull() & F.col("_old_fk").isNotNull(),
            row(OLD_LOOKUP, F.col("_old_fk"), nothing,
                F.col("new").isNull() | ~F.col("_new_fk").eqNullSafe(F.col("_old_fk")), nothing, nothing),
        )
        new_row = F.when(
            F.col("new").isNotNull() & F.col("_new_fk").isNotNull(),
            row(SUBSCRIBE, F.col("_new_fk"), canonical_bytes(F.col("new")), F.lit(False), nothing, nothing),
        )
        change_row = row(LEFT_CHANGE, lkb, nothing, F.lit(False), canonical_bytes(F.col("old")),
                         canonical_bytes(F.col("new")))
        left_rows = [F.explode(F.array(old_row, new_row, change_row)).alias("_r"), lkb.alias("lkb"), "ts", *ORDER]
        left_cols = [*[F.col(f"_r.{c}").alias(c) for c in ("fkb", "kind", "vb", "unsubscribe", "l_old", "l_new")],
                     "lkb", "ts", *ORDER]
        right_cols = [
            self.keys.target_bytes(F.col("key")).alias("fkb"), F.lit(RIGHT_CHANGE).cast("tinyint").alias("kind"),
            canonical_bytes(F.col("new")).alias("vb"), F.lit(False).alias("unsubscribe"),
            nothing.alias("l_old"), nothing.alias("l_new"), nothing.alias("lkb"), "ts", *ORDER,
        ]
        kernel, schema, decoded_out, _ = self._kernel(left, right, shuffled.foreign_key_join, shuffled.schema)
        fields = ["lv", "lts", "r_old", "r_old_ts", "r_new", "r_new_ts", "r_change_ts", "l_old", "l_new", "l_ts"]
        aggregates = [F.max(F.col("role") == ROLE_LEFT).alias("changed"),
                      *[F.first(c, ignorenulls=True).alias(c) for c in fields]]
        # Each value decoded once: an unchanged left row's value (``lv``) stands for both
        # its old and new value, picked after the decodes.
        l_dtype, r_dtype = left.value.dtype, right.value.dtype
        changed = F.coalesce(F.col("changed"), F.lit(False))
        decoded_cols = [
            key_from_bytes(F.col("lkb"), left).alias("key"),
            changed.alias("changed"),
            *[(F.col(c) if decoded_out[0] else from_canonical(F.col(c), l_dtype)).alias(c) for c in ("lv", "l_old", "l_new")],
            *[(F.col(c) if decoded_out[1] else from_canonical(F.col(c), r_dtype)).alias(c) for c in ("r_old", "r_new")],
            F.when(changed, F.greatest(
                F.col("l_ts"), F.when(F.col("l_new").isNull(), F.col("r_old_ts")).otherwise(F.col("r_new_ts"))
            )).otherwise(F.greatest("lts", "r_change_ts")).alias("ts"),
        ]
        picked = [
            "key",
            *[F.when(F.col("changed"), F.col(c)).otherwise(F.col("lv")).alias(c) for c in ("l_old", "l_new")],
            "r_old", "r_new", "ts",
        ]
        return named((steps, converted, left_rows, left_cols, right_cols, kernel, schema, aggregates, decoded_cols, picked))

    # -------------------------------------------------------------- replicated
    def _replicated(self, batch: BatchContext, left: Frame, right: Frame) -> DataFrame:
        """Left rows go to their left key's partition, right rows to every partition."""
        if self.prepared is None:
            self.prepared = self._replicated_columns(left, right)
        (steps, bind), left_rows, right_rows, kernel, schema, columns, guarded = self.prepared
        bound = with_columns(with_sides(left.df, steps), bind)
        rows = select(logged(batch, bound, self.log), left_rows).unionByName(select(right.df, right_rows))
        changes = batch.persist(
            batch.stage(self.store_names).run(rows, "route", kernel, schema, key_places_only=True), self.node.name
        )
        # Decodes left to Spark must run once per row; when the kernel decoded everything
        # there is nothing to guard.
        return evaluated_once(changes, columns) if guarded else select(changes, columns)

    def _replicated_columns(self, left: Frame, right: Frame):
        lkb = key_bytes(left)
        routes = [F.lit(bytearray(r)) for r in _routes(self.physical, left.df)]
        common = [canonical_bytes(F.col("new")).alias("vb"), "ts", *ORDER]
        fk, form = selected_key(self.node.foreign_key, left, self.resolve)
        self.keys = join_keys(self.node, self.physical.topology, form, right, "foreign key")
        bind, self.log = key_columns(
            self.keys.source_bytes(F.col("_new_fk")), "_new_fk", left, "new", self.physical, self.node.left
        )
        steps = [{"value": F.col("new")}, {"_new_fk": fk}, *self._absent_where_failed("new")]
        left_rows = [lkb.alias("route"), F.lit(replicated.LEFT_ROW).cast("tinyint").alias("side"), lkb.alias("kb"),
                     F.col("_new_fk").alias("fk"), *common]
        right_rows = [F.explode(F.array(*routes)).alias("route"), F.lit(replicated.RIGHT_ROW).cast("tinyint").alias("side"),
                      self.keys.target_bytes(F.col("key")).alias("kb"), F.lit(None).cast("binary").alias("fk"), *common]
        kernel, schema, decoded_out, decoded_key = self._kernel(
            left, right, replicated.replicated_foreign_key_join, replicated.schema, decode_key=True
        )
        columns = [
            (F.col("lk") if decoded_key else key_from_bytes(F.col("lk"), left)).alias("key"),
            *[(F.col(c) if decoded_out[i] else from_canonical(F.col(c), f.value.dtype)).alias(c)
              for i, f in enumerate((left, right)) for c in (("l_old", "l_new"), ("r_old", "r_new"))[i]],
            "ts",
        ]
        guarded = not (decoded_key and all(decoded_out))
        return named(((steps, bind), left_rows, right_rows, kernel, schema, columns, guarded))


def _routes(physical: PhysicalPlan, df: DataFrame) -> list[bytes]:
    """One key per state partition that Spark's shuffle places in that partition (to send
    a row to every partition), found once per application."""
    if "routes" not in physical.stage_memo:
        values = placing_values(df.sparkSession, physical.partitions, "CAST(CAST(c AS STRING) AS BINARY)")
        physical.stage_memo["routes"] = [str(v).encode() for v in values]
    return physical.stage_memo["routes"]

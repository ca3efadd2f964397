"""A table's rows re-keyed for aggregation, and the signed contributions every aggregate
consumes (KIP-241: a change subtracts its old row from the old group and adds its new
row to the new group)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from ....plan import aggregate as agg
from ....plan import stateless
from ....plan.expr import Expr, KeyValueExpr, SqlExpr
from ...batch import BatchContext
from ...expressions import JSON_TEXT, ValueShape, results, sql_column, unguarded
from ...failures import current_reporter, operating
from ...frames import (
    ORDER,
    Frame,
    canonical_key,
    from_canonical,
    from_canonical_key,
    named,
    result_order,
    select,
)
from ...physical import PhysicalPlan
from ..base import Rule, StoreUse, UnsupportedNodeError
from ..values import (
    PAIR_TYPE,
    callable_of,
    is_guarded_expr,
    is_key,
    side_steps,
    value_expr,
    with_sides,
)


class TableGroupByRule(Rule):
    """Each change becomes the old row's (group key, value) and the new row's."""

    nodes = (agg.TableGroupBy,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "steps"):
            self._prepare(frame)
        df = select(results(with_sides(frame.df, self.steps), self.guarded), self.columns)
        if not hasattr(self, "key_type"):
            self.key_type = df.schema["new_gk"].dataType
        return Frame(
            df, "grouped", self.key_type, self.shape, key_json=self.key_json, key_undeclared=self.key_undeclared,
            positioned=frame.positioned,
        )

    def _prepare(self, frame: Frame) -> None:
        mapper = self.node.mapper
        resolve = self.resolve
        if isinstance(mapper, KeyValueExpr):
            _, key_shape = value_expr(mapper.key, frame, resolve)
            _, self.shape = value_expr(mapper.value, frame, resolve)
            sides = {
                "gk": lambda: value_expr(mapper.key, frame, resolve, skip_null=True)[0],
                "gv": lambda: value_expr(mapper.value, frame, resolve, skip_null=True)[0],
            }
            picked = {f"{side}_{part}": F.col(f"_{side}_{part}") for side in ("old", "new") for part in ("gk", "gv")}
            self.key_json = key_shape.json_text
            self.key_undeclared = frame.key_undeclared and is_key(mapper.key)
            parts = [part for part, expr in (("gk", mapper.key), ("gv", mapper.value)) if is_guarded_expr(expr)]
            self.guarded = [f"_{side}_{part}" for side in ("old", "new") for part in parts]
        else:
            sides = {"pair": lambda: callable_of(mapper, frame, resolve, PAIR_TYPE, pair=True, skip_null=True)}
            picked = {
                f"{side}_{part}": F.col(f"_{side}_pair.{field}")
                for side in ("old", "new")
                for part, field in (("gk", "k"), ("gv", "v"))
            }
            self.shape, self.key_json, self.key_undeclared = JSON_TEXT, True, False
            self.guarded = ["_old_pair", "_new_pair"]
        self.steps = side_steps(sides)
        self.columns = named([
            canonical_key(F.col("key"), frame.key_undeclared).alias("skb"), *[col.alias(name) for name, col in picked.items()], "ts", *ORDER,
        ])


class AggregateRule(Rule):
    """What the aggregates share: one store per aggregate, keyed by group; the signed
    rows of its input; its result table."""

    consumer = True

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        return (StoreUse(node.store, "aggregate", node.name),)

    def signed_rows(
        self, frame: Frame, values: Mapping[str, Callable[[str], Column]], *, guarded: Sequence[str] = ()
    ) -> DataFrame:
        """One row per group contribution: ``gkb, gk, sign``, each of ``values`` (its name:
        its column over the value bound to a side), ``skb, ts, order`` (a table change
        contributes -old to its old group and +new to its new group; a stream record
        +value to its key's group). ``guarded``: the names of ``values`` that give a user
        function column; a contribution one of them fails on is left out (see
        :meth:`column_of`)."""
        if not hasattr(self, "signed"):
            self.signed = self._signed_columns(frame, values)
        if frame.kind == "grouped":
            exploded, flat, present, columns = self.signed
            rows = select(select(select(frame.df, exploded), flat).where(present), columns)
        else:
            _, columns = self.signed
            rows = select(frame.df, columns)
        return unguarded(rows, list(guarded))

    def group_key(self, frame: Frame, dtype) -> Column:
        """The group key of the aggregate's results, from its canonical bytes ``gkb``."""
        return from_canonical_key(F.col("gkb"), dtype, frame.key_undeclared)

    def run_stage(self, batch: BatchContext, rows: DataFrame, stage_in: list, kernel, schema) -> DataFrame:
        """The aggregate's store stage over its signed rows (``stage_in`` of them); rows
        without a group key are skipped records (see ``_skip``), reported under the
        grouping's name (every aggregate of a grouping skips the same records: they are
        logged once)."""
        reporter = dataclasses.replace(current_reporter(), operator=_grouping(self.physical.topology, self.node))
        with operating(reporter):
            return batch.stage(self.node.store).run(
                select(rows, stage_in.with_names("_skip")), "gkb", kernel, schema, skipped="_skip"
            )

    @staticmethod
    def _signed_columns(frame: Frame, values: Mapping[str, Callable[[str], Column]]):
        undeclared = frame.key_undeclared
        if frame.kind != "grouped":
            return named((
                F.lit(True),
                [
                    F.when(F.col("key").isNull(), F.lit("null key: an aggregation needs a key (record skipped)"))
                    .when(F.col("value").isNull(), F.lit("null value: an aggregation skips it (record skipped)"))
                    .alias("_skip"),
                    canonical_key(F.col("key"), undeclared).alias("gkb"),
                    F.col("key").alias("gk"),
                    F.lit(1).cast("int").alias("sign"),
                    *[value("value").alias(name) for name, value in values.items()],
                    F.lit(None).cast("binary").alias("skb"),
                    "ts",
                    *ORDER,
                ],
            ))
        # Both sides in one pass: an array of the (sign, group key, group value) of the
        # old and the new row, exploded; ``value`` is then bound to the side's group
        # value, as for a stream record.
        sides = F.array(*[
            F.struct(
                F.lit(sign).cast("int").alias("sign"), F.col(f"{side}_gk").alias("gk"), F.col(f"{side}_gv").alias("value")
            )
            for sign, side in ((-1, "old"), (1, "new"))
        ])
        exploded = [F.explode(sides).alias("_side"), "skb", "ts", *ORDER]
        flat = [
            F.col("_side.sign").alias("sign"), F.col("_side.gk").alias("gk"), F.col("_side.value").alias("value"),
            "skb", "ts", *ORDER,
        ]
        # A row whose group key is null: the group-by mapper gave none (skipped, as in
        # Kafka Streams); a side without a row (an insertion's old side) has no value.
        present = F.col("value").isNotNull()
        columns = [
            # (an old row's was logged when it was the new row: dropped without a reason)
            F.when(F.col("gk").isNull(), F.when(F.col("sign") > 0, F.lit("null group-by key (record skipped)"))
                   .otherwise(F.lit(""))).alias("_skip"),
            canonical_key(F.col("gk"), undeclared).alias("gkb"), "gk", "sign",
            *[value("value").alias(name) for name, value in values.items()], "skb", "ts", *ORDER]
        return named((exploded, flat, present, columns))

    def column_of(self, expr: Expr, frame: Frame) -> Callable[[str], Column]:
        """An aggregated column's expression, over the value bound to ``side``. In a
        careful run, SQL that can raise gives a user function column (see
        :func:`~tablestream.runtime.rules.values.is_guarded_expr`): a record it fails on
        adds nothing to its group, and a table row's old side, which added nothing when it
        was new, takes nothing away (it is reported once, as the new side)."""
        grouped = frame.kind == "grouped"

        def value(side: str) -> Column:
            if isinstance(expr, SqlExpr):
                return sql_column(
                    expr, frame.value, key="gk" if grouped else "key", value=side,
                    quiet=F.col("sign") < 0 if grouped else None, key_undeclared=frame.key_undeclared,
                )
            if expr.kind == "column":
                return self.resolve(expr)
            raise UnsupportedNodeError("aggregate columns are SQL expressions or Spark Columns")

        return value

    def result(self, batch: BatchContext, df: DataFrame, frame: Frame) -> Frame:
        """The aggregate's table (written to its materialized table when queryable)."""
        table = Frame(
            df, "table", self.key_type, self.shape, key_json=frame.key_json, key_undeclared=frame.key_undeclared,
            positioned=False,
        )
        if self.node.queryable:
            batch.materialize(self.node.store, table)
        return table


class ColumnAggregateRule(AggregateRule):
    """An aggregate of one column (``node.column``) by a store kernel: :meth:`prepare`
    sets, from the first batch's rows, ``kernel``, its output ``schema``, ``stage_in``
    (the kernel's input columns), ``columns`` (its output read as the result table) and
    ``shape``."""

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        column = self.node.column
        rows = self.signed_rows(frame, {"v": self.column_of(column, frame)}, guarded=["v"] if is_guarded_expr(column) else [])
        if not hasattr(self, "kernel"):
            self.key_type = rows.schema["gk"].dataType
            self.prepare(rows.schema["v"].dataType, frame)
        stage = self.run_stage(batch, rows, self.stage_in, self.kernel, self.schema)
        changes = batch.persist(stage, self.node.name)
        return self.result(batch, select(changes, self.columns), frame)

    def prepare(self, vtype: DataType, frame: Frame) -> None:
        raise NotImplementedError

    def decoded(self, frame: Frame, rtype: DataType) -> None:
        """``columns`` and ``shape`` of a kernel whose results are canonical bytes
        (``old_vb``, ``new_vb``) of ``rtype`` values."""
        self.columns = named([
            self.group_key(frame, self.key_type).alias("key"),
            from_canonical(F.col("old_vb"), rtype).alias("old"),
            from_canonical(F.col("new_vb"), rtype).alias("new"),
            "ts",
            *result_order(),
        ])
        self.shape = ValueShape(rtype)


def _grouping(topology, node) -> str:
    """The node an aggregate groups (above the repartition each aggregate may have)."""
    grouping = topology.node(node.parent)
    while isinstance(grouping, stateless.Repartition):
        grouping = topology.node(grouping.parent)
    return grouping.name

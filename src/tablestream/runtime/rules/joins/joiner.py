"""The joiner of a join: SQL text over ``left`` and ``right``, a Spark Column over the
same two columns, or a Python callable ``(left, right)``; evaluated where the join
kind says a result exists."""

from __future__ import annotations

import contextlib

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ....plan.expr import Expr, SqlExpr
from ...expressions import (
    JSON_TEXT,
    ValueShape,
    joiner_callable_column,
    joiner_sql_column,
    results,
    unguarded,
)
from ...failures import carefully, quietly
from ...frames import Assignments, changed, drop, named, result_order, select, with_columns
from ..values import is_guarded_expr, json_of

# For each join kind, whether a result exists given the left and right values.
_PRESENT = {
    "inner": lambda left, right: left.isNotNull() & right.isNotNull(),
    "left": lambda left, right: left.isNotNull(),
    "outer": lambda left, right: left.isNotNull() | right.isNotNull(),
}


class Joiner:
    """A join's joiner and the result columns it fills: per ``name -> (left column,
    right column)``, the joiner's result where the join kind has one (else null).
    Built once, at the first batch (it needs the two values' types)."""

    def __init__(self, expr: Expr, kind: str, resolve, pairs: dict[str, tuple[str, str]]):
        self.expr = expr
        self.kind = kind
        self.resolve = resolve
        self.pairs = pairs
        self.steps: list[dict[str, Column]] | None = None
        self.shape: ValueShape | None = None

    def _prepare(self, df: DataFrame, left: ValueShape, right: ValueShape, key_undeclared: bool) -> None:
        expr = self.expr
        positioned = "o_src" in df.columns

        def column(name: str) -> Column:
            if not isinstance(expr, SqlExpr) and expr.kind == "column":
                return self.resolve(expr)
            # A table join's old result: its failure was reported when it was the new one.
            with quietly() if name == "old" else contextlib.nullcontext():
                if isinstance(expr, SqlExpr):
                    return joiner_sql_column(expr, positioned=positioned, key_undeclared=key_undeclared)
                return joiner_callable_column(
                    self.resolve(expr), left, right, json_of, positioned=positioned, key_undeclared=key_undeclared
                )

        if isinstance(expr, SqlExpr) or expr.kind == "column":
            probe = df.select(F.lit(None).cast(left.dtype).alias("_jl"), F.lit(None).cast(right.dtype).alias("_jr"))
            # The type of a careful run's result is the strict expression's.
            with carefully(False):
                self.shape = ValueShape(probe.select(column("value").alias("_j")).schema["_j"].dataType)
        else:
            self.shape = JSON_TEXT
        steps = []
        for name, (lcol, rcol) in self.pairs.items():
            present = _PRESENT[self.kind](F.col(lcol), F.col(rcol))
            steps.append(Assignments({"_jl": F.col(lcol), "_jr": F.col(rcol), "_jp": present}))
            steps.append(Assignments({name: F.when(F.col("_jp"), column(name))}))
        self.steps = steps
        self.guarded = list(self.pairs) if is_guarded_expr(expr) else []

    def finish(self, df: DataFrame) -> DataFrame:
        """A stream record whose joiner fails leaves the output (it is in the
        processing log)."""
        return unguarded(df, self.guarded)

    def join(self, df: DataFrame, left: ValueShape, right: ValueShape, *, key_undeclared: bool = False) -> DataFrame:
        """``df`` with the result columns (``key_undeclared``: its keys are undeclared KAFKA
        keys, logged as their bytes)."""
        if self.steps is None:
            self._prepare(df, left, right, key_undeclared)
        for step in self.steps:
            df = with_columns(df, step)
        return self.finish(drop(df, "_jl", "_jp", "_jr"))


class TableJoiner(Joiner):
    """The joiner of a table-table join: the result before and after (``old`` from
    ``l_old``/``r_old``, ``new`` from ``l_new``/``r_new``), one row per key with a
    real change (emit on change)."""

    def __init__(self, expr: Expr, kind: str, resolve):
        super().__init__(expr, kind, resolve, {"old": ("l_old", "r_old"), "new": ("l_new", "r_new")})
        self.columns = None

    def finish(self, df: DataFrame) -> DataFrame:
        """A result the joiner fails on is absent (a change to it deletes the key's
        earlier result; the failure is in the processing log)."""
        return results(df, self.guarded)

    def changes(self, df: DataFrame, left: ValueShape, right: ValueShape, *, key_undeclared: bool = False) -> DataFrame:
        joined = self.join(df, left, right, key_undeclared=key_undeclared)
        if self.columns is None:
            self.columns = (named([F.col(c) for c in ("key", "old", "new", "ts")] + result_order()), changed())
        columns, emit = self.columns
        return select(joined, columns).where(emit)

"""Plan expressions over a frame's rows, as the rules use them: a mapper's value and
shape, a Python callable's column, and expressions evaluated on a table's old and new
rows."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from ...plan.expr import Expr, ExprRef, SqlExpr, record_column
from ..expressions import JSON_TEXT, RESULT, ValueShape, callable_column, careful_sql, sql_column
from ..failures import quietly
from ..frames import Assignments, Frame, drop, with_columns
from ..keys import KeyForm, value_form

PAIR_TYPE = StructType([StructField("k", StringType()), StructField("v", StringType())])


def json_of(value: Any) -> str | None:
    """A callable's result as JSON text (None stays None)."""
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def is_guarded_expr(expr: Expr) -> bool:
    """Whether ``expr``'s column is a user function column (see
    :func:`~tablestream.runtime.expressions.callable_column`): a Python callable, or, in
    a careful run, SQL that can raise at run time (see
    :func:`~tablestream.runtime.expressions.careful_sql`)."""
    if isinstance(expr, SqlExpr):
        return careful_sql(expr) is not None
    return expr.kind == "callable"


def is_key(expr: Expr) -> bool:
    """Whether ``expr`` is the SQL ``key`` (or ``record.key``): the record's key as it is."""
    return isinstance(expr, SqlExpr) and record_column(expr.tree()) == "key"


def is_whole_value(expr: Expr, shape: ValueShape) -> bool:
    """Whether ``expr`` is the record's whole value: ``record.value``, or ``value`` when
    the value has no field of that name."""
    if not isinstance(expr, SqlExpr) or record_column(expr.tree()) != "value":
        return False
    return "." in expr.sql or "value" not in (f.lower() for f in shape.fields)


def value_expr(expr: Expr, frame: Frame, resolve, *, skip_null: bool = False) -> tuple[Column, ValueShape]:
    """A mapper's result over the frame's ``key`` and ``value`` columns, and its shape."""
    if isinstance(expr, SqlExpr):
        if is_whole_value(expr, frame.value):
            return F.col("value"), frame.value  # the identity keeps JSON text JSON
        col = sql_column(expr, frame.value, key_undeclared=frame.key_undeclared)
    elif expr.kind == "column":
        col = resolve(expr)
    else:
        return callable_of(expr, frame, resolve, StringType(), skip_null=skip_null), JSON_TEXT
    df = frame.df if frame.kind == "stream" else frame.df.withColumn("value", F.col("new"))
    typed = col.getField(RESULT) if is_guarded_expr(expr) else col
    return col, ValueShape(df.select(typed.alias("_")).schema["_"].dataType)


def callable_of(
    ref: ExprRef, frame: Frame, resolve, result: DataType, *, pair: bool = False, many: bool = False,
    skip_null: bool = False,
) -> Column:
    """A Python callable over ``key`` and ``value``; its results become JSON text (a
    pair as ``struct<k, v>`` of JSON texts, many results as an array)."""

    def convert(res: Any) -> Any:
        if pair and many:
            return [{"k": json_of(k), "v": json_of(v)} for k, v in (res or [])]
        if pair:
            if res is None:
                return {"k": None, "v": None}
            k, v = res
            return {"k": json_of(k), "v": json_of(v)}
        if many:
            return [json_of(v) for v in (res or [])]
        return json_of(res)

    return callable_column(
        resolve(ref), ref.arity, frame.value, result, key_json=frame.key_json, key_undeclared=frame.key_undeclared,
        convert=convert, skip_null=skip_null,
    )


def selected_key(expr: Expr, frame: Frame, resolve) -> tuple[Column, KeyForm]:
    """A key computed by ``expr`` over ``value`` (and ``key``), and the form of its
    results: a callable's are JSON text; SQL ``value`` over JSON text is that text, a
    STRING, as in any SQL expression. Where ``expr`` is a user function (see
    :func:`is_guarded_expr`) the column is its user function column: the caller keeps
    it in a column of its own and leaves out the records it failed on (they are in the
    processing log) with :func:`~tablestream.runtime.expressions.unguarded`, or reads
    :func:`~tablestream.runtime.expressions.guarded_result`."""
    col, shape = value_expr(expr, frame, resolve, skip_null=True)
    if shape.json_text and is_whole_value(expr, frame.value):
        return col, KeyForm("typed", StringType())
    if frame.key_undeclared and is_key(expr):
        return col, KeyForm("undeclared")
    return col, value_form(shape)


def side_steps(
    results: dict[str, Callable[[], Column]], sides: tuple[str, ...] = ("old", "new"), *, quiet: bool = False
) -> list[dict[str, Column]]:
    """Projections that evaluate expressions once against a table's old rows and once
    against its new rows: ``value`` is bound to each side in turn, so SQL text, Spark
    Columns and callables all see the row as a stream record's value. They add
    ``_old_<name>`` and ``_new_<name>`` (null where the side is missing). ``sides``:
    only those (a table's versions have ``new`` only); ``quiet``: no side's user
    functions report their failures (another projection of the same rows does)."""
    steps = []
    for side in sides:
        steps.append(Assignments({"value": F.col(side)}))
        # The old row's user functions do not report: its failure was reported when it
        # was the new row.
        with quietly() if quiet or side == "old" else contextlib.nullcontext():
            steps.append(Assignments(
                {f"_{side}_{name}": F.when(F.col(side).isNotNull(), build()) for name, build in results.items()}
            ))
    return steps


def table_side_steps(
    results: dict[str, Callable[[], Column]], every: bool
) -> tuple[list[dict[str, Column]], list[dict[str, Column]] | None]:
    """The :func:`side_steps` of a table's changes and, when ``every`` (a reader needs
    every version of the batch and the input has them), of its versions. The versions'
    projection then reports each user function's failure, once per version, and the
    changes' is quiet."""
    return side_steps(results, quiet=every), (side_steps(results, ("new",)) if every else None)


def with_sides(df: DataFrame, steps: list[dict[str, Column]]) -> DataFrame:
    """``df`` with the columns of :func:`side_steps`."""
    for step in steps:
        df = with_columns(df, step)
    return drop(df, "value")

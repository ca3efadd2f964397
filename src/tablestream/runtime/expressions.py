"""Plan expressions evaluated on Spark: SQL text rewritten onto a frame's columns,
Spark Columns as they are, Python callables as vectorized Arrow UDFs.

In a SQL expression, ``key`` is the record key, ``value`` the whole value, ``rowtime``
the record timestamp (epoch ms), and any other name a field of the value (a struct).
The same expression is evaluated against a table's old and new rows by pointing
``value`` at ``old`` or ``new``.

A callable gets plain Python values (a struct or a JSON object as a dict, JSON arrays as
lists, a tombstone as None) and returns plain values. Without a declared output type its
result is kept as JSON text; the next callable receives it parsed again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlglot
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, StringType, StructType
from sqlglot import exp

from ..errors import TablestreamError
from ..plan.expr import Expr, SqlExpr
from ..storage.formats.spark_types import ksql_type_name


class ExpressionError(TablestreamError, ValueError):
    """An expression that does not fit the records it is applied to: a name they do not
    have, a function Spark does not know, types that do not go together, a predicate
    that is not BOOLEAN. Found when an application or a test driver is created."""


def describe(expr: Expr) -> str:
    """How an error names an expression: SQL by its text, a Column or a callable by
    its description."""
    if isinstance(expr, SqlExpr):
        return f"expression '{expr.text}'"
    return f"{expr.kind} {expr.description}"


# While a topology is analyzed, the Spark SQL text each SQL expression became (Spark's
# errors point into that text; the analysis reports the user's text instead).
_spark_texts: ContextVar[list[tuple[str, SqlExpr]] | None] = ContextVar("spark_texts", default=None)


@contextmanager
def recording_spark_texts() -> Iterator[list[tuple[str, SqlExpr]]]:
    """Collect ``(Spark SQL text, expression)`` for every SQL expression built inside."""
    texts: list[tuple[str, SqlExpr]] = []
    token = _spark_texts.set(texts)
    try:
        yield texts
    finally:
        _spark_texts.reset(token)


def _spark_expr(text: str, expr: SqlExpr) -> Column:
    texts = _spark_texts.get()
    if texts is not None:
        texts.append((text, expr))
    return F.expr(text)


@dataclass(frozen=True)
class ValueShape:
    """What a frame's value column holds: a Spark type, and whether it is JSON text
    (a schemaless JSON value or the result of a callable) to be parsed for callables."""

    dtype: DataType
    json_text: bool = False

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.dtype.names) if isinstance(self.dtype, StructType) else ()


JSON_TEXT = ValueShape(StringType(), json_text=True)


def sql_column(expr: SqlExpr, shape: ValueShape, *, key: str = "key", value: str = "value", ts: str = "ts") -> Column:
    """The Spark Column of a SQL expression over a frame whose key, value and timestamp
    columns are called ``key``, ``value`` and ``ts``."""
    fields = {f.lower(): f for f in shape.fields}
    tree = sqlglot.parse_one(expr.sql, dialect="spark")

    def rewrite(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column) or node.table:
            return node
        name = node.name
        lowered = name.lower()
        if lowered in fields:
            return exp.Dot(this=exp.column(value), expression=exp.to_identifier(fields[lowered]))
        if lowered == "key":
            return exp.column(key)
        if lowered == "value":
            return exp.column(value)
        if lowered == "rowtime":
            return exp.column(ts)
        available = ", ".join(["key", "value", "rowtime", *shape.fields])
        raise ExpressionError(f"{describe(expr)}: unknown column '{name}' (columns: {available})")

    rewritten = tree.transform(rewrite)
    # A dotted reference such as value.amount parses as a column with a table part.
    for column in list(rewritten.find_all(exp.Column)):
        if column.table and column.table.lower() == "value":
            column.set("table", exp.to_identifier(value))
    return _spark_expr(rewritten.sql(dialect="spark"), expr)


def to_python(value: Any, shape: ValueShape) -> Any:
    """A value as a callable receives it."""
    if value is None:
        return None
    if shape.json_text:
        return json.loads(value)
    return value


def arrow_values(values: list[Any], dtype: DataType) -> pa.Array:
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.array(values, type=to_arrow_type(dtype))


def callable_column(
    fn: Callable[..., Any],
    arity: int | None,
    shape: ValueShape,
    result: DataType,
    *,
    key_json: bool = False,
    convert: Callable[[Any], Any] = lambda res: res,
    skip_null: bool = False,
    key: str = "key",
    value: str = "value",
) -> Column:
    """A vectorized Arrow UDF calling ``fn(value)`` (arity 1) or ``fn(key, value)`` on
    each row, with plain Python values; ``convert`` shapes each result for ``result``.
    ``skip_null``: a null value gives a null result without calling ``fn`` (a table's
    missing old or new row: Kafka Streams never passes those to user functions)."""
    from pyspark.sql.functions import arrow_udf

    def run(keys: pa.Array, values: pa.Array) -> pa.Array:
        out = []
        for k, v in zip(keys.to_pylist(), values.to_pylist(), strict=True):
            if v is None and skip_null:
                out.append(None)
                continue
            argument = to_python(v, shape)
            if key_json and k is not None:
                k = json.loads(k)
            out.append(convert(fn(argument) if arity == 1 else fn(k, argument)))
        return arrow_values(out, result)

    return arrow_udf(run, result)(F.col(key), F.col(value))


def predicate_column(
    expr: Expr, shape: ValueShape, resolve, *, key_json: bool = False, skip_null: bool = False,
    key: str = "key", value: str = "value", ts: str = "ts",
) -> Column:
    """A boolean Column for a predicate ``(key, value) -> bool`` (null counts as false, as
    in SQL's ``WHERE``; :func:`check_predicate` refuses a SQL or Column predicate that
    is not BOOLEAN)."""
    if isinstance(expr, SqlExpr):
        col = sql_column(expr, shape, key=key, value=value, ts=ts)
    elif expr.kind == "column":
        col = resolve(expr)
    else:
        col = callable_column(
            resolve(expr), expr.arity, shape, BooleanType(),
            key_json=key_json, convert=lambda res: bool(res), skip_null=skip_null, key=key, value=value,
        )
    return F.coalesce(col.cast("boolean"), F.lit(False))


def check_predicate(expr: Expr, df: DataFrame, shape: ValueShape, resolve) -> None:
    """Refuse a SQL or Column predicate whose type over ``df`` (a stream frame's columns)
    is not BOOLEAN; a callable's result is taken as a boolean."""
    if isinstance(expr, SqlExpr):
        col = sql_column(expr, shape)
    elif expr.kind == "column":
        col = resolve(expr)
    else:
        return
    dtype = df.select(col.alias("_p")).schema["_p"].dataType
    if not isinstance(dtype, BooleanType):
        what = f"predicate '{expr.text}'" if isinstance(expr, SqlExpr) else f"predicate {describe(expr)}"
        raise ExpressionError(f"{what} is {ksql_type_name(dtype)}, not BOOLEAN")


def joiner_sql_column(expr: SqlExpr, left: str = "_jl", right: str = "_jr") -> Column:
    """A joiner's SQL over the two values: ``left`` and ``right`` (and their fields,
    ``left.amount``) become the columns ``left`` and ``right`` name."""
    names = {"left": left, "right": right}
    tree = sqlglot.parse_one(expr.sql, dialect="spark")

    def rewrite(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column):
            return node
        if node.table:
            side = node.table.lower()
            if side not in names:
                raise ExpressionError(
                    f"{describe(expr)}: unknown value '{node.table}' (the values are left and right)"
                )
            return exp.Dot(this=exp.column(names[side]), expression=exp.to_identifier(node.name))
        side = node.name.lower()
        if side not in names:
            raise ExpressionError(
                f"{describe(expr)}: unknown column '{node.name}' (name the values left and right, "
                "and their fields left.<field> and right.<field>)"
            )
        return exp.column(names[side])

    return _spark_expr(tree.transform(rewrite).sql(dialect="spark"), expr)


def joiner_callable_column(
    fn: Callable[[Any, Any], Any],
    left_shape: ValueShape,
    right_shape: ValueShape,
    convert: Callable[[Any], Any],
    *,
    left: str = "_jl",
    right: str = "_jr",
    present: str = "_jp",
) -> Column:
    """A vectorized Arrow UDF calling ``fn(left, right)`` on the rows where the boolean
    column ``present`` holds (a join result exists), with plain Python values; its
    results become JSON text through ``convert``."""
    from pyspark.sql.functions import arrow_udf

    def run(lefts: pa.Array, rights: pa.Array, presents: pa.Array) -> pa.Array:
        out = []
        for lv, rv, ok in zip(lefts.to_pylist(), rights.to_pylist(), presents.to_pylist(), strict=True):
            out.append(convert(fn(to_python(lv, left_shape), to_python(rv, right_shape))) if ok else None)
        return pa.array(out, pa.string())

    return arrow_udf(run, StringType())(F.col(left), F.col(right), F.col(present))

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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import sqlglot
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, DataType, StringType, StructType
from sqlglot import exp

from ..plan.expr import Expr, ExprRef, SqlExpr


class ExpressionError(ValueError):
    """An expression that names something the record does not have."""


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
        raise ExpressionError(f"Expression '{expr.sql}': unknown column '{name}' (columns: {available})")

    rewritten = tree.transform(rewrite)
    # A dotted reference such as value.amount parses as a column with a table part.
    for column in list(rewritten.find_all(exp.Column)):
        if column.table and column.table.lower() == "value":
            column.set("table", exp.to_identifier(value))
    return F.expr(rewritten.sql(dialect="spark"))


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
    ref: ExprRef,
    columns: list[Column],
    shapes: list[ValueShape],
    result: DataType,
    *,
    encode_json: bool,
    value_last: bool = False,
) -> Column:
    """A vectorized Arrow UDF calling ``fn`` on each row of ``columns``.

    ``value_last``: a one-argument callable receives the last column (a value mapper
    ``(value)`` of a ``(key, value)`` pair). ``encode_json``: the result is JSON text.
    """
    from pyspark.sql.functions import arrow_udf

    arity = ref.arity

    def run(*arrays: pa.Array) -> pa.Array:
        rows = [
            [to_python(v, shape) for v in array.to_pylist()]
            for array, shape in zip(arrays, shapes, strict=True)
        ]
        out = []
        for args in zip(*rows, strict=True):
            if value_last and arity == 1:
                res = fn(args[-1])
            else:
                res = fn(*args[: arity if arity is not None else len(args)])
            out.append(_json_or_none(res) if encode_json else res)
        return arrow_values(out, result)

    return arrow_udf(run, result)(*columns)


def _json_or_none(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), sort_keys=False)


def predicate_column(
    expr: Expr, shape: ValueShape, functions, *, key: str = "key", value: str = "value", ts: str = "ts"
) -> Column:
    """A boolean Column for a predicate ``(key, value) -> bool`` (null counts as false)."""
    if isinstance(expr, SqlExpr):
        col = sql_column(expr, shape, key=key, value=value, ts=ts)
    elif expr.kind == "column":
        col = functions[expr.ref]
    else:
        col = callable_column(
            functions[expr.ref], expr, [F.col(key), F.col(value)], [_KEY, shape], BooleanType(), encode_json=False
        )
    return F.coalesce(col.cast("boolean"), F.lit(False))


_KEY = ValueShape(StringType())  # keys reach callables as they are

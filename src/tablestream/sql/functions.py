"""The functions ksqlDB's SQL can call here: scalar functions (their ksqlDB types and
their Spark SQL, with ksqlDB's null and index rules) and the names of aggregates.

Each scalar function takes the translated arguments (:class:`~tablestream.sql.expressions.Typed`)
and returns its Spark SQL tree and result type, or raises :class:`ArgumentError`
saying what it accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from tablestream.schema import BIGINT, BYTES, DOUBLE, INT, STRING, DecimalType, SqlType
from tablestream.sql.types import common_type, ksql_text

if TYPE_CHECKING:
    from tablestream.sql.expressions import Typed

__all__ = ["AGGREGATES", "SCALAR", "TABLE_AGGREGATES", "UNSUPPORTED_AGGREGATES", "ArgumentError", "is_aggregate"]


class ArgumentError(Exception):
    """Arguments a function does not take; the message says what it takes."""


# Aggregates the compiler turns into the DSL's aggregations.
AGGREGATES = (
    "AVG", "COLLECT_LIST", "COLLECT_SET", "COUNT", "COUNT_DISTINCT", "EARLIEST_BY_OFFSET",
    "LATEST_BY_OFFSET", "MAX", "MIN", "SUM",
)
# Those a table source takes: the ones ksqlDB can undo (its TableUdafs).
TABLE_AGGREGATES = ("AVG", "COLLECT_LIST", "COUNT", "SUM")
# ksqlDB aggregates the DSL has no built-in aggregation for yet.
UNSUPPORTED_AGGREGATES = ("CORRELATION", "HISTOGRAM", "STDDEV_SAMP", "STDDEV_SAMPLE", "TOPK", "TOPKDISTINCT")


def is_aggregate(name: str) -> bool:
    """Whether ``name`` (upper-case) is one of ksqlDB's aggregate functions."""
    return name in AGGREGATES or name in UNSUPPORTED_AGGREGATES


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _arity(args: list[Typed], low: int, high: int | None = None) -> None:
    high = low if high is None else high
    if not low <= len(args) <= high:
        takes = str(low) if low == high else f"{low} to {high}"
        raise ArgumentError(f"takes {takes} argument{'s' if high != 1 else ''}, got {len(args)}")


def _types(args: list[Typed], allowed: tuple[SqlType, ...], what: str) -> None:
    for arg in args:
        if arg.type is not None and arg.type not in allowed:
            raise ArgumentError(f"takes {what}, got {ksql_text(arg.type)}")


def _case_change(spark: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        _arity(args, 1)
        _types(args, (STRING,), "a STRING")
        return _call(spark, args[0].spark), STRING

    return fn


def _len(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (STRING, BYTES), "a STRING or BYTES")
    return _call("length", args[0].spark), INT


def _concat(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    if not args:
        raise ArgumentError("takes at least 1 argument, got 0")
    _types(args, (STRING,), "STRING arguments")
    # ksqlDB skips null arguments (and concatenates nothing to '').
    return _call("concat_ws", exp.Literal.string(""), *(a.spark for a in args)), STRING


def _substring(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 2, 3)
    _types(args[:1], (STRING,), "a STRING")
    _types(args[1:], (INT, BIGINT), "INTEGER positions and lengths")
    text, pos = args[0].spark, args[1].spark
    length = _call("char_length", text)
    # ksqlDB's start: from 1, or from the end when negative, clamped to the string.
    start = exp.Case(
        ifs=[exp.If(this=exp.LT(this=pos, expression=exp.Literal.number(0)),
                    true=_call("greatest", exp.Add(this=length, expression=pos), exp.Literal.number(0)))],
        default=_call("greatest", _call("least", exp.Sub(this=pos, expression=exp.Literal.number(1)), length),
                      exp.Literal.number(0)),
    )
    first = exp.Add(this=exp.Paren(this=start), expression=exp.Literal.number(1))
    # A null position or length gives null, as in ksqlDB (Spark's least and greatest
    # would skip it).
    missing = exp.Or(this=exp.Is(this=pos, expression=exp.Null()), expression=exp.Is(this=args[-1].spark, expression=exp.Null()))
    if len(args) == 2:
        result = _call("substring", text, first)
    else:
        end = _call("greatest", _call("least", exp.Add(this=exp.Paren(this=start), expression=args[2].spark), length),
                    exp.Paren(this=start))
        result = _call("substring", text, first, exp.Sub(this=end, expression=exp.Paren(this=start)))
    return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=result), STRING


def _abs(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    t = args[0].type
    if t is not None and t not in (INT, BIGINT, DOUBLE) and not isinstance(t, DecimalType):
        raise ArgumentError(f"takes a number, got {ksql_text(t)}")
    return _call("abs", args[0].spark), t or DOUBLE


def _coalesce(args: list[Typed], name: str = "COALESCE") -> tuple[exp.Expr, SqlType | None]:
    result = common_type([a.type for a in args])
    if result is None and any(a.type is not None for a in args):
        shown = ", ".join(ksql_text(a.type) for a in args)
        raise ArgumentError(f"the arguments have no common type ({shown})")
    from tablestream.sql.expressions import cast_to

    return _call("coalesce", *(cast_to(a, result) if result else a.spark for a in args)), result


def _coalesce_fn(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    if not args:
        raise ArgumentError("takes at least 1 argument, got 0")
    return _coalesce(args)


def _ifnull(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    _arity(args, 2)
    return _coalesce(args, "IFNULL")


SCALAR: dict[str, Callable[[list[Typed]], tuple[exp.Expr, SqlType | None]]] = {
    "ABS": _abs,
    "COALESCE": _coalesce_fn,
    "CONCAT": _concat,
    "IFNULL": _ifnull,
    "LCASE": _case_change("lower"),
    "LEN": _len,
    "SUBSTRING": _substring,
    "UCASE": _case_change("upper"),
}

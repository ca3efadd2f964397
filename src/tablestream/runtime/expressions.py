"""Plan expressions evaluated on Spark: SQL text rewritten onto a frame's columns,
Spark Columns as they are, Python callables as vectorized Arrow UDFs.

In a SQL expression, ``key`` is the record key, ``value`` the whole value, ``rowtime``
the record timestamp (epoch ms), and any other name a field of the value (a struct); a
field of the value named ``key``, ``value`` or ``rowtime`` takes the bare name, and
``record.key``, ``record.value`` and ``record.rowtime`` always name the record's own;
``record.partition`` and ``record.offset`` are a stream record's source partition and
offset.
The same expression is evaluated against a table's old and new rows by pointing
``value`` at ``old`` or ``new``.

A callable gets plain Python values (a struct or a JSON object as a dict, JSON arrays as
lists, a tombstone as None; an undeclared KAFKA key as the ``str`` or ``int`` it reads as)
and returns plain values. Without a declared output type its result is kept as JSON text;
the next callable receives it parsed again.

A callable's column is a *user function column* (:func:`guarded_type`): its result and
whether it failed on the row, reported to the processing log. In a careful run of a
batch (:func:`~tablestream.runtime.failures.carefully`) a SQL expression that can raise
is one too: its non-raising form and a Spark column giving why the strict form would
raise (:mod:`tablestream.runtime.careful`); otherwise SQL is evaluated as it is.
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
from pyspark.sql.types import BooleanType, DataType, StringType, StructField, StructType
from sqlglot import exp

from ..errors import TablestreamError
from ..plan.expr import RECORD, SPARK, Expr, SqlExpr
from ..storage.formats.spark_types import ksql_type_name
from ..storage.undeclared import undeclared_key
from .careful import CarefulForm, careful_form
from .failures import ERROR, current_reporter, failure_reason, is_careful


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


def careful_sql(expr: SqlExpr) -> CarefulForm | None:
    """In a careful run, the careful form of a SQL expression that can raise at run time
    (its column is then a user function column); None otherwise."""
    return careful_form(expr.sql) if is_careful() else None


def sql_column(
    expr: SqlExpr, shape: ValueShape, *, key: str = "key", value: str = "value", ts: str = "ts",
    quiet: Column | None = None, result: Callable[[Column], Column] = lambda col: col, key_undeclared: bool = False,
) -> Column:
    """The Spark Column of a SQL expression over a frame whose key, value and timestamp
    columns are called ``key``, ``value`` and ``ts``, made ``result`` of it.

    In a careful run, for an expression that can raise (:func:`careful_sql`), a user
    function column (its result is ``result`` of the non-raising form) whose failed rows
    are reported with that key and value, except where ``quiet`` holds (their failure is
    reported elsewhere). ``key_undeclared``: the keys are undeclared KAFKA keys (see
    :func:`udf_key`)."""
    bind = _binder(expr, shape, key, value, ts)
    form = careful_sql(expr)
    if form is None:
        return result(bind(sqlglot.parse_one(expr.sql, dialect=SPARK)))
    return careful_column(
        result(bind(form.value)), bind(form.reason), udf_key(key, key_undeclared), F.col(value), quiet=quiet
    )


def sql_never_raising(
    expr: SqlExpr, shape: ValueShape, *, key: str = "key", value: str = "value", ts: str = "ts",
) -> tuple[Column, Column | None]:
    """A SQL expression over a frame's columns (as :func:`sql_column`) in a form that
    never raises, in every run: its value (null where the strict form would raise) and
    the reason the strict form raises on a row (None when it cannot raise)."""
    bind = _binder(expr, shape, key, value, ts)
    form = careful_form(expr.sql)
    if form is None:
        return bind(sqlglot.parse_one(expr.sql, dialect=SPARK)), None
    return bind(form.value), bind(form.reason)


def _binder(expr: SqlExpr, shape: ValueShape, key: str, value: str, ts: str) -> Callable[[exp.Expression], Column]:
    """Turns (a form of) ``expr``'s tree into a Column over the named frame columns."""
    fields = {f.lower(): f for f in shape.fields}

    # The record's own columns; its partition and offset are the ordering key's.
    own = {"key": key, "value": value, "rowtime": ts, "partition": "o_part", "offset": "o_off"}

    def rewrite(node: exp.Expression) -> exp.Expression:
        if not isinstance(node, exp.Column):
            return node
        if node.table.lower() == RECORD and not node.args.get("db"):
            column = own.get(node.name.lower())
            if column is None:
                raise ExpressionError(f"{describe(expr)}: unknown column '{node.sql()}' (the record's are {', '.join(f'{RECORD}.{n}' for n in own)})")
            return exp.column(column)
        if node.table:
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

    def bind(tree: exp.Expression) -> Column:
        rewritten = tree.transform(rewrite)
        # A dotted reference such as value.amount parses as a column with a table part.
        for column in list(rewritten.find_all(exp.Column)):
            if column.table and column.table.lower() == "value":
                column.set("table", exp.to_identifier(value))
        return _spark_expr(rewritten.sql(dialect=SPARK), expr)

    return bind


def udf_key(name: str, undeclared: bool) -> Column:
    """A key column as a Python UDF takes it: an undeclared KAFKA key as its bytes (they
    may not be UTF-8, which Arrow cannot hand to Python as text), read by
    :func:`~tablestream.storage.undeclared.undeclared_key` for a callable and logged as
    they are."""
    return F.col(name).cast("binary") if undeclared else F.col(name)


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


RESULT, FAILED = "_result", "_failed"


#: The positions a user function's failure is reported with (the ordering key's).
POSITION_COLUMNS = ("o_src", "o_part", "o_off", "o_idx", "ts")


def guarded_type(result: DataType) -> StructType:
    """A user function's column: its result ``r`` and ``f``, true where it failed (the
    record is then reported to the processing log and leaves the operator's output)."""
    return StructType([StructField(RESULT, result), StructField(FAILED, BooleanType(), False)])


def _guarded_udf(
    call: Callable[..., Any], result: DataType, columns: list[Column], reporter, positioned: bool = True
) -> Column:
    """An Arrow UDF running ``call(*row)`` on each row of ``columns`` (the record's key
    and value first: a failure is logged with them) followed by the position columns; a call that raises gives ``f`` true and is reported. The UDF is
    nondeterministic so that Spark runs it once per row, never copied into a filter."""
    from pyspark.sql.functions import arrow_udf

    count = len(columns)

    def run(*arrays: pa.Array) -> pa.Array:
        rows = zip(*[a.to_pylist() for a in arrays], strict=True)
        out, failed, reports = [], [], []
        for row in rows:
            try:
                out.append(call(*row[:count]))
                failed.append(False)
            except Exception as error:  # noqa: BLE001 - a user function's failure is reported, never lost
                out.append(None)
                failed.append(True)
                reports.append(reporter.entry(ERROR, failure_reason(error), row[0], row[1], row[count:]))
        reporter.report(reports)
        return pa.StructArray.from_arrays(
            [arrow_values(out, result), pa.array(failed, pa.bool_())], fields=list(_arrow_fields(result))
        )

    return arrow_udf(run, guarded_type(result)).asNondeterministic()(*columns, *_positions(positioned))


def _positions(positioned: bool) -> list[Column]:
    """The columns a failure is reported with (see :data:`POSITION_COLUMNS`)."""
    if positioned:
        return [F.col(c) for c in POSITION_COLUMNS]
    # Rows without an ordering key (a join's results): the timestamp only.
    return [F.lit(None).cast(t) for t in ("int", "int", "long", "int")] + [F.col("ts")]


def careful_column(
    result: Column, reason: Column, key: Column, value: Column, *, quiet: Column | None = None,
    positioned: bool | None = None,
) -> Column:
    """A SQL expression's user function column in a careful run: its non-raising
    ``result``, failed (and null) where ``reason`` (why the strict form raises) is not
    null. An Arrow UDF reports the failed rows, with ``key``, ``value`` and their
    positions, to the operator being built (unless ``quiet``); it is nondeterministic so
    that Spark runs it once per row. ``positioned``: the rows have the ordering key's
    columns (by default, as the operator's inputs do)."""
    import pyarrow.compute as pc
    from pyspark.sql.functions import arrow_udf

    reporter = current_reporter()
    if positioned is None:
        positioned = reporter.positioned

    def run(reasons: pa.Array, loud: pa.Array, keys: pa.Array, values: pa.Array, *positions: pa.Array) -> pa.Array:
        failed = pc.is_valid(reasons)
        reported = pc.and_(failed, loud)
        if pc.any(reported).as_py():
            rows = zip(*[a.filter(reported).to_pylist() for a in (reasons, keys, values, *positions)], strict=True)
            reporter.report([reporter.entry(ERROR, why, k, v, tuple(at)) for why, k, v, *at in rows])
        return failed

    failing = reason.isNotNull()
    loud = F.lit(True) if quiet is None else F.coalesce(~quiet, F.lit(True))
    # Only a failed row's key and value cross to Python.
    failed = arrow_udf(run, BooleanType()).asNondeterministic()(
        reason, loud, F.when(failing, key), F.when(failing, value), *_positions(positioned)
    )
    # Null where it failed, as a user function's result (a struct result may not be).
    return F.struct(F.when(~failing, result).alias(RESULT), failed.alias(FAILED))


def _arrow_fields(result: DataType):
    from pyspark.sql.pandas.types import to_arrow_type

    return pa.field(RESULT, to_arrow_type(result)), pa.field(FAILED, pa.bool_(), nullable=False)


def callable_column(
    fn: Callable[..., Any],
    arity: int | None,
    shape: ValueShape,
    result: DataType,
    *,
    key_json: bool = False,
    key_undeclared: bool = False,
    convert: Callable[[Any], Any] = lambda res: res,
    skip_null: bool = False,
    key: str = "key",
    value: str = "value",
) -> Column:
    """A vectorized Arrow UDF calling ``fn(value)`` (arity 1) or ``fn(key, value)`` on
    each row, with plain Python values (``key_json``: the keys are JSON text;
    ``key_undeclared``: undeclared KAFKA keys); ``convert`` shapes each result for ``result``
    (and may refuse it by raising). The column is a struct of :func:`guarded_type`: a
    row where ``fn`` or ``convert`` raised has ``f`` true and is reported, with its
    position, to the processing log of the operator being built (see
    :mod:`tablestream.runtime.failures`). ``skip_null``: a null value gives a null result
    without calling ``fn`` (a table's missing old or new row: Kafka Streams never passes
    those to user functions)."""
    reporter = current_reporter()

    def call(k: Any, v: Any) -> Any:
        if v is None and skip_null:
            return None
        argument = to_python(v, shape)
        if k is not None and key_json:
            k = json.loads(k)
        elif k is not None and key_undeclared:
            k = undeclared_key(k)
        return convert(fn(argument) if arity == 1 else fn(k, argument))

    return _guarded_udf(call, result, [udf_key(key, key_undeclared), F.col(value)], reporter)


def guarded_result(name: str) -> Column:
    """The result of the user function column ``name`` (see :func:`callable_column`)."""
    return F.col(name).getField(RESULT)


def guarded_failed(name: str) -> Column:
    """True where the user function column ``name`` failed (false where it did not run)."""
    return F.coalesce(F.col(name).getField(FAILED), F.lit(False))


def unguarded(df, names):
    """``df`` without the rows where one of the user function columns ``names`` failed,
    each of them replaced by its result."""
    if not names:
        return df
    failed = F.lit(False)
    for name in names:
        failed = failed | guarded_failed(name)
    return df.where(~failed).withColumns({name: guarded_result(name) for name in names})


def results(df, names):
    """``df`` with each user function column of ``names`` replaced by its result, null
    where it failed (a table row the function fails on is absent, see
    :mod:`tablestream.runtime.failures`)."""
    if not names:
        return df
    return df.withColumns({name: guarded_result(name) for name in names})


def as_bool(result: Any) -> bool | None:
    """A callable predicate's result: a bool, or None (false, as a null in SQL); any
    other type is refused.

    >>> as_bool(True), as_bool(None)
    (True, None)
    >>> as_bool("no")
    Traceback (most recent call last):
    ...
    TypeError: a predicate must return a bool, not str ('no')
    """
    if result is None or isinstance(result, bool):
        return result
    try:
        import numpy as np

        if isinstance(result, np.bool_):
            return bool(result)
    except ImportError:  # pragma: no cover - numpy comes with pyarrow
        pass
    raise TypeError(f"a predicate must return a bool, not {type(result).__name__} ({result!r:.60})")


def predicate_column(
    expr: Expr, shape: ValueShape, resolve, *, key_json: bool = False, key_undeclared: bool = False,
    skip_null: bool = False, key: str = "key", value: str = "value", ts: str = "ts",
) -> Column:
    """A predicate ``(key, value) -> bool``: a boolean Column (null counts as false, as
    in SQL's ``WHERE``; :func:`check_predicate` refuses a SQL or Column predicate that
    is not BOOLEAN), or for a Python callable its user function column (see
    :func:`callable_column`): a result that is not a bool is a failure of the record."""
    if isinstance(expr, SqlExpr):
        if careful_sql(expr) is not None:
            return sql_column(
                expr, shape, key=key, value=value, ts=ts, result=lambda col: col.cast("boolean"),
                key_undeclared=key_undeclared,
            )
        col = sql_column(expr, shape, key=key, value=value, ts=ts)
    elif expr.kind == "column":
        col = resolve(expr)
    else:
        return callable_column(
            resolve(expr), expr.arity, shape, BooleanType(), key_json=key_json, key_undeclared=key_undeclared,
            convert=as_bool, skip_null=skip_null, key=key, value=value,
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


def joiner_sql_column(
    expr: SqlExpr, left: str = "_jl", right: str = "_jr", *, present: str = "_jp", positioned: bool = True,
    key_undeclared: bool = False,
) -> Column:
    """A joiner's SQL over the two values: ``left`` and ``right`` (and their fields,
    ``left.amount``) become the columns ``left`` and ``right`` name. In a careful run,
    for a joiner that can raise, a user function column (see :func:`careful_column`)
    failing only where the boolean column ``present`` holds (a join result exists);
    ``key_undeclared``: the result keys are undeclared KAFKA keys (see :func:`udf_key`)."""
    names = {"left": left, "right": right}

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

    def bind(tree: exp.Expression) -> Column:
        return _spark_expr(tree.transform(rewrite).sql(dialect=SPARK), expr)

    form = careful_sql(expr)
    if form is None:
        return bind(sqlglot.parse_one(expr.sql, dialect=SPARK))
    reason = F.when(F.col(present), bind(form.reason))
    return careful_column(bind(form.value), reason, udf_key("key", key_undeclared), F.col(left), positioned=positioned)


def joiner_callable_column(
    fn: Callable[[Any, Any], Any],
    left_shape: ValueShape,
    right_shape: ValueShape,
    convert: Callable[[Any], Any],
    *,
    left: str = "_jl",
    right: str = "_jr",
    present: str = "_jp",
    positioned: bool = True,
    key_undeclared: bool = False,
) -> Column:
    """A vectorized Arrow UDF calling ``fn(left, right)`` on the rows where the boolean
    column ``present`` holds (a join result exists), with plain Python values; its
    results become JSON text through ``convert``. A user function column (see
    :func:`callable_column`); ``positioned``: the rows have the ordering key's columns;
    ``key_undeclared``: the result keys are undeclared KAFKA keys (see :func:`udf_key`)."""
    reporter = current_reporter()

    def call(k: Any, lv: Any, rv: Any, ok: bool) -> Any:
        if not ok:
            return None
        return convert(fn(to_python(lv, left_shape), to_python(rv, right_shape)))

    columns = [udf_key("key", key_undeclared), F.col(left), F.col(right), F.col(present)]
    return _guarded_udf(call, StringType(), columns, reporter, positioned)

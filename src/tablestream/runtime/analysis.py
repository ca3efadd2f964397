"""What is found when a runner is built, before any record arrives: every rule applied
to an empty batch.

PySpark analyzes a DataFrame as it is built, so applying the rules to a batch without
records makes Spark resolve every name, function, struct field and type the topology
uses, without running a job or touching a store (the batch caches nothing, and a store
stage only describes its tasks). The rules keep the Columns they build, so the first
real batch does not build them again.

What Spark reports becomes one line naming the operator and the expression as the user
wrote it; Spark's error is chained as the cause::

    KSTREAM-MAPVALUES-0000000001: expression 'foo(amount)': Cannot resolve routine `foo` on search path [...]

A SQL or Column predicate must be BOOLEAN (a null result counts as false, as in SQL's
``WHERE``), and a sink's formats must be able to write its records::

    KSTREAM-FILTER-0000000001: predicate 'amount + 1' is DOUBLE, not BOOLEAN
    KSTREAM-SINK-0000000002: Cannot resolve "value" due to data type mismatch: cannot cast ...
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..errors import SchemaError
from ..plan import stateless
from ..plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr
from ..storage.topic import RECORD_COLUMNS
from .batch import BatchContext, BatchOutput
from .expressions import ExpressionError, check_predicate, describe, recording_spark_texts
from .frames import Frame
from .output import output_columns, record_columns
from .positions import BatchPositions
from .rules.sinks import ToTopicRule

# Names the rules give columns that a user's expression calls otherwise.
_INTERNAL_NAMES = {"_jl": "left", "_jr": "right"}
_INTERNAL = re.compile(r"`?\b(_jl|_jr)\b`?")
_VALUE_PREFIX = re.compile(r"`?\bvalue\b`?\.", re.IGNORECASE)
_ERROR_CLASS = re.compile(r"^\[[A-Z0-9_.]+\]\s*")
_SQLSTATE = re.compile(r"\s*SQLSTATE: \w+.*$")
_QUOTED = re.compile(r"`([^`]+)`")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def empty_records(spark) -> DataFrame:
    """A batch without records: the record columns and the ordering time ``o_ts``."""
    columns = [F.lit(None).cast(t).alias(c) for c, t in RECORD_COLUMNS]
    return spark.range(0).select(*columns, F.lit(None).cast("bigint").alias("o_ts"))


def analyze(rules, physical, records: DataFrame, output_memo: dict, applying) -> None:
    """Apply ``rules`` (``(node, rule)`` in plan order) to ``records``, an empty batch
    (:func:`empty_records` as the batches' records are prepared), each inside
    ``applying(rule, inputs)`` (the context a batch applies it in); raise an
    :class:`ExpressionError` for the first expression Spark cannot analyze."""
    batch = BatchContext(
        -1, BatchPositions(records, 0, {}, {}), physical, BatchOutput(memo=output_memo),
        large=False, analysis=True,
    )
    frames: dict[str, Frame] = {}
    sinks: list[tuple[object, ToTopicRule, Frame]] = []
    with _quiet_query_context_logs(), recording_spark_texts() as texts:
        for node, rule in rules:
            inputs = [frames[p] for p in node.parents]
            built = len(texts)
            try:
                predicate = _predicate(node)
                if predicate is not None:
                    check_predicate(predicate, _as_stream(inputs[0]), inputs[0].value, rule.resolve)
                with applying(rule, inputs):
                    result = rule.apply(batch, *inputs)
            except ExpressionError as error:
                raise ExpressionError(f"{node.name}: {error}") from None
            except AnalysisException as error:
                raise ExpressionError(f"{node.name}: {explain(error, node, texts[built:])}") from error
            if isinstance(rule, ToTopicRule):
                sinks.append((node, rule, inputs[0]))
            if result is not None:
                frames[node.name] = result
        _check_outputs(batch.output, sinks)


def _check_outputs(output: BatchOutput, sinks: list[tuple[object, ToTopicRule, Frame]]) -> None:
    """Every sink's formats can write the records it gets. The outputs' columns are built
    as a batch builds them (and kept for the first batch); when Spark refuses them, the
    sink at fault is found on its own."""
    try:
        output_columns(output)
    except AnalysisException as error:
        for node, rule, frame in sinks:
            try:
                frame.df.select(*record_columns(frame, rule.spec))
            except AnalysisException as own:
                raise SchemaError(f"{node.name}: topic '{node.topic}': {spark_reason(own)}") from own
        raise error


def explain(error: AnalysisException, node, texts: list[tuple[str, SqlExpr]]) -> str:
    """``<expression>: <Spark's reason>`` (the expression left out when it cannot be told)."""
    expr = _culprit(error, node, texts)
    reason = spark_reason(error, expr)
    return f"{describe(expr)}: {reason}" if expr is not None else reason


def spark_reason(error: Exception, expr: Expr | None = None) -> str:
    """The first line of Spark's message without its error class, SQL state and position
    (a position in the rewritten text), in the user's names: the joiner's ``left`` and
    ``right``, a value field without the ``value.`` the runtime adds, and names spelled
    as in the expression (Spark upper-cases unknown functions)."""
    lines = str(error).splitlines()
    line = _SQLSTATE.sub("", _ERROR_CLASS.sub("", lines[0] if lines else type(error).__name__))
    line = _INTERNAL.sub(lambda m: _INTERNAL_NAMES[m.group(1)], line)
    if isinstance(expr, SqlExpr):
        words = {w.lower(): w for w in _WORD.findall(expr.text)}
        if "value" not in words:
            line = _VALUE_PREFIX.sub("", line)
        line = _QUOTED.sub(lambda m: f"`{words.get(m.group(1).lower(), m.group(1))}`", line)
    return line


def _culprit(error: AnalysisException, node, texts: list[tuple[str, SqlExpr]]) -> Expr | None:
    """The expression Spark's error is about: the SQL text its query context points into,
    else the node's only expression."""
    for context in error.getQueryContext():
        if context.contextType().name != "SQL":
            continue
        fragment, start = context.fragment(), context.startIndex()
        for text, expr in reversed(texts):
            if text[start : start + len(fragment)] == fragment:
                return expr
    expressions = list(_expressions(node))
    return expressions[0] if len(expressions) == 1 else None


def _expressions(node) -> Iterator[Expr]:
    """The node's own expressions (a branch's ``preceding`` predicates are its earlier
    siblings', analyzed with them)."""
    for field in dataclasses.fields(node):
        if field.name == "preceding":
            continue
        value = getattr(node, field.name)
        if isinstance(value, (SqlExpr, ExprRef)):
            yield value
        elif isinstance(value, KeyValueExpr):
            yield from (value.key, value.value)


def _predicate(node) -> Expr | None:
    if isinstance(node, (stateless.Filter, stateless.TableFilter, stateless.Branch)):
        return node.predicate
    return None


def _as_stream(frame: Frame) -> DataFrame:
    """A frame's rows with ``value`` as a predicate sees it (a table's new row)."""
    return frame.df if frame.kind == "stream" else frame.df.withColumn("value", F.col("new"))


@contextmanager
def _quiet_query_context_logs() -> Iterator[None]:
    """PySpark logs every analysis error with its JVM stack trace as it converts it; the
    error raised here carries it as its cause instead."""
    from pyspark.logger import PySparkLogger

    loggers = [PySparkLogger.getLogger(n) for n in ("SQLQueryContextLogger", "DataFrameQueryContextLogger")]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, before, strict=True):
            logger.disabled = disabled

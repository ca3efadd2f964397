"""Record-at-a-time stream operators: each a projection or filter of the batch's rows."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from ...plan import stateless
from ...plan.expr import KeyValueExpr, SqlExpr
from ...storage.undeclared import undeclared_key
from ..batch import BatchContext
from ..expressions import (
    JSON_TEXT,
    POSITION_COLUMNS,
    ValueShape,
    careful_column,
    guarded_failed,
    guarded_result,
    predicate_column,
    sql_column,
    sql_never_raising,
    to_python,
    udf_key,
    unguarded,
)
from ..failures import ERROR, current_reporter, failure_reason
from ..frames import ORDER, Frame, json_text, key_text, named, select, with_columns
from ..timestamps import to_millis
from .base import Rule
from .values import PAIR_TYPE, callable_of, is_guarded_expr, is_key, value_expr


def predicates(exprs, frame: Frame, resolve) -> tuple[dict[str, Column], list[Column], Column]:
    """Predicates over a stream's rows: the columns to add (``_p0``, ``_p1``, ...),
    whether each holds, and whether a user function among them failed on the row."""
    steps, holds, failed = {}, [], F.lit(False)
    for i, expr in enumerate(exprs):
        name = f"_p{i}"
        steps[name] = predicate_column(
            expr, frame.value, resolve, key_json=frame.key_json, key_undeclared=frame.key_undeclared
        )
        if is_guarded_expr(expr):
            holds.append(F.coalesce(guarded_result(name), F.lit(False)))
            failed = failed | guarded_failed(name)
        else:
            holds.append(F.col(name))
    return steps, holds, failed


class FilterRule(Rule):
    nodes = (stateless.Filter,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "condition"):
            self.steps, (holds,), failed = predicates([self.node.predicate], frame, self.resolve)
            self.condition = ~failed & (~holds if self.node.negate else holds)
            self.steps, self.columns = named(self.steps), named(list(frame.df.columns))
        return frame.with_df(select(with_columns(frame.df, self.steps).where(self.condition), self.columns))


class PeekRule(Rule):
    """The action runs once per record: its rows are persisted, however often Spark
    reads them."""

    nodes = (stateless.Peek,)
    consumer = True

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        action = self.resolve(self.node.action)
        shape = frame.value
        reporter = current_reporter()
        undeclared = frame.key_undeclared

        def run(batches):
            for b in batches:
                # An undeclared key's bytes may not be UTF-8: read from its bytes, logged as they are.
                keys = (b.column("key").cast(pa.binary()) if undeclared else b.column("key")).to_pylist()
                values = b.column("value").to_pylist()
                done, reports = [], []
                for i, (k, v) in enumerate(zip(keys, values, strict=True)):
                    try:
                        action(undeclared_key(k) if undeclared and k is not None else k, to_python(v, shape))
                        done.append(True)
                    except Exception as error:  # noqa: BLE001 - reported, never lost
                        done.append(False)
                        position = tuple(b.column(c)[i].as_py() for c in POSITION_COLUMNS)
                        reports.append(reporter.entry(ERROR, failure_reason(error), k, v, position))
                reporter.report(reports)
                yield b.filter(pa.array(done)) if reports else b

        return frame.with_df(batch.persist(frame.df.mapInArrow(run, frame.df.schema)))


class MapValuesRule(Rule):
    nodes = (stateless.MapValues,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "value"):
            self.value, self.shape = value_expr(self.node.mapper, frame, self.resolve)
            self.guarded = ["value"] if is_guarded_expr(self.node.mapper) else []
        df = unguarded(frame.df.withColumn("value", self.value), self.guarded)
        return frame.with_df(df, value=self.shape)


class WithTimestampRule(Rule):
    """Each record's ``ts`` becomes the node's timestamp; a record without one (null,
    negative, or its SQL raises) goes to the processing log, with the reason, and leaves
    the stream; a tombstone keeps its own. The ordering key is unchanged: records are
    processed in their sources' order."""

    nodes = (stateless.WithTimestamp,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "stamp"):
            expr = self.node.timestamp
            result, reason = sql_never_raising(expr, frame.value)
            dtype = frame.df.select(result.alias("_t")).schema["_t"].dataType
            ms, problem = to_millis(result, dtype, reason, f"timestamp '{expr.text}'", "timestamp")
            present = F.col("value").isNotNull()
            self.stamp = careful_column(
                F.when(present, ms).otherwise(F.col("ts")), F.when(present, problem),
                udf_key("key", frame.key_undeclared), F.col("value"),
            )
            self.columns = [F.col("_t").alias("ts") if c == "ts" else F.col(c) for c in frame.df.columns]
        return frame.with_df(unguarded(frame.df.withColumn("_t", self.stamp), ["_t"]).select(*self.columns))


class SelectKeyRule(Rule):
    nodes = (stateless.SelectKey,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "key"):
            self.key, shape = value_expr(self.node.selector, frame, self.resolve)
            self.key_json = shape.json_text
            self.key_undeclared = frame.key_undeclared and is_key(self.node.selector)
            self.guarded = ["key"] if is_guarded_expr(self.node.selector) else []
            self.key_type = unguarded(frame.df.withColumn("key", self.key), self.guarded).schema["key"].dataType
        df = unguarded(frame.df.withColumn("key", self.key), self.guarded)
        return frame.with_df(df, key_type=self.key_type, key_json=self.key_json, key_undeclared=self.key_undeclared)


class MapRule(Rule):
    nodes = (stateless.Map,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        mapper = self.node.mapper
        if isinstance(mapper, KeyValueExpr):
            key, key_shape = value_expr(mapper.key, frame, self.resolve)
            value, shape = value_expr(mapper.value, frame, self.resolve)
            guarded = [n for n, e in (("key", mapper.key), ("value", mapper.value)) if is_guarded_expr(e)]
            df = unguarded(frame.df.select(key.alias("key"), value.alias("value"), "ts", *ORDER), guarded)
            return frame.with_df(
                df, key_type=df.schema["key"].dataType, value=shape, key_json=key_shape.json_text,
                key_undeclared=frame.key_undeclared and is_key(mapper.key),
            )
        pair = callable_of(mapper, frame, self.resolve, PAIR_TYPE, pair=True)
        df = unguarded(frame.df.select(pair.alias("p"), "ts", *ORDER), ["p"]).select(
            F.col("p.k").alias("key"), F.col("p.v").alias("value"), "ts", *ORDER
        )
        return frame.with_df(df, key_type=StringType(), value=JSON_TEXT, key_json=True)


class FlatMapValuesRule(Rule):
    nodes = (stateless.FlatMapValues,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        mapper = self.node.mapper
        if isinstance(mapper, SqlExpr):
            values, shape = sql_column(mapper, frame.value), None
        elif mapper.kind == "column":
            values, shape = self.resolve(mapper), None
        else:
            values = callable_of(mapper, frame, self.resolve, ArrayType(StringType()), many=True)
            shape = JSON_TEXT
        df = frame.df
        if is_guarded_expr(mapper):
            df = unguarded(df.withColumn("_values", values), ["_values"])
            values = F.col("_values")
        df = df.select("key", F.posexplode(values).alias("o_idx_new", "value"), "ts", *ORDER)
        df = df.withColumn("o_idx", F.col("o_idx_new")).drop("o_idx_new")
        shape = shape or ValueShape(df.schema["value"].dataType)
        return frame.with_df(df.select("key", "value", "ts", *ORDER), value=shape)


class FlatMapRule(Rule):
    nodes = (stateless.FlatMap,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        mapper = self.node.mapper
        json_pairs = not isinstance(mapper, SqlExpr) and mapper.kind == "callable"
        if json_pairs:
            pairs = callable_of(mapper, frame, self.resolve, ArrayType(PAIR_TYPE), pair=True, many=True)
        elif isinstance(mapper, SqlExpr):
            pairs = sql_column(mapper, frame.value)
        else:
            pairs = self.resolve(mapper)
        df = frame.df
        if is_guarded_expr(mapper):
            df = unguarded(df.withColumn("_pairs", pairs), ["_pairs"])
            pairs = F.col("_pairs")
        df = df.select(F.posexplode(pairs).alias("o_idx_new", "p"), "ts", *[c for c in ORDER if c != "o_idx"])
        df = df.select(
            F.col("p.k" if json_pairs else "p.key").alias("key"),
            F.col("p.v" if json_pairs else "p.value").alias("value"),
            "ts", "o_ts", "o_src", "o_part", "o_off",
            F.col("o_idx_new").cast("int").alias("o_idx"),
        )
        if json_pairs:
            return frame.with_df(df, key_type=StringType(), value=JSON_TEXT, key_json=True)
        return frame.with_df(df, key_type=df.schema["key"].dataType, value=ValueShape(df.schema["value"].dataType))


class MergeRule(Rule):
    """Streams of different value (or key) types merge as JSON text."""

    nodes = (stateless.Merge,)

    def apply(self, batch: BatchContext, *parents: Frame) -> Frame:
        first = parents[0]
        same_values = all(p.value == first.value for p in parents)
        same_keys = all(
            (p.key_type, p.key_json, p.key_undeclared) == (first.key_type, first.key_json, first.key_undeclared)
            for p in parents
        )
        frames = []
        for p in parents:
            df = p.df
            if not same_values and not p.value.json_text:
                df = df.withColumn("value", json_text(F.col("value"), p.value.dtype))
            if not same_keys and not p.key_json:
                df = df.withColumn("key", key_text(F.col("key"), p))
            frames.append(df.select("key", "value", "ts", *ORDER))
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        return first.with_df(
            df,
            value=first.value if same_values else JSON_TEXT,
            key_type=first.key_type if same_keys else StringType(),
            key_json=first.key_json if same_keys else True,
            key_undeclared=first.key_undeclared and same_keys,
        )


class PassThroughRule(Rule):
    """A split passes its records on (its branches select them); a repartition too:
    Spark shuffles by key at every store stage, so the topic is not needed."""

    nodes = (stateless.Split, stateless.Repartition)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        return frame


class BranchRule(Rule):
    nodes = (stateless.Branch,)

    @property
    def operator(self) -> str:
        # Every branch evaluates the predicates before its own: a failure is the split's.
        return self.node.parents[0]

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "condition"):
            exprs = [*self.node.preceding, *([self.node.predicate] if self.node.predicate is not None else [])]
            self.steps, holds, failed = predicates(exprs, frame, self.resolve)
            keep = ~failed
            for i, holding in enumerate(holds):
                keep = keep & (holding if i == len(self.node.preceding) else ~holding)
            self.condition = keep
            self.steps, self.columns = named(self.steps), named(list(frame.df.columns))
        return frame.with_df(select(with_columns(frame.df, self.steps).where(self.condition), self.columns))

"""Record-at-a-time stream operators: each a projection or filter of the batch's rows."""

from __future__ import annotations

from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, StringType

from ...plan import stateless
from ...plan.expr import KeyValueExpr, SqlExpr
from ..batch import BatchContext
from ..expressions import JSON_TEXT, ValueShape, predicate_column, sql_column, to_python
from ..frames import ORDER, Frame, json_text
from .base import Rule
from .values import PAIR_TYPE, callable_of, value_expr


class FilterRule(Rule):
    nodes = (stateless.Filter,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "condition"):
            keep = predicate_column(self.node.predicate, frame.value, self.resolve, key_json=frame.key_json)
            self.condition = ~keep if self.node.negate else keep
        return frame.with_df(frame.df.where(self.condition))


class PeekRule(Rule):
    """The action runs once per record: its rows are persisted, however often Spark
    reads them."""

    nodes = (stateless.Peek,)
    consumer = True

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        action = self.resolve(self.node.action)
        shape = frame.value

        def run(batches):
            for b in batches:
                for k, v in zip(b.column("key").to_pylist(), b.column("value").to_pylist(), strict=True):
                    action(k, to_python(v, shape))
                yield b

        return frame.with_df(batch.persist(frame.df.mapInArrow(run, frame.df.schema)))


class MapValuesRule(Rule):
    nodes = (stateless.MapValues,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "value"):
            self.value, self.shape = value_expr(self.node.mapper, frame, self.resolve)
        return frame.with_df(frame.df.withColumn("value", self.value), value=self.shape)


class SelectKeyRule(Rule):
    nodes = (stateless.SelectKey,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        if not hasattr(self, "key"):
            self.key, shape = value_expr(self.node.selector, frame, self.resolve)
            self.key_json = shape.json_text
            self.key_type = frame.df.withColumn("key", self.key).schema["key"].dataType
        return frame.with_df(frame.df.withColumn("key", self.key), key_type=self.key_type, key_json=self.key_json)


class MapRule(Rule):
    nodes = (stateless.Map,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        mapper = self.node.mapper
        if isinstance(mapper, KeyValueExpr):
            key, key_shape = value_expr(mapper.key, frame, self.resolve)
            value, shape = value_expr(mapper.value, frame, self.resolve)
            df = frame.df.select(key.alias("key"), value.alias("value"), "ts", *ORDER)
            return frame.with_df(df, key_type=df.schema["key"].dataType, value=shape, key_json=key_shape.json_text)
        pair = callable_of(mapper, frame, self.resolve, PAIR_TYPE, pair=True)
        df = frame.df.select(pair.alias("p"), "ts", *ORDER).select(
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
        df = frame.df.select("key", F.posexplode(values).alias("o_idx_new", "value"), "ts", *ORDER)
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
        df = frame.df.select(F.posexplode(pairs).alias("o_idx_new", "p"), "ts", *[c for c in ORDER if c != "o_idx"])
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
        same_keys = all(p.key_type == first.key_type and p.key_json == first.key_json for p in parents)
        frames = []
        for p in parents:
            df = p.df
            if not same_values and not p.value.json_text:
                df = df.withColumn("value", json_text(F.col("value"), p.value.dtype))
            if not same_keys and not p.key_json:
                df = df.withColumn("key", json_text(F.col("key"), p.key_type))
            frames.append(df.select("key", "value", "ts", *ORDER))
        df = frames[0]
        for other in frames[1:]:
            df = df.unionByName(other)
        return first.with_df(
            df,
            value=first.value if same_values else JSON_TEXT,
            key_type=first.key_type if same_keys else StringType(),
            key_json=first.key_json if same_keys else True,
        )


class PassThroughRule(Rule):
    """A split passes its records on (its branches select them); a repartition too:
    Spark shuffles by key at every store stage, so the topic is not needed."""

    nodes = (stateless.Split, stateless.Repartition)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        return frame


class BranchRule(Rule):
    nodes = (stateless.Branch,)

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        keep = F.lit(True)
        for earlier in self.node.preceding:
            keep = keep & ~predicate_column(earlier, frame.value, self.resolve, key_json=frame.key_json)
        if self.node.predicate is not None:
            keep = keep & predicate_column(self.node.predicate, frame.value, self.resolve, key_json=frame.key_json)
        return frame.with_df(frame.df.where(keep))

"""Plan -> per-batch Spark computation: one ``visit_<Node>`` rule per plan node.

:class:`BatchRunner` applies a topology to one micro-batch of raw topic records (the
normalized topic columns) and returns what the batch writes: records per output topic,
the changes of every materialized table and the processing-log entries. Rules are
DataFrame operations; per-key state is read and written by store stages
(:mod:`tablestream.runtime.stage`), each run once per batch (its result is persisted).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from ..plan import aggregate as agg
from ..plan import sinks, sources, stateless
from ..plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr
from ..plan.topology import Topology
from ..storage.formats import Format, get_format
from . import tasks
from .expressions import (
    JSON_TEXT,
    ValueShape,
    arrow_values,
    predicate_column,
    sql_column,
    to_python,
)
from .frames import ORDER, Frame, canonical_bytes, from_canonical, json_text
from .stage import StoreStage
from .state import StoreLayout


class UnsupportedNodeError(NotImplementedError):
    """A plan node the runtime has no rule for."""


@dataclass
class BatchOutput:
    """What one batch writes: records per output topic (``key, value`` as bytes or
    JSON text to serialize, ``ts``, ordered), table changes per materialized store, and
    processing-log entries."""

    records: dict[str, list[tuple[Frame, ToTopicSpec]]] = field(default_factory=dict)
    tables: dict[str, Frame] = field(default_factory=dict)
    errors: list[DataFrame] = field(default_factory=list)
    persisted: list[DataFrame] = field(default_factory=list)

    def release(self) -> None:
        for df in self.persisted:
            df.unpersist()
        self.persisted.clear()


@dataclass(frozen=True)
class ToTopicSpec:
    topic: str
    key_format: Format | None
    value_format: Format | None


def _is_integral(dtype: DataType) -> bool:
    return isinstance(dtype, (LongType, IntegerType, ShortType))


class BatchRunner:
    """Applies a topology to micro-batches.

    ``partitions``: the number of state partitions of every store (fixed for the life of
    the application). ``topics``: every source topic, in a fixed order (their position
    is the ordering key's ``o_src``).
    """

    def __init__(self, topology: Topology, layout: StoreLayout, partitions: int):
        self.topology = topology
        self.layout = layout
        self.partitions = partitions
        topics: list[str] = []
        for node in topology.sources:
            for topic in getattr(node, "topics", None) or (node.topic,):
                if topic not in topics:
                    topics.append(topic)
        self.topics = tuple(topics)
        self.functions = topology.functions

    # ----------------------------------------------------------------------- batch
    def run(self, records: DataFrame, batch_id: int) -> BatchOutput:
        """Compute one batch. ``records`` has the normalized topic columns."""
        out = BatchOutput()
        self._out = out
        self._batch_id = batch_id
        self._records = records
        frames: dict[str, Frame | dict[str, Frame]] = {}
        self._frames = frames
        for node in self.topology.nodes:
            rule = getattr(self, f"visit_{type(node).__name__}", None)
            if rule is None:
                raise UnsupportedNodeError(f"No runtime rule for plan node {type(node).__name__} ({node.name})")
            result = rule(node)
            if result is not None:
                frames[node.name] = result
        return out

    def _frame(self, name: str) -> Frame:
        return self._frames[name]

    def _persist(self, df: DataFrame) -> DataFrame:
        """Run a store stage once for this batch: later rules and sinks reuse its rows."""
        df = df.persist()
        df.count()
        self._out.persisted.append(df)
        return df

    def _stage(self, store: str) -> StoreStage:
        return StoreStage(self.layout, store, self.partitions, self._batch_id)

    # --------------------------------------------------------------------- sources
    def _decode_source(self, node, *, table: bool) -> tuple[DataFrame, Format, Format]:
        topics = getattr(node, "topics", None) or (node.topic,)
        key_format = get_format(node.key_format, node.key_schema)
        value_format = get_format(node.value_format, node.value_schema)
        raw = self._records.where(F.col("topic").isin(list(topics)))
        k = key_format.decode_checked(F.col("key"))
        v = value_format.decode_checked(F.col("value"))
        src = F.array_position(F.array(*[F.lit(t) for t in self.topics]), F.col("topic")).cast("int") - 1
        decoded = raw.select(
            F.col("key").alias("raw_key"),
            F.col("value").alias("raw_value"),
            k.value.alias("key"),
            v.value.alias("value"),
            k.failed.alias("key_failed"),
            v.failed.alias("value_failed"),
            F.col("topic"),
            F.col("partition"),
            F.col("offset"),
            F.col("timestamp").alias("ts"),
            F.col("timestamp").alias("o_ts"),
            src.alias("o_src"),
            F.col("partition").alias("o_part"),
            F.col("offset").alias("o_off"),
            F.lit(0).alias("o_idx"),
        )
        failed = F.col("key_failed") | F.col("value_failed")
        bad = failed | (F.col("raw_key").isNull() if table else F.lit(False))
        # Reasons come from the formats' Python readers, run on the bad rows only.
        key_reason = key_format.failure_reasons(F.col("raw_key"), F.col("key_failed"))
        value_reason = value_format.failure_reasons(F.col("raw_value"), F.col("value_failed"))
        reasons = F.concat_ws(
            "; ",
            F.when(F.col("key_failed"), F.concat(F.lit("key: "), key_reason)),
            F.when(F.col("value_failed"), F.concat(F.lit("value: "), value_reason)),
            F.when(~failed & F.col("raw_key").isNull(), F.lit("key: a table record needs a key (null key dropped)")),
        )
        self._out.errors.append(
            decoded.where(bad).select(
                "topic", "partition", "offset", F.col("ts").alias("timestamp"),
                reasons.alias("error"), F.col("raw_key").alias("key"), F.col("raw_value").alias("value"),
            )
        )
        return decoded.where(~bad), key_format, value_format

    def visit_StreamSource(self, node: sources.StreamSource) -> Frame:
        good, key_format, value_format = self._decode_source(node, table=False)
        df = good.select("key", "value", "ts", *ORDER)
        df = self._apply_timestamp(node, df, key_format, value_format)
        return Frame(df, "stream", key_format.spark_type(), _shape(value_format))

    def visit_TableSource(self, node: sources.TableSource) -> Frame:
        good, key_format, value_format = self._decode_source(node, table=True)
        key_type = key_format.spark_type()
        shape = _shape(value_format)
        stage_in = good.select(
            canonical_bytes(F.col("key")).alias("kb"), F.col("raw_value").alias("vb"), "ts", *ORDER
        )
        changed = self._persist(self._stage(node.store).run(stage_in, "kb", tasks.upsert, _UPSERT_SCHEMA))
        df = changed.select(
            from_canonical(F.col("kb"), key_type).alias("key"),
            value_format.decode(F.col("old"))[0].alias("old"),
            value_format.decode(F.col("new"))[0].alias("new"),
            "ts",
            *ORDER,
        )
        frame = Frame(df, "table", key_type, shape)
        if node.queryable:
            self._out.tables[node.store] = frame
        return frame

    visit_GlobalTableSource = visit_TableSource

    def _apply_timestamp(self, node, df: DataFrame, key_format, value_format) -> DataFrame:
        if node.timestamp_extractor is None:
            return df
        raise UnsupportedNodeError(f"{node.name}: timestamp extractors are not supported yet")

    # ------------------------------------------------------------- stream stateless
    def visit_Filter(self, node: stateless.Filter) -> Frame:
        frame = self._frame(node.parent)
        keep = predicate_column(node.predicate, frame.value, self.functions)
        return frame.with_df(frame.df.where(~keep if node.negate else keep))

    def visit_Peek(self, node: stateless.Peek) -> Frame:
        frame = self._frame(node.parent)
        action = self.functions[node.action.ref]
        shape = frame.value

        def run(batches):
            for batch in batches:
                for k, v in zip(batch.column("key").to_pylist(), batch.column("value").to_pylist(), strict=True):
                    action(k, to_python(v, shape))
                yield batch

        return frame.with_df(frame.df.mapInArrow(run, frame.df.schema))

    def visit_MapValues(self, node: stateless.MapValues) -> Frame:
        frame = self._frame(node.parent)
        value, shape = self._value_expr(node.mapper, frame, "value")
        return frame.with_df(frame.df.withColumn("value", value), value=shape)

    def visit_SelectKey(self, node: stateless.SelectKey) -> Frame:
        frame = self._frame(node.parent)
        key, shape = self._value_expr(node.selector, frame, "value")
        df = frame.df.withColumn("key", key)
        return frame.with_df(df, key_type=df.schema["key"].dataType, key_json=shape.json_text)

    def visit_Map(self, node: stateless.Map) -> Frame:
        frame = self._frame(node.parent)
        if isinstance(node.mapper, KeyValueExpr):
            key, key_shape = self._value_expr(node.mapper.key, frame, "value")
            value, shape = self._value_expr(node.mapper.value, frame, "value")
            df = frame.df.select(key.alias("key"), value.alias("value"), "ts", *ORDER)
            return frame.with_df(df, key_type=df.schema["key"].dataType, value=shape, key_json=key_shape.json_text)
        pair = self._callable(node.mapper, frame, _PAIR_TYPE, pair=True)
        df = frame.df.select(pair.alias("p"), "ts", *ORDER).select(
            F.col("p.k").alias("key"), F.col("p.v").alias("value"), "ts", *ORDER
        )
        return frame.with_df(df, key_type=StringType(), value=JSON_TEXT, key_json=True)

    def visit_FlatMapValues(self, node: stateless.FlatMapValues) -> Frame:
        frame = self._frame(node.parent)
        if isinstance(node.mapper, SqlExpr):
            values = sql_column(node.mapper, frame.value)
            shape_type = None
        else:
            values = self._callable(node.mapper, frame, ArrayType(StringType()), many=True)
            shape_type = JSON_TEXT
        df = frame.df.select("key", F.posexplode(values).alias("o_idx_new", "value"), "ts", *ORDER)
        df = df.withColumn("o_idx", F.col("o_idx_new")).drop("o_idx_new")
        shape = shape_type or ValueShape(df.schema["value"].dataType)
        return frame.with_df(df.select("key", "value", "ts", *ORDER), value=shape)

    def visit_FlatMap(self, node: stateless.FlatMap) -> Frame:
        frame = self._frame(node.parent)
        if isinstance(node.mapper, SqlExpr):
            pairs = sql_column(node.mapper, frame.value)
            json_pairs = False
        else:
            pairs = self._callable(node.mapper, frame, ArrayType(_PAIR_TYPE), pair=True, many=True)
            json_pairs = True
        df = frame.df.select(F.posexplode(pairs).alias("o_idx_new", "p"), "ts", *[c for c in ORDER if c != "o_idx"])
        df = df.select(
            F.col("p.key" if not json_pairs else "p.k").alias("key"),
            F.col("p.value" if not json_pairs else "p.v").alias("value"),
            "ts", "o_ts", "o_src", "o_part", "o_off", F.col("o_idx_new").cast("int").alias("o_idx"),
        )
        if json_pairs:
            return frame.with_df(df, key_type=StringType(), value=JSON_TEXT, key_json=True)
        return frame.with_df(df, key_type=df.schema["key"].dataType, value=ValueShape(df.schema["value"].dataType))

    def visit_Merge(self, node: stateless.Merge) -> Frame:
        parents = [self._frame(p) for p in node.parents]
        first = parents[0]
        df = first.df
        for other in parents[1:]:
            df = df.unionByName(other.df)
        return first.with_df(df)

    def visit_Split(self, node: stateless.Split) -> Frame:
        return self._frame(node.parent)

    def visit_Branch(self, node: stateless.Branch) -> Frame:
        frame = self._frame(node.parent)
        keep = F.lit(True)
        for earlier in node.preceding:
            keep = keep & ~predicate_column(earlier, frame.value, self.functions)
        if node.predicate is not None:
            keep = keep & predicate_column(node.predicate, frame.value, self.functions)
        return frame.with_df(frame.df.where(keep))

    def visit_Repartition(self, node: stateless.Repartition) -> Frame:
        # Spark shuffles by key at every store stage; the topic is not needed.
        return self._frame(node.parent)

    def visit_ToTable(self, node: stateless.ToTable) -> Frame:
        frame = self._frame(node.parent)
        stage_in = frame.df.where(F.col("key").isNotNull()).select(
            canonical_bytes(F.col("key")).alias("kb"),
            canonical_bytes(F.col("value")).alias("vb"),
            "ts",
            *ORDER,
        )
        changed = self._persist(self._stage(node.store).run(stage_in, "kb", tasks.upsert, _UPSERT_SCHEMA))
        dtype = frame.value.dtype
        df = changed.select(
            from_canonical(F.col("kb"), frame.key_type).alias("key"),
            from_canonical(F.col("old"), dtype).alias("old"),
            from_canonical(F.col("new"), dtype).alias("new"),
            "ts",
            *ORDER,
        )
        table = Frame(df, "table", frame.key_type, frame.value)
        if node.queryable:
            self._out.tables[node.store] = table
        return table

    # -------------------------------------------------------------- table stateless
    def visit_ToStream(self, node: stateless.ToStream) -> Frame:
        frame = self._frame(node.parent)
        df = frame.df.select("key", F.col("new").alias("value"), "ts", *ORDER)
        return Frame(df, "stream", frame.key_type, frame.value)

    def visit_TableFilter(self, node: stateless.TableFilter) -> Frame:
        frame = self._frame(node.parent)

        def passes(side: str) -> Column:
            keep = predicate_column(node.predicate, frame.value, self.functions, value=side)
            return ~keep if node.negate else keep

        df = frame.df.select(
            "key",
            F.when(passes("old"), F.col("old")).alias("old"),
            F.when(passes("new"), F.col("new")).alias("new"),
            "ts",
            *ORDER,
        )
        return self._table_result(node, frame.with_df(_changed_only(df)))

    def visit_TableMapValues(self, node: stateless.TableMapValues) -> Frame:
        frame = self._frame(node.parent)
        old, _ = self._value_expr(node.mapper, frame, "old")
        new, shape = self._value_expr(node.mapper, frame, "new")
        df = frame.df.select(
            "key",
            F.when(F.col("old").isNotNull(), old).alias("old"),
            F.when(F.col("new").isNotNull(), new).alias("new"),
            "ts",
            *ORDER,
        )
        return self._table_result(node, frame.with_df(_changed_only(df), value=shape))

    def _table_result(self, node, frame: Frame) -> Frame:
        if getattr(node, "store", None):
            self._out.tables[node.store] = frame
        return frame

    # ------------------------------------------------------------------ aggregation
    def visit_TableGroupBy(self, node: agg.TableGroupBy) -> Frame:
        """Each change becomes the old row's (group key, value) and the new row's."""
        frame = self._frame(node.parent)
        df = frame.df
        sides: dict[str, tuple[Column, Column]] = {}
        key_json = False
        if isinstance(node.mapper, KeyValueExpr):
            for side in ("old", "new"):
                present = F.col(side).isNotNull()
                gk, key_shape = self._value_expr(node.mapper.key, frame, side)
                key_json = key_shape.json_text
                gv, shape = self._value_expr(node.mapper.value, frame, side)
                sides[side] = (F.when(present, gk), F.when(present, gv))
        else:
            for side in ("old", "new"):
                pair = self._callable(node.mapper, frame, _PAIR_TYPE, pair=True, value_column=side)
                df = df.withColumn(f"_{side}_pair", F.when(F.col(side).isNotNull(), pair))
                sides[side] = (F.col(f"_{side}_pair.k"), F.col(f"_{side}_pair.v"))
            shape, key_json = JSON_TEXT, True
        df = df.select(
            canonical_bytes(F.col("key")).alias("skb"),
            sides["old"][0].alias("old_gk"),
            sides["old"][1].alias("old_gv"),
            sides["new"][0].alias("new_gk"),
            sides["new"][1].alias("new_gv"),
            "ts",
            *ORDER,
        )
        return Frame(df, "grouped", df.schema["new_gk"].dataType, shape, key_json=key_json)

    def _signed_rows(self, frame: Frame, value: Callable[[str], Column]) -> DataFrame:
        """One row per group contribution: ``gkb, gk, sign, v, skb, ts, order`` (a table
        change contributes -old to its old group and +new to its new group; a stream
        record +value to its key's group)."""
        if frame.kind == "grouped":
            parts = []
            for sign, side in ((-1, "old"), (1, "new")):
                gk, gv = F.col(f"{side}_gk"), F.col(f"{side}_gv")
                parts.append(
                    frame.df.where(gk.isNotNull() & gv.isNotNull()).select(
                        canonical_bytes(gk).alias("gkb"),
                        gk.alias("gk"),
                        F.lit(sign).cast("int").alias("sign"),
                        value(f"{side}_gv").alias("v"),
                        "skb",
                        "ts",
                        *ORDER,
                    )
                )
            return parts[0].unionByName(parts[1])
        df = frame.df.where(F.col("key").isNotNull() & F.col("value").isNotNull())
        return df.select(
            canonical_bytes(F.col("key")).alias("gkb"),
            F.col("key").alias("gk"),
            F.lit(1).cast("int").alias("sign"),
            value("value").alias("v"),
            F.lit(None).cast("binary").alias("skb"),
            "ts",
            *ORDER,
        )

    def _column_of(self, expr: Expr, frame: Frame) -> Callable[[str], Column]:
        def value(side: str) -> Column:
            if isinstance(expr, SqlExpr):
                return sql_column(expr, frame.value, value=side)
            if expr.kind == "column":
                return self.functions[expr.ref]
            raise UnsupportedNodeError("aggregate columns are SQL expressions or Spark Columns")

        return value

    def _numeric(self, node: agg.AggregateNode, column: Expr | None) -> Frame:
        frame = self._frame(node.parent)
        value = self._column_of(column, frame) if column is not None else (lambda side: F.lit(None).cast("long"))
        rows = self._signed_rows(frame, value)
        vtype = rows.schema["v"].dataType
        floating = not _is_integral(vtype) and not isinstance(vtype, (StringType,)) and column is not None
        if column is not None and not (_is_integral(vtype) or isinstance(vtype, (DoubleType, FloatType))):
            if not type(vtype).__name__.startswith("Decimal"):
                raise UnsupportedNodeError(f"{node.name}: cannot sum or average a {vtype.simpleString()} column")
            floating = True
        rows = rows.withColumn("v", F.col("v").cast("double" if floating else "long"))
        out_schema = _numeric_schema(floating)
        changed = self._persist(
            self._stage(node.store).run(
                rows.select("gkb", "sign", "v", "ts", *ORDER),
                "gkb",
                lambda t, s: tasks.aggregate_deltas(t, s, floating=floating),
                out_schema,
            )
        )
        key_type = rows.schema["gk"].dataType
        return changed, key_type, floating

    def _numeric_frame(self, node, df: DataFrame, key_type: DataType, old: Column, new: Column, dtype: DataType) -> Frame:
        result = df.select(
            from_canonical(F.col("gkb"), key_type).alias("key"),
            old.alias("old"),
            new.alias("new"),
            "ts",
            *[F.lit(v).alias(c) for c, v in zip(ORDER, (0, 0, 0, 0, 0), strict=True)],
        ).withColumn("o_ts", F.col("ts"))
        frame = Frame(result, "table", key_type, ValueShape(dtype), key_json=self._frame(node.parent).key_json)
        if node.queryable:
            self._out.tables[node.store] = frame
        return frame

    def visit_Count(self, node: agg.Count) -> Frame:
        changed, key_type, _ = self._numeric(node, None)
        return self._numeric_frame(
            node, changed, key_type,
            F.when(F.col("old_members") > 0, F.col("old_members")),
            F.when(F.col("new_members") > 0, F.col("new_members")),
            LongType(),
        )

    def visit_Sum(self, node: agg.Sum) -> Frame:
        changed, key_type, floating = self._numeric(node, node.column)
        dtype = DoubleType() if floating else LongType()
        return self._numeric_frame(
            node, changed, key_type,
            # ksqlDB's SUM ignores nulls and starts at 0: a group of null values sums to 0.
            F.when(F.col("old_members") > 0, F.col("old_total")),
            F.when(F.col("new_members") > 0, F.col("new_total")),
            dtype,
        )

    def visit_Avg(self, node: agg.Avg) -> Frame:
        changed, key_type, _ = self._numeric(node, node.column)
        return self._numeric_frame(
            node, changed, key_type,
            F.when(F.col("old_nonnull") > 0, F.col("old_total").cast("double") / F.col("old_nonnull")),
            F.when(F.col("new_nonnull") > 0, F.col("new_total").cast("double") / F.col("new_nonnull")),
            DoubleType(),
        )

    def visit_Min(self, node: agg.Min) -> Frame:
        return self._extreme(node, "min")

    def visit_Max(self, node: agg.Max) -> Frame:
        return self._extreme(node, "max")

    def _extreme(self, node, which: str) -> Frame:
        frame = self._frame(node.parent)
        value = self._column_of(node.column, frame)
        rows = self._signed_rows(frame, value)
        vtype = rows.schema["v"].dataType
        key_type = rows.schema["gk"].dataType
        rows = rows.select(
            "gkb", "sign", canonical_bytes(F.col("v")).alias("vb"), F.col("v"),
            F.coalesce(F.col("skb"), F.concat(F.col("o_src").cast("string").cast("binary"), F.lit(b"|"),
                       F.col("o_part").cast("string").cast("binary"), F.lit(b"|"),
                       F.col("o_off").cast("string").cast("binary"), F.lit(b"|"),
                       F.col("o_idx").cast("string").cast("binary"))).alias("skb"),
            "ts", *ORDER,
        )
        stream = frame.kind == "stream"
        changed = self._persist(
            self._stage(node.store).run(
                rows,
                "gkb",
                lambda t, s: tasks.extreme_groups(t, s, which=which, stream=stream),
                _EXTREME_SCHEMA,
            )
        )
        return self._numeric_frame(
            node, changed, key_type,
            from_canonical(F.col("old_vb"), vtype), from_canonical(F.col("new_vb"), vtype), vtype,
        )

    def visit_Reduce(self, node: agg.Reduce) -> Frame:
        return self._fold(node, initializer=None, adder=node.adder, subtractor=node.subtractor, reduce=True)

    def visit_Aggregate(self, node: agg.Aggregate) -> Frame:
        return self._fold(node, initializer=node.initializer, adder=node.adder, subtractor=node.subtractor, reduce=False)

    def _fold(self, node, *, initializer, adder, subtractor, reduce: bool) -> Frame:
        frame = self._frame(node.parent)
        for expr in (initializer, adder, subtractor):
            if expr is not None and not (isinstance(expr, ExprRef) and expr.kind == "callable"):
                raise UnsupportedNodeError(f"{node.name}: reduce and aggregate take Python callables")
        shape = frame.value
        rows = self._signed_rows(frame, lambda side: json_text(F.col(side), shape.dtype) if not shape.json_text else F.col(side))
        key_type = rows.schema["gk"].dataType
        rows = rows.select(
            "gkb", "sign", F.col("v").alias("vj"), "skb",
            json_text(F.col("gk"), key_type).alias("gkj"), "ts", *ORDER,
        )
        init = self.functions[initializer.ref] if initializer is not None else None
        add = self.functions[adder.ref]
        sub = self.functions[subtractor.ref] if subtractor is not None else None
        kernel = tasks.FoldKernel(
            initializer=init, adder=add, subtractor=sub, reduce=reduce,
            adder_arity=adder.arity, subtractor_arity=subtractor.arity if subtractor is not None else None,
        )
        changed = self._persist(self._stage(node.store).run(rows, "gkb", kernel, _FOLD_SCHEMA))
        result = changed.select(
            from_canonical(F.col("gkb"), key_type).alias("key"),
            F.col("old").alias("old"),
            F.col("new").alias("new"),
            "ts",
            *[F.lit(0).cast(t).alias(c) for c, t in zip(ORDER, ("long", "int", "int", "long", "int"), strict=True)],
        ).withColumn("o_ts", F.col("ts"))
        table = Frame(result, "table", key_type, JSON_TEXT, key_json=frame.key_json)
        if node.queryable:
            self._out.tables[node.store] = table
        return table

    # ------------------------------------------------------------------------ sinks
    def visit_ToTopic(self, node: sinks.ToTopic) -> None:
        frame = self._frame(node.parent)
        key_format = get_format(node.key_format, node.key_schema) if node.key_format else None
        value_format = get_format(node.value_format, node.value_schema) if node.value_format else None
        self._out.records.setdefault(node.topic, []).append((frame, ToTopicSpec(node.topic, key_format, value_format)))

    # ------------------------------------------------------------------ expressions
    def _value_expr(self, expr: Expr, frame: Frame, side: str) -> tuple[Column, ValueShape]:
        """A mapper's result over ``key`` and the ``side`` value column."""
        if isinstance(expr, SqlExpr):
            col = sql_column(expr, frame.value, value=side)
            dtype = frame.df.select(col.alias("_")).schema["_"].dataType
            return col, ValueShape(dtype)
        if expr.kind == "column":
            col = self.functions[expr.ref]
            dtype = frame.df.select(col.alias("_")).schema["_"].dataType
            return col, ValueShape(dtype)
        return self._callable(expr, frame, StringType(), value_column=side), JSON_TEXT

    def _callable(
        self, ref: ExprRef, frame: Frame, result: DataType, *, pair: bool = False, many: bool = False,
        value_column: str = "value",
    ) -> Column:
        fn = self.functions[ref.ref]
        shape = frame.value
        arity = ref.arity

        def convert(res: Any) -> Any:
            if pair and many:
                return [{"k": _json(k), "v": _json(v)} for k, v in (res or [])]
            if pair:
                if res is None:
                    return {"k": None, "v": None}
                k, v = res
                return {"k": _json(k), "v": _json(v)}
            if many:
                return [_json(v) for v in (res or [])]
            return _json(res)

        from pyspark.sql.functions import arrow_udf

        def run(keys: pa.Array, values: pa.Array) -> pa.Array:
            out = []
            for k, v in zip(keys.to_pylist(), values.to_pylist(), strict=True):
                value = to_python(v, shape)
                res = fn(value) if arity == 1 else fn(k, value)
                out.append(convert(res))
            return arrow_values(out, result)

        return arrow_udf(run, result)(F.col("key"), F.col(value_column))


# ----------------------------------------------------------------------------- helpers
_PAIR_TYPE = StructType([StructField("k", StringType()), StructField("v", StringType())])

_ORDER_FIELDS = "o_ts bigint, o_src int, o_part int, o_off bigint, o_idx int"
_UPSERT_SCHEMA = f"kb binary, old binary, new binary, ts bigint, {_ORDER_FIELDS}"
_EXTREME_SCHEMA = "gkb binary, old_vb binary, new_vb binary, ts bigint"
_FOLD_SCHEMA = "gkb binary, old string, new string, ts bigint"


def _numeric_schema(floating: bool) -> str:
    number = "double" if floating else "bigint"
    return (
        "gkb binary, old_members bigint, old_nonnull bigint, old_total "
        f"{number}, new_members bigint, new_nonnull bigint, new_total {number}, ts bigint"
    )


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _shape(fmt: Format) -> ValueShape:
    dtype = fmt.spark_type()
    return ValueShape(dtype, json_text=fmt.name == "JSON" and fmt.schema is None)


def _changed_only(df: DataFrame) -> DataFrame:
    """Drop changes that change nothing (both sides null, or equal): emit-on-change."""
    return df.where(~F.col("old").eqNullSafe(F.col("new")))


"""Plan -> per-batch Spark computation: one ``visit_<Node>`` rule per plan node.

:class:`BatchRunner` applies a topology to one micro-batch of raw topic records (the
normalized topic columns) and returns what the batch writes: records per output topic,
the changes of every materialized table and the processing-log entries. Rules are
DataFrame operations; per-key state is read and written by store stages
(:mod:`tablestream.runtime.stage`), each run once per batch (its result is persisted).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from ..errors import CoPartitioningError
from ..plan import aggregate as agg
from ..plan import joins, sinks, sources, stateless
from ..plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr
from ..plan.topology import Topology
from ..storage.formats import Format, get_format
from . import join_tasks, tasks
from .expressions import (
    JSON_TEXT,
    ValueShape,
    callable_column,
    joiner_callable_column,
    joiner_sql_column,
    predicate_column,
    sql_column,
    to_python,
)
from .frames import (
    ORDER,
    STREAM_COLUMNS,
    Frame,
    arrow_decodable,
    canonical_bytes,
    from_canonical,
    json_text,
    nullable,
)
from .positions import read_positions
from .stage import StoreStage
from .state import StoreLayout


class UnsupportedNodeError(NotImplementedError):
    """A plan node the runtime has no rule for."""


class AggregateTypeError(TypeError):
    """An aggregate over a column of a type it cannot take."""


@dataclass
class BatchOutput:
    """What one batch writes: records per output topic (``key, value`` as bytes or
    JSON text to serialize, ``ts``, ordered), table changes per materialized store, and
    processing-log entries."""

    records: dict[str, list[tuple[Frame, ToTopicSpec]]] = field(default_factory=dict)
    tables: dict[str, Frame] = field(default_factory=dict)
    errors: list[DataFrame] = field(default_factory=list)
    persisted: list[DataFrame] = field(default_factory=list)
    once: Callable[[str, str, Callable[[], Any]], Any] = lambda owner, label, make: make()

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
    is the ordering key's ``o_src``). ``topic_partitions``: partition counts of the
    source topics, for joins that require co-partitioned inputs (``strict``).
    """

    def __init__(
        self, topology: Topology, layout: StoreLayout, partitions: int, topic_partitions: dict[str, int] | None = None
    ):
        self.topology = topology
        self.topic_partitions = topic_partitions
        self.layout = layout
        self.partitions = partitions
        topics: list[str] = []
        for node in topology.sources:
            for topic in node.topics:
                if topic not in topics:
                    topics.append(topic)
        self.topics = tuple(topics)
        self.functions = topology.functions
        # Columns, types and schemas of every rule, built in the first batch and reused:
        # they depend on the plan and the source formats only, never on a batch's rows
        # (Spark Columns are unresolved expressions), and building them costs py4j calls.
        self._memo: dict[tuple[str, str], Any] = {}
        self._last_count: int | None = None  # records in the batch before

    def once(self, owner: str, label: str, make: Callable[[], Any]) -> Any:
        """``make()`` the first time ``(owner, label)`` is asked for; the same object after.
        Column names in its lists become Columns once here, not at every use (each name
        Spark resolves from Python is a call into the JVM)."""
        key = (owner, label)
        try:
            return self._memo[key]
        except KeyError:
            value = self._memo[key] = _name_columns(make())
            return value

    # ----------------------------------------------------------------------- batch
    def run(self, records: DataFrame, batch_id: int) -> BatchOutput:
        """Compute one batch. ``records`` has the normalized topic columns."""
        out = BatchOutput(once=self.once)
        self._out = out
        self._batch_id = batch_id
        # A batch's tasks sum up its positions when the batch before was large (or
        # this is the first): catch-up batches repay that Python stage, small ones not.
        self._positions = read_positions(
            records, self.once("batch", "checks", self._source_checks),
            summarize=self._last_count is None or self._last_count >= _COMPUTE_FIRST,
        )
        self._last_count = self._positions.count
        self._records = self._positions.records
        frames: dict[str, Frame | dict[str, Frame]] = {}
        self._frames = frames
        for node in self.topology.nodes:
            rule = getattr(self, f"visit_{type(node).__name__}", None)
            if rule is None:
                raise UnsupportedNodeError(
                    f"No runtime rule for plan node {type(node).__name__} ({node.name})"
                )
            result = rule(node)
            if result is not None:
                frames[node.name] = result
        return out

    def _frame(self, name: str) -> Frame:
        return self._frames[name]

    def _persist(self, df: DataFrame, node=None) -> DataFrame:
        """Run a store stage once for this batch. Rows that reach more than one consumer
        (children, sinks, the materialized table) are cached and reused (a recomputation
        after an eviction is a replay, which the stores make exact); rows with one
        consumer flow straight into it. The consumers are stages of the batch's one
        output job that run at the same time, so each would compute the rows itself
        before any cached them: in a large batch the rows are computed first, by a job
        of their own; in a small one running the stage again costs less than a job."""
        if node is not None and self._uses(node.name) <= 1:
            return df
        df = df.persist()
        self._out.persisted.append(df)
        if self._positions.count >= _COMPUTE_FIRST:
            df.count()
        return df

    def _uses(self, name: str) -> int:
        """How many times one batch reads a node's rows: once per materialized table
        output, once per store stage or sink it feeds, and through stateless children."""
        return self.once(name, "uses", lambda: self._count_uses(name))

    def _count_uses(self, name: str) -> int:
        node = self.topology.node(name)
        if isinstance(node, _STAGE_NODES):
            uses = 1 if getattr(node, "queryable", False) else 0
        else:
            uses = 1 if getattr(node, "queryable", False) else 0  # a materialized stateless table
        for child in self.topology.nodes:
            if name not in child.parents:
                continue
            if isinstance(child, (*_STAGE_NODES, sinks.ToTopic, stateless.Peek)):
                uses += _reads(child, name)
            else:
                uses += self._count_uses(child.name)
        return uses

    def _stage(self, store: str) -> StoreStage:
        return StoreStage(self.layout, store, self.partitions, self._batch_id, self.once)

    # --------------------------------------------------------------------- sources
    def _source_checks(self) -> dict[str, Column]:
        """Per source node: the record is one of its topics' and cannot be read (key or
        value does not decode; a table record without a key)."""
        checks = {}
        for node in self.topology.sources:
            key_format, value_format = _source_formats(node)
            topics = node.topics
            invalid = key_format.decode_checked(F.col("key")).failed | value_format.decode_checked(F.col("value")).failed
            if not isinstance(node, sources.StreamSource):
                invalid = invalid | F.col("key").isNull()
            # Only a record of the source's topics is decoded (``when``, unlike ``&``,
            # keeps Spark from evaluating the decode for every record).
            checks[node.name] = F.when(F.col("topic").isin(list(topics)), invalid).otherwise(False)
        return checks

    def _decode_source(self, node) -> tuple[DataFrame, Format, Format]:
        """The node's valid records, decoded (``key, value``, the raw bytes, positions
        and the ordering key); the invalid ones go to the processing log."""
        key_format, value_format = _source_formats(node)
        topic_filter, columns = self.once(
            node.name, "decode", lambda: self._decode_columns(node, key_format, value_format)
        )
        rows = self._records.where(topic_filter)
        invalid = self._positions.invalid_rows(node.name, rows)
        if invalid is not None:
            self._out.errors.append(invalid.select(*self._error_inputs(node)).select(*self._error_columns(node)))
        return self._positions.valid(node.name, rows).select(*columns), key_format, value_format

    def _decode_columns(self, node, key_format: Format, value_format: Format):
        topics = node.topics
        src = (
            F.array_position(F.array(*[F.lit(t) for t in self.topics]), F.col("topic")).cast("int")
            - 1
        )
        columns = [
            F.col("key").alias("raw_key"),
            F.col("value").alias("raw_value"),
            key_format.decode_valid(F.col("key")).alias("key"),
            value_format.decode_valid(F.col("value")).alias("value"),
            F.col("timestamp").alias("ts"),
            F.col("o_ts"),
            src.alias("o_src"),
            F.col("partition").alias("o_part"),
            F.col("offset").alias("o_off"),
            F.lit(0).alias("o_idx"),
        ]
        return F.col("topic").isin(list(topics)), columns

    def _error_columns(self, node) -> list[Column]:
        """Processing-log columns of invalid records (over :meth:`_error_inputs`)."""

        def make() -> list[Column]:
            key_format, value_format = _source_formats(node)
            failed = F.col("key_failed") | F.col("value_failed")
            # Reasons come from the formats' Python readers, run on the bad rows only.
            key_reason = key_format.failure_reasons(F.col("raw_key"), F.col("key_failed"))
            value_reason = value_format.failure_reasons(F.col("raw_value"), F.col("value_failed"))
            reasons = F.concat_ws(
                "; ",
                F.when(F.col("key_failed"), F.concat(F.lit("key: "), key_reason)),
                F.when(F.col("value_failed"), F.concat(F.lit("value: "), value_reason)),
                F.when(
                    ~failed & F.col("raw_key").isNull(),
                    F.lit("key: a table record needs a key (null key dropped)"),
                ),
            )
            return [
                "topic",
                "partition",
                "offset",
                F.col("ts").alias("timestamp"),
                reasons.alias("error"),
                F.col("raw_key").alias("key"),
                F.col("raw_value").alias("value"),
            ]

        return self.once(node.name, "errors", make)

    def _error_inputs(self, node) -> list[Column]:
        def make() -> list[Column]:
            key_format, value_format = _source_formats(node)
            return [
                "topic",
                "partition",
                "offset",
                F.col("timestamp").alias("ts"),
                F.col("key").alias("raw_key"),
                F.col("value").alias("raw_value"),
                key_format.decode_checked(F.col("key")).failed.alias("key_failed"),
                value_format.decode_checked(F.col("value")).failed.alias("value_failed"),
            ]

        return self.once(node.name, "error-inputs", make)

    def visit_StreamSource(self, node: sources.StreamSource) -> Frame:
        decoded, key_format, value_format = self._decode_source(node)
        df = decoded.select(*STREAM_COLUMNS)
        df = self._apply_timestamp(node, df, key_format, value_format)
        return Frame(df, "stream", key_format.spark_type(), _shape(value_format))

    def visit_TableSource(self, node: sources.TableSource) -> Frame:
        decoded, key_format, value_format = self._decode_source(node)
        key_type = key_format.spark_type()
        shape = _shape(value_format)
        if self._kept_by_consumer(node):
            # The table's records of the batch (``key, new, ts`` and the ordering key),
            # applied by the one join that reads them to its own copy of the table.
            records = decoded.select(*self.once(node.name, "records", lambda: ["key", F.col("value").alias("new"), "ts", *ORDER]))
            return Frame(records, "table", key_type, shape)
        stage_in_columns, out_columns = self.once(
            node.name,
            "columns",
            lambda: (
                [
                    canonical_bytes(F.col("key")).alias("kb"),
                    F.col("raw_value").alias("vb"),
                    "ts",
                    *ORDER,
                ],
                [
                    from_canonical(F.col("kb"), key_type).alias("key"),
                    value_format.decode_valid(F.col("old")).alias("old"),
                    value_format.decode_valid(F.col("new")).alias("new"),
                    "ts",
                    *ORDER,
                ],
            ),
        )
        changed = self._persist(
            self._stage(node.store).run(decoded.select(*stage_in_columns), "kb", tasks.upsert, _UPSERT_SCHEMA),
            node,
        )
        versions = None
        if self._feeds_stream_join(node.name):
            versions = decoded.select(
                *self.once(node.name, "versions", lambda: ["key", F.col("value").alias("new"), "ts", *ORDER])
            )
        frame = Frame(changed.select(*out_columns), "table", key_type, shape, versions=versions)
        if node.queryable:
            self._out.tables[node.store] = frame
        return frame

    def _kept_by_consumer(self, node) -> bool:
        """Whether a table source's only reader keeps the table itself, so the source
        needs no store of its own: the right table of one foreign-key join, or either
        table of one whose right table is replicated (the join keeps a copy of those in
        any case), not queried, not read by anything else."""

        def decide() -> bool:
            if type(node) is not sources.TableSource or node.queryable:
                return False
            readers = [n for n in self.topology.nodes if node.name in n.parents]
            if len(readers) != 1 or not isinstance(readers[0], joins.ForeignKeyJoin):
                return False
            join = readers[0]
            return join.left != join.right and (join.right == node.name or join.replicate_right)

        return self.once(node.name, "kept-by-consumer", decide)

    def _feeds_stream_join(self, name: str) -> bool:
        """Whether a stream-table join looks up the table ``name`` (and needs every
        record of the batch, not only the last per key)."""
        return self.once(name, "feeds-stream-join", lambda: any(
            isinstance(n, (joins.StreamTableJoin, joins.StreamGlobalTableJoin)) and n.table == name
            for n in self.topology.nodes
        ))

    visit_GlobalTableSource = visit_TableSource

    def _apply_timestamp(self, node, df: DataFrame, key_format, value_format) -> DataFrame:
        if getattr(node, "timestamp_extractor", None) is None:
            return df
        raise UnsupportedNodeError(f"{node.name}: timestamp extractors are not supported yet")

    # ------------------------------------------------------------- stream stateless
    def visit_Filter(self, node: stateless.Filter) -> Frame:
        frame = self._frame(node.parent)

        def condition() -> Column:
            keep = predicate_column(
                node.predicate, frame.value, self.functions, key_json=frame.key_json
            )
            return ~keep if node.negate else keep

        return frame.with_df(frame.df.where(self.once(node.name, "condition", condition)))

    def visit_Peek(self, node: stateless.Peek) -> Frame:
        frame = self._frame(node.parent)
        action = self.functions[node.action.ref]
        shape = frame.value

        def run(batches):
            for batch in batches:
                for k, v in zip(
                    batch.column("key").to_pylist(), batch.column("value").to_pylist(), strict=True
                ):
                    action(k, to_python(v, shape))
                yield batch

        # Persisted so the action runs once per record, however often Spark reads the rows.
        return frame.with_df(self._persist(frame.df.mapInArrow(run, frame.df.schema)))

    def visit_MapValues(self, node: stateless.MapValues) -> Frame:
        frame = self._frame(node.parent)
        value, shape = self.once(node.name, "value", lambda: self._value_expr(node.mapper, frame))
        return frame.with_df(frame.df.withColumn("value", value), value=shape)

    def visit_SelectKey(self, node: stateless.SelectKey) -> Frame:
        frame = self._frame(node.parent)
        key, shape = self.once(node.name, "key", lambda: self._value_expr(node.selector, frame))
        df = frame.df.withColumn("key", key)
        key_type = self.once(node.name, "key-type", lambda: df.schema["key"].dataType)
        return frame.with_df(df, key_type=key_type, key_json=shape.json_text)

    def visit_Map(self, node: stateless.Map) -> Frame:
        frame = self._frame(node.parent)
        if isinstance(node.mapper, KeyValueExpr):
            key, key_shape = self._value_expr(node.mapper.key, frame)
            value, shape = self._value_expr(node.mapper.value, frame)
            df = frame.df.select(key.alias("key"), value.alias("value"), "ts", *ORDER)
            return frame.with_df(
                df, key_type=df.schema["key"].dataType, value=shape, key_json=key_shape.json_text
            )
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
        df = frame.df.select(
            F.posexplode(pairs).alias("o_idx_new", "p"), "ts", *[c for c in ORDER if c != "o_idx"]
        )
        df = df.select(
            F.col("p.key" if not json_pairs else "p.k").alias("key"),
            F.col("p.value" if not json_pairs else "p.v").alias("value"),
            "ts",
            "o_ts",
            "o_src",
            "o_part",
            "o_off",
            F.col("o_idx_new").cast("int").alias("o_idx"),
        )
        if json_pairs:
            return frame.with_df(df, key_type=StringType(), value=JSON_TEXT, key_json=True)
        return frame.with_df(
            df, key_type=df.schema["key"].dataType, value=ValueShape(df.schema["value"].dataType)
        )

    def visit_Merge(self, node: stateless.Merge) -> Frame:
        parents = [self._frame(p) for p in node.parents]
        first = parents[0]
        same_values = all(p.value == first.value for p in parents)
        same_keys = all(
            p.key_type == first.key_type and p.key_json == first.key_json for p in parents
        )
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
        # Streams of different value (or key) types merge as JSON text.
        return first.with_df(
            df,
            value=first.value if same_values else JSON_TEXT,
            key_type=first.key_type if same_keys else StringType(),
            key_json=first.key_json if same_keys else True,
        )

    def visit_Split(self, node: stateless.Split) -> Frame:
        return self._frame(node.parent)

    def visit_Branch(self, node: stateless.Branch) -> Frame:
        frame = self._frame(node.parent)
        keep = F.lit(True)
        for earlier in node.preceding:
            keep = keep & ~predicate_column(
                earlier, frame.value, self.functions, key_json=frame.key_json
            )
        if node.predicate is not None:
            keep = keep & predicate_column(
                node.predicate, frame.value, self.functions, key_json=frame.key_json
            )
        return frame.with_df(frame.df.where(keep))

    def visit_Repartition(self, node: stateless.Repartition) -> Frame:
        # Spark shuffles by key at every store stage; the topic is not needed.
        return self._frame(node.parent)

    def visit_ToTable(self, node: stateless.ToTable) -> Frame:
        frame = self._frame(node.parent)
        dtype = frame.value.dtype
        keyed, stage_in, result = self.once(
            node.name,
            "columns",
            lambda: (
                F.col("key").isNotNull(),
                [
                    canonical_bytes(F.col("key")).alias("kb"),
                    canonical_bytes(F.col("value")).alias("vb"),
                    "ts",
                    *ORDER,
                ],
                [
                    from_canonical(F.col("kb"), frame.key_type).alias("key"),
                    from_canonical(F.col("old"), dtype).alias("old"),
                    from_canonical(F.col("new"), dtype).alias("new"),
                    "ts",
                    *ORDER,
                ],
            ),
        )
        changed = self._persist(
            self._stage(node.store).run(
                frame.df.where(keyed).select(*stage_in), "kb", tasks.upsert, _UPSERT_SCHEMA
            ),
            node,
        )
        df = changed.select(*result)
        table = Frame(df, "table", frame.key_type, frame.value, key_json=frame.key_json)
        if node.queryable:
            self._out.tables[node.store] = table
        return table

    # -------------------------------------------------------------- table stateless
    def visit_ToStream(self, node: stateless.ToStream) -> Frame:
        frame = self._frame(node.parent)
        df = frame.df.select("key", F.col("new").alias("value"), "ts", *ORDER)
        return Frame(df, "stream", frame.key_type, frame.value, key_json=frame.key_json)

    def visit_TableFilter(self, node: stateless.TableFilter) -> Frame:
        frame = self._frame(node.parent)
        df = self._sides(
            node,
            frame,
            {
                "keep": lambda: predicate_column(
                    node.predicate,
                    frame.value,
                    self.functions,
                    key_json=frame.key_json,
                    skip_null=True,
                )
            },
        )

        def passes(side: str) -> Column:
            keep = F.coalesce(F.col(f"_{side}_keep"), F.lit(False))
            return ~keep if node.negate else keep

        columns, changed = self.once(
            node.name,
            "columns",
            lambda: (
                [
                    "key",
                    F.when(passes("old"), F.col("old")).alias("old"),
                    F.when(passes("new"), F.col("new")).alias("new"),
                    "ts",
                    *ORDER,
                ],
                _changed(),
            ),
        )
        return self._table_result(node, frame.with_df(df.select(*columns).where(changed)))

    def visit_TableMapValues(self, node: stateless.TableMapValues) -> Frame:
        frame = self._frame(node.parent)
        shape, columns, changed = self.once(
            node.name,
            "columns",
            lambda: (
                self._value_expr(node.mapper, frame)[1],
                ["key", F.col("_old_v").alias("old"), F.col("_new_v").alias("new"), "ts", *ORDER],
                _changed(),
            ),
        )
        df = self._sides(
            node, frame, {"v": lambda: self._value_expr(node.mapper, frame, skip_null=True)[0]}
        )
        return self._table_result(
            node, frame.with_df(df.select(*columns).where(changed), value=shape)
        )

    def _table_result(self, node, frame: Frame) -> Frame:
        if getattr(node, "queryable", False):
            self._out.tables[node.store] = frame
        return frame

    # ------------------------------------------------------------------ aggregation
    def visit_TableGroupBy(self, node: agg.TableGroupBy) -> Frame:
        """Each change becomes the old row's (group key, value) and the new row's."""
        frame = self._frame(node.parent)
        sides, columns, shape, key_json = self.once(
            node.name, "columns", lambda: self._group_by_columns(node, frame)
        )
        df = self._sides(node, frame, sides).select(*columns)
        key_type = self.once(node.name, "key-type", lambda: df.schema["new_gk"].dataType)
        return Frame(df, "grouped", key_type, shape, key_json=key_json)

    def _group_by_columns(self, node: agg.TableGroupBy, frame: Frame):
        if isinstance(node.mapper, KeyValueExpr):
            mapper = node.mapper
            _, key_shape = self._value_expr(mapper.key, frame)
            _, shape = self._value_expr(mapper.value, frame)
            sides = {
                "gk": lambda: self._value_expr(mapper.key, frame, skip_null=True)[0],
                "gv": lambda: self._value_expr(mapper.value, frame, skip_null=True)[0],
            }
            picked = {
                f"{side}_{part}": F.col(f"_{side}_{part}")
                for side in ("old", "new")
                for part in ("gk", "gv")
            }
            key_json = key_shape.json_text
        else:
            sides = {
                "pair": lambda: self._callable(
                    node.mapper, frame, _PAIR_TYPE, pair=True, skip_null=True
                )
            }
            picked = {
                f"{side}_{part}": F.col(f"_{side}_pair.{field}")
                for side in ("old", "new")
                for part, field in (("gk", "k"), ("gv", "v"))
            }
            shape, key_json = JSON_TEXT, True
        columns = [
            canonical_bytes(F.col("key")).alias("skb"),
            *[col.alias(name) for name, col in picked.items()],
            "ts",
            *ORDER,
        ]
        return sides, columns, shape, key_json

    def _signed_rows(self, node, frame: Frame, value: Callable[[str], Column]) -> DataFrame:
        """One row per group contribution: ``gkb, gk, sign, v, skb, ts, order`` (a table
        change contributes -old to its old group and +new to its new group; a stream
        record +value to its key's group)."""
        if frame.kind == "grouped":

            def side_columns():
                # Both sides in one pass: an array of the (sign, group key, group value)
                # of the old and the new row, exploded; ``value`` is then bound to the
                # side's group value, as for a stream record.
                sides = F.array(
                    *[
                        F.struct(
                            F.lit(sign).cast("int").alias("sign"),
                            F.col(f"{side}_gk").alias("gk"),
                            F.col(f"{side}_gv").alias("value"),
                        )
                        for sign, side in ((-1, "old"), (1, "new"))
                    ]
                )
                exploded = [F.explode(sides).alias("_side"), "skb", "ts", *ORDER]
                flat = [
                    F.col("_side.sign").alias("sign"),
                    F.col("_side.gk").alias("gk"),
                    F.col("_side.value").alias("value"),
                    "skb",
                    "ts",
                    *ORDER,
                ]
                present = F.col("gk").isNotNull() & F.col("value").isNotNull()
                columns = [
                    canonical_bytes(F.col("gk")).alias("gkb"),
                    "gk",
                    "sign",
                    value("value").alias("v"),
                    "skb",
                    "ts",
                    *ORDER,
                ]
                return exploded, flat, present, columns

            exploded, flat, present, columns = self.once(node.name, "signed-rows", side_columns)
            return frame.df.select(*exploded).select(*flat).where(present).select(*columns)
        present, columns = self.once(
            node.name,
            "signed-rows",
            lambda: (
                F.col("key").isNotNull() & F.col("value").isNotNull(),
                [
                    canonical_bytes(F.col("key")).alias("gkb"),
                    F.col("key").alias("gk"),
                    F.lit(1).cast("int").alias("sign"),
                    value("value").alias("v"),
                    F.lit(None).cast("binary").alias("skb"),
                    "ts",
                    *ORDER,
                ],
            ),
        )
        return frame.df.where(present).select(*columns)

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
        value = (
            self._column_of(column, frame)
            if column is not None
            else (lambda _: F.lit(None).cast("long"))
        )
        rows = self._signed_rows(node, frame, value)
        vtype, key_type = self.once(
            node.name, "types", lambda: (rows.schema["v"].dataType, rows.schema["gk"].dataType)
        )
        if column is None or _is_integral(vtype):
            floating = False
        elif isinstance(vtype, (DoubleType, FloatType, DecimalType)):
            floating = True
        else:
            raise AggregateTypeError(
                f"{node.name}: cannot sum or average a {vtype.simpleString()} column"
            )
        columns = self.once(
            node.name,
            "stage-in",
            lambda: [
                "gkb",
                "sign",
                F.col("v").cast("double" if floating else "long").alias("v"),
                "ts",
                *ORDER,
            ],
        )
        changed = self._persist(
            self._stage(node.store).run(
                rows.select(*columns),
                "gkb",
                lambda t, s: tasks.aggregate_deltas(t, s, floating=floating),
                _numeric_schema(floating),
            ),
            node,
        )
        return changed, key_type, floating

    def _numeric_frame(
        self,
        node,
        df: DataFrame,
        key_type: DataType,
        old: Callable[[], Column],
        new: Callable[[], Column],
        dtype: DataType,
    ) -> Frame:
        columns = self.once(
            node.name,
            "result",
            lambda: [
                from_canonical(F.col("gkb"), key_type).alias("key"),
                old().alias("old"),
                new().alias("new"),
                "ts",
                *_aggregate_order(),
            ],
        )
        result = df.select(*columns)
        frame = Frame(
            result, "table", key_type, ValueShape(dtype), key_json=self._frame(node.parent).key_json
        )
        if node.queryable:
            self._out.tables[node.store] = frame
        return frame

    def visit_Count(self, node: agg.Count) -> Frame:
        changed, key_type, _ = self._numeric(node, None)
        return self._numeric_frame(
            node,
            changed,
            key_type,
            lambda: F.when(F.col("old_members") > 0, F.col("old_members")),
            lambda: F.when(F.col("new_members") > 0, F.col("new_members")),
            LongType(),
        )

    def visit_Sum(self, node: agg.Sum) -> Frame:
        changed, key_type, floating = self._numeric(node, node.column)
        dtype = DoubleType() if floating else LongType()
        return self._numeric_frame(
            node,
            changed,
            key_type,
            # ksqlDB's SUM ignores nulls and starts at 0: a group of null values sums to 0.
            lambda: F.when(F.col("old_members") > 0, F.col("old_total")),
            lambda: F.when(F.col("new_members") > 0, F.col("new_total")),
            dtype,
        )

    def visit_Avg(self, node: agg.Avg) -> Frame:
        changed, key_type, _ = self._numeric(node, node.column)
        return self._numeric_frame(
            node,
            changed,
            key_type,
            lambda: F.when(
                F.col("old_nonnull") > 0, F.col("old_total").cast("double") / F.col("old_nonnull")
            ),
            lambda: F.when(
                F.col("new_nonnull") > 0, F.col("new_total").cast("double") / F.col("new_nonnull")
            ),
            DoubleType(),
        )

    def visit_Min(self, node: agg.Min) -> Frame:
        return self._extreme(node, "min")

    def visit_Max(self, node: agg.Max) -> Frame:
        return self._extreme(node, "max")

    def _extreme(self, node, which: str) -> Frame:
        frame = self._frame(node.parent)
        value = self._column_of(node.column, frame)
        rows = self._signed_rows(node, frame, value)
        vtype, key_type = self.once(
            node.name, "types", lambda: (rows.schema["v"].dataType, rows.schema["gk"].dataType)
        )
        if not isinstance(vtype, _ORDERED_TYPES):
            raise AggregateTypeError(
                f"{node.name}: cannot take the {which} of a {vtype.simpleString()} column"
            )
        rows = rows.select(
            *self.once(
                node.name,
                "stage-in",
                lambda: [
                    "gkb",
                    "sign",
                    canonical_bytes(F.col("v")).alias("vb"),
                    F.col("v"),
                    F.coalesce(
                        F.col("skb"),
                        F.concat(
                            F.col("o_src").cast("string").cast("binary"),
                            F.lit(b"|"),
                            F.col("o_part").cast("string").cast("binary"),
                            F.lit(b"|"),
                            F.col("o_off").cast("string").cast("binary"),
                            F.lit(b"|"),
                            F.col("o_idx").cast("string").cast("binary"),
                        ),
                    ).alias("skb"),
                    "ts",
                    *ORDER,
                ],
            )
        )
        stream = frame.kind == "stream"
        changed = self._persist(
            self._stage(node.store).run(
                rows,
                "gkb",
                lambda t, s: tasks.extreme_groups(t, s, which=which, stream=stream),
                _EXTREME_SCHEMA,
            ),
            node,
        )
        return self._numeric_frame(
            node,
            changed,
            key_type,
            lambda: from_canonical(F.col("old_vb"), vtype),
            lambda: from_canonical(F.col("new_vb"), vtype),
            vtype,
        )

    def visit_Reduce(self, node: agg.Reduce) -> Frame:
        return self._fold(
            node, initializer=None, adder=node.adder, subtractor=node.subtractor, reduce=True
        )

    def visit_Aggregate(self, node: agg.Aggregate) -> Frame:
        return self._fold(
            node,
            initializer=node.initializer,
            adder=node.adder,
            subtractor=node.subtractor,
            reduce=False,
        )

    def _fold(self, node, *, initializer, adder, subtractor, reduce: bool) -> Frame:
        frame = self._frame(node.parent)
        for expr in (initializer, adder, subtractor):
            if expr is not None and not (isinstance(expr, ExprRef) and expr.kind == "callable"):
                raise UnsupportedNodeError(
                    f"{node.name}: reduce and aggregate take Python callables"
                )
        shape = frame.value
        rows = self._signed_rows(
            node,
            frame,
            lambda side: (
                json_text(F.col(side), shape.dtype) if not shape.json_text else F.col(side)
            ),
        )
        key_type = self.once(node.name, "key-type", lambda: rows.schema["gk"].dataType)
        rows = rows.select(
            *self.once(
                node.name,
                "stage-in",
                lambda: [
                    "gkb",
                    "sign",
                    F.col("v").alias("vj"),
                    "skb",
                    json_text(F.col("gk"), key_type).alias("gkj"),
                    "ts",
                    *ORDER,
                ],
            )
        )
        init = self.functions[initializer.ref] if initializer is not None else None
        add = self.functions[adder.ref]
        sub = self.functions[subtractor.ref] if subtractor is not None else None
        kernel = tasks.FoldKernel(
            initializer=init,
            adder=add,
            subtractor=sub,
            reduce=reduce,
            adder_arity=adder.arity,
            subtractor_arity=subtractor.arity if subtractor is not None else None,
        )
        changed = self._persist(
            self._stage(node.store).run(rows, "gkb", kernel, _FOLD_SCHEMA), node
        )
        result = changed.select(
            *self.once(
                node.name,
                "result",
                lambda: [
                    from_canonical(F.col("gkb"), key_type).alias("key"),
                    "old",
                    "new",
                    "ts",
                    *_aggregate_order(),
                ],
            )
        )
        table = Frame(result, "table", key_type, JSON_TEXT, key_json=frame.key_json)
        if node.queryable:
            self._out.tables[node.store] = table
        return table

    # ------------------------------------------------------------------------ joins
    def _joiner(self, node, expr: Expr, left: ValueShape, right: ValueShape, frame_df: DataFrame):
        """The joiner as a Column over ``_jl`` / ``_jr`` (the two values) and ``_jp`` (a
        result exists), and the result's shape."""

        def make():
            if isinstance(expr, SqlExpr):
                col = joiner_sql_column(expr)
            elif expr.kind == "column":
                col = self.functions[expr.ref]
            else:
                col = joiner_callable_column(self.functions[expr.ref], left, right, _json)
                return col, JSON_TEXT
            probe = frame_df.select(
                F.lit(None).cast(left.dtype).alias("_jl"), F.lit(None).cast(right.dtype).alias("_jr")
            ).select(col.alias("_j"))
            return col, ValueShape(probe.schema["_j"].dataType)

        return self.once(node.name, "joiner", make)

    def _join_sides(self, node, df: DataFrame, kind: str, left: ValueShape, right: ValueShape,
                    pairs: dict[str, tuple[str, str]]) -> tuple[DataFrame, ValueShape]:
        """Adds a joiner result column per ``name -> (left column, right column)`` (null
        where the join has no result for that pair)."""
        joiner, shape = self._joiner(node, node.joiner, left, right, df)

        def steps():
            made = []
            for name, (lcol, rcol) in pairs.items():
                present = {
                    "inner": F.col(lcol).isNotNull() & F.col(rcol).isNotNull(),
                    "left": F.col(lcol).isNotNull(),
                    "outer": F.col(lcol).isNotNull() | F.col(rcol).isNotNull(),
                }[kind]
                made.append({"_jl": F.col(lcol), "_jr": F.col(rcol), "_jp": present})
                made.append({name: F.when(F.col("_jp"), joiner)})
            return made

        for step in self.once(node.name, "join-sides", steps):
            df = df.withColumns(step)
        return df.drop("_jl", "_jr", "_jp"), shape

    def _table_join_result(self, node, df: DataFrame, key_type: DataType, key_json: bool, shape: ValueShape) -> Frame:
        frame = Frame(df.where(self.once(node.name, "changed", _changed)), "table", key_type, shape, key_json=key_json)
        return self._table_result(node, frame)

    def visit_TableTableJoin(self, node: joins.TableTableJoin) -> Frame:
        left, right = self._frame(node.left), self._frame(node.right)

        def inputs():
            return [
                [_join_key_bytes(frame).alias("kb"), F.lit(side).cast("tinyint").alias("side"),
                 canonical_bytes(F.col("new")).alias("vb"), "ts", *ORDER]
                for side, frame in ((0, left), (1, right))
            ]

        left_in, right_in = self.once(node.name, "inputs", inputs)
        rows = left.df.select(*left_in).unionByName(right.df.select(*right_in))
        stores = (f"{node.name}-LEFT", f"{node.name}-RIGHT")
        changed = self._persist(self._stage(stores).run(rows, "kb", join_tasks.table_join, join_tasks.PK_SCHEMA), node)
        decoded = _evaluated_once(changed, self.once(node.name, "decoded", lambda: [
            _join_key(F.col("kb"), left).alias("key"),
            *[from_canonical(F.col(f"{s}_{w}"), shape.dtype).alias(f"{s}_{w}")
              for s, shape in (("l", left.value), ("r", right.value)) for w in ("old", "new")],
            F.greatest("change_ts", "l_new_ts", "r_new_ts").alias("ts"),
        ]))
        joined, shape = self._join_sides(node, decoded, node.kind, left.value, right.value,
                                         {"old": ("l_old", "r_old"), "new": ("l_new", "r_new")})
        df = joined.select(*self.once(node.name, "result", lambda: ["key", "old", "new", "ts", *_aggregate_order()]))
        return self._table_join_result(node, df, left.key_type, left.key_json, shape)

    def visit_ForeignKeyJoin(self, node: joins.ForeignKeyJoin) -> Frame:
        left, right = self._frame(node.left), self._frame(node.right)
        if node.replicate_right:
            return self._replicated_fk_join(node, left, right)
        fk_expr = node.foreign_key
        sides = self._sides(node, left, {"fk": lambda: self._key_bytes(fk_expr, left)})

        def inputs():
            lkb = _join_key_bytes(left)
            nothing = F.lit(None).cast("binary")

            def row(kind: int, fkb: Column, vb: Column, unsubscribe: Column, l_old: Column, l_new: Column) -> Column:
                return F.struct(
                    fkb.alias("fkb"), F.lit(kind).cast("tinyint").alias("kind"), vb.alias("vb"),
                    unsubscribe.alias("unsubscribe"), l_old.alias("l_old"), l_new.alias("l_new"),
                )

            # Each left change is read once: its old foreign key's lookup, its new
            # foreign key's subscription, and the change itself (placed by its left
            # key; it passes through the stage to meet the lookups' results).
            old_row = F.when(
                F.col("old").isNotNull() & F.col("_old_fk").isNotNull(),
                row(join_tasks.OLD_LOOKUP, F.col("_old_fk"), nothing,
                    F.col("new").isNull() | ~F.col("_new_fk").eqNullSafe(F.col("_old_fk")), nothing, nothing),
            )
            new_row = F.when(
                F.col("new").isNotNull() & F.col("_new_fk").isNotNull(),
                row(join_tasks.SUBSCRIBE, F.col("_new_fk"), canonical_bytes(F.col("new")), F.lit(False),
                    nothing, nothing),
            )
            change_row = row(join_tasks.LEFT_CHANGE, lkb, nothing, F.lit(False),
                             canonical_bytes(F.col("old")), canonical_bytes(F.col("new")))
            left_rows = [F.explode(F.array(old_row, new_row, change_row)).alias("_r"), lkb.alias("lkb"), "ts", *ORDER]
            flat = [F.col(f"_r.{c}").alias(c) for c in ("fkb", "kind", "vb", "unsubscribe", "l_old", "l_new")]
            left_cols = [*flat, "lkb", "ts", *ORDER]
            right_rows = [
                _join_key_bytes(right).alias("fkb"), F.lit(join_tasks.RIGHT_CHANGE).cast("tinyint").alias("kind"),
                canonical_bytes(F.col("new")).alias("vb"), F.lit(False).alias("unsubscribe"),
                nothing.alias("l_old"), nothing.alias("l_new"), nothing.alias("lkb"), "ts", *ORDER,
            ]
            return left_rows, left_cols, right_rows

        left_rows, left_cols, right_cols = self.once(node.name, "inputs", inputs)
        rows = (
            sides.select(*left_rows).where(F.col("_r").isNotNull()).select(*left_cols)
            .unionByName(right.df.select(*right_cols))
        )
        stores = (f"{node.subscriptions}-RIGHT", node.subscriptions)

        fk_kernel, fk_schema, decoded_out, _ = self._fk_kernel(
            node, left, right, join_tasks.foreign_key_join, join_tasks.fk_schema
        )
        # Back by left key: a changed left row meets the right rows of its old and new
        # foreign keys; an unchanged one the change of the right row it references.
        combined = self._persist(self._stage(stores).run(rows, "fkb", fk_kernel, fk_schema), node)

        def aggregates():
            fields = ["lv", "lts", "r_old", "r_old_ts", "r_new", "r_new_ts", "r_change_ts", "l_old", "l_new", "l_ts"]
            return [F.max(F.col("role") == 3).alias("changed"),
                    *[F.first(c, ignorenulls=True).alias(c) for c in fields]]

        grouped = combined.groupBy("lkb").agg(*self.once(node.name, "aggregates", aggregates))

        def decoded_columns():
            # Each value decoded once: an unchanged left row's value (``lv``) stands for
            # both its old and new value, picked after the decodes.
            l_dtype, r_dtype = left.value.dtype, right.value.dtype
            changed = F.coalesce(F.col("changed"), F.lit(False))
            decoded = [
                _join_key(F.col("lkb"), left).alias("key"),
                changed.alias("changed"),
                *[(F.col(c) if decoded_out[0] else from_canonical(F.col(c), l_dtype)).alias(c)
                  for c in ("lv", "l_old", "l_new")],
                *[(F.col(c) if decoded_out[1] else from_canonical(F.col(c), r_dtype)).alias(c)
                  for c in ("r_old", "r_new")],
                F.when(changed, F.greatest(
                    F.col("l_ts"), F.when(F.col("l_new").isNull(), F.col("r_old_ts")).otherwise(F.col("r_new_ts"))
                )).otherwise(F.greatest("lts", "r_change_ts")).alias("ts"),
            ]
            picked = [
                "key",
                *[F.when(F.col("changed"), F.col(c)).otherwise(F.col("lv")).alias(c) for c in ("l_old", "l_new")],
                "r_old", "r_new", "ts",
            ]
            return decoded, picked

        decoded_values, picked = self.once(node.name, "decoded", decoded_columns)
        decoded = _evaluated_once(grouped, decoded_values).select(*picked)
        joined, shape = self._join_sides(node, decoded, node.kind, left.value, right.value,
                                         {"old": ("l_old", "r_old"), "new": ("l_new", "r_new")})
        df = joined.select(*self.once(node.name, "result", lambda: ["key", "old", "new", "ts", *_aggregate_order()]))
        return self._table_join_result(node, df, left.key_type, left.key_json, shape)

    def _replicated_fk_join(self, node: joins.ForeignKeyJoin, left: Frame, right: Frame) -> Frame:
        """A foreign-key join whose right table every state partition keeps in full: left
        rows go to their left key's partition, right rows to every partition, and one
        stage per batch computes the results (no shuffle by foreign key and back)."""

        def inputs():
            lkb = _join_key_bytes(left)
            routes = [F.lit(bytearray(r)) for r in self._routes(left.df)]
            common = [canonical_bytes(F.col("new")).alias("vb"), "ts", *ORDER]
            left_rows = [lkb.alias("route"), F.lit(1).cast("tinyint").alias("side"), lkb.alias("kb"),
                         self._key_bytes(node.foreign_key, left).alias("fk"), *common]
            right_rows = [F.explode(F.array(*routes)).alias("route"), F.lit(0).cast("tinyint").alias("side"),
                          _join_key_bytes(right).alias("kb"), F.lit(None).cast("binary").alias("fk"), *common]
            return {"value": F.col("new")}, left_rows, right_rows

        bind, left_rows, right_rows = self.once(node.name, "replicated-inputs", inputs)
        rows = left.df.withColumns(bind).select(*left_rows).unionByName(right.df.select(*right_rows))

        fk_kernel, fk_schema, decoded_out, decoded_key = self._fk_kernel(
            node, left, right, join_tasks.replicated_foreign_key_join, join_tasks.replicated_fk_schema,
            decode_key=True,
        )
        stores = (f"{node.subscriptions}-LEFT", f"{node.subscriptions}-RIGHT", node.subscriptions)
        changed = self._persist(
            self._stage(stores).run(rows, "route", fk_kernel, fk_schema, key_places_only=True), node
        )

        def decoded_columns():
            return [
                (F.col("lk") if decoded_key else _join_key(F.col("lk"), left)).alias("key"),
                *[(F.col(c) if decoded_out[i] else from_canonical(F.col(c), f.value.dtype)).alias(c)
                  for i, f in enumerate((left, right)) for c in (("l_old", "l_new"), ("r_old", "r_new"))[i]],
                "ts",
            ]

        columns = self.once(node.name, "decoded", decoded_columns)
        # Decodes left to Spark must run once per row; when the kernel decoded everything
        # there is nothing to guard.
        decoded = changed.select(*columns) if decoded_key and all(decoded_out) else _evaluated_once(changed, columns)
        joined, shape = self._join_sides(node, decoded, node.kind, left.value, right.value,
                                         {"old": ("l_old", "r_old"), "new": ("l_new", "r_new")})
        df = joined.select(*self.once(node.name, "result", lambda: ["key", "old", "new", "ts", *_aggregate_order()]))
        return self._table_join_result(node, df, left.key_type, left.key_json, shape)

    def _fk_kernel(self, node, left: Frame, right: Frame, kernel, schema, *, decode_key: bool = False):
        """A foreign-key kernel, its output schema, which values it hands over decoded
        (those whose type Arrow reads exactly) and, with ``decode_key``, whether the left
        key leaves it decoded too."""

        def make():
            types = [nullable(f.value.dtype) if arrow_decodable(f.value.dtype) else None for f in (left, right)]
            arrow = [None if t is None else to_arrow_type(t) for t in types]
            key = {}
            if decode_key and not left.key_json and arrow_decodable(left.key_type):
                key = {"key_type": nullable(left.key_type)}
            run = functools.partial(
                kernel, left_type=arrow[0], right_type=arrow[1], **{k: to_arrow_type(t) for k, t in key.items()}
            )
            return run, schema(*types, **key), [t is not None for t in types], bool(key)

        return self.once(node.name, "kernel", make)

    def _routes(self, df: DataFrame) -> list[bytes]:
        """One key per state partition that Spark's shuffle places in that partition (to
        send a row to every partition), found once by hashing candidates."""

        def find() -> list[bytes]:
            p = self.partitions
            candidates = df.sparkSession.range(64 * p).select(F.col("id").cast("string").cast("binary").alias("r"))
            found = candidates.groupBy(F.pmod(F.hash("r"), F.lit(p)).alias("p")).agg(F.min("r").alias("r")).collect()
            keys = {row.p: bytes(row.r) for row in found}
            if len(keys) < p:
                raise RuntimeError(f"no routing key found for some of {p} state partitions")
            return [keys[i] for i in range(p)]

        return self.once("batch", "routes", find)

    def _key_bytes(self, expr: Expr, frame: Frame) -> Column:
        """Canonical bytes of a key computed by ``expr`` over ``value`` (and ``key``), so
        it meets the other table's keys whatever its integer width; a callable's result
        (JSON text) is wrapped the same way."""
        col, shape = self._value_expr(expr, frame, skip_null=True)
        if shape.json_text and not (isinstance(expr, SqlExpr) and expr.sql.lower() == "value"):
            return F.when(col.isNotNull() & (col != F.lit("null")),
                          F.concat(F.lit('{"v":'), col, F.lit("}")).cast("binary"))
        return canonical_bytes(col)

    def _stream_table_rows(self, node, stream: Frame, table: Frame, key: Callable[[], Column]):
        """Stage input of a stream-table join: the table's changes and the stream's
        records (with a lookup key), both with their ordering keys."""
        def inputs():
            lookup = key()
            return (
                lookup.isNotNull() & F.col("value").isNotNull(),
                [lookup.alias("kb"), F.lit(1).cast("tinyint").alias("kind"), F.lit(None).cast("binary").alias("vb"),
                 _join_key_bytes(stream).alias("sk"), canonical_bytes(F.col("value")).alias("sv"), "ts", *ORDER],
                [_join_key_bytes(table).alias("kb"), F.lit(0).cast("tinyint").alias("kind"),
                 canonical_bytes(F.col("new")).alias("vb"), F.lit(None).cast("binary").alias("sk"),
                 F.lit(None).cast("binary").alias("sv"), "ts", *ORDER],
                lookup.isNull() & F.col("value").isNotNull(),
            )

        matched_when, stream_cols, table_cols, unmatched_when = self.once(node.name, "inputs", inputs)
        table_rows = table.versions if table.versions is not None else table.df
        rows = stream.df.where(matched_when).select(*stream_cols).unionByName(table_rows.select(*table_cols))
        looked_up = self._persist(
            self._stage(f"{node.name}-TABLE").run(rows, "kb", join_tasks.stream_table_join, join_tasks.STREAM_TABLE_SCHEMA),
            node,
        )
        decoded = looked_up.select(*self.once(node.name, "decoded", lambda: [
            _join_key(F.col("sk"), stream).alias("key"),
            from_canonical(F.col("sv"), stream.value.dtype).alias("l"),
            from_canonical(F.col("tv"), table.value.dtype).alias("r"),
            "ts", *ORDER,
        ]))
        if node.kind == "left":
            # KIP-962: a record that looks nothing up still joins with null.
            unmatched = stream.df.where(unmatched_when).select(*self.once(node.name, "unmatched", lambda: [
                "key", F.col("value").alias("l"), F.lit(None).cast(table.value.dtype).alias("r"), "ts", *ORDER,
            ]))
            decoded = decoded.unionByName(unmatched)
        joined, shape = self._join_sides(node, decoded, node.kind, stream.value, table.value, {"value": ("l", "r")})
        df = joined.where(F.col("r").isNotNull() | F.lit(node.kind == "left")).select(*STREAM_COLUMNS)
        return Frame(df, "stream", stream.key_type, shape, key_json=stream.key_json)

    def visit_StreamTableJoin(self, node: joins.StreamTableJoin) -> Frame:
        stream, table = self._frame(node.parent), self._frame(node.table)
        self._check_copartitioned(node)
        return self._stream_table_rows(node, stream, table, lambda: _join_key_bytes(stream))

    def visit_StreamGlobalTableJoin(self, node: joins.StreamGlobalTableJoin) -> Frame:
        stream, table = self._frame(node.parent), self._frame(node.table)
        return self._stream_table_rows(node, stream, table, lambda: self._key_bytes(node.key_selector, stream))

    def _check_copartitioned(self, node: joins.StreamTableJoin) -> None:
        if not node.strict or self.topic_partitions is None:
            return
        stream_topic, stream_count = self._input_partitions(node.parent)
        table_topic, table_count = self._input_partitions(node.table)
        if stream_count != table_count:
            raise CoPartitioningError(
                f"Can't join `{stream_topic}` with `{table_topic}` since the number of partitions don't match. "
                f"`{stream_topic}` partitions = {stream_count}; `{table_topic}` partitions = {table_count}. "
                "Please repartition either one so that the number of partitions match."
            )

    def _input_partitions(self, name: str) -> tuple[str, int]:
        """The topic a node's records were last partitioned by, and its partition count
        (a repartition topic has its own count, else its upstream's)."""
        node = self.topology.node(name)
        if isinstance(node, stateless.Repartition):
            upstream = self._input_partitions(node.parent)
            return node.topic, node.partitions or upstream[1]
        topics = getattr(node, "topics", ())
        if topics and isinstance(node, (sources.StreamSource, sources.TableSource, sources.GlobalTableSource)):
            return topics[0], max(self.topic_partitions.get(t, 1) for t in topics)
        return self._input_partitions(node.parents[0])

    # ------------------------------------------------------------------------ sinks
    def visit_ToTopic(self, node: sinks.ToTopic) -> None:
        frame = self._frame(node.parent)
        key_format = get_format(node.key_format, node.key_schema) if node.key_format else None
        value_format = (
            get_format(node.value_format, node.value_schema) if node.value_format else None
        )
        self._out.records.setdefault(node.topic, []).append(
            (frame, ToTopicSpec(node.topic, key_format, value_format))
        )

    # ------------------------------------------------------------------ expressions
    def _value_expr(
        self, expr: Expr, frame: Frame, *, skip_null: bool = False
    ) -> tuple[Column, ValueShape]:
        """A mapper's result over the frame's ``key`` and ``value`` columns, and its shape."""
        if isinstance(expr, SqlExpr):
            if expr.sql.lower() == "value":
                return F.col("value"), frame.value  # the identity keeps JSON text JSON
            col = sql_column(expr, frame.value)
        elif expr.kind == "column":
            col = self.functions[expr.ref]
        else:
            return self._callable(expr, frame, StringType(), skip_null=skip_null), JSON_TEXT
        dtype = (
            frame.df.select(col.alias("_")).schema["_"].dataType if frame.kind == "stream" else None
        )
        if dtype is None:
            dtype = (
                frame.df.withColumn("value", F.col("new"))
                .select(col.alias("_"))
                .schema["_"]
                .dataType
            )
        return col, ValueShape(dtype)

    def _callable(
        self,
        ref: ExprRef,
        frame: Frame,
        result: DataType,
        *,
        pair: bool = False,
        many: bool = False,
        skip_null: bool = False,
    ) -> Column:
        """A Python callable over ``key`` and ``value``; its results become JSON text
        (a pair as ``struct<k, v>`` of JSON texts, many results as an array)."""

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

        return callable_column(
            self.functions[ref.ref],
            ref.arity,
            frame.value,
            result,
            key_json=frame.key_json,
            convert=convert,
            skip_null=skip_null,
        )

    def _sides(self, node, frame: Frame, results: dict[str, Callable[[], Column]]) -> DataFrame:
        """Evaluate expressions once against a table's old rows and once against its new
        rows: ``value`` is bound to each side in turn, so SQL text, Spark Columns and
        callables all see the row as a stream record's value. Adds ``_old_<name>`` and
        ``_new_<name>`` (null where the side is missing)."""

        def make():
            steps = []
            for side in ("old", "new"):
                steps.append({"value": F.col(side)})
                steps.append(
                    {
                        f"_{side}_{name}": F.when(F.col(side).isNotNull(), build())
                        for name, build in results.items()
                    }
                )
            return steps

        df = frame.df
        for step in self.once(node.name, "sides", make):
            df = df.withColumns(step)
        return df.drop("value")


# ----------------------------------------------------------------------------- helpers
_STAGE_NODES = (
    sources.TableSource,
    sources.GlobalTableSource,
    stateless.ToTable,
    agg.AggregateNode,
)
_ORDERED_TYPES = (
    LongType,
    IntegerType,
    ShortType,
    DoubleType,
    FloatType,
    StringType,
    BooleanType,
    DateType,
    TimestampType,
)
_PAIR_TYPE = StructType([StructField("k", StringType()), StructField("v", StringType())])

_ORDER_FIELDS = "o_ts bigint, o_src int, o_part int, o_off bigint, o_idx int"
_UPSERT_SCHEMA = f"kb binary, old binary, new binary, ts bigint, {_ORDER_FIELDS}"
_EXTREME_SCHEMA = "gkb binary, old_vb binary, new_vb binary, ts bigint"
_FOLD_SCHEMA = "gkb binary, old string, new string, ts bigint"


# Records in a batch from which rows read by several consumers are computed by a job of
# their own first (see BatchRunner._persist).
_COMPUTE_FIRST = 50_000


def _name_columns(value: Any) -> Any:
    """``value`` with every string in its lists (also inside tuples) made a Column."""
    if isinstance(value, list):
        return [F.col(v) if isinstance(v, str) else _name_columns(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_name_columns(v) for v in value)
    return value


def _source_formats(node) -> tuple[Format, Format]:
    return get_format(node.key_format, node.key_schema), get_format(node.value_format, node.value_schema)


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


def _reads(node, parent: str) -> int:
    """How many times ``node``'s rule reads its parent ``parent``'s rows in one batch."""
    if isinstance(node, (joins.StreamTableJoin, joins.StreamGlobalTableJoin)) and parent == node.parent:
        return (2 if node.kind == "left" else 1) + (parent == node.table)
    return sum(1 for p in node.parents if p == parent) or 1


def _join_key_bytes(frame: Frame) -> Column:
    """A frame's keys as the bytes joins match on: canonical bytes of the value, so keys
    typed alike meet (a key a callable chose, JSON text, is wrapped the same way)."""
    if frame.key_json:
        return F.when(F.col("key").isNotNull(), F.concat(F.lit('{"v":'), F.col("key"), F.lit("}")).cast("binary"))
    return canonical_bytes(F.col("key"))


def _join_key(col: Column, frame: Frame) -> Column:
    """The key :func:`_join_key_bytes` encoded, in the frame's own form."""
    if frame.key_json:
        text = col.cast("string")
        return F.substring(text, F.lit(6), F.length(text) - F.lit(6))
    return from_canonical(col, frame.key_type)


def _aggregate_order() -> list[Column]:
    """An aggregate's result rows carry their timestamp as ordering time (one row per group)."""
    return [
        F.col("ts").alias("o_ts"),
        *[
            F.lit(0).cast(t).alias(c)
            for c, t in zip(ORDER[1:], ("int", "int", "long", "int"), strict=True)
        ],
    ]


def _evaluated_once(df: DataFrame, columns: list) -> DataFrame:
    """``df.select(*columns)`` whose expressions run once per row whatever later filters
    use them: Spark pushes a filter below a projection by copying the projected
    expressions into it (every decode once per use); a generator's output stops that."""
    return df.select(F.inline(F.array(F.struct(*columns))))


def _changed() -> Column:
    """Keeps changes that change something (not both sides null, not equal): emit-on-change."""
    return ~F.col("old").eqNullSafe(F.col("new"))

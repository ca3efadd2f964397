"""Stream-table and stream-global-table joins: each stream record meets the table as of
its ordering key, in a stage that keeps the join's own copy of the table
(:mod:`tablestream.runtime.kernels.stream_table`)."""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_type
from pyspark.sql.types import BinaryType, DataType, StructField, StructType

from ....errors import CoPartitioningError
from ....plan import joins
from ...batch import BatchContext
from ...expressions import unguarded
from ...frames import (
    ORDER,
    STREAM_COLUMNS,
    Frame,
    arrow_decodable,
    arrow_passable,
    canonical_bytes,
    from_canonical,
    key_bytes,
    key_from_bytes,
    named,
    nullable,
    select,
    with_columns,
)
from ...kernels import stream_table
from ...keys import Converted, JoinKeys, join_keys, key_columns, logged
from ...physical import PhysicalPlan
from ..base import Rule, StoreUse
from ..values import is_guarded_expr, selected_key
from .joiner import Joiner

_SELECTED = "_selected"


class StreamTableRule(Rule):
    nodes = (joins.StreamTableJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.joiner = Joiner(node.joiner, node.kind, self.resolve, {"value": ("l", "r")})
        self.inputs = None
        self.keys: JoinKeys | None = None

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        return (StoreUse(f"{node.name}-TABLE", "table copy", node.name),)

    @classmethod
    def reads_every_version(cls, node) -> tuple[str, ...]:
        return (node.table,)

    def null_key(self) -> Column:
        """Whether a stream record has no key to look up (a key that does not convert to
        the table's key type is logged as such, not as a null key)."""
        return F.col("key").isNull()

    def lookup_rows(self, stream: Frame) -> DataFrame:
        """The stream records that look something up (all of them)."""
        return stream.df

    def lookup_key(self, stream: Frame, table: Frame) -> Converted:
        """The bytes of the table key a stream record looks up: its key, converted to the
        table's key type."""
        self.keys = join_keys(self.node, self.physical.topology, stream, table, "key")
        return self.keys.source_bytes(F.col("key"))

    def check(self) -> None:
        """ksqlDB's co-partitioning rule, when the join asks for it (``strict``)."""
        node, physical = self.node, self.physical
        if not node.strict or physical.topic_partitions is None:
            return
        stream_topic, stream_count = physical.input_partitions(node.parent)
        table_topic, table_count = physical.input_partitions(node.table)
        if stream_count != table_count:
            raise CoPartitioningError(
                f"Can't join `{stream_topic}` with `{table_topic}` since the number of partitions don't match. "
                f"`{stream_topic}` partitions = {stream_count}; `{table_topic}` partitions = {table_count}. "
                "Please repartition either one so that the number of partitions match."
            )

    def apply(self, batch: BatchContext, stream: Frame, table: Frame) -> Frame:
        self.check()
        node = self.node
        if self.inputs is None:
            self.inputs = self._inputs(stream, table)
        looked, log, matched, stream_cols, table_cols, unmatched, decoded_cols, unmatched_cols, kernel, schema = self.inputs
        # A key that does not convert looks nothing up.
        records = logged(batch, with_columns(self.lookup_rows(stream), looked), log)
        table_rows = table.versions if table.versions is not None else table.df
        rows = select(records.where(matched), stream_cols).unionByName(select(table_rows, table_cols))
        stage = batch.stage(self.store_names).run(rows, "kb", kernel, schema, skipped="_skip")
        looked_up = batch.persist(stage, node.name)
        if node.kind != "left":
            looked_up = looked_up.where(F.col("tv").isNotNull())  # an inner join: the records that met a row
        decoded = select(looked_up, decoded_cols)
        if node.kind == "left":
            # KIP-962: a record that looks nothing up still joins with null.
            decoded = decoded.unionByName(select(records.where(unmatched), unmatched_cols))
        joined = self.joiner.join(decoded, stream.value, table.value, key_undeclared=stream.key_undeclared)
        df = joined.select(*STREAM_COLUMNS)
        return Frame(
            df, "stream", stream.key_type, self.joiner.shape, key_json=stream.key_json,
            key_undeclared=stream.key_undeclared, positioned=stream.positioned,
        )

    def _inputs(self, stream: Frame, table: Frame):
        looked, log = key_columns(self.lookup_key(stream, table), "_lookup", stream, "value", self.physical, self.node.parent)
        lookup = F.col("_lookup")
        nothing = F.lit(None).cast("binary")
        # Records the join drops, as Kafka Streams does: a null value, and a null key in
        # an inner join (a left join joins it with null, KIP-962). They go through the
        # stage, which reports them as skipped records.
        skip = F.when(F.col("value").isNull(), F.lit("null value: a stream-table join skips it (record skipped)"))
        if self.node.kind != "left":
            skip = skip.when(self.null_key(), F.lit("null join key: an inner join skips it (record skipped)"))
        sk, sv, tv = _carried(stream, table)
        kernel = functools.partial(stream_table.stream_table_join, table_type=tv.arrow_type)
        schema = from_arrow_schema(stream_table.SCHEMA)
        schema = StructType([
            *(StructField(name, carried.stage_type, True) for name, carried in (("sk", sk), ("sv", sv), ("tv", tv))),
            *schema.fields[3:],
        ])
        return named((
            looked,
            log,
            (lookup.isNotNull() & F.col("value").isNotNull()) | skip.isNotNull(),
            [skip.alias("_skip"), lookup.alias("kb"), F.lit(stream_table.STREAM_RECORD).cast("tinyint").alias("kind"), nothing.alias("vb"),
             sk.into(F.col("key")).alias("sk"), sv.into(F.col("value")).alias("sv"), "ts", *ORDER],
            [F.lit(None).cast("string").alias("_skip"), self.keys.target_bytes(F.col("key")).alias("kb"), F.lit(stream_table.TABLE_CHANGE).cast("tinyint").alias("kind"),
             canonical_bytes(F.col("new")).alias("vb"), F.lit(None).cast(sk.stage_type).alias("sk"),
             F.lit(None).cast(sv.stage_type).alias("sv"), "ts", *ORDER],
            lookup.isNull() & F.col("value").isNotNull(),
            [sk.out_of(F.col("sk")).alias("key"), sv.out_of(F.col("sv")).alias("l"), tv.out_of(F.col("tv")).alias("r"),
             "ts", *ORDER],
            ["key", F.col("value").alias("l"), F.lit(None).cast(table.value.dtype).alias("r"), "ts", *ORDER],
        )) + (kernel, schema)


class _Carried:
    """How a column crosses the join's stage: as it is (a type Spark's Arrow conversion
    carries), as bytes, or (the table's values, which the stage reads from its store as
    canonical bytes) decoded in the stage."""

    def __init__(self, stage_type: DataType, into, out_of, arrow_type=None):
        self.stage_type = stage_type
        self.into = into
        self.out_of = out_of
        self.arrow_type = arrow_type


def _carried(stream: Frame, table: Frame) -> tuple[_Carried, _Carried, _Carried]:
    """The stream record's key and value pass through the stage as they are when Arrow
    holds their type (an undeclared key, whose text need not be UTF-8, as its bytes);
    otherwise as canonical bytes, decoded by Spark after. The table's value leaves the
    stage decoded when Arrow reads its JSON exactly as Spark does (see
    :func:`~tablestream.runtime.frames.arrow_decodable`)."""
    binary = BinaryType()
    key_type, value_type = (stream.df.schema[c].dataType for c in ("key", "value"))
    if stream.key_undeclared:
        sk = _Carried(binary, lambda c: c.cast("binary"), lambda c: c.cast("string"))
    elif arrow_passable(key_type):
        sk = _Carried(key_type, lambda c: c, lambda c: c)
    else:
        sk = _Carried(binary, lambda c: key_bytes(stream), lambda c: key_from_bytes(c, stream))
    if arrow_passable(value_type):
        sv = _Carried(value_type, lambda c: c, lambda c: c)
    else:
        sv = _Carried(binary, canonical_bytes, lambda c: from_canonical(c, stream.value.dtype))
    dtype = table.value.dtype
    if arrow_decodable(dtype):
        tv = _Carried(nullable(dtype), None, lambda c: c, to_arrow_type(nullable(dtype)))
    else:
        tv = _Carried(binary, None, lambda c: from_canonical(c, dtype))
    return sk, sv, tv


class StreamGlobalTableRule(StreamTableRule):
    """Looked up by a key selected from the stream record; no co-partitioning."""

    nodes = (joins.StreamGlobalTableJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.selected: Column | None = None  # the key selector's column

    def null_key(self) -> Column:
        # A selected key that is null looks nothing up: an inner join drops the record
        # without another entry.
        return F.lit(False)

    def lookup_rows(self, stream: Frame) -> DataFrame:
        """The stream records with their selected key (``_selected``); a record the
        selector fails on leaves the join (it is in the processing log)."""
        rows = stream.df.withColumn(_SELECTED, self.selected)
        return unguarded(rows, [_SELECTED] if is_guarded_expr(self.node.key_selector) else [])

    def lookup_key(self, stream: Frame, table: Frame) -> Converted:
        self.selected, form = selected_key(self.node.key_selector, stream, self.resolve)
        self.keys = join_keys(self.node, self.physical.topology, form, table, "selected key")
        return self.keys.source_bytes(F.col(_SELECTED))

    def check(self) -> None:
        return None

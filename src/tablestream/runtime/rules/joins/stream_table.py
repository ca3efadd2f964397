"""Stream-table and stream-global-table joins: each stream record meets the table as of
its ordering key, in a stage that keeps the join's own copy of the table
(:mod:`tablestream.runtime.kernels.stream_table`)."""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F

from ....errors import CoPartitioningError
from ....plan import joins
from ...batch import BatchContext
from ...expressions import unguarded
from ...frames import (
    ORDER,
    STREAM_COLUMNS,
    Frame,
    canonical_bytes,
    from_canonical,
    key_bytes,
    key_from_bytes,
    named,
)
from ...kernels import stream_table
from ...physical import PhysicalPlan
from ..base import Rule, StoreUse
from ..values import is_callable, selected_key_bytes
from .joiner import Joiner


class StreamTableRule(Rule):
    nodes = (joins.StreamTableJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.joiner = Joiner(node.joiner, node.kind, self.resolve, {"value": ("l", "r")})
        self.inputs = None

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        return (StoreUse(f"{node.name}-TABLE", "table copy", node.name),)

    @classmethod
    def reads_every_version(cls, node) -> tuple[str, ...]:
        return (node.table,)

    #: ``["_lk"]`` when :meth:`lookup_key` is a user function column.
    guarded: tuple[str, ...] = ()

    def lookup_key(self, stream: Frame) -> Column:
        """The bytes of the table key a stream record looks up."""
        return key_bytes(stream)

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
        matched, stream_cols, table_cols, unmatched, decoded_cols, unmatched_cols, result = self.inputs
        table_rows = table.versions if table.versions is not None else table.df
        # The looked-up key, computed once per record (a key selector that fails on a
        # record leaves it out: it is in the processing log).
        records = unguarded(stream.df.withColumn("_lk", self.lookup_key(stream)), self.guarded)
        rows = records.where(matched).select(*stream_cols).unionByName(table_rows.select(*table_cols))
        stage = batch.stage(self.store_names).run(
            rows, "kb", stream_table.stream_table_join, stream_table.SCHEMA, skipped="_skip"
        )
        looked_up = batch.persist(stage, node.name)
        decoded = looked_up.select(*decoded_cols)
        if node.kind == "left":
            # KIP-962: a record that looks nothing up still joins with null.
            decoded = decoded.unionByName(records.where(unmatched).select(*unmatched_cols))
        joined = self.joiner.join(decoded, stream.value, table.value)
        df = joined.where(result).select(*STREAM_COLUMNS)
        return Frame(df, "stream", stream.key_type, self.joiner.shape, key_json=stream.key_json)

    def _inputs(self, stream: Frame, table: Frame):
        lookup = F.col("_lk")
        nothing = F.lit(None).cast("binary")
        # Records the join drops, as Kafka Streams does: a null value, and a null key in
        # an inner join (a left join joins it with null, KIP-962). They go through the
        # stage, which reports them as skipped records.
        skip = F.when(F.col("value").isNull(), F.lit("null value: a stream-table join skips it (record skipped)"))
        if self.node.kind != "left":
            skip = skip.when(lookup.isNull(), F.lit("null join key: an inner join skips it (record skipped)"))
        return named((
            lookup.isNotNull() | F.col("value").isNull() | F.lit(self.node.kind != "left"),
            [skip.alias("_skip"), lookup.alias("kb"), F.lit(stream_table.STREAM_RECORD).cast("tinyint").alias("kind"), nothing.alias("vb"),
             key_bytes(stream).alias("sk"), canonical_bytes(F.col("value")).alias("sv"), "ts", *ORDER],
            [F.lit(None).cast("string").alias("_skip"), key_bytes(table).alias("kb"), F.lit(stream_table.TABLE_CHANGE).cast("tinyint").alias("kind"),
             canonical_bytes(F.col("new")).alias("vb"), nothing.alias("sk"), nothing.alias("sv"), "ts", *ORDER],
            lookup.isNull() & F.col("value").isNotNull(),
            [key_from_bytes(F.col("sk"), stream).alias("key"),
             from_canonical(F.col("sv"), stream.value.dtype).alias("l"),
             from_canonical(F.col("tv"), table.value.dtype).alias("r"), "ts", *ORDER],
            ["key", F.col("value").alias("l"), F.lit(None).cast(table.value.dtype).alias("r"), "ts", *ORDER],
            F.col("r").isNotNull() | F.lit(self.node.kind == "left"),
        ))


class StreamGlobalTableRule(StreamTableRule):
    """Looked up by a key selected from the stream record; no co-partitioning."""

    nodes = (joins.StreamGlobalTableJoin,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.guarded = ("_lk",) if is_callable(node.key_selector) else ()

    def lookup_key(self, stream: Frame) -> Column:
        return selected_key_bytes(self.node.key_selector, stream, self.resolve)

    def check(self) -> None:
        return None

"""Sources: a topic's records decoded in the source's formats (invalid ones to the
processing log); a table's records applied to its store (latest value per key)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from ...plan import sources
from ...storage.formats import Format, get_format
from ...storage.formats.kafka import UndeclaredKafkaKey
from ..batch import BatchContext
from ..expressions import ValueShape
from ..frames import ORDER, STREAM_COLUMNS, Frame, canonical_key, from_canonical_key, named, select
from ..kernels import upsert
from ..physical import PhysicalPlan
from ..timestamps import ERROR, INVALID, WRITTEN
from .base import Rule, StoreUse


def source_formats(node) -> tuple[Format, Format]:
    """A source's key and value formats (a KAFKA key without a schema is undeclared)."""
    key = get_format(node.key_format, node.key_schema)
    if key.name == "KAFKA" and key.schema is None:
        key = UndeclaredKafkaKey()
    return key, get_format(node.value_format, node.value_schema)


def value_shape(fmt: Format) -> ValueShape:
    """How a source's values look in a frame (schemaless JSON stays JSON text)."""
    return ValueShape(fmt.spark_type(), json_text=fmt.name == "JSON" and fmt.schema is None)


class SourceRule(Rule):
    """What stream and table sources share: the record checks and the decoding."""

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.key_format, self.value_format = source_formats(node)
        self.key_undeclared = isinstance(self.key_format, UndeclaredKafkaKey)
        self.shape = value_shape(self.value_format)
        # With a timestamp extractor, ``timestamp`` is the extracted one (see
        # :mod:`tablestream.runtime.timestamps`).
        self.extracts = node.timestamp_extractor is not None
        self.topic_filter = F.col("topic").isin(list(node.topics))
        src = F.array_position(F.array(*[F.lit(t) for t in physical.topics]), F.col("topic")).cast("int") - 1
        self.decoded = named([
            F.col("key").alias("raw_key"),
            F.col("value").alias("raw_value"),
            self.key_format.decode_valid(F.col("key")).alias("key"),
            self.value_format.decode_valid(F.col("value")).alias("value"),
            F.col("timestamp").alias("ts"),
            "o_ts",
            src.alias("o_src"),
            F.col("partition").alias("o_part"),
            F.col("offset").alias("o_off"),
            F.lit(0).alias("o_idx"),
        ])
        self._error_inputs = None
        self._error_columns = None

    def check(self) -> Column:
        """True for a record of the source's topics that cannot be read (key or value does
        not decode; a table record without a key; its timestamp cannot be extracted)."""
        if self.extracts:
            invalid = F.col(INVALID)  # the extraction decoded the record already
        else:
            invalid = (
                self.key_format.decode_checked(F.col("key")).failed
                | self.value_format.decode_checked(F.col("value")).failed
            )
        if not isinstance(self.node, sources.StreamSource):
            invalid = invalid | F.col("key").isNull()
        # Only a record of the source's topics is decoded (``when``, unlike ``&``, keeps
        # Spark from evaluating the decode for every record).
        return F.when(self.topic_filter, invalid).otherwise(False)

    def decode(self, batch: BatchContext) -> DataFrame:
        """The node's valid records, decoded (``key, value``, the raw bytes, positions and
        the ordering key); the invalid ones go to the processing log."""
        rows = batch.records.where(self.topic_filter)
        invalid = batch.positions.invalid_rows(self.node.name, rows)
        if invalid is not None:
            batch.output.errors.append(invalid.select(*self.error_inputs()).select(*self.error_columns()))
        return select(batch.positions.valid(self.node.name, rows), self.decoded)

    def error_inputs(self) -> list[Column]:
        if self._error_inputs is None:
            self._error_inputs = named([
                "topic", "partition", "offset",
                F.col(WRITTEN if self.extracts else "timestamp").alias("ts"),
                F.col("key").alias("raw_key"),
                F.col("value").alias("raw_value"),
                self.key_format.decode_checked(F.col("key")).failed.alias("key_failed"),
                self.value_format.decode_checked(F.col("value")).failed.alias("value_failed"),
                (F.col(ERROR) if self.extracts else F.lit(None).cast("string")).alias("ts_error"),
            ])
        return self._error_inputs

    def error_columns(self) -> list[Column]:
        """Processing-log columns of invalid records (over :meth:`error_inputs`)."""
        if self._error_columns is None:
            failed = F.col("key_failed") | F.col("value_failed")
            # Reasons come from the formats' Python readers, run on the bad rows only.
            key_reason = self.key_format.failure_reasons(F.col("raw_key"), F.col("key_failed"))
            value_reason = self.value_format.failure_reasons(F.col("raw_value"), F.col("value_failed"))
            reasons = F.concat_ws(
                "; ",
                F.when(F.col("key_failed"), F.concat(F.lit("key: "), key_reason)),
                F.when(F.col("value_failed"), F.concat(F.lit("value: "), value_reason)),
                F.when(~failed & F.col("raw_key").isNull(), F.lit("key: a table record needs a key (null key dropped)")),
                F.when(~failed, F.concat(F.lit("timestamp: "), F.col("ts_error"))),
            )
            self._error_columns = named([
                "topic", "partition", "offset",
                F.col("ts").alias("timestamp"),
                reasons.alias("error"),
                F.col("raw_key").alias("key"),
                F.col("raw_value").alias("value"),
            ])
        return self._error_columns


class StreamSourceRule(SourceRule):
    nodes = (sources.StreamSource,)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.columns = named(list(STREAM_COLUMNS))

    def apply(self, batch: BatchContext) -> Frame:
        df = select(self.decode(batch), self.columns)
        return Frame(
            df, "stream", self.key_format.spark_type(), value_shape(self.value_format), key_undeclared=self.key_undeclared
        )


class TableSourceRule(SourceRule):
    """A table's latest value per key: the batch's records upsert the table's store
    (values kept as the topic's bytes), which emits the changes. A table read only by a
    rule that keeps its own copy (see :meth:`Rule.keeps`) has no store: its records go
    to that rule as they are."""

    nodes = (sources.TableSource, sources.GlobalTableSource)
    consumer = True

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.key_type = self.key_format.spark_type()
        self.kept_by_consumer = physical.kept_by_consumer(node)
        self.versions = named(["key", F.col("value").alias("new"), "ts", *ORDER])
        self.stage_in = named([
            canonical_key(F.col("key"), self.key_undeclared).alias("kb"), F.col("raw_value").alias("vb"), "ts", *ORDER,
        ])
        self.stage_out = named([
            from_canonical_key(F.col("kb"), self.key_type, self.key_undeclared).alias("key"),
            self.value_format.decode_valid(F.col("old")).alias("old"),
            self.value_format.decode_valid(F.col("new")).alias("new"),
            "ts",
            *ORDER,
        ])
        self.keeps_versions = physical.needs_every_version(node.name)

    @classmethod
    def stores(cls, node, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        if physical.kept_by_consumer(node):
            return ()
        return (StoreUse(node.store, "global" if isinstance(node, sources.GlobalTableSource) else "table", node.name),)

    def apply(self, batch: BatchContext) -> Frame:
        decoded = self.decode(batch)
        if self.kept_by_consumer:
            # The table's records of the batch (``key, new, ts`` and the ordering key),
            # applied by the one rule that reads them to its own copy of the table.
            return Frame(
                select(decoded, self.versions), "table", self.key_type, self.shape, key_undeclared=self.key_undeclared
            )
        stage = batch.stage(self.node.store).run(select(decoded, self.stage_in), "kb", upsert.upsert, upsert.SCHEMA)
        changed = batch.persist(stage, self.node.name)
        versions = select(decoded, self.versions) if self.keeps_versions else None
        frame = Frame(
            select(changed, self.stage_out), "table", self.key_type, self.shape, versions=versions,
            key_undeclared=self.key_undeclared,
        )
        if self.node.queryable:
            batch.materialize(self.node.store, frame)
        return frame

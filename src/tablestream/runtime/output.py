"""Turning a batch's output frames into records: keys and values serialized in the
sink's formats, in the ordering key's order, ready to append to a topic."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from ..storage.delta_files import DataFile
from ..storage.formats import Format, get_format
from .batch import BatchOutput, ToTopicSpec
from .frames import ORDER, Frame, json_text, key_text, named, select

if TYPE_CHECKING:
    from .output_files import ExecutorWrites

OUTPUT_SCHEMA = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("timestamp", pa.int64())])


def _kafka_type(dtype: DataType) -> str | None:
    if isinstance(dtype, StringType):
        return "STRING"
    if isinstance(dtype, (LongType, ShortType)):
        return "BIGINT"
    if isinstance(dtype, IntegerType):
        return "INT"
    if isinstance(dtype, (DoubleType, FloatType)):
        return "DOUBLE"
    return None


def default_key_format(frame: Frame) -> Format:
    """KAFKA with the key's own type (a struct key is written as JSON)."""
    typ = _kafka_type(frame.key_type)
    if typ is None:
        return get_format("JSON", None)
    return get_format("KAFKA", typ)


def encode_column(column: str, dtype: DataType, fmt: Format):
    """A Spark column of the bytes ``fmt`` writes for ``column`` (schemaless JSON: the
    value's JSON text)."""
    if fmt.name == "JSON" and fmt.schema is None:
        return json_text(F.col(column), dtype).cast("binary")
    return fmt.encode(F.col(column))


@dataclass(frozen=True)
class TableEncoding:
    """How a materialized table's changes hold keys and values: ``key_json`` /
    ``value_json`` when they are JSON text (a Python callable produced them), else
    Spark values; ``key_undeclared`` when the keys are undeclared KAFKA keys (their
    bytes, as a STRING that need not be UTF-8)."""

    key_json: bool
    value_json: bool
    key_undeclared: bool = False


@dataclass
class CollectedBatch:
    """Everything one batch writes, on the driver: records per output topic (``key``,
    ``value`` bytes, ``timestamp``, in the ordering key's order), changes per materialized
    table (``key``, ``new``, ``ts``, ordered the same way) with their encodings, and
    processing-log entries (``topic, partition, offset, timestamp, error, key, value``, in
    offset order). Outputs the executors wrote (see
    :class:`~tablestream.runtime.output_files.ExecutorWrites`) are here as the data files
    they wrote, per topic and per table (with the Arrow schema of the table's rows), not
    as rows."""

    records: dict[str, pa.Table] = field(default_factory=dict)
    tables: dict[str, pa.Table] = field(default_factory=dict)
    encodings: dict[str, TableEncoding] = field(default_factory=dict)
    errors: pa.Table | None = None
    topic_files: dict[str, list[DataFile]] = field(default_factory=dict)
    table_files: dict[str, list[DataFile]] = field(default_factory=dict)
    table_schemas: dict[str, pa.Schema] = field(default_factory=dict)
    positions: pa.Table | None = None  # every record's position, when the batch collected them


def collect_batch(
    out: BatchOutput, writes: ExecutorWrites | None = None, union: DataFrame | None = None
) -> CollectedBatch:
    """Collect every output of a batch with one Spark job: each output's rows become a
    struct column of one union (the others null), so the batch's stages run once and
    no output pays a job of its own. The outputs ``writes`` names are written by the
    tasks in that same job (:mod:`tablestream.runtime.output_files`): only their files'
    summaries reach the driver. ``union``: the union when it is built already (see
    :func:`batch_union`; no outputs written by the tasks)."""
    parts, sinks = _parts(out)
    collected = CollectedBatch()
    if not parts:
        return collected
    written = [] if writes is None else [
        i for i, (kind, name, *_rest) in enumerate(parts)
        if (kind == "records" and name in writes.topics) or (kind == "tables" and name in writes.tables)
    ]
    if written:
        from .output_files import summaries, write_outputs

        driver = [i for i in range(len(parts)) if i not in written]
        columns = output_columns(out, parts)
        table, collected.table_schemas = write_outputs(
            out, parts, sinks, writes, driver, [columns[i] for i in driver]
        )
        for topic in writes.topics:
            if topic in sinks:
                collected.topic_files[topic] = []
        for store in writes.tables:
            if store in out.tables:
                collected.table_files[store] = []
        for i, file in summaries(table):
            kind, name, _, _ = parts[i]
            (collected.topic_files if kind == "records" else collected.table_files)[name].append(file)
    else:
        table = (union if union is not None else output_union(out, parts)).toArrow()
    part_ids = table.column("_part")
    rows: dict[int, pa.Table] = {}
    for i in range(len(parts)):
        if i in written:
            continue
        chosen = table.column(f"_p{i}").filter(pc.equal(part_ids, i))
        rows[i] = pa.table(chosen.flatten(), names=[f.name for f in chosen.type])
    for topic, items in sinks.items():
        if topic in collected.topic_files:
            continue
        tables = [finish_records(ordered(rows[i]), RecordFinish.of(frame, spec)) for i, frame, spec in items]
        collected.records[topic] = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    for i, (kind, name, _, _) in enumerate(parts):
        if kind == "tables":
            if i in rows:
                collected.tables[name] = ordered(rows[i])
            frame = out.tables[name]
            collected.encodings[name] = TableEncoding(frame.key_json, frame.value.json_text, frame.key_undeclared)
    for i, (kind, *_rest) in enumerate(parts):
        if kind == "positions":
            collected.positions = rows[i]
    error_tables = [rows[i] for i, (kind, *_rest) in enumerate(parts) if kind == "errors"]
    if error_tables:
        errors = pa.concat_tables(error_tables)
        collected.errors = errors.sort_by(
            [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
        )
    return collected


def _parts(out: BatchOutput):
    """Each output of the batch as ``(kind, name, rows, columns)``, and the parts that
    are each topic's records."""
    parts: list[tuple[str, str, DataFrame, list]] = []
    sinks: dict[str, list[tuple[int, Frame, ToTopicSpec]]] = {}
    for topic, specs in out.records.items():
        for frame, spec in specs:
            sinks.setdefault(topic, []).append((len(parts), frame, spec))
            parts.append(
                (
                    "records",
                    topic,
                    frame.df,
                    _memo(out, ("sink", topic, len(parts)), lambda f=frame, sp=spec: record_columns(f, sp)),
                )
            )
    for store, frame in out.tables.items():
        parts.append(
            ("tables", store, frame.df, _memo(out, ("table", store), lambda f=frame: _table_columns(f)))
        )
    for i, errors in enumerate(out.errors):
        parts.append(("errors", str(i), errors, [F.col(c) for c in errors.columns]))
    if out.positions is not None:
        positions = out.positions
        parts.append(("positions", "", positions, _memo(out, ("positions",), lambda: [F.col(c) for c in positions.columns])))
    return parts, sinks


def batch_union(out: BatchOutput) -> DataFrame | None:
    """The one DataFrame :func:`collect_batch` collects when the driver writes every
    output (None: the batch has no outputs)."""
    parts, _ = _parts(out)
    return output_union(out, parts) if parts else None


def output_union(out: BatchOutput, parts) -> DataFrame:
    """The one DataFrame of every output of the batch (``parts`` from :func:`_parts`)."""
    union = None
    for (_, _, df, _), branch_columns in zip(parts, output_columns(out, parts), strict=True):
        branch = select(df, branch_columns)
        union = branch if union is None else union.union(branch)
    return union


def output_columns(out: BatchOutput, parts=None) -> list[list[Column]]:
    """Each output's columns in the union, built once and kept for the next batches
    (building them has Spark analyze every output's rows as its sink writes them)."""
    if parts is None:
        parts, _ = _parts(out)
    signature = "|".join(f"{kind}:{name}" for kind, name, _, _ in parts)
    return _memo(out, ("collect", signature), lambda: _branches(out, parts))


def _memo(out: BatchOutput, key, make):
    """Columns built in the first batch and kept for the next (they depend on the plan
    and the sinks only)."""
    if key not in out.memo:
        out.memo[key] = make()
    return out.memo[key]


def part_types(out: BatchOutput, parts) -> list[StructType]:
    """Each part's row type in the union (every field nullable, so the null rows of
    other parts convert to Arrow), built once and kept for the next batches."""
    signature = "|".join(f"{kind}:{name}" for kind, name, _, _ in parts)

    def build() -> list[StructType]:
        return [_nullable(df.select(F.struct(*columns)).schema[0].dataType) for _, _, df, columns in parts]

    return _memo(out, ("types", signature), build)


def _branches(out: BatchOutput, parts) -> list[list[Column]]:
    """Each part's columns in the union: a column per part, null but for its own."""
    payloads = [F.struct(*columns) for _, _, _, columns in parts]
    types = part_types(out, parts)
    return [
        named([F.lit(i).alias("_part"), *[
            (payload.cast(t) if j == i else F.lit(None).cast(t)).alias(f"_p{j}") for j, t in enumerate(types)
        ]])
        for i, payload in enumerate(payloads)
    ]


_SORT_KEYS = [*ORDER, "_key_order"]


def _nullable(dtype: DataType) -> DataType:
    """``dtype`` with every field, element and map value nullable, at any depth: a
    deleted row's null struct holds null fields even where its type says they are never
    null (a literal), and Arrow refuses those."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, _nullable(f.dataType), True) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(_nullable(dtype.elementType), True)
    if isinstance(dtype, MapType):
        return MapType(_nullable(dtype.keyType), _nullable(dtype.valueType), True)
    return dtype


def _key_order(frame: Frame) -> Column:
    """Ties of the ordering key (one change per key of an aggregate) break by the key's
    JSON text, so a replayed batch writes its records in the same order."""
    if frame.key_undeclared:
        return key_text(F.col("key"), frame).alias("_key_order")  # to_json would replace bytes that are not UTF-8
    return F.to_json(F.struct(F.col("key").alias("k"))).alias("_key_order")


def _table_columns(frame: Frame) -> list[Column]:
    return [F.col("key"), F.col("new"), F.col("ts"), *[F.col(c) for c in ORDER], _key_order(frame)]


def record_columns(frame: Frame, spec: ToTopicSpec) -> list[Column]:
    """A sink's records as its formats write them (``key``, ``value`` bytes, ``timestamp``),
    with the ordering key."""
    key_format, value_format = _formats(frame, spec)
    if frame.key_json:
        key = F.col("key")
    elif frame.key_undeclared and key_format.name == "JSON" and key_format.schema is None:
        key = key_text(F.col("key"), frame).cast("binary")  # the value it reads as, its bytes not UTF-8 or not
    else:
        key = encode_column("key", frame.key_type, key_format)
    value = (
        F.col("value")
        if frame.value.json_text
        else encode_column("value", frame.value.dtype, value_format)
    )
    return [
        key.alias("key"),
        value.alias("value"),
        F.col("ts").alias("timestamp"),
        *[F.col(c) for c in ORDER],
        _key_order(frame),
    ]


@dataclass(frozen=True)
class RecordFinish:
    """What finishing a sink's records needs, on the driver or in a task: whether keys
    and values are JSON text a Python callable produced, and the sink's formats."""

    key_json: bool
    value_json: bool
    key_format: Format
    value_format: Format

    @classmethod
    def of(cls, frame: Frame, spec: ToTopicSpec) -> RecordFinish:
        key_format, value_format = _formats(frame, spec)
        return cls(frame.key_json, frame.value.json_text, key_format, value_format)


def _formats(frame: Frame, spec: ToTopicSpec) -> tuple[Format, Format]:
    key_format = spec.key_format or (
        get_format("KAFKA", None) if frame.key_json else default_key_format(frame)
    )
    return key_format, spec.value_format or get_format("JSON", None)


def ordered(table: pa.Table) -> pa.Table:
    """Rows in the ordering key's order (sorted in Arrow, where the rows are: on the
    driver or in the task writing them; a Spark sort would cost more jobs). A sort key with one value in every
    row (an aggregate's or a join's rows have no source position) is left out: Arrow
    compares every key of every tie, and 940k join results sort in 0.24 s on their
    timestamp and key against 0.8 s on all six."""
    keys = [c for c in _SORT_KEYS if table.num_rows and _varies(table.column(c))]
    ordered = table.sort_by([(c, "ascending") for c in keys]) if keys else table
    return ordered.drop_columns(_SORT_KEYS)


def _varies(column: pa.ChunkedArray) -> bool:
    if column.null_count:
        return column.null_count != len(column)
    low, high = pc.min_max(column).values()
    return low != high


def finish_records(table: pa.Table, finish: RecordFinish) -> pa.Table:
    """Keys and values a Python callable produced are JSON text; they are serialized
    here, where the records are (the driver, or the task writing them), with the Python
    side of the sink's format."""
    if finish.key_json:
        table = table.set_column(0, "key", serialize_texts(table.column("key"), finish.key_format))
    if finish.value_json:
        value_format = finish.value_format
        if value_format.name == "JSON" and value_format.schema is None:
            table = table.set_column(1, "value", table.column("value").cast(pa.binary()))
        else:
            table = table.set_column(1, "value", serialize_texts(table.column("value"), value_format))
    return table.cast(OUTPUT_SCHEMA)


def serialize_texts(texts: pa.Array | pa.ChunkedArray, fmt: Format) -> pa.Array:
    """JSON texts serialized with the Python side of ``fmt`` (null stays null)."""
    return pa.array(
        [None if t is None else fmt.serialize(json.loads(t)) for t in texts.to_pylist()],
        pa.binary(),
    )

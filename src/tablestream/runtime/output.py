"""Turning a batch's output frames into records: keys and values serialized in the
sink's formats, in the ordering key's order, ready to append to a topic."""

from __future__ import annotations

import json

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
)

from ..storage.formats import Format, get_format
from .compiler import BatchOutput, ToTopicSpec
from .frames import ORDER, Frame, json_text

OUTPUT_SCHEMA = pa.schema(
    [("key", pa.binary()), ("value", pa.binary()), ("timestamp", pa.int64())]
)


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


def collect_records(frame: Frame, spec: ToTopicSpec) -> pa.Table:
    """The records a sink writes this batch: ``key``, ``value`` (bytes), ``timestamp``,
    in the order of the ordering key. Keys and values a Python callable produced are
    JSON text and are serialized here, on the driver, with the Python side of the format."""
    key_format = spec.key_format or (get_format("KAFKA", None) if frame.key_json else default_key_format(frame))
    value_format = spec.value_format or get_format("JSON", None)
    key = F.col("key") if frame.key_json else encode_column("key", frame.key_type, key_format)
    if frame.value.json_text:
        value = F.col("value")
    else:
        value = encode_column("value", frame.value.dtype, value_format)
    table = ordered_arrow(frame.df, key.alias("key"), value.alias("value"), F.col("ts").alias("timestamp"))
    if frame.key_json:
        table = table.set_column(0, "key", _serialize(table.column("key"), key_format))
    if frame.value.json_text:
        if value_format.name == "JSON" and value_format.schema is None:
            table = table.set_column(1, "value", table.column("value").cast(pa.binary()))
        else:
            table = table.set_column(1, "value", _serialize(table.column("value"), value_format))
    return table.cast(OUTPUT_SCHEMA)


def ordered_arrow(df: DataFrame, *columns) -> pa.Table:
    """``columns`` of ``df`` collected to the driver in the ordering key's order. Ties
    (one change per key of an aggregate) break by the key's JSON text, so a replayed
    batch writes its records in the same order. Sorted in Arrow on the driver: the rows
    are collected anyway, and a Spark sort would cost two more jobs."""
    sort_keys = [*ORDER, "_key_order"]
    table = df.select(*columns, *ORDER, F.to_json(F.struct(F.col("key").alias("k"))).alias("_key_order")).toArrow()
    return table.sort_by([(c, "ascending") for c in sort_keys]).drop_columns(sort_keys)


def _serialize(texts: pa.ChunkedArray, fmt: Format) -> pa.Array:
    return pa.array(
        [None if t is None else fmt.serialize(json.loads(t)) for t in texts.to_pylist()], pa.binary()
    )


def collect_outputs(out: BatchOutput) -> dict[str, pa.Table]:
    """Every output topic's records of one batch."""
    result: dict[str, pa.Table] = {}
    for topic, sinks in out.records.items():
        tables = [collect_records(frame, spec) for frame, spec in sinks]
        result[topic] = pa.concat_tables(tables) if len(tables) > 1 else tables[0]
    return result

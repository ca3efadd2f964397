"""How streams and tables look inside one micro-batch on Spark.

A stream frame has one row per record: ``key, value, ts`` and the ordering key.
A table frame has one row per changed key: ``key, old, new, ts`` and the ordering key
(Kafka's ``Change<V>``: ``new`` null is a deletion, ``old`` null an insertion).

Keys and values enter keyed stores and shuffles as canonical bytes: the JSON text of
``{"v": x}``, so equal values of different integer widths meet (a foreign key typed INT
reaches a BIGINT primary key) and every Spark type round-trips through Spark's own
``to_json``/``from_json``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    ByteType,
    DataType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from .expressions import ValueShape
from .tasks import ORDER_COLUMNS

ORDER = list(ORDER_COLUMNS)
STREAM_COLUMNS = ["key", "value", "ts", *ORDER]
TABLE_COLUMNS = ["key", "old", "new", "ts", *ORDER]


@dataclass(frozen=True)
class Frame:
    """One node's output in one batch."""

    df: DataFrame
    kind: Literal["stream", "table", "grouped"]
    key_type: DataType
    value: ValueShape
    key_json: bool = False  # the key is JSON text (a callable chose it)
    # A table read from its topic: every record of the batch (``key, new, ts`` and the
    # ordering key), not only the last per key, so a stream record can meet the table
    # as of its own time within the batch.
    versions: DataFrame | None = None

    def with_df(self, df: DataFrame, **changes) -> Frame:
        return replace(self, df=df, versions=None, **changes)


_JSON_OPTIONS = {"ignoreNullFields": "false"}


def canonical_bytes(col: Column) -> Column:
    """Deterministic bytes of a value of any Spark type (null stays null)."""
    return F.when(
        col.isNotNull(), F.to_json(F.struct(col.alias("v")), _JSON_OPTIONS).cast("binary")
    )


def from_canonical(col: Column, dtype: DataType) -> Column:
    """The value :func:`canonical_bytes` encoded."""
    return F.from_json(col.cast("string"), StructType([StructField("v", dtype)])).getField("v")


_ARROW_PARSED = (BooleanType, ByteType, ShortType, IntegerType, LongType, StringType)


def arrow_decodable(dtype: DataType) -> bool:
    """Whether :func:`decode_canonical` reads values of ``dtype`` exactly as
    :func:`from_canonical` does: booleans, integers, strings, and structs and arrays of
    them (the JSON text of other types, such as floats' ``NaN`` or timestamps, is left to
    Spark)."""
    if isinstance(dtype, StructType):
        return all(arrow_decodable(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return arrow_decodable(dtype.elementType)
    return isinstance(dtype, _ARROW_PARSED)


def nullable(dtype: DataType) -> DataType:
    """``dtype`` with every nested field nullable (as values decoded from JSON are)."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(nullable(dtype.elementType), True)
    return dtype


def decode_canonical(values: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """:func:`from_canonical` in Arrow, for a type :func:`arrow_decodable` accepts: the
    canonical texts are parsed as one block of JSON lines (a null value is an empty
    object's line, nulled after), not one value at a time.

    >>> decode_canonical(pa.array([b'{"v":{"n":1}}', None]), pa.struct([("n", pa.int64())])).to_pylist()
    [{'n': 1}, None]
    """
    values = values.cast(pa.binary())
    if len(values) == 0:
        return pa.array([], arrow_type)
    lines = pc.binary_join_element_wise(pc.fill_null(values, b"{}"), b"", b"\n")
    size = pc.sum(pc.binary_length(lines)).as_py()
    first = int(np.frombuffer(lines.buffers()[1], np.int32)[lines.offset])
    text = lines.buffers()[2].slice(first, size)
    parsed = pa_json.read_json(
        pa.BufferReader(text),
        read_options=pa_json.ReadOptions(block_size=max(size, 1 << 20)),
        parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([("v", arrow_type)]), unexpected_field_behavior="ignore"
        ),
    ).column("v").combine_chunks()
    return pc.if_else(pc.is_valid(values), parsed, pa.nulls(len(values), arrow_type))


def json_text(col: Column, dtype: DataType) -> Column:
    """The JSON text of a value (a struct as an object, a string quoted)."""
    if isinstance(dtype, StructType):
        return F.when(col.isNotNull(), F.to_json(col, _JSON_OPTIONS))
    wrapped = F.to_json(F.struct(col.alias("v")), _JSON_OPTIONS)  # {"v":<text>}
    return F.when(col.isNotNull(), F.substring(wrapped, F.lit(6), F.length(wrapped) - F.lit(6)))

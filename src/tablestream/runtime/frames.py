"""How streams and tables look inside one micro-batch on Spark.

A stream frame has one row per record: ``key, value, ts`` and the ordering key.
A table frame has one row per changed key: ``key, old, new, ts`` and the ordering key
(Kafka's ``Change<V>``: ``new`` null is a deletion, ``old`` null an insertion).

Keys and values enter keyed stores and shuffles as canonical bytes: the JSON text of
``{"v": x}``, so equal values of different integer widths meet (a foreign key typed INT
reaches a BIGINT primary key) and every Spark type round-trips through Spark's own
``to_json``/``from_json``.

An undeclared KAFKA key (no key schema) is a STRING column holding the record's bytes,
which need not be UTF-8 (Spark's STRING does not check; ``to_json`` would replace such
bytes): everywhere it is looked at (canonical bytes, JSON text, a callable) it is the
value it reads as, printable text a STRING and other 8 bytes a BIGINT (see
:func:`undeclared_bigint`), so two such keys are equal exactly when their bytes are.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from ..storage.undeclared import NON_PRINTABLE
from . import jvm
from .expressions import ValueShape
from .kernels.order import ORDER_COLUMNS

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
    # The key is an undeclared KAFKA key (its bytes as a STRING, see the module's text).
    key_undeclared: bool = False
    # A table read from its topic: every record of the batch (``key, new, ts`` and the
    # ordering key), not only the last per key, so a stream record can meet the table
    # as of its own time within the batch.
    versions: DataFrame | None = None
    # Each row comes from one source record whose position its ordering key holds (not
    # an aggregate's or a join's result of many records).
    positioned: bool = True

    def with_df(self, df: DataFrame, **changes) -> Frame:
        """This frame with other rows; a new key (``key_type`` or ``key_json`` given) is
        not an undeclared key unless ``key_undeclared`` says so."""
        if ("key_type" in changes or "key_json" in changes) and "key_undeclared" not in changes:
            changes["key_undeclared"] = False
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
    """Whether :func:`~tablestream.runtime.kernels.codec.decode_canonical` reads values of ``dtype`` exactly as
    :func:`from_canonical` does: booleans, integers, strings, and structs and arrays of
    them (the JSON text of other types, such as floats' ``NaN`` or timestamps, is left to
    Spark)."""
    if isinstance(dtype, StructType):
        return all(arrow_decodable(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return arrow_decodable(dtype.elementType)
    return isinstance(dtype, _ARROW_PARSED)


_ARROW_CARRIED = (
    BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType, DecimalType, StringType,
    BinaryType, DateType, TimestampType, TimestampNTZType,
)


def arrow_passable(dtype: DataType) -> bool:
    """Whether values of ``dtype`` can pass through a Python stage as they are (Spark
    writes them to Arrow and reads the same Arrow data back, untouched): the SQL types
    of the formats' values, and structs, arrays and maps of them."""
    if isinstance(dtype, StructType):
        return all(arrow_passable(f.dataType) for f in dtype.fields)
    if isinstance(dtype, ArrayType):
        return arrow_passable(dtype.elementType)
    if isinstance(dtype, MapType):
        return arrow_passable(dtype.keyType) and arrow_passable(dtype.valueType)
    return isinstance(dtype, _ARROW_CARRIED)


def nullable(dtype: DataType) -> DataType:
    """``dtype`` with every nested field nullable (as values decoded from JSON are)."""
    if isinstance(dtype, StructType):
        return StructType([StructField(f.name, nullable(f.dataType), True) for f in dtype.fields])
    if isinstance(dtype, ArrayType):
        return ArrayType(nullable(dtype.elementType), True)
    return dtype


def json_text(col: Column, dtype: DataType) -> Column:
    """The JSON text of a value (a struct as an object, a string quoted)."""
    if isinstance(dtype, StructType):
        return F.when(col.isNotNull(), F.to_json(col, _JSON_OPTIONS))
    wrapped = F.to_json(F.struct(col.alias("v")), _JSON_OPTIONS)  # {"v":<text>}
    return F.when(col.isNotNull(), F.substring(wrapped, F.lit(6), F.length(wrapped) - F.lit(6)))


def key_bytes(frame: Frame) -> Column:
    """A frame's keys as the bytes joins and stores match on: canonical bytes of the key,
    so keys typed alike meet (a key a callable chose, JSON text, is wrapped the same way;
    an undeclared key is the value it reads as)."""
    if frame.key_json:
        return F.when(F.col("key").isNotNull(), F.concat(F.lit('{"v":'), F.col("key"), F.lit("}")).cast("binary"))
    return canonical_key(F.col("key"), frame.key_undeclared)


def key_from_bytes(col: Column, frame: Frame) -> Column:
    """The key :func:`key_bytes` encoded, in the frame's own form."""
    if frame.key_json:
        text = col.cast("string")
        return F.substring(text, F.lit(6), F.length(text) - F.lit(6))
    return from_canonical_key(col, frame.key_type, frame.key_undeclared)


def key_text(col: Column, frame: Frame) -> Column:
    """The JSON text of a frame's keys in ``col`` (an undeclared key's as it reads)."""
    if frame.key_json:
        return col
    return undeclared_text(col) if frame.key_undeclared else json_text(col, frame.key_type)


def canonical_key(col: Column, undeclared: bool) -> Column:
    """:func:`canonical_bytes` of keys; ``undeclared``: of undeclared KAFKA keys."""
    return undeclared_bytes(col) if undeclared else canonical_bytes(col)


def from_canonical_key(col: Column, dtype: DataType, undeclared: bool) -> Column:
    """The keys :func:`canonical_key` encoded."""
    return undeclared_from_bytes(col) if undeclared else from_canonical(col, dtype)


# ------------------------------------------------------------------ undeclared keys


def undeclared_bigint(col: Column) -> Column:
    """Whether an undeclared KAFKA key (its bytes as a STRING) reads as a BIGINT: 8 bytes
    that are not printable UTF-8 text."""
    return (F.octet_length(col) == 8) & (~F.is_valid_utf8(col) | col.rlike(NON_PRINTABLE))


def undeclared_long(col: Column) -> Column:
    """The BIGINT of 8 bytes held as a STRING (Kafka's LongSerializer, big-endian)."""
    return F.conv(F.hex(col.cast("binary")), 16, -10).cast("bigint")


def undeclared_of_long(value: Column) -> Column:
    """The undeclared key a BIGINT is read from: its 8 bytes, as a STRING."""
    return F.unhex(F.lpad(F.hex(value), 16, "0")).cast("string")


def undeclared_bytes(col: Column) -> Column:
    """An undeclared key's canonical bytes: those of the STRING or BIGINT it reads as."""
    return F.when(undeclared_bigint(col), canonical_bytes(undeclared_long(col))).otherwise(canonical_bytes(col))


def undeclared_from_bytes(col: Column) -> Column:
    """The undeclared key :func:`undeclared_bytes` encoded (a BIGINT's text has no quote)."""
    text = col.cast("string")
    return F.when(F.substring(text, 6, 1) == F.lit('"'), from_canonical(col, StringType())).otherwise(
        undeclared_of_long(from_canonical(col, LongType()))
    )


def undeclared_text(col: Column) -> Column:
    """The JSON text of the value an undeclared key reads as (``200``, ``"alice"``)."""
    return F.when(undeclared_bigint(col), undeclared_long(col).cast("string")).otherwise(json_text(col, StringType()))


def changed() -> Column:
    """Keeps changes that change something (not both sides null, not equal): emit-on-change."""
    return ~F.col("old").eqNullSafe(F.col("new"))


def result_order() -> list[Column]:
    """The ordering key of rows that are one per key (an aggregate's, a join's): their
    timestamp as ordering time, no source position."""
    return [
        F.col("ts").alias("o_ts"),
        *[F.lit(0).cast(t).alias(c) for c, t in zip(ORDER[1:], ("int", "int", "long", "int"), strict=True)],
    ]


def evaluated_once(df: DataFrame, columns: list) -> DataFrame:
    """``df.select(*columns)`` whose expressions run once per row whatever later filters
    use them: Spark pushes a filter below a projection by copying the projected
    expressions into it (every decode once per use); a generator's output stops that."""
    if isinstance(columns, Columns):
        if columns.once is None:
            columns.once = Columns([F.inline(F.array(F.struct(*columns)))])
        return select(df, columns.once)
    return df.select(F.inline(F.array(F.struct(*columns))))


class Columns(list):
    """A list of Columns a rule keeps from one batch to the next (:func:`named` makes
    them), handed to the JVM as one Scala Seq built at its first use: a list of N
    Columns passed from Python costs N + 3 calls into the JVM, and a small batch's
    DataFrames are built from hundreds of them. Not to be changed once used."""

    java_seq = None
    once = None  # see evaluated_once
    extended = None

    def java(self):
        if self.java_seq is None:
            self.java_seq = jvm.columns_seq(self)
        return self.java_seq

    def with_names(self, *names: str) -> Columns:
        """These columns and the named ones (kept with these)."""
        if self.extended is None:
            self.extended = {}
        if names not in self.extended:
            self.extended[names] = Columns([*self, *(F.col(n) for n in names)])
        return self.extended[names]


class Assignments(dict):
    """Columns to add, by name, kept from one batch to the next (see :class:`Columns`)."""

    java_seqs = None

    def java(self):
        if self.java_seqs is None:
            self.java_seqs = (jvm.seq(list(self)), jvm.columns_seq(list(self.values())))
        return self.java_seqs


def select(df: DataFrame, columns) -> DataFrame:
    """``df.select(*columns)``; kept :class:`Columns` go to the JVM as one Seq."""
    if isinstance(columns, Columns):
        return jvm.select(df, columns.java())
    return df.select(*columns)


def drop(df: DataFrame, *names: str) -> DataFrame:
    """``df`` without the named columns (one call into the JVM: the names' Seq is kept)."""
    return jvm.drop(df, jvm.names_seq(names))


def with_columns(df: DataFrame, assignments: dict[str, Column]) -> DataFrame:
    """``df.withColumns(assignments)``; kept :class:`Assignments` go to the JVM as Seqs."""
    if isinstance(assignments, Assignments):
        return jvm.with_columns(df, *assignments.java())
    return df.withColumns(assignments)


def named(value):
    """``value`` with every string in its lists (also inside tuples) made a Column, its
    lists made :class:`Columns` and its dicts of Columns :class:`Assignments`: a rule
    keeps its column lists from one batch to the next, and each name Spark resolves
    from Python is a call into the JVM."""
    if isinstance(value, list):
        return Columns(F.col(v) if isinstance(v, str) else named(v) for v in value)
    if isinstance(value, dict) and all(isinstance(v, Column) for v in value.values()):
        return Assignments(value)
    if isinstance(value, tuple):
        return tuple(named(v) for v in value)
    return value

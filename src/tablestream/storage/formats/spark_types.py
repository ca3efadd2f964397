"""SQL types as Spark DataTypes, and the column rewrites the JSON layout needs.

pyspark is imported inside the functions so that the Python side of the formats
(serialize/deserialize) works without loading pyspark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...schema import ArrayType, DecimalType, MapType, PrimitiveType, Schema, SqlType, StructType

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType


def to_spark_type(t: SqlType | Schema) -> DataType:
    """The Spark DataType of a SQL type (a column list is a struct); everything nullable."""
    from pyspark.sql import types as T

    if isinstance(t, Schema):
        t = t.as_struct()
    if isinstance(t, PrimitiveType):
        return {
            "BOOLEAN": T.BooleanType(),
            "INT": T.IntegerType(),
            "BIGINT": T.LongType(),
            "DOUBLE": T.DoubleType(),
            "STRING": T.StringType(),
            "BYTES": T.BinaryType(),
            "DATE": T.DateType(),
            "TIMESTAMP": T.TimestampType(),
        }[t.name]
    if isinstance(t, DecimalType):
        return T.DecimalType(t.precision, t.scale)
    if isinstance(t, ArrayType):
        return T.ArrayType(to_spark_type(t.element), containsNull=True)
    if isinstance(t, MapType):
        return T.MapType(T.StringType(), to_spark_type(t.value), valueContainsNull=True)
    if isinstance(t, StructType):
        return T.StructType(
            [T.StructField(f.name, to_spark_type(f.type), nullable=True) for f in t.fields]
        )
    raise TypeError(f"no Spark type for {t}")


def ksql_type_name(dtype: DataType) -> str:
    """The ksqlDB name of a Spark type (``BIGINT``, ``STRUCT<id BIGINT>``, ``BYTES``).

    Spark types are recognized by class name, so a caller holding a pyspark type need
    not have imported anything else.
    """
    name = type(dtype).__name__
    if name == "StructType":
        return "STRUCT<" + ", ".join(f"{f.name} {ksql_type_name(f.dataType)}" for f in dtype.fields) + ">"
    if name == "ArrayType":
        return f"ARRAY<{ksql_type_name(dtype.elementType)}>"
    if name == "MapType":
        return f"MAP<{ksql_type_name(dtype.keyType)}, {ksql_type_name(dtype.valueType)}>"
    simple = dtype.simpleString().upper()
    return "BYTES" if simple == "BINARY" else simple


def has_temporal(t: SqlType) -> bool:
    if isinstance(t, PrimitiveType):
        return t.name in ("DATE", "TIMESTAMP")
    if isinstance(t, ArrayType):
        return has_temporal(t.element)
    if isinstance(t, MapType):
        return has_temporal(t.value)
    if isinstance(t, StructType):
        return any(has_temporal(f.type) for f in t.fields)
    return False


def json_read_type(t: SqlType) -> SqlType:
    """The type ``from_json`` reads: ksqlDB writes TIMESTAMP as epoch millis and DATE as
    epoch days, while Spark's JSON reader would take seconds and date strings."""
    from ...schema import BIGINT, INT, Column

    if isinstance(t, PrimitiveType):
        return {"TIMESTAMP": BIGINT, "DATE": INT}.get(t.name, t)
    if isinstance(t, ArrayType):
        return ArrayType(json_read_type(t.element))
    if isinstance(t, MapType):
        return MapType(json_read_type(t.value))
    if isinstance(t, StructType):
        return StructType(tuple(Column(f.name, json_read_type(f.type)) for f in t.fields))
    return t


def from_json_layout(col: Column, t: SqlType) -> Column:
    """Turn a column read with :func:`json_read_type` into type ``t``."""
    from pyspark.sql import functions as F

    if not has_temporal(t):
        return col
    if isinstance(t, PrimitiveType):
        return F.timestamp_millis(col) if t.name == "TIMESTAMP" else F.date_from_unix_date(col)
    if isinstance(t, ArrayType):
        return F.transform(col, lambda x: from_json_layout(x, t.element))
    if isinstance(t, MapType):
        return F.transform_values(col, lambda _, v: from_json_layout(v, t.value))
    if isinstance(t, StructType):
        return F.when(
            col.isNotNull(),
            F.struct(
                *[from_json_layout(col.getField(f.name), f.type).alias(f.name) for f in t.fields]
            ),
        )
    return col


def to_json_layout(col: Column, t: SqlType) -> Column:
    """The inverse of :func:`from_json_layout`: TIMESTAMP to epoch millis, DATE to days."""
    from pyspark.sql import functions as F

    if not has_temporal(t):
        return col
    if isinstance(t, PrimitiveType):
        return F.unix_millis(col) if t.name == "TIMESTAMP" else F.unix_date(col)
    if isinstance(t, ArrayType):
        return F.transform(col, lambda x: to_json_layout(x, t.element))
    if isinstance(t, MapType):
        return F.transform_values(col, lambda _, v: to_json_layout(v, t.value))
    if isinstance(t, StructType):
        return F.when(
            col.isNotNull(),
            F.struct(
                *[to_json_layout(col.getField(f.name), f.type).alias(f.name) for f in t.fields]
            ),
        )
    return col

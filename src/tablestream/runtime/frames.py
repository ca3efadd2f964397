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

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructField, StructType

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


def json_text(col: Column, dtype: DataType) -> Column:
    """The JSON text of a value (a struct as an object, a string quoted)."""
    if isinstance(dtype, StructType):
        return F.when(col.isNotNull(), F.to_json(col, _JSON_OPTIONS))
    wrapped = F.to_json(F.struct(col.alias("v")), _JSON_OPTIONS)  # {"v":<text>}
    return F.when(col.isNotNull(), F.substring(wrapped, F.lit(6), F.length(wrapped) - F.lit(6)))

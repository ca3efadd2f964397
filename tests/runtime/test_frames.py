"""Values decoded from canonical bytes in Arrow (inside store tasks) equal what Spark's
``from_json`` gives, for every type the Arrow path accepts; other types stay with Spark."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    CalendarIntervalType,
    DateType,
    DayTimeIntervalType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
    VariantType,
)

from tablestream.runtime.frames import (
    arrow_decodable,
    arrow_passable,
    canonical_bytes,
    from_canonical,
    nullable,
)
from tablestream.runtime.kernels.codec import decode_canonical

ORDER = StructType([
    StructField("product", StringType()),
    StructField("qty", LongType()),
    StructField("tags", ArrayType(StringType())),
    StructField("flags", StructType([StructField("rush", BooleanType()), StructField("lines", IntegerType())])),
])
_text = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=8)
_orders = st.one_of(
    st.none(),
    st.fixed_dictionaries({
        "product": st.one_of(st.none(), _text),
        "qty": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        "tags": st.one_of(st.none(), st.lists(st.one_of(st.none(), _text), max_size=3)),
        "flags": st.one_of(st.none(), st.fixed_dictionaries({
            "rush": st.one_of(st.none(), st.booleans()),
            "lines": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1)),
        })),
    }),
)


@settings(max_examples=15, deadline=None)
@given(st.lists(_orders, max_size=12))
def test_arrow_decoding_equals_spark_from_json(spark, values):
    rows = spark.createDataFrame([(v,) for v in values], StructType([StructField("v", ORDER)]))
    encoded = rows.select(canonical_bytes(F.col("v")).alias("b")).toArrow().column("b").combine_chunks()
    by_spark = (
        spark.createDataFrame(pa.table({"b": encoded}))
        .select(from_canonical(F.col("b"), ORDER).alias("v"))
        .toArrow().column("v").to_pylist()
    )
    by_arrow = decode_canonical(encoded, to_arrow_type(nullable(ORDER))).to_pylist()
    assert by_arrow == by_spark == values


def test_decoding_a_string_with_escapes_and_line_breaks():
    encoded = pa.array([b'{"v":"a\\nb\\"c\\u00e9"}', None, b'{"v":""}'])
    assert decode_canonical(encoded, pa.string()).to_pylist() == ['a\nb"c\u00e9', None, ""]


@pytest.mark.parametrize(
    ("dtype", "arrow"),
    [
        (LongType(), True),
        (StringType(), True),
        (ORDER, True),
        (DoubleType(), False),  # NaN and infinities are text in Spark's JSON
        (DecimalType(10, 2), False),
        (TimestampType(), False),
        (DateType(), False),
        (MapType(StringType(), LongType()), False),
        (StructType([StructField("at", TimestampType())]), False),
        (ArrayType(DoubleType()), False),
    ],
)
def test_types_decoded_in_arrow(dtype, arrow):
    assert arrow_decodable(dtype) is arrow


@pytest.mark.parametrize(
    ("dtype", "passes"),
    [
        (ORDER, True),
        (StructType([StructField("at", TimestampType()), StructField("price", DecimalType(10, 2)),
                     StructField("tags", MapType(StringType(), ArrayType(DoubleType()))),
                     StructField("day", DateType()), StructField("raw", BinaryType())]), True),
        (CalendarIntervalType(), False),
        (DayTimeIntervalType(), False),
        (VariantType(), False),
        (StructType([StructField("ok", LongType()), StructField("span", CalendarIntervalType())]), False),
        (MapType(StringType(), VariantType()), False),
    ],
)
def test_types_that_cross_a_stage_as_they_are(dtype, passes):
    """The types a stage's rows carry through Arrow untouched (a stream-table join's
    stream key and value): the formats' SQL types, and structs, arrays and maps of them."""
    assert arrow_passable(dtype) is passes

"""The Spark side of the formats agrees with the Python side, byte for byte where the
layout is canonical, and reports every bad record with the Python side's exact reason."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.errors import SerializationError
from tablestream.schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    SqlType,
    StructType,
    parse_schema,
)
from tablestream.storage.formats import Format, get_format
from tablestream.storage.formats.json_format import compact_object_pattern

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc

FULL = (
    "id BIGINT, name STRING, flag BOOLEAN, n INT, x DOUBLE, tags ARRAY<STRING>, "
    "address STRUCT<street STRING, zip INT, geo STRUCT<lat DOUBLE, lon DOUBLE>>, "
    "attrs MAP<STRING, BIGINT>, price DECIMAL(10,2), at TIMESTAMP, day DATE, raw BYTES, "
    "events ARRAY<STRUCT<at TIMESTAMP, kind STRING>>, due MAP<STRING, DATE>"
)
FULL_VALUES = [
    {
        "id": 42,
        "name": "Zoë",
        "flag": True,
        "n": -7,
        "x": 1.5,
        "tags": ["a", None, "c"],
        "address": {"street": "Main St", "zip": 12345, "geo": {"lat": 52.5, "lon": -0.25}},
        "attrs": {"k": 1},  # one entry: Spark does not keep a map's order
        "price": Decimal("12.50"),
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "day": dt.date(2024, 2, 29),
        "raw": b"\x00\x01\xff",
        "events": [
            {"at": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC), "kind": "old"},
            None,
            {"at": None, "kind": "none"},
        ],
        "due": {"a": dt.date(1970, 1, 1)},
    },
    {
        k: None
        for k in (
            "id",
            "name",
            "flag",
            "n",
            "x",
            "tags",
            "address",
            "attrs",
            "price",
            "at",
            "day",
            "raw",
            "events",
            "due",
        )
    },
    {
        "id": -(2**63),
        "name": "",
        "flag": False,
        "n": 2**31 - 1,
        "x": -0.0,
        "tags": [],
        "address": {"street": None, "zip": None, "geo": None},
        "attrs": {"z": None},
        "price": Decimal("-99999999.99"),
        "at": dt.datetime(1900, 1, 1, tzinfo=UTC),
        "day": dt.date(1900, 1, 1),
        "raw": b"",
        "events": [],
        "due": {"b": None},
    },
]
DELIMITED = "id BIGINT, name STRING, flag BOOLEAN, n INT, x DOUBLE, price DECIMAL(10,2), at TIMESTAMP, day DATE, raw BYTES"
DELIMITED_VALUES = [
    {
        "id": 42,
        "name": ' a, "quoted"\tline',
        "flag": True,
        "n": -7,
        "x": 0.5,
        "price": Decimal("12.50"),
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
        "day": dt.date(2024, 2, 29),
        "raw": b"\x00\x01\xff",
    },
    {k: None for k in ("id", "name", "flag", "n", "x", "price", "at", "day", "raw")},
    {
        "id": -1,
        "name": "日本",
        "flag": False,
        "n": 0,
        "x": -2.0,
        "price": Decimal("-0.01"),
        "at": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC),
        "day": dt.date(1969, 12, 31),
        "raw": b"\xfb",
    },
]

# (format, schema, options, values, whether Spark writes the same bytes as Python)
CASES = [
    ("JSON", FULL, {}, FULL_VALUES, True),
    ("AVRO", FULL, {}, FULL_VALUES, True),
    ("AVRO", FULL, {"confluent": True, "schema_id": 9}, FULL_VALUES, True),
    ("DELIMITED", DELIMITED, {}, DELIMITED_VALUES, True),
    ("DELIMITED", DELIMITED, {"delimiter": "TAB"}, DELIMITED_VALUES, True),
    ("KAFKA", "BIGINT", {}, [0, 42, -1, 2**63 - 1, -(2**63)], True),
    ("KAFKA", "INT", {}, [0, 42, -1, 2**31 - 1, -(2**31)], True),
    (
        "KAFKA",
        "DOUBLE",
        {},
        [0.0, -0.0, 1.5, -2.5e300, math.inf, -math.inf, math.nan, 5e-324],
        True,
    ),
    ("KAFKA", "STRING", {}, ["", "héllo", "日本"], True),
    ("KAFKA", "BYTES", {}, [b"", b"\x00\xff"], True),
    ("KAFKA", None, {}, ["", "héllo"], True),
    ("JSON", "BIGINT", {}, [42, -1], True),
    (
        "JSON",
        "ARRAY<STRUCT<at TIMESTAMP, d DECIMAL(5,1)>>",
        {},
        [[{"at": dt.datetime(2000, 1, 1, tzinfo=UTC), "d": Decimal("1.5")}, None], []],
        True,
    ),
    ("JSON", None, {}, [{"a": [1, 2.5, None, True]}, 5, "s"], True),
    ("AVRO", "STRING", {}, ["x", ""], True),
    ("AVRO", "MAP<STRING, DECIMAL(4,2)>", {}, [{"a": Decimal("1.25"), "b": None}, {}], True),
    ("DELIMITED", "DOUBLE", {}, [1.5, -math.inf], True),
]


def case_id(case) -> str:
    name, schema, options, _, _ = case
    shown = {FULL: "full", DELIMITED: "delimited"}.get(schema, schema)
    return f"{name}-{shown}" + "".join(f"-{k}={v}" for k, v in options.items())


def from_spark(value, t: SqlType | None):
    """A collected Spark value as the Python side's value: Rows become dicts, timestamps
    (collected as naive local datetimes) become aware UTC, bytearrays bytes."""
    if value is None or t is None:
        return value
    if isinstance(t, StructType):
        return {f.name: from_spark(value[f.name], f.type) for f in t.fields}
    if isinstance(t, ArrayType):
        return [from_spark(v, t.element) for v in value]
    if isinstance(t, MapType):
        return {k: from_spark(v, t.value) for k, v in value.items()}
    if isinstance(t, PrimitiveType) and t.name == "TIMESTAMP":
        return value.astimezone(UTC)
    if isinstance(t, PrimitiveType) and t.name == "BYTES":
        return bytes(value)
    return value


def same(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def both_ways(spark, fmt: Format, values: list):
    """One Spark job: decode the Python side's bytes and encode the same values.
    Returns [(decoded value, error, Spark's bytes, value decoded as known valid)] for
    values + a null at the end."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    undeclared_json = fmt.name == "JSON" and fmt.schema is None  # Spark holds its JSON text
    rows = [
        (fmt.serialize(v), fmt.serialize(v).decode() if undeclared_json else v) for v in values
    ] + [(None, None)]
    schema = T.StructType(
        [T.StructField("raw", T.BinaryType()), T.StructField("v", fmt.spark_type())]
    )
    df = spark.createDataFrame(rows, schema)
    value, error = fmt.decode(F.col("raw"))
    out = df.select(
        value.alias("value"),
        error.alias("error"),
        fmt.encode(F.col("v")).alias("encoded"),
        fmt.decode_valid(F.col("raw")).alias("valid"),
    )
    t = None if fmt.schema is None else fmt.sql_type
    return [
        (
            from_spark(r.value, t),
            r.error,
            None if r.encoded is None else bytes(r.encoded),
            from_spark(r.valid, t),
        )
        for r in out.collect()
    ]


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_python_bytes_decode_in_spark_and_spark_bytes_in_python(spark, case):
    name, schema, options, values, byte_exact = case
    fmt = get_format(name, schema, **options)
    results = both_ways(spark, fmt, values)

    decoded = [r[0] for r in results]
    errors = [r[1] for r in results]
    encoded = [r[2] for r in results]
    assert same([r[3] for r in results], decoded)  # decode_valid reads valid bytes alike
    expected = [fmt.deserialize(fmt.serialize(v)) for v in values] + [None]
    if name == "JSON" and schema is None:  # Spark keeps the document's JSON text
        expected = [fmt.serialize(v).decode() for v in values] + [None]
    assert errors == [None] * len(results)
    assert same(decoded, expected), decoded
    assert encoded[-1] is None  # null stays null (a tombstone)
    assert same(
        [fmt.deserialize(b) for b in encoded],
        [fmt.deserialize(fmt.serialize(v)) for v in values] + [None],
    )
    if byte_exact:
        assert encoded[:-1] == [fmt.serialize(v) for v in values]


def test_json_doubles_spark_writes_read_back(spark):
    fmt = get_format("JSON", "x DOUBLE, d DECIMAL(38, 10)")
    values = [
        {"x": 1e-5, "d": Decimal("0.0000001000")},
        {"x": 1e300, "d": Decimal("1234567890123456789012345678.0123456789")},
        {"x": math.nan, "d": None},
        {"x": -math.inf, "d": Decimal("-1")},
    ]
    results = both_ways(spark, fmt, values)
    assert [r[2] for r in results[:2]] == [
        b'{"x":1.0E-5,"d":1.000E-7}',
        b'{"x":1.0E300,"d":1234567890123456789012345678.0123456789}',
    ]
    expected = [fmt.deserialize(fmt.serialize(v)) for v in values] + [None]
    assert same([r[0] for r in results], expected)
    assert same([fmt.deserialize(r[2]) for r in results], expected)


# --- bad records: exact reasons, good records around them decode ---------------------------------


def decode_rows(spark, fmt: Format, data: list[bytes | None]):
    df = spark.createDataFrame([(i, d) for i, d in enumerate(data)], "i int, raw binary")
    value, error = fmt.decode("raw")
    rows = df.select("i", value.alias("value"), error.alias("error")).orderBy("i").collect()
    t = None if fmt.schema is None else fmt.sql_type
    out = [(from_spark(r.value, t), r.error) for r in rows]
    # Spark's verdict (error or not) is the Python side's, record for record.
    for d, (_, err) in zip(data, out, strict=True):
        try:
            fmt.deserialize(d)
            python_error = None
        except SerializationError as e:
            python_error = str(e)
        assert err == python_error, (d, err, python_error)
    return out


def test_json_bad_documents(spark):
    fmt = get_format("JSON", "id BIGINT, name STRING, address STRUCT<zip INT>")
    rows = decode_rows(
        spark,
        fmt,
        [
            b'{"id": 1, "name": "a"}',
            b'{"id": 1,',
            b'{"id": 2, "address": {"zip": 5}}',
            b'{"id": "abc", "name": "b"}',
            b'{"address": {"zip": "x"}}',
            b'{"id": 1.5}',
            b"[1]",
            b"",
            b"null",
            b"\xff{}",
            None,
            b'{"id": 3} trailing',
            b'{"id": 9223372036854775808}',
        ],
    )
    assert rows == [
        ({"id": 1, "name": "a", "address": None}, None),
        (None, "line 1 column 10: Expecting property name enclosed in double quotes"),
        ({"id": 2, "name": None, "address": {"zip": 5}}, None),
        (None, "field 'id': expected BIGINT, got 'abc'"),
        (None, "field 'address.zip': expected INT, got 'x'"),
        (None, "field 'id': expected BIGINT, got 1.5"),
        (None, "expected a JSON object, got [1]"),
        (None, "line 1 column 1: Expecting value"),
        (None, None),
        (
            None,
            "invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        ),
        (None, None),
        ({"id": 3, "name": None, "address": None}, None),
        (None, "field 'id': expected BIGINT, got 9223372036854775808 (out of range)"),
    ]


def test_json_single_values_and_undeclared(spark):
    rows = decode_rows(
        spark, get_format("JSON", "BIGINT"), [b"42", b"abc", b"1.5", b"null", b'"7"']
    )
    assert rows == [
        (42, None),
        (None, "line 1 column 1: Expecting value"),
        (None, "expected BIGINT, got 1.5"),
        (None, None),
        (None, "expected BIGINT, got '7'"),
    ]
    rows = decode_rows(
        spark, get_format("JSON", None), [b'{"a": 1}', b"{", b"", b" [1, 2] ", b"null"]
    )
    assert rows == [
        ('{"a": 1}', None),
        (None, "line 1 column 2: Expecting property name enclosed in double quotes"),
        (None, "line 1 column 1: Expecting value"),
        (" [1, 2] ", None),
        (None, None),
    ]


def test_avro_bad_records(spark):
    fmt = get_format("AVRO", "id BIGINT, name STRING")
    good = fmt.serialize({"id": 42, "name": "abc"})
    rows = decode_rows(
        spark,
        fmt,
        [good, good[:4], fmt.serialize({"id": None, "name": None}), b"", b"\x06", None, good],
    )
    assert rows == [
        ({"id": 42, "name": "abc"}, None),
        (None, "truncated Avro data: 4 bytes end inside the record"),
        ({"id": None, "name": None}, None),
        (None, "truncated Avro data: 0 bytes end inside the record"),
        (None, "invalid Avro data (IndexError: list index out of range)"),
        (None, None),
        ({"id": 42, "name": "abc"}, None),
    ]


def test_avro_confluent_header_errors(spark):
    fmt = get_format("AVRO", "id BIGINT", confluent=True, schema_id=9)
    good = fmt.serialize({"id": 1})
    rows = decode_rows(
        spark,
        fmt,
        [good, b"\x00\x00", b"\x01" + good[1:], b"\x00\x00\x00\x00\x08" + good[5:], good[:6], good],
    )
    assert rows == [
        ({"id": 1}, None),
        (None, "expected the 5-byte Confluent header (magic byte 0 and a schema id), got 2 bytes"),
        (None, "unknown magic byte 1 (expected 0)"),
        (None, "schema id 8 does not match the declared schema id 9"),
        (None, "truncated Avro data: 1 bytes end inside the record"),
        ({"id": 1}, None),
    ]


def test_kafka_bad_lengths_and_utf8(spark):
    assert decode_rows(
        spark, get_format("KAFKA", "BIGINT"), [b"\x00" * 7 + b"*", b"\x00\x01\x02", b"", None]
    ) == [
        (42, None),
        (None, "a KAFKA BIGINT has 8 bytes, got 3"),
        (None, "a KAFKA BIGINT has 8 bytes, got 0"),
        (None, None),
    ]
    assert decode_rows(spark, get_format("KAFKA", "INT"), [b"\xff" * 4, b"\xff" * 8]) == [
        (-1, None),
        (None, "a KAFKA INT has 4 bytes, got 8"),
    ]
    assert decode_rows(
        spark, get_format("KAFKA", "DOUBLE"), [b"\x3f\xf0" + b"\x00" * 6, b"\x3f"]
    ) == [
        (1.0, None),
        (None, "a KAFKA DOUBLE has 8 bytes, got 1"),
    ]
    assert decode_rows(spark, get_format("KAFKA", "STRING"), [b"ok", b"\xc3"]) == [
        ("ok", None),
        (
            None,
            "invalid UTF-8: 'utf-8' codec can't decode byte 0xc3 in position 0: unexpected end of data",
        ),
    ]


def test_delimited_bad_lines(spark):
    fmt = get_format("DELIMITED", "id BIGINT, name STRING, ok BOOLEAN")
    rows = decode_rows(
        spark,
        fmt,
        [
            b"1,a,true",
            b"2,b",
            b"3,c,false",
            b"4,d,true,extra",
            b"abc,e,true",
            b"5,f,yes",
            b'6,"g,true',
            b"",
            b",,",
            b' 7 ,"h, ""i""",TRUE',
            None,
        ],
    )
    assert rows == [
        ({"id": 1, "name": "a", "ok": True}, None),
        (None, "expected 3 fields, got 2"),
        ({"id": 3, "name": "c", "ok": False}, None),
        (None, "expected 3 fields, got 4"),
        (None, "field 'id': expected BIGINT, got 'abc'"),
        (None, "field 'ok': expected BOOLEAN, got 'yes'"),
        (None, "malformed line: unexpected end of data"),
        (None, "expected 3 fields, got 1"),
        ({"id": None, "name": None, "ok": None}, None),
        ({"id": 7, "name": 'h, "i"', "ok": True}, None),
        (None, None),
    ]


def test_failed_and_value_run_no_python(spark):
    """Deciding good/failed and decoding use Spark functions only; Python (the reason UDF)
    appears only in the plan of the error column."""
    df = spark.createDataFrame([(b"1",)], "raw binary")
    for fmt in (
        get_format("JSON", FULL),
        get_format("AVRO", FULL, confluent=True, schema_id=1),
        get_format("DELIMITED", DELIMITED),
        get_format("KAFKA", "DOUBLE"),
        get_format("KAFKA", "INT"),
    ):
        decoded = fmt.decode_checked("raw")
        plan = (
            df.select(decoded.value, decoded.failed, fmt.encode(decoded.value))
            ._jdf.queryExecution()
            .executedPlan()
            .toString()
        )
        assert "EvalPython" not in plan, plan
        plan = df.select(decoded.error)._jdf.queryExecution().executedPlan().toString()
        assert "ArrowEvalPython" in plan


# --- property: random values of a rich schema, both ways -------------------------------------


def values_of(t: SqlType) -> st.SearchStrategy:
    if isinstance(t, DecimalType):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{t.scale}"))
    if isinstance(t, PrimitiveType):
        return {
            "BOOLEAN": st.booleans(),
            "INT": st.integers(-(2**31), 2**31 - 1),
            "BIGINT": st.integers(-(2**63), 2**63 - 1),
            "DOUBLE": st.floats(),
            "STRING": st.text(max_size=6),
            "BYTES": st.binary(max_size=6),
            # Spark rebases dates before 1582 in Avro; stay in the Gregorian range.
            "DATE": st.dates(dt.date(1900, 1, 1), dt.date(2200, 1, 1)),
            "TIMESTAMP": st.datetimes(
                dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1), timezones=st.just(UTC)
            ).map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)),
        }[t.name]
    if isinstance(t, ArrayType):
        return st.lists(st.none() | values_of(t.element), max_size=2)
    if isinstance(t, MapType):
        return st.dictionaries(st.text(max_size=3), st.none() | values_of(t.value), max_size=2)
    if isinstance(t, StructType):
        return st.fixed_dictionaries({f.name: st.none() | values_of(f.type) for f in t.fields})
    raise AssertionError(t)


@pytest.mark.parametrize(
    ("name", "schema"), [("JSON", FULL), ("AVRO", FULL), ("DELIMITED", DELIMITED)]
)
def test_random_values_both_ways(spark, name, schema):
    fmt = get_format(name, schema)

    @settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(values_of(fmt.sql_type), min_size=1, max_size=8))
    def check(values):
        results = both_ways(spark, fmt, values)
        expected = [fmt.deserialize(fmt.serialize(v)) for v in values] + [None]
        assert [r[1] for r in results] == [None] * len(results)
        assert same([r[0] for r in results], expected)
        assert same([fmt.deserialize(r[2]) for r in results], expected)

    check()


EDGE_CASES = [
    (
        "JSON",
        "d DOUBLE, b BYTES, p DECIMAL(4,2), s STRING, i INT, t TIMESTAMP, day DATE",
        [
            b'{"d": "NaN"}',
            b'{"d": "Infinity"}',
            b'{"d": "+Infinity"}',
            b'{"d": "-Infinity"}',
            b'{"d": "+INF"}',
            b'{"d": "-INF"}',
            b'{"d": "INF"}',
            b'{"d": "inf"}',
            b'{"d": "1.5"}',
            b'{"d": NaN}',
            b'{"d": 1e400}',
            b'{"b": "AAE="}',
            b'{"b": "AAE"}',
            b'{"b": "!!"}',
            b'{"b": 5}',
            b'{"p": "1.005"}',
            b'{"p": 99.995}',
            b'{"p": "x"}',
            b'{"p": true}',
            b'{"s": null}',
            b'{"s": [1, "a"]}',
            b'{"i": -2147483649}',
            b'{"i": "1"}',
            b'{"t": 1.5}',
            b'{"t": "1"}',
            b'{"day": 2147483648}',
            b'{"i": 1, "i": 2}',
            b"\t{}\n",
            b"{} {",
            b"[]",
            b'"x"',
            b"true",
        ],
    ),
    (
        "DELIMITED",
        "i INT, d DOUBLE, p DECIMAL(4,2), b BOOLEAN, x BYTES, day DATE, t TIMESTAMP",
        [
            b" 1 ,,,,,,",
            b"+1,,,,,,",
            b"1.0,,,,,,",
            b"0x1,,,,,,",
            b"\t1,,,,,,",
            b",1.,,,,,",
            b",.5,,,,,",
            b",1e5,,,,,",
            b",inf,,,,,",
            b",-Infinity,,,,,",
            b",NaN,,,,,",
            b",+nan,,,,,",
            b",1.5d,,,,,",
            b",,1.,,,,",
            b",,-.5,,,,",
            b",,1e1,,,,",
            b",,99.995,,,,",
            b",,1.005,,,,",
            b",,,TRUE,,,",
            b",,,t,,,",
            b",,,1,,,",
            b",,,,AAE=,,",
            b",,,,AAE,,",
            b",,,,A===,,",
            b",,,,,-1,,",
            b",,,,,2147483648,,",
            b",,,,,,-1",
            b",,,,,,1.5",
            b'"1",,,,,,',
            b'"",,,,,,',
            b",,,,,,\n",
            b",,,,,,\r\n",
            b",,,,,,\n\n",
            b"\n",
            b",,,,,,\n1,,,,,,",
        ],
    ),
    (
        "JSON",
        None,
        [b'{"a":1} xx', b"5 xx", b"[1] x", b"NaN", b'{"a":1,}', b"01", b" null ", b"nul"],
    ),
    ("DELIMITED", "STRING", [b"\n", b"", b"a\n", b'"a\n"', b"a\r"]),
    ("KAFKA", "STRING", [b"\xed\xa0\x80", b"\xf0\x9f\x98\x80", b"\xc0\x80", b"\x00"]),
    ("JSON", "STRING", [b'"\\ud83d\\ude00"', b'"a\\u0000"', b"5", b"{}", b'"\\x"']),
]


@pytest.mark.parametrize(
    ("name", "schema", "data"),
    EDGE_CASES,
    ids=[f"{c[0]}-{c[1] or 'undeclared'}" for c in EDGE_CASES],
)
def test_odd_inputs_get_the_same_verdict_on_both_sides(spark, name, schema, data):
    fmt = get_format(name, schema)
    rows = decode_rows(spark, fmt, data)  # asserts Spark's verdict is Python's, row by row
    for d, (value, error) in zip(data, rows, strict=True):
        if error is None:
            expected = fmt.deserialize(d)
            if name == "JSON" and schema is None and expected is not None:
                expected = d.decode()  # Spark keeps the document's text
            assert same(value, expected), (d, value)


# --- the compact-object fast path of the JSON check ---------------------------------------------

_FLAT = "id BIGINT, name STRING, ok BOOLEAN, score DOUBLE, n INT, at TIMESTAMP"


def test_compact_flat_objects_get_the_same_verdict_as_the_parse(spark):
    """Texts on both sides of the compact pattern: those it accepts skip from_json, so
    each must be one from_json reads, and every verdict must stay the Python side's."""
    pattern = compact_object_pattern(parse_schema(_FLAT))
    data = [
        b'{"id":1,"name":"a","ok":true,"score":1.5,"n":2,"at":3}',
        b"{}",
        b'{"id":null,"name":null,"ok":null,"score":null,"n":null,"at":null}',
        b'{"id":-0}',
        b'{"id":1,"id":2}',
        b'{"name":"x","name":null}',
        b'{"name":"\\b\\f\\n\\r\\t\\"\\\\\\/"}',
        b'{"name":"\xc3\xa9\xf0\x9f\x98\x80"}',
        b'{"id":123456789012345678}',
        b'{"id":1234567890123456789}',
        b'{"id":9223372036854775808}',
        b'{"n":123456789}',
        b'{"n":2147483648}',
        b'{"id":01}',
        b'{"id":1.0}',
        b'{"id":"1"}',
        b'{"name":1}',
        b'{"name":"a\x01"}',
        b'{"name":"\\u0041"}',
        b'{"name":"\\x"}',
        b'{"ok":True}',
        b'{"score":-1.5e-3}',
        b'{"score":1e400}',
        b'{"score":.5}',
        b'{"id":1}\n',
        b'{"id":1} ',
        b'{"id":1,}',
        b'{"id":1,"other":2}',
        b'{"id": 1}',
        b'{"Id":1}',
        b'{"id":1}{"id":2}',
    ]
    accepted = [i for i, d in enumerate(data) if re.search(pattern, d.decode("utf-8", "replace"))]
    assert accepted == [*range(9), 11, 21, 22, 24]  # the rest are parsed
    rows = decode_rows(spark, get_format("JSON", _FLAT), data)  # asserts Spark's verdict is Python's
    assert [e for _, e in rows[:4]] == [None] * 4


def test_json_fields_given_twice_are_each_read(spark):
    """Spark's from_json converts every occurrence of a field or map key (the last one
    wins), so an invalid earlier one makes the record invalid on both sides."""
    rows = decode_rows(
        spark,
        get_format("JSON", "id BIGINT, m MAP<STRING, INT>, s STRUCT<a INT>"),
        [
            b'{"id":false,"id":null}',
            b'{"id":1,"id":2}',
            b'{"m":{"a":"x","a":1}}',
            b'{"m":{"a":1,"a":2}}',
            b'{"s":{"a":"x","a":1}}',
            b'{"id":3,"other":true,"other":"x"}',
        ],
    )
    assert rows == [
        (None, "field 'id': expected BIGINT, got false"),
        ({"id": 2, "m": None, "s": None}, None),
        (None, "field 'm['a']': expected INT, got 'x'"),
        ({"id": None, "m": {"a": 2}, "s": None}, None),
        (None, "field 's.a': expected INT, got 'x'"),
        ({"id": 3, "m": None, "s": None}, None),
    ]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(
    st.lists(
        st.tuples(
            st.sampled_from(["id", "name", "ok", "n"]),
            st.one_of(
                st.none(), st.booleans(), st.integers(-(10**19), 10**19), st.text(max_size=4),
                st.sampled_from(["\\u00e9", "\\n", "\\/", "01", "-0", "1.5"]),
            ),
        ),
        max_size=4,
    ),
    min_size=1,
    max_size=25,
))
def test_random_compact_objects_get_the_same_verdict_as_the_parse(spark, objects):
    def text(value):
        if value is None:
            return "null"
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if value in ("\\u00e9", "\\n", "\\/"):
            return f'"{value}"'
        if value in ("01", "-0", "1.5"):
            return value
        return json.dumps(value, ensure_ascii=False)

    data = [("{" + ",".join(f'"{k}":{text(v)}' for k, v in members) + "}").encode() for members in objects]
    decode_rows(spark, get_format("JSON", _FLAT), data)  # asserts Spark's verdict is Python's, row by row

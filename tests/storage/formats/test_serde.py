"""The Python side of the formats (serialize/deserialize): exact bytes, exact errors,
round trips (no Spark)."""

from __future__ import annotations

import datetime as dt
import math
import struct
import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tablestream.errors import SchemaError, SerializationError
from tablestream.schema import (
    BIGINT,
    BOOLEAN,
    BYTES,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    ArrayType,
    Column,
    DecimalType,
    MapType,
    PrimitiveType,
    Schema,
    SqlType,
    StructType,
)
from tablestream.storage.formats import (
    AvroFormat,
    DelimitedFormat,
    JsonFormat,
    KafkaFormat,
    get_format,
)
from tablestream.storage.processing_log import processing_log_topic

UTC = dt.timezone.utc
EXAMPLE = (
    "id BIGINT, name STRING, tags ARRAY<STRING>, address STRUCT<street STRING, zip INT>, "
    "price DECIMAL(10,2), at TIMESTAMP"
)


def raises(message: str):
    """pytest.raises for a SerializationError with exactly this text."""
    return pytest.raises(SerializationError, match="^" + _escape(message) + "$")


def _escape(text: str) -> str:
    import re

    return re.escape(text)


# --- KAFKA ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "value", "data"),
    [
        # Kafka's LongSerializer / IntegerSerializer: big-endian two's complement.
        ("BIGINT", 42, b"\x00\x00\x00\x00\x00\x00\x00*"),
        ("BIGINT", -1, b"\xff\xff\xff\xff\xff\xff\xff\xff"),
        ("BIGINT", 2**63 - 1, b"\x7f\xff\xff\xff\xff\xff\xff\xff"),
        ("BIGINT", -(2**63), b"\x80\x00\x00\x00\x00\x00\x00\x00"),
        ("BIGINT", 258, b"\x00\x00\x00\x00\x00\x00\x01\x02"),
        ("INT", 42, b"\x00\x00\x00*"),
        ("INT", -1, b"\xff\xff\xff\xff"),
        ("INT", 2**31 - 1, b"\x7f\xff\xff\xff"),
        ("INT", -(2**31), b"\x80\x00\x00\x00"),
        # DoubleSerializer: Double.doubleToLongBits, big-endian.
        ("DOUBLE", 1.0, b"\x3f\xf0\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", -2.5, b"\xc0\x04\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", -0.0, b"\x80\x00\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", math.inf, b"\x7f\xf0\x00\x00\x00\x00\x00\x00"),
        ("DOUBLE", 5e-324, b"\x00\x00\x00\x00\x00\x00\x00\x01"),
        # StringSerializer: UTF-8.
        ("STRING", "héllo", b"h\xc3\xa9llo"),
        ("STRING", "", b""),
        ("BYTES", b"\x00\xff", b"\x00\xff"),
    ],
)
def test_kafka_bytes_are_kafkas(type_, value, data):
    fmt = get_format("KAFKA", type_)
    assert fmt.serialize(value) == data
    assert fmt.deserialize(data) == value


def test_kafka_nan_is_the_canonical_nan():
    fmt = get_format("KAFKA", "DOUBLE")
    assert fmt.serialize(math.nan) == b"\x7f\xf8\x00\x00\x00\x00\x00\x00"
    assert math.isnan(fmt.deserialize(b"\x7f\xf8\x00\x00\x00\x00\x00\x00"))


def test_kafka_null_is_a_null():
    for type_ in ("BIGINT", "INT", "DOUBLE", "STRING", "BYTES", None):
        fmt = get_format("KAFKA", type_)
        assert fmt.serialize(None) is None
        assert fmt.deserialize(None) is None


def test_kafka_one_column_schema_is_the_bare_primitive():
    fmt = get_format("KAFKA", "id BIGINT")
    assert fmt.type == BIGINT
    assert fmt.serialize(7) == b"\x00\x00\x00\x00\x00\x00\x00\x07"


def test_kafka_without_a_type_infers_per_value():
    fmt = get_format("KAFKA", None)
    assert fmt.serialize("abc") == b"abc"
    assert fmt.serialize(42) == b"\x00\x00\x00\x00\x00\x00\x00*"
    assert fmt.serialize(1.0) == b"\x3f\xf0\x00\x00\x00\x00\x00\x00"
    assert fmt.serialize(b"\x01") == b"\x01"
    assert fmt.deserialize(b"abc") == "abc"
    assert fmt.deserialize(b"\x00\x00\x00\x00\x00\x00\x00*") == "\x00\x00\x00\x00\x00\x00\x00*"
    with raises(
        "the KAFKA format has no BOOLEAN: declare a type, or pass str, int, float or bytes"
    ):
        fmt.serialize(True)
    with raises(
        "the KAFKA format without a declared type takes str, int, float or bytes, got dict"
    ):
        fmt.serialize({"a": 1})
    with raises("expected BIGINT, got 9223372036854775808 (out of range)"):
        fmt.serialize(2**63)


@pytest.mark.parametrize(
    ("type_", "data", "message"),
    [
        ("BIGINT", b"\x00\x00\x00", "a KAFKA BIGINT has 8 bytes, got 3"),
        ("BIGINT", b"", "a KAFKA BIGINT has 8 bytes, got 0"),
        ("INT", b"\x00\x00\x00\x00\x00", "a KAFKA INT has 4 bytes, got 5"),
        ("DOUBLE", b"\x00", "a KAFKA DOUBLE has 8 bytes, got 1"),
        (
            "STRING",
            b"ab\xff",
            "invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 2: invalid start byte",
        ),
    ],
)
def test_kafka_bad_bytes(type_, data, message):
    with raises(message):
        get_format("KAFKA", type_).deserialize(data)


@pytest.mark.parametrize(
    ("type_", "value", "message"),
    [
        ("BIGINT", "abc", "expected BIGINT, got 'abc'"),
        ("BIGINT", 1.5, "expected BIGINT, got 1.5"),
        ("BIGINT", True, "expected BIGINT, got true"),
        ("INT", 2**31, "expected INT, got 2147483648 (out of range)"),
        ("DOUBLE", "1", "expected DOUBLE, got '1'"),
        ("STRING", 5, "expected STRING, got 5"),
        ("BYTES", "x", "expected BYTES, got 'x'"),
    ],
)
def test_kafka_bad_values(type_, value, message):
    with raises(message):
        get_format("KAFKA", type_).serialize(value)


def test_kafka_schema_errors():
    with pytest.raises(SchemaError) as caught:
        get_format("KAFKA", "BOOLEAN")
    assert str(caught.value) == (
        "The KAFKA format does not support type BOOLEAN (it supports INT, BIGINT, DOUBLE, STRING and BYTES)"
    )
    with pytest.raises(SchemaError) as caught:
        get_format("KAFKA", "a INT, b INT")
    assert (
        str(caught.value)
        == "The KAFKA format holds a single primitive, but the schema 'a INT, b INT' has 2 columns"
    )


# --- JSON -------------------------------------------------------------------------------

EXAMPLE_VALUE = {
    "id": 42,
    "name": "Zoë",
    "tags": ["a", None],
    "address": {"street": "Main St", "zip": 12345},
    "price": Decimal("12.50"),
    "at": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
}


def test_json_bytes_are_ksqldbs_layout():
    fmt = get_format("JSON", EXAMPLE)
    data = fmt.serialize(EXAMPLE_VALUE)
    assert data == (
        b'{"id":42,"name":"Zo\xc3\xab","tags":["a",null],"address":{"street":"Main St","zip":12345},'
        b'"price":12.50,"at":1704164645678}'
    )
    assert fmt.deserialize(data) == EXAMPLE_VALUE


def test_json_every_primitive():
    fmt = get_format(
        "JSON", "b BOOLEAN, i INT, d DOUBLE, x BYTES, day DATE, n DOUBLE, m MAP<STRING, BIGINT>"
    )
    value = {
        "b": True,
        "i": -7,
        "d": 0.5,
        "x": b"\x00\x01",
        "day": dt.date(1969, 12, 31),
        "n": math.inf,
        "m": {"k": 1},
    }
    data = fmt.serialize(value)
    assert data == b'{"b":true,"i":-7,"d":0.5,"x":"AAE=","day":-1,"n":"Infinity","m":{"k":1}}'
    assert fmt.deserialize(data) == value


def test_json_reading_is_lenient_where_spark_is():
    fmt = get_format("JSON", "id BIGINT, name STRING, price DECIMAL(4,2), d DOUBLE, at TIMESTAMP")
    assert fmt.deserialize(b'{"id": 1}') == {
        "id": 1,
        "name": None,
        "price": None,
        "d": None,
        "at": None,
    }
    assert fmt.deserialize(b'{"id": 1, "other": [1]} trailing') == {
        "id": 1,
        "name": None,
        "price": None,
        "d": None,
        "at": None,
    }
    assert fmt.deserialize(b"null") is None
    assert fmt.deserialize(b" \n null ") is None
    assert fmt.deserialize(b'{"name": 5}')["name"] == "5"
    assert fmt.deserialize(b'{"name": {"a": [1, 2.50, true]}}')["name"] == '{"a":[1,2.5,true]}'
    assert fmt.deserialize(b'{"price": "12.345"}')["price"] == Decimal("12.35")  # half-up, as Spark
    assert fmt.deserialize(b'{"price": 1e1}')["price"] == Decimal("10.00")
    assert math.isnan(fmt.deserialize(b'{"d": "NaN"}')["d"])
    assert fmt.deserialize(b'{"d": "-Infinity"}')["d"] == -math.inf
    assert fmt.deserialize(b'{"d": 3}')["d"] == 3.0
    assert fmt.deserialize(b'{"at": -1}')["at"] == dt.datetime(
        1969, 12, 31, 23, 59, 59, 999000, tzinfo=UTC
    )
    assert fmt.deserialize(b'{"ID": 1}')["id"] is None  # names match exactly, as in Spark


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"id": 1,', "line 1 column 10: Expecting property name enclosed in double quotes"),
        (b'{"id": }', "line 1 column 8: Expecting value"),
        (b'{"id":\n  1 2}', "line 2 column 5: Expecting ',' delimiter"),
        (b"", "line 1 column 1: Expecting value"),
        (b"null x", "line 1 column 6: Extra data"),
        (b'{"id": "abc"}', "field 'id': expected BIGINT, got 'abc'"),
        (b'{"id": 1.0}', "field 'id': expected BIGINT, got 1.0"),
        (b'{"id": true}', "field 'id': expected BIGINT, got true"),
        (
            b'{"id": 9223372036854775808}',
            "field 'id': expected BIGINT, got 9223372036854775808 (out of range)",
        ),
        (b'{"address": {"zip": "x"}}', "field 'address.zip': expected INT, got 'x'"),
        (b'{"address": [1]}', "field 'address': expected STRUCT<street STRING, zip INT>, got [1]"),
        (b'{"tags": "a"}', "field 'tags': expected ARRAY<STRING>, got 'a'"),
        (
            b'{"price": 123456789012}',
            "field 'price': expected DECIMAL(10,2), got 123456789012 (does not fit)",
        ),
        (b'{"price": "abc"}', "field 'price': expected DECIMAL(10,2), got 'abc'"),
        (b'{"at": "2024-01-01"}', "field 'at': expected TIMESTAMP, got '2024-01-01'"),
        (b"[1, 2]", "expected a JSON object, got [1,2]"),
        (b"5", "expected a JSON object, got 5"),
        (
            b"\xff{}",
            "invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        ),
    ],
)
def test_json_bad_documents(data, message):
    with raises(message):
        get_format("JSON", EXAMPLE).deserialize(data)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"id": "x"}, "field 'id': expected BIGINT, got 'x'"),
        ({"nope": 1}, "unknown column 'nope' (columns: id, name, tags, address, price, at)"),
        (
            {"address": {"zip": 2**31}},
            "field 'address.zip': expected INT, got 2147483648 (out of range)",
        ),
        ({"address": {"zap": 1}}, "field 'address': unknown field 'zap' (fields: street, zip)"),
        ({"tags": ["a", 5]}, "field 'tags[1]': expected STRING, got 5"),
        (
            {"price": Decimal("1e12")},
            "field 'price': expected DECIMAL(10,2), got 1E+12 (does not fit)",
        ),
        ({"at": "2024-01-01"}, "field 'at': expected TIMESTAMP, got '2024-01-01'"),
        (5, "expected a dict of the columns (id, name, tags, address, price, at), got 5"),
    ],
)
def test_json_bad_values(value, message):
    with raises(message):
        get_format("JSON", EXAMPLE).serialize(value)


def test_json_single_value():
    fmt = get_format("JSON", "BIGINT")
    assert fmt.serialize(42) == b"42"
    assert fmt.deserialize(b" 42 ") == 42
    with raises("line 1 column 4: Extra data"):
        fmt.deserialize(b"42 x")
    with raises("expected BIGINT, got 'x'"):
        fmt.deserialize(b'"x"')
    assert (
        get_format("JSON", "ARRAY<TIMESTAMP>").serialize(
            [dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)]
        )
        == b"[1000]"
    )


def test_json_without_schema():
    fmt = get_format("JSON", None)
    value = {"a": [1, 2.5, None, True], "b": {"c": "é"}}
    assert fmt.serialize(value) == b'{"a":[1,2.5,null,true],"b":{"c":"\xc3\xa9"}}'
    assert fmt.deserialize(fmt.serialize(value)) == value
    assert fmt.deserialize(b"5") == 5
    assert fmt.serialize(None) is None
    with raises("field 'a': nan is not valid JSON"):
        fmt.serialize({"a": math.nan})
    with raises("line 1 column 2: Expecting property name enclosed in double quotes"):
        fmt.deserialize(b"{")
    # What Spark's try_parse_json accepts: anything after a complete value (a number
    # must end at whitespace), and no NaN/Infinity.
    assert fmt.deserialize(b'{"a": 1} tail') == {"a": 1}
    assert fmt.deserialize(b"5 tail") == 5
    with raises("line 1 column 2: Extra data"):
        fmt.deserialize(b"5x")
    with raises("NaN is not valid JSON"):
        fmt.deserialize(b"[NaN]")


# --- AVRO -------------------------------------------------------------------------------


def test_avro_bytes_are_avro_binary():
    fmt = get_format("AVRO", "id BIGINT, name STRING")
    # union branch 1 (zigzag 2), long 42 (zigzag 84 = 'T'), branch 1, length 1, 'a'
    assert fmt.serialize({"id": 42, "name": "a"}) == b"\x02T\x02\x02a"
    assert fmt.serialize({"id": None, "name": None}) == b"\x00\x00"
    assert fmt.serialize({"id": 42}) == b"\x02T\x00"
    assert fmt.deserialize(b"\x02T\x02\x02a") == {"id": 42, "name": "a"}
    assert fmt.deserialize(b"\x02T\x02\x02a trailing bytes") == {"id": 42, "name": "a"}


def test_avro_logical_types():
    fmt = get_format("AVRO", "price DECIMAL(4,2), at TIMESTAMP, day DATE")
    value = {
        "price": Decimal("1.5"),
        "at": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "day": dt.date(1970, 1, 2),
    }
    # decimal: unscaled 150 as big-endian two's complement bytes 00 96; 1000 ms zigzag varint d0 0f
    data = fmt.serialize(value)
    assert data == b"\x02\x04\x00\x96\x02\xd0\x0f\x02\x02"
    assert fmt.deserialize(data) == {
        "price": Decimal("1.50"),
        "at": value["at"],
        "day": value["day"],
    }


def test_avro_confluent_header():
    fmt = get_format("AVRO", "id BIGINT", confluent=True, schema_id=258)
    assert fmt.serialize({"id": 42}) == b"\x00\x00\x00\x01\x02\x02T"
    assert fmt.deserialize(b"\x00\x00\x00\x01\x02\x02T") == {"id": 42}
    with raises("expected the 5-byte Confluent header (magic byte 0 and a schema id), got 3 bytes"):
        fmt.deserialize(b"\x00\x00\x00")
    with raises("unknown magic byte 1 (expected 0)"):
        fmt.deserialize(b"\x01\x00\x00\x01\x02\x02T")
    with raises("schema id 7 does not match the declared schema id 258"):
        fmt.deserialize(b"\x00\x00\x00\x00\x07\x02T")
    any_id = get_format("AVRO", "id BIGINT", confluent=True)
    assert any_id.deserialize(b"\x00\x00\x00\x00\x07\x02T") == {"id": 42}
    with raises("writing the Confluent wire format needs a schema_id"):
        any_id.serialize({"id": 1})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\x02T\x02\x04a", "truncated Avro data: 5 bytes end inside the record"),
        (b"", "truncated Avro data: 0 bytes end inside the record"),
        (
            b"\x02T\x02\x04\xff\xfe",
            "invalid UTF-8 in an Avro string: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
        ),
    ],
)
def test_avro_bad_bytes(data, message):
    with raises(message):
        get_format("AVRO", "id BIGINT, name STRING").deserialize(data)


def test_avro_single_value_and_errors():
    fmt = get_format("AVRO", "BIGINT")
    assert fmt.serialize(42) == b"T"
    assert fmt.deserialize(b"T") == 42
    with raises("expected BIGINT, got 'x'"):
        fmt.serialize("x")
    with pytest.raises(
        SchemaError,
        match=r"^The AVRO format needs a schema \(there is no Schema Registry to infer it from\)$",
    ):
        get_format("AVRO", None)


# --- DELIMITED --------------------------------------------------------------------------

DELIMITED = "id BIGINT, name STRING, ok BOOLEAN, x DOUBLE, price DECIMAL(10,2), at TIMESTAMP, day DATE, raw BYTES"


def test_delimited_bytes_are_ksqldbs_layout():
    fmt = get_format("DELIMITED", DELIMITED)
    value = {
        "id": 1,
        "name": 'a,"b"',
        "ok": True,
        "x": 0.5,
        "price": Decimal("1000.5"),
        "at": dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC),
        "day": dt.date(1970, 1, 11),
        "raw": b"\x00\x01",
    }
    data = fmt.serialize(value)
    assert data == b'1,"a,""b""",true,0.5,1000.50,1000,10,AAE='
    assert fmt.deserialize(data) == {**value, "price": Decimal("1000.50")}
    assert fmt.serialize({"id": 1}) == b"1,,,,,,,"
    assert fmt.deserialize(b"1,,,,,,,") == {"id": 1, **{k: None for k in fmt.schema.names[1:]}}


def test_delimited_empty_field_is_null():
    fmt = get_format("DELIMITED", "a STRING, b STRING")
    assert fmt.deserialize(b',""') == {"a": None, "b": None}
    assert fmt.deserialize(b" , x ") == {"a": " ", "b": " x "}


def test_delimited_other_delimiters_and_single_values():
    tab = get_format("DELIMITED", "a INT, b STRING", delimiter="TAB")
    assert tab.serialize({"a": 1, "b": "x\ty"}) == b'1\t"x\ty"'
    assert tab.deserialize(b'1\t"x\ty"') == {"a": 1, "b": "x\ty"}
    assert get_format("DELIMITED", "a INT, b INT", delimiter="|").deserialize(b"1|2") == {
        "a": 1,
        "b": 2,
    }
    single = get_format("DELIMITED", "DOUBLE")
    assert single.serialize(1.5) == b"1.5"
    assert single.deserialize(b"1.5") == 1.5
    assert single.deserialize(b"") is None
    assert single.deserialize(b"-Infinity") == -math.inf


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"1,a,true", "expected 8 fields, got 3"),
        (b"1,a,true,1,1,1,1,AA==,extra", "expected 8 fields, got 9"),
        (b"", "expected 8 fields, got 1"),
        (b"abc,,,,,,,", "field 'id': expected BIGINT, got 'abc'"),
        (b"1.5,,,,,,,", "field 'id': expected BIGINT, got '1.5'"),
        (
            b"99999999999999999999,,,,,,,",
            "field 'id': expected BIGINT, got '99999999999999999999' (out of range)",
        ),
        (b",,yes,,,,,", "field 'ok': expected BOOLEAN, got 'yes'"),
        (b",,,1.5d,,,,", "field 'x': expected DOUBLE, got '1.5d'"),
        (
            b",,,,123456789012,,,",
            "field 'price': expected DECIMAL(10,2), got '123456789012' (does not fit)",
        ),
        (b",,,,,2024-01-01,,", "field 'at': expected TIMESTAMP, got '2024-01-01'"),
        (b",,,,,,,A", "field 'raw': expected BYTES (base64), got 'A'"),
        (b'1,"a,,,,,,', "malformed line: unexpected end of data"),
        (b"1,a,,,,,,\n2,b,,,,,,", "expected one line, got 2"),
    ],
)
def test_delimited_bad_lines(data, message):
    with raises(message):
        get_format("DELIMITED", DELIMITED).deserialize(data)


def test_delimited_schema_errors():
    with pytest.raises(SchemaError) as caught:
        get_format("DELIMITED", "id INT, tags ARRAY<STRING>")
    assert (
        str(caught.value)
        == "The DELIMITED format does not support type ARRAY<STRING> (column 'tags')"
    )
    with pytest.raises(SchemaError) as caught:
        get_format("DELIMITED", "a INT", delimiter="ab")
    assert (
        str(caught.value)
        == "A DELIMITED delimiter is one character other than a quote or a line break, got 'ab'"
    )
    with pytest.raises(SchemaError, match="^The DELIMITED format needs a schema$"):
        get_format("DELIMITED")


# --- get_format -------------------------------------------------------------------------


def test_get_format():
    assert isinstance(get_format("kafka", "BIGINT"), KafkaFormat)
    assert isinstance(get_format("Json", None), JsonFormat)
    assert isinstance(get_format("AVRO", Schema((Column("a", INT),))), AvroFormat)
    assert isinstance(get_format("delimited", "a INT", delimiter=";"), DelimitedFormat)
    assert get_format("JSON", "a INT") == get_format("JSON", "a  int")
    assert (
        repr(get_format("AVRO", "a INT", confluent=True, schema_id=3))
        == "AvroFormat(AVRO 'a INT' (confluent, schema id 3))"
    )


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: get_format("XML", None),
            "Unknown format 'XML' (formats: KAFKA, JSON, AVRO, DELIMITED)",
        ),
        (
            lambda: get_format("JSON", "a INT", delimiter=","),
            "Unknown option 'delimiter' for the JSON format (it takes none)",
        ),
        (
            lambda: get_format("AVRO", "a INT", confluence=True),
            "Unknown option 'confluence' for the AVRO format (it takes confluent, schema_id, record_name, namespace, writer_schema)",
        ),
        (
            lambda: get_format("JSON", "a FOO"),
            "Invalid schema 'a FOO': unknown type 'FOO' for column 'a' at character 3",
        ),
        (
            lambda: get_format("AVRO", "a INT", schema_id=1),
            "schema_id is only used with confluent=True",
        ),
        (lambda: get_format("JSON", 5), "A schema is a string, a Schema or a SqlType, got int"),
    ],
)
def test_get_format_errors(call, message):
    with pytest.raises(SchemaError) as caught:
        call()
    assert str(caught.value) == message


def test_python_side_needs_no_pyspark():
    code = (
        "import sys; from tablestream.storage.formats import get_format; "
        "[get_format(n, s).deserialize(get_format(n, s).serialize(v)) for n, s, v in "
        "[('KAFKA', 'BIGINT', 1), ('JSON', 'a INT', {'a': 1}), ('AVRO', 'a INT', {'a': 1}), ('DELIMITED', 'a INT', {'a': 1})]]; "
        "assert 'pyspark' not in sys.modules, 'formats imported pyspark'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_processing_log_topic():
    assert processing_log_topic("orders-app") == "orders-app-processing-log"


# --- round trips (hypothesis) ---------------------------------------------------------------

PRIMITIVES = [BOOLEAN, INT, BIGINT, DOUBLE, STRING, BYTES, DATE, TIMESTAMP]
_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,5}", fullmatch=True)
_decimals = st.builds(
    lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 10)
)
_leaf_types = st.sampled_from(PRIMITIVES) | _decimals


def _unique(columns: list[Column]) -> bool:
    return len({c.name.lower() for c in columns}) == len(columns)


def _columns(
    inner: st.SearchStrategy[SqlType], max_size: int = 4
) -> st.SearchStrategy[tuple[Column, ...]]:
    return (
        st.lists(st.builds(Column, _names, inner), min_size=1, max_size=max_size)
        .filter(_unique)
        .map(tuple)
    )


_types = st.recursive(
    _leaf_types,
    lambda inner: (
        st.builds(ArrayType, inner) | st.builds(MapType, inner) | _columns(inner, 3).map(StructType)
    ),
    max_leaves=5,
)
_schemas = _columns(_types).map(Schema)


def values_of(t: SqlType) -> st.SearchStrategy:
    """Normalized Python values of ``t`` (what ``deserialize`` returns)."""
    if isinstance(t, DecimalType):
        bound = 10**t.precision - 1
        return st.integers(-bound, bound).map(lambda u: Decimal(f"{u}E-{t.scale}"))
    if isinstance(t, PrimitiveType):
        return {
            "BOOLEAN": st.booleans(),
            "INT": st.integers(-(2**31), 2**31 - 1),
            "BIGINT": st.integers(-(2**63), 2**63 - 1),
            "DOUBLE": st.floats(),
            "STRING": st.text(max_size=8),
            "BYTES": st.binary(max_size=8),
            "DATE": st.dates(),
            "TIMESTAMP": st.datetimes(timezones=st.just(UTC)).map(
                lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000)
            ),
        }[t.name]
    if isinstance(t, ArrayType):
        return st.lists(st.none() | values_of(t.element), max_size=3)
    if isinstance(t, MapType):
        return st.dictionaries(st.text(max_size=4), st.none() | values_of(t.value), max_size=3)
    if isinstance(t, StructType):
        return st.fixed_dictionaries({f.name: st.none() | values_of(f.type) for f in t.fields})
    raise AssertionError(t)


def same(a, b) -> bool:
    """Equality where NaN equals NaN and -0.0 differs from 0.0; bool is not int."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _typed_value(types: st.SearchStrategy[SqlType]):
    return types.flatmap(lambda t: st.tuples(st.just(t), values_of(t)))


def _schema_value(schemas: st.SearchStrategy[Schema]):
    return schemas.flatmap(lambda s: st.tuples(st.just(s), values_of(s.as_struct())))


@settings(max_examples=300, deadline=None)
@given(_typed_value(st.sampled_from([INT, BIGINT, DOUBLE, STRING, BYTES])))
def test_kafka_round_trip(case):
    t, value = case
    fmt = get_format("KAFKA", t)
    assert same(fmt.deserialize(fmt.serialize(value)), value)
    if t in (INT, BIGINT, DOUBLE):
        assert fmt.serialize(value) == struct.pack(
            {"INT": ">i", "BIGINT": ">q", "DOUBLE": ">d"}[t.name], value
        )


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(), st.integers(-(2**63), 2**63 - 1), st.floats()))
def test_undeclared_kafka_round_trips_strings(value):
    fmt = get_format("KAFKA", None)
    data = fmt.serialize(value)
    if isinstance(value, str):
        assert fmt.deserialize(data) == value
    else:
        assert len(data) == 8


@settings(max_examples=300, deadline=None)
@given(_schema_value(_schemas))
def test_json_round_trip(case):
    schema, value = case
    fmt = get_format("JSON", schema)
    assert same(fmt.deserialize(fmt.serialize(value)), value)


@settings(max_examples=200, deadline=None)
@given(_typed_value(_types))
def test_json_single_value_round_trip(case):
    t, value = case
    fmt = get_format("JSON", t)
    assert same(fmt.deserialize(fmt.serialize(value)), value)


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(_json.filter(lambda v: v is not None))
def test_undeclared_json_round_trip(value):
    fmt = get_format("JSON", None)
    assert same(fmt.deserialize(fmt.serialize(value)), value)


@settings(max_examples=300, deadline=None)
@given(_schema_value(_schemas), st.booleans())
def test_avro_round_trip(case, confluent):
    schema, value = case
    fmt = get_format("AVRO", schema, **({"confluent": True, "schema_id": 12} if confluent else {}))
    assert same(fmt.deserialize(fmt.serialize(value)), value)


@settings(max_examples=200, deadline=None)
@given(_typed_value(_types))
def test_avro_single_value_round_trip(case):
    t, value = case
    fmt = get_format("AVRO", t)
    assert same(fmt.deserialize(fmt.serialize(value)), value)


@settings(max_examples=300, deadline=None)
@given(
    _schema_value(_columns(_leaf_types, 6).map(Schema)), st.sampled_from([",", "\t", "|", ";", " "])
)
def test_delimited_round_trip(case, delimiter):
    schema, value = case
    fmt = get_format("DELIMITED", schema, delimiter=delimiter)
    # An empty field is null.
    expected = {k: None if v in ("", b"") else v for k, v in value.items()}
    assert same(fmt.deserialize(fmt.serialize(value)), expected)


@settings(max_examples=100, deadline=None)
@given(_typed_value(_leaf_types))
@example((PrimitiveType("STRING"), "\r"))  # a lone line break is quoted
@example((PrimitiveType("STRING"), "\r0"))
def test_delimited_single_value_round_trip(case):
    t, value = case
    fmt = get_format("DELIMITED", t)
    assert same(fmt.deserialize(fmt.serialize(value)), None if value in ("", b"") else value)


@pytest.mark.parametrize(
    "module",
    [
        "tablestream.storage.formats",
        "tablestream.storage.formats.kafka",
        "tablestream.storage.formats.json_format",
        "tablestream.storage.formats.avro",
        "tablestream.storage.formats.delimited",
        "tablestream.storage.processing_log",
    ],
)
def test_docstring_examples(module):
    import doctest
    import importlib

    assert doctest.testmod(importlib.import_module(module)).failed == 0

"""tablestream.schema: parsing ksqlDB column lists, Spark DDL, Avro schemas (no Spark)."""

from __future__ import annotations

import subprocess
import sys

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablestream.errors import SchemaError
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
    Schema,
    StructType,
    parse_schema,
    parse_schema_or_type,
    parse_type,
    to_avro_schema,
)

EXAMPLE = (
    "id BIGINT, name STRING, tags ARRAY<STRING>, address STRUCT<street STRING, zip INT>, "
    "price DECIMAL(10,2), at TIMESTAMP"
)


def test_parses_the_example_into_columns():
    assert parse_schema(EXAMPLE) == Schema(
        (
            Column("id", BIGINT),
            Column("name", STRING),
            Column("tags", ArrayType(STRING)),
            Column("address", StructType((Column("street", STRING), Column("zip", INT)))),
            Column("price", DecimalType(10, 2)),
            Column("at", TIMESTAMP),
        )
    )


def test_spark_ddl_of_the_example():
    assert parse_schema(EXAMPLE).to_spark_ddl() == (
        "`id` BIGINT, `name` STRING, `tags` ARRAY<STRING>, "
        "`address` STRUCT<`street`: STRING, `zip`: INT>, `price` DECIMAL(10,2), `at` TIMESTAMP"
    )


def test_text_of_the_example():
    assert str(parse_schema(EXAMPLE)) == (
        "id BIGINT, name STRING, tags ARRAY<STRING>, address STRUCT<street STRING, zip INT>, "
        "price DECIMAL(10,2), at TIMESTAMP"
    )


def test_every_type_and_alias():
    schema = parse_schema(
        "a BOOLEAN, b INT, c INTEGER, d BIGINT, e DOUBLE, f STRING, g VARCHAR, h BYTES, "
        "i DATE, j TIMESTAMP, k DECIMAL(38, 0), l MAP<STRING, ARRAY<INT>>, m STRUCT<x: INT>, "
        "n decimal(5)"
    )
    assert [c.type for c in schema] == [
        BOOLEAN,
        INT,
        INT,
        BIGINT,
        DOUBLE,
        STRING,
        STRING,
        BYTES,
        DATE,
        TIMESTAMP,
        DecimalType(38, 0),
        MapType(ArrayType(INT)),
        StructType((Column("x", INT),)),
        DecimalType(5, 0),
    ]


def test_names_keep_their_case_and_quotes():
    schema = parse_schema("Id BIGINT, `My Col` STRING, `select` INT, date DATE, value STRING")
    assert schema.names == ("Id", "My Col", "select", "date", "value")
    assert str(schema) == "Id BIGINT, `My Col` STRING, select INT, date DATE, value STRING"
    assert (
        schema.to_spark_ddl()
        == "`Id` BIGINT, `My Col` STRING, `select` INT, `date` DATE, `value` STRING"
    )
    assert schema["My Col"] == Column("My Col", STRING)


def test_single_type():
    assert parse_type("BIGINT") == BIGINT
    assert parse_type("array<struct<a int>>") == ArrayType(StructType((Column("a", INT),)))
    assert parse_schema_or_type("STRING") == STRING
    assert parse_schema_or_type("MAP<STRING, DOUBLE>") == MapType(DOUBLE)
    assert parse_schema_or_type("id BIGINT") == Schema((Column("id", BIGINT),))
    assert parse_schema_or_type("int INT") == Schema((Column("int", INT),))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Invalid schema '': no columns"),
        ("   ", "Invalid schema '   ': no columns"),
        ("id FOO", "Invalid schema 'id FOO': unknown type 'FOO' for column 'id' at character 4"),
        (
            "a INT, b ARRAY<FOO>",
            "Invalid schema 'a INT, b ARRAY<FOO>': unknown type 'FOO' at character 16",
        ),
        ("a INT, a STRING", "Invalid schema 'a INT, a STRING': duplicate column 'a'"),
        (
            "id INT, ID STRING",
            "Invalid schema 'id INT, ID STRING': duplicate column 'ID' (same name as 'id'; names are case-insensitive)",
        ),
        (
            "s STRUCT<x INT, x INT>",
            "Invalid schema 's STRUCT<x INT, x INT>': duplicate column 'x'",
        ),
        ("a INT,", "Invalid schema 'a INT,': expected a column after the last ','"),
        ("a INT b", "Invalid schema 'a INT b': unexpected 'b' at character 7 (expected ',')"),
        ("a", "Invalid schema 'a': column 'a' has no type"),
        ("a, b INT", "Invalid schema 'a, b INT': column 'a' has no type"),
        ("a ARRAY<INT", "Invalid schema 'a ARRAY<INT': expected '>' at the end"),
        (
            "a ARRAY INT",
            "Invalid schema 'a ARRAY INT': expected '<' but found 'INT' at character 9",
        ),
        (
            "a DECIMAL",
            "Invalid schema 'a DECIMAL': DECIMAL needs a precision and a scale, as in DECIMAL(10, 2) at character 3",
        ),
        (
            "a DECIMAL(39, 2)",
            "Invalid schema 'a DECIMAL(39, 2)': DECIMAL precision must be between 1 and 38, got 39 at character 3",
        ),
        (
            "a DECIMAL(4, 5)",
            "Invalid schema 'a DECIMAL(4, 5)': DECIMAL scale must be between 0 and the precision 4, got 5 at character 3",
        ),
        (
            "a DECIMAL(x)",
            "Invalid schema 'a DECIMAL(x)': expected the DECIMAL precision (an integer) but found 'x' at character 11",
        ),
        (
            "m MAP<INT, STRING>",
            "Invalid schema 'm MAP<INT, STRING>': MAP keys must be STRING, got INT at character 7",
        ),
        (
            "s STRUCT<>",
            "Invalid schema 's STRUCT<>': STRUCT needs at least one field at character 3",
        ),
        (
            "t TIME",
            "Invalid schema 't TIME': TIME is not supported yet (use INT for milliseconds since midnight) for column 't' at character 3",
        ),
        (
            "f FLOAT",
            "Invalid schema 'f FLOAT': FLOAT is not a ksqlDB type (use DOUBLE) for column 'f' at character 3",
        ),
        ("`a INT", "Invalid schema '`a INT': a quoted name is not closed (character 1)"),
        ("1a INT", "Invalid schema '1a INT': expected a column name but found '1a' at character 1"),
    ],
)
def test_bad_schemas_say_what_is_wrong(text, message):
    with pytest.raises(SchemaError) as caught:
        parse_schema(text)
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Invalid schema '': no type"),
        ("BIGINT x", "Invalid schema 'BIGINT x': unexpected 'x' at character 8 after the type"),
        ("id BIGINT", "Invalid schema 'id BIGINT': unknown type 'id' at character 1"),
    ],
)
def test_bad_single_types(text, message):
    with pytest.raises(SchemaError) as caught:
        parse_type(text)
    assert str(caught.value) == message


def test_non_string_schema():
    with pytest.raises(SchemaError, match="^A schema must be a string, got int$"):
        parse_schema(5)  # type: ignore[arg-type]


def test_avro_schema_is_ksqldb_like():
    assert parse_schema(EXAMPLE + ", day DATE, raw BYTES, m MAP<STRING, DOUBLE>").to_avro() == {
        "type": "record",
        "name": "KsqlDataSourceSchema",
        "namespace": "io.confluent.ksql.avro_schemas",
        "fields": [
            {"name": "id", "type": ["null", "long"], "default": None},
            {"name": "name", "type": ["null", "string"], "default": None},
            {
                "name": "tags",
                "type": ["null", {"type": "array", "items": ["null", "string"]}],
                "default": None,
            },
            {
                "name": "address",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "KsqlDataSourceSchema_address",
                        "fields": [
                            {"name": "street", "type": ["null", "string"], "default": None},
                            {"name": "zip", "type": ["null", "int"], "default": None},
                        ],
                    },
                ],
                "default": None,
            },
            {
                "name": "price",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
                ],
                "default": None,
            },
            {
                "name": "at",
                "type": ["null", {"type": "long", "logicalType": "timestamp-millis"}],
                "default": None,
            },
            {
                "name": "day",
                "type": ["null", {"type": "int", "logicalType": "date"}],
                "default": None,
            },
            {"name": "raw", "type": ["null", "bytes"], "default": None},
            {
                "name": "m",
                "type": ["null", {"type": "map", "values": ["null", "double"]}],
                "default": None,
            },
        ],
    }


def test_avro_schema_of_a_single_type():
    assert to_avro_schema(BIGINT) == "long"
    assert to_avro_schema(ArrayType(STRING)) == {"type": "array", "items": ["null", "string"]}


def test_avro_rejects_names_avro_cannot_hold():
    with pytest.raises(SchemaError) as caught:
        parse_schema("`my col` INT").to_avro()
    assert str(caught.value) == (
        "Column name 'my col' is not a valid Avro name (letters, digits and '_', not starting with a digit)"
    )


def test_a_name_ending_in_a_line_break_is_quoted_and_not_an_avro_name():
    schema = Schema((Column("A\n", BOOLEAN), Column("B", BOOLEAN)))
    assert str(schema) == "`A\n` BOOLEAN, B BOOLEAN"
    assert parse_schema(str(schema)) == schema
    with pytest.raises(SchemaError) as caught:
        schema.to_avro()
    assert str(caught.value) == (
        "Column name 'A\n' is not a valid Avro name (letters, digits and '_', not starting with a digit)"
    )


def test_avro_schemas_parse_in_fastavro():
    fastavro.parse_schema(
        parse_schema(
            EXAMPLE + ", s STRUCT<a ARRAY<STRUCT<b INT>>, m MAP<STRING, STRUCT<c INT>>>"
        ).to_avro()
    )


def test_plan_layer_can_use_schemas_without_pyspark():
    code = (
        "import sys, tablestream.schema as s; "
        "s.parse_schema('id BIGINT, a ARRAY<STRING>').to_spark_ddl(); "
        "assert 'pyspark' not in sys.modules, 'schema imported pyspark'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- property: the text of any type parses back to the same type ---------------------------

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True) | st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="`"),
    min_size=1,
    max_size=6,
)
_primitives = st.sampled_from(
    [BOOLEAN, INT, BIGINT, DOUBLE, STRING, BYTES, DATE, TIMESTAMP]
) | st.builds(lambda p, s: DecimalType(p, min(s, p)), st.integers(1, 38), st.integers(0, 38))


def _unique(columns: list[Column]) -> bool:
    return len({c.name.lower() for c in columns}) == len(columns)


_types = st.recursive(
    _primitives,
    lambda inner: st.one_of(
        st.builds(ArrayType, inner),
        st.builds(MapType, inner),
        st.lists(st.builds(Column, _names, inner), min_size=1, max_size=3)
        .filter(_unique)
        .map(lambda cs: StructType(tuple(cs))),
    ),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(_types)
def test_type_text_round_trips(t):
    assert parse_type(str(t)) == t


@settings(max_examples=100, deadline=None)
@given(st.lists(st.builds(Column, _names, _types), min_size=1, max_size=4).filter(_unique))
def test_schema_text_round_trips(columns):
    schema = Schema(tuple(columns))
    assert parse_schema(str(schema)) == schema


def test_docstring_examples():
    import doctest

    import tablestream.schema

    assert doctest.testmod(tablestream.schema).failed == 0

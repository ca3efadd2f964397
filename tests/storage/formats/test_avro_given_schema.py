"""AVRO with an Avro schema given as it is (``get_format("AVRO", '<schema JSON>')``):
the columns derived from it, records written by another Avro writer with that schema
read exactly, from Python and from Spark, and written back byte for byte."""

from __future__ import annotations

import datetime as dt
import io
import json
from decimal import Decimal

import fastavro
import pytest

from tablestream.errors import SchemaError, SerializationError
from tablestream.schema import from_avro_schema, parse_schema_or_type
from tablestream.storage.formats import get_format

ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "qty", "type": "float"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {
            "name": "ship",
            "type": {
                "type": "record",
                "name": "Address",
                "fields": [{"name": "zip", "type": "int"}, {"name": "tags", "type": {"type": "array", "items": "string"}}],
            },
        },
        {"name": "billing", "type": ["null", "Address"], "default": None},
        {"name": "extra", "type": {"type": "map", "values": ["null", "long"]}},
        {"name": "code", "type": {"type": "fixed", "name": "Code", "size": 2}},
    ],
}
ORDER_TEXT = json.dumps(ORDER)
COLUMNS = (
    "id BIGINT, status STRING, qty DOUBLE, note STRING, price DECIMAL(6,2), day DATE, "
    "ship STRUCT<zip INT, tags ARRAY<STRING>>, billing STRUCT<zip INT, tags ARRAY<STRING>>, "
    "extra MAP<STRING, BIGINT>, code BYTES"
)
RECORD = {
    "id": 7,
    "status": "PAID",
    "qty": 1.5,
    "note": None,
    "price": Decimal("12.30"),
    "day": dt.date(2026, 11, 27),
    "ship": {"zip": 1000, "tags": ["a", "b"]},
    "billing": {"zip": 2000, "tags": []},
    "extra": {"x": 1, "y": None},
    "code": b"AZ",
}


def _written_by_fastavro(record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(ORDER), record)
    return out.getvalue()


def test_the_columns_of_an_avro_schema():
    assert str(from_avro_schema(ORDER)) == COLUMNS
    assert str(parse_schema_or_type(ORDER_TEXT)) == COLUMNS
    assert str(from_avro_schema(ORDER, upper_case=True)).startswith("ID BIGINT, STATUS STRING, QTY DOUBLE")
    assert str(from_avro_schema('{"type": "array", "items": ["null", "int"]}')) == "ARRAY<INT>"


@pytest.mark.parametrize(
    "schema, message",
    [
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": ["int", "string"]}]}',
         'Avro schema field \'a\': a union is read only as null and one type, got ["int", "string"]'),
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": {"type": "long", "logicalType": "timestamp-micros"}}]}',
         "Avro schema field 'a': the logical type timestamp-micros is not supported (TIMESTAMP is timestamp-millis)"),
        ('{"type": "record", "name": "R", "fields": [{"name": "next", "type": ["null", "R"]}]}',
         "Avro schema field 'next': the record R contains itself; recursive types are not supported"),
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}, {"name": "A", "type": "int"}]}',
         "Avro schema: fields 'a' and 'A' have the same name ignoring case"),
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]}',
         "Avro schema field 'a': unknown type 'Missing'"),
        ('{"type": "record", "name": "R", "fields": [', "Invalid Avro schema (not JSON: Expecting value at line 1 column 44)"),
    ],
)
def test_an_avro_schema_that_cannot_be_read_is_refused_naming_the_field(schema, message):
    with pytest.raises(SchemaError) as refused:
        get_format("AVRO", schema)
    assert str(refused.value) == message


def test_an_avro_schema_is_for_the_avro_format_only():
    with pytest.raises(SchemaError) as refused:
        get_format("JSON", ORDER_TEXT)
    assert str(refused.value) == "An Avro schema is the schema of the AVRO format only; JSON takes a ksqlDB column list"


def test_python_reads_and_writes_the_given_schema_exactly():
    fmt = get_format("AVRO", ORDER_TEXT)
    assert str(fmt.schema) == COLUMNS
    data = _written_by_fastavro(RECORD)
    assert fmt.deserialize(data) == RECORD
    assert fmt.serialize(RECORD) == data


def test_python_refuses_a_null_in_a_non_null_field_and_an_unknown_enum_symbol():
    fmt = get_format("AVRO", ORDER_TEXT)
    with pytest.raises(SerializationError, match="^cannot write Avro: "):
        fmt.serialize({**RECORD, "id": None})
    with pytest.raises(SerializationError, match="^cannot write Avro: "):
        fmt.serialize({**RECORD, "status": "LOST"})


@pytest.mark.spark
def test_spark_reads_the_given_schema_as_the_columns_types(spark):
    fmt = get_format("AVRO", ORDER_TEXT)
    frame = spark.createDataFrame([(_written_by_fastavro(RECORD),), (b"\x01",)], "raw BINARY")
    decoded = fmt.decode_checked("raw")
    rows = frame.select(decoded.value.alias("v"), decoded.failed.alias("bad")).collect()
    assert rows[0].bad is False and rows[1].bad is True
    assert rows[0].v.asDict(recursive=True) == {
        **RECORD,
        "ship": {"zip": 1000, "tags": ["a", "b"]},
        "billing": {"zip": 2000, "tags": []},
    }
    assert frame.select(decoded.value.alias("v")).schema["v"].dataType.simpleString() == (
        "struct<id:bigint,status:string,qty:double,note:string,price:decimal(6,2),day:date,"
        "ship:struct<zip:int,tags:array<string>>,billing:struct<zip:int,tags:array<string>>,"
        "extra:map<string,bigint>,code:binary>"
    )


@pytest.mark.spark
def test_spark_writes_the_given_schema_byte_for_byte(spark):
    fmt = get_format("AVRO", ORDER_TEXT)
    frame = spark.createDataFrame([(_written_by_fastavro(RECORD),)], "raw BINARY")
    again = frame.select(fmt.encode(fmt.decode("raw")[0]).alias("out")).collect()
    assert bytes(again[0].out) == _written_by_fastavro(RECORD)


@pytest.mark.spark
@pytest.mark.parametrize(
    "change, field",
    [
        ("named_struct('id', CAST(NULL AS BIGINT))", "id"),
        ("named_struct('ship', named_struct('zip', 1, 'tags', array('a', NULL)))", "ship.tags[]"),
        ("named_struct('ship', CAST(NULL AS STRUCT<zip: INT, tags: ARRAY<STRING>>))", "ship"),
    ],
)
def test_spark_fails_the_write_of_a_null_in_a_non_null_field_naming_it(spark, change, field):
    from pyspark.sql import functions as F

    fmt = get_format("AVRO", ORDER_TEXT)
    frame = spark.createDataFrame([(_written_by_fastavro(RECORD),)], "raw BINARY")
    value = frame.select(fmt.decode("raw")[0].alias("v")).selectExpr(
        "v.*", f"{change} AS c"
    ).selectExpr("c.*", *[f"`{n}`" for n in fmt.schema.names if n != change.split("'")[1]])
    row = value.select(F.struct(*[F.col(n) for n in fmt.schema.names]).alias("v"))
    with pytest.raises(Exception) as failed:
        row.select(fmt.encode("v")).collect()
    assert f"cannot write Avro: the non-null field '{field}' of the given Avro schema is null" in str(failed.value)


@pytest.mark.spark
def test_a_dsl_source_reads_records_written_with_its_avro_schema(spark):
    from tablestream.dsl import StreamsBuilder
    from tablestream.testing.driver import TestDriver, TestRecord

    builder = StreamsBuilder()
    orders = builder.stream("orders", value_format="AVRO", value_schema=ORDER_TEXT)
    orders.filter("value.status = 'PAID'").map_values("struct(value.id AS id, value.qty * 2 AS qty)").to("paid")
    with TestDriver(builder.build(), spark=spark) as driver:
        source = driver.create_input_topic("orders")
        source.pipe_raw(b"k", _written_by_fastavro(RECORD), timestamp=3)
        source.pipe_raw(b"k", _written_by_fastavro({**RECORD, "id": 8, "status": "NEW"}), timestamp=4)
        assert driver.create_output_topic("paid").read_records() == [TestRecord("k", {"id": 7, "qty": 3.0}, 3)]


def test_a_dsl_source_refuses_an_avro_schema_for_another_format():
    from tablestream.dsl import StreamsBuilder

    with pytest.raises(SchemaError) as refused:
        StreamsBuilder().stream("orders", value_format="JSON", value_schema=ORDER_TEXT)
    assert str(refused.value) == (
        "StreamsBuilder.stream(): value format: An Avro schema is the schema of the AVRO format only; JSON takes a ksqlDB column list"
    )

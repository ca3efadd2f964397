"""CREATE STREAM|TABLE without value columns, WITH (VALUE_FORMAT='AVRO',
VALUE_AVRO_SCHEMA='...'): the columns come from the Avro schema (names upper-cased, as
ksqlDB names the columns it infers), records written by another Avro writer with that
schema are read exactly, and wrong declarations are refused with a clear error."""

from __future__ import annotations

import io
import json

import fastavro
import pytest

from tablestream.sql.compiler import compile_sql
from tablestream.sql.errors import SqlError
from tablestream.testing.driver import TestDriver, TestRecord

R = TestRecord

ORDER = {
    "type": "record",
    "name": "Order",
    "fields": [
        {"name": "customer", "type": "string"},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "qty", "type": "int"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}
CUSTOMER = {
    "type": "record",
    "name": "Customer",
    "fields": [{"name": "name", "type": "string"}, {"name": "credit", "type": "float"}],
}


def _avro(schema: dict, record: dict) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


def _sql(tail: str = "") -> str:
    return (
        f"CREATE STREAM ORDERS WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='AVRO', PARTITIONS=1,"
        f" VALUE_AVRO_SCHEMA='{json.dumps(ORDER)}');\n"
        f"CREATE TABLE CUSTOMERS (ID STRING PRIMARY KEY) WITH (KAFKA_TOPIC='customers', KEY_FORMAT='KAFKA',"
        f" VALUE_FORMAT='AVRO', PARTITIONS=1, VALUE_AVRO_SCHEMA='{json.dumps(CUSTOMER)}');\n"
    ) + tail


def test_the_columns_come_from_the_avro_schema():
    compiled = compile_sql(_sql())
    assert compiled.sources["ORDERS"].schema_text() == "`CUSTOMER` STRING, `STATUS` STRING, `QTY` INTEGER, `NOTE` STRING"
    assert compiled.sources["CUSTOMERS"].schema_text() == "`ID` STRING PRIMARY KEY, `NAME` STRING, `CREDIT` DOUBLE"


@pytest.mark.spark
def test_records_written_with_the_schema_are_read_exactly(spark):
    sql = _sql(
        "CREATE STREAM PAID AS SELECT O.CUSTOMER, C.NAME, O.QTY * 2 AS DOUBLED, C.CREDIT, O.NOTE"
        " FROM ORDERS O JOIN CUSTOMERS C ON O.CUSTOMER = C.ID WHERE O.STATUS = 'PAID';\n"
    )
    with TestDriver.from_sql(sql, spark=spark) as driver:
        customers = driver.create_input_topic("customers")
        orders = driver.create_input_topic("orders")
        paid = driver.sql_output("PAID")
        customers.pipe_raw(b"c1", _avro(CUSTOMER, {"name": "Ada", "credit": 2.5}), timestamp=1)
        orders.pipe_raw(None, _avro(ORDER, {"customer": "c1", "status": "PAID", "qty": 3, "note": "gift"}), timestamp=2)
        orders.pipe_raw(None, _avro(ORDER, {"customer": "c1", "status": "NEW", "qty": 4, "note": None}), timestamp=3)
        orders.pipe_raw(None, _avro(ORDER, {"customer": "c1", "status": "PAID", "qty": 5, "note": None}), timestamp=4)
        assert paid.read_records() == [
            R("c1", {"NAME": "Ada", "DOUBLED": 6, "CREDIT": 2.5, "NOTE": "gift"}, 2),
            R("c1", {"NAME": "Ada", "DOUBLED": 10, "CREDIT": 2.5, "NOTE": None}, 4),
        ]


@pytest.mark.spark
def test_insert_into_writes_the_given_schema(spark):
    sql = _sql(
        "CREATE STREAM MORE (CUSTOMER STRING, STATUS STRING, QTY INT, NOTE STRING)"
        " WITH (KAFKA_TOPIC='more', VALUE_FORMAT='JSON', PARTITIONS=1);\n"
        "INSERT INTO ORDERS SELECT * FROM MORE;\n"
    )
    with TestDriver.from_sql(sql, spark=spark) as driver:
        more = driver.create_input_topic("more")
        more.pipe_input(None, {"CUSTOMER": "c2", "STATUS": "NEW", "QTY": 1, "NOTE": None}, timestamp=5)
        written = driver.take_output("orders")
        assert [(k, v, t) for k, v, t in written] == [
            (None, _avro(ORDER, {"customer": "c2", "status": "NEW", "qty": 1, "note": None}), 5)
        ]


@pytest.mark.parametrize(
    "sql, message",
    [
        (
            "CREATE STREAM S WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
            "Line: 1, Col: 1: The columns of a stream or table must be declared, or given as an Avro schema"
            " with VALUE_FORMAT='AVRO' and VALUE_AVRO_SCHEMA='{...}' (there is no Schema Registry to infer them from)",
        ),
        (
            "CREATE STREAM S WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1, VALUE_AVRO_SCHEMA='\"long\"');",
            "Line: 1, Col: 75: VALUE_AVRO_SCHEMA needs VALUE_FORMAT='AVRO'",
        ),
        (
            "CREATE STREAM S (A INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='AVRO', PARTITIONS=1, VALUE_AVRO_SCHEMA='\"long\"');",
            "Line: 1, Col: 83: Value columns are declared and VALUE_AVRO_SCHEMA is given: the value columns come"
            " from the Avro schema, declare only the key columns",
        ),
        (
            "CREATE STREAM S WITH (KAFKA_TOPIC='s', VALUE_FORMAT='AVRO', PARTITIONS=1,"
            " VALUE_AVRO_SCHEMA='{\"type\": \"record\", \"name\": \"R\", \"fields\": [{\"name\": \"a\", \"type\": [\"int\", \"string\"]}]}');",
            "Line: 1, Col: 75: Avro schema field 'a': a union is read only as null and one type, got [\"int\", \"string\"]",
        ),
        (
            "CREATE TABLE T (ID STRING PRIMARY KEY) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='AVRO', PARTITIONS=1,"
            " VALUE_AVRO_SCHEMA='{\"type\": \"record\", \"name\": \"R\", \"fields\": [{\"name\": \"id\", \"type\": \"int\"}]}');",
            "Line: 1, Col: 1: Duplicate column names: ID is a key column and a field of the Avro schema",
        ),
    ],
)
def test_wrong_declarations_are_refused(sql, message):
    with pytest.raises(SqlError) as refused:
        compile_sql(sql)
    assert str(refused.value).startswith(message), str(refused.value)

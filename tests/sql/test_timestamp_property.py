"""``CREATE STREAM|TABLE ... WITH (TIMESTAMP='col' [, TIMESTAMP_FORMAT='pattern'])``: the
source's timestamp extractor, ksqlDB's checks with its texts, and ksqlDB's
query-validation cases ported (each naming its file and test, as in
``test_qtt_ports.py``; inputs without a timestamp in ksqlDB's test are written at 0)."""

from __future__ import annotations

import datetime as dt

import pytest

from tablestream.plan import SqlExpr
from tablestream.sql.compiler import compile_sql
from tablestream.sql.errors import SqlError

from .test_qtt_ports import Port, check


def _at(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


STREAM = "CREATE STREAM s (k STRING KEY, id BIGINT, ts {type}) WITH (kafka_topic='t', value_format='JSON', {props});"


def extractor(script: str):
    return compile_sql(script + " CREATE STREAM out AS SELECT * FROM s;").topology.sources[0].timestamp_extractor


@pytest.mark.parametrize(
    ("column", "props", "expected"),
    [
        ("BIGINT", "timestamp='ts'", "value.`TS`"),
        ("TIMESTAMP", "timestamp='TS'", "value.`TS`"),
        ("STRING", "timestamp='ts', timestamp_format='yyyy-MM-dd''T''HH:mm:ssX'",
         "TO_TIMESTAMP(value.`TS`, 'yyyy-MM-dd\\'T\\'HH:mm:ssX')"),
    ],
)
def test_the_timestamp_column_is_the_sources_timestamp_extractor(column, props, expected):
    assert extractor(STREAM.format(type=column, props=props)) == SqlExpr(expected)


def test_a_key_column_and_a_quoted_name_can_be_the_timestamp_column():
    keyed = "CREATE STREAM s (k BIGINT KEY, id BIGINT) WITH (kafka_topic='t', value_format='JSON', timestamp='k');"
    assert extractor(keyed) == SqlExpr("record.key")
    quoted = ("CREATE STREAM s (k STRING KEY, `at` BIGINT) WITH (kafka_topic='t', value_format='JSON', "
              "timestamp='`at`');")
    assert extractor(quoted) == SqlExpr("value.`at`")
    table = ("CREATE TABLE u (id BIGINT PRIMARY KEY, at TIMESTAMP) WITH (kafka_topic='u', value_format='JSON', "
             "timestamp='at'); CREATE TABLE v AS SELECT * FROM u;")
    assert compile_sql(table).topology.sources[0].timestamp_extractor == SqlExpr("value.`AT`")


def test_without_the_property_records_keep_their_timestamps():
    assert extractor("CREATE STREAM s (k STRING KEY, ts BIGINT) WITH (kafka_topic='t', value_format='JSON');") is None


@pytest.mark.parametrize(
    ("column", "props", "message"),
    [
        # timestampformat.json: "timestamp with column that does not exist should throw exception" (on a source)
        ("BIGINT", "timestamp='invalid_ts'",
         "The TIMESTAMP column set in the WITH clause does not exist in the schema: 'INVALID_TS'"),
        # timestampformat.json: "timestamp column with invalid data type should throw exception" (on a source)
        ("INT", "timestamp='ts'",
         "Timestamp column, `TS`, should be LONG(INT64), TIMESTAMP, or a String with a timestamp_format specified"),
        ("STRING", "timestamp='ts'",
         "A String timestamp field has been specified without also specifying the timestamp_format"),
        ("BIGINT", "timestamp='ts', timestamp_format='yyyy'",
         "'TIMESTAMP_FORMAT' set in the WITH clause can only be used when the timestamp column is of type STRING."),
        ("STRING", "timestamp_format='yyyy'",
         "'TIMESTAMP_FORMAT' set in the WITH clause needs 'TIMESTAMP', the column it parses"),
        ("STRING", "timestamp='ts', timestamp_format='yyyy-bb'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:Unknown pattern letter: b"),
        ("STRING", "timestamp='ts', timestamp_format='yyyy-MM-dd''T'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:"
         "Pattern ends with an incomplete string literal: yyyy-MM-dd'T"),
        ("STRING", "timestamp='ts', timestamp_format='YYYY-MM-dd'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:the pattern letter 'Y' (week-based year) "
         "is not supported: Spark's parser has no week-based fields"),
        ("STRING", "timestamp='ts', timestamp_format='EEE, dd MMM yyyy'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:the pattern letter 'E' (day of week) "
         "is not supported: Spark only formats it, never parses it"),
        ("STRING", "timestamp='ts', timestamp_format='HH:mm:ss.nnnnnn'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:the pattern letter 'n' (nano of second) "
         "is not supported by Spark's parser"),
        ("BIGINT", "timestamp=1", "TIMESTAMP must be a column name in quotes"),
    ],
)
def test_ksqldb_refuses_a_timestamp_column_it_cannot_read(column, props, message):
    statement = STREAM.format(type=column, props=props)
    with pytest.raises(SqlError) as error:
        compile_sql(statement)
    assert error.value.detail == message.removesuffix(".")
    # At the property at fault: the format when it is about the pattern, else the column.
    at = "timestamp_format=" if "TIMESTAMP_FORMAT" in message or "pattern" in message else "timestamp="
    assert (error.value.line, error.value.column) == (1, statement.index(at) + 1)


def test_the_property_on_create_as_select_is_refused_for_now():
    script = (
        "CREATE STREAM TEST (K STRING KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON');"
        "CREATE STREAM TS WITH (timestamp='sink_ts') AS SELECT K, id as sink_ts, id FROM test;"
    )
    with pytest.raises(SqlError) as error:
        compile_sql(script)
    assert error.value.detail == "The WITH property TIMESTAMP of CREATE ... AS SELECT is not supported yet"


def test_a_table_over_a_streams_topic_with_another_timestamp_column_is_not_that_stream():
    script = (
        "CREATE STREAM s (k BIGINT KEY, a BIGINT, b BIGINT) WITH (kafka_topic='t', value_format='JSON', timestamp='a');"
        "CREATE TABLE u (k BIGINT PRIMARY KEY, a BIGINT, b BIGINT) WITH (kafka_topic='t', value_format='JSON', "
        "timestamp='b');"
        "CREATE STREAM x AS SELECT * FROM s; CREATE TABLE y AS SELECT * FROM u;"
    )
    with pytest.raises(SqlError) as error:
        compile_sql(script)
    assert error.value.detail.endswith("Topic t has already been registered by another source")


PORTS = [
    Port(
        'timestamp-extractor',
        'source string timestamp column',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, TS varchar) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='ts', timestamp_format='yy-MM-dd HH:mm:ssX');",
            'CREATE STREAM TS AS SELECT K, id FROM test;',
        ],
        inputs=[
            ('test_topic', None, {'ID': 1, 'TS': '10-04-19 12:00:17Z'}, 0),
            ('test_topic', None, {'ID': 2, 'TS': '!!!!!!!!!!!!!!!!!'}, 0),
            ('test_topic', None, {'ID': 3, 'TS': '10-04-19 12:00:17Z'}, 0),
        ],
        outputs=[
            ('TS', None, {'ID': 1}, 1271678417000),
            ('TS', None, {'ID': 3}, 1271678417000),
        ],
    ),
    Port(
        'timestamp-extractor',
        'source key timestamp column',
        [
            "CREATE STREAM TEST (K BIGINT KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='K');",
            'CREATE STREAM TS AS SELECT * FROM test;',
        ],
        inputs=[
            ('test_topic', 1271678417736, {'ID': 1}, 0),
            ('test_topic', 1271678413736, {'ID': 2}, 0),
        ],
        outputs=[
            ('TS', 1271678417736, {'ID': 1}, 1271678417736),
            ('TS', 1271678413736, {'ID': 2}, 1271678413736),
        ],
    ),
    Port(
        'timestamp-extractor',
        'source key string timestamp column',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='K', timestamp_format='yy-MM-dd HH:mm:ssX');",
            'CREATE STREAM TS AS SELECT * FROM test;',
        ],
        inputs=[
            ('test_topic', '10-04-19 12:00:17Z', {'ID': 1}, 0),
            ('test_topic', '10-04-19 12:00:17Z', {'ID': 2}, 0),
        ],
        outputs=[
            ('TS', '10-04-19 12:00:17Z', {'ID': 1}, 1271678417000),
            ('TS', '10-04-19 12:00:17Z', {'ID': 2}, 1271678417000),
        ],
    ),
    Port(
        'timestamp-extractor',
        'source bigint timestamp column',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, TS bigint) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='ts');",
            'CREATE STREAM TS AS SELECT K, id FROM test;',
        ],
        inputs=[
            ('test_topic', None, {'ID': 1, 'TS': 1526075913000}, 0),
            ('test_topic', None, {'ID': 2, 'TS': -1}, 0),
            ('test_topic', None, {'ID': 3, 'TS': 1589234313000}, 0),
        ],
        outputs=[
            ('TS', None, {'ID': 1}, 1526075913000),
            ('TS', None, {'ID': 3}, 1589234313000),
        ],
    ),
    Port(
        'timestampformat',
        'timestamp column of TIMESTAMP type',
        [
            "CREATE STREAM INPUT (K STRING KEY, ID bigint, EVENT_TS TIMESTAMP) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='EVENT_TS');",
            'CREATE STREAM OUTPUT AS SELECT K, ID, EVENT_TS FROM INPUT;',
        ],
        inputs=[
            ('test_topic', None, {'ID': 1, 'EVENT_TS': 1526075913000}, 0),
            ('test_topic', None, {'ID': 2, 'EVENT_TS': 1589234313000}, 0),
        ],
        outputs=[  # EVENT_TS read back as the TIMESTAMP it is (ksqlDB's JSON: 1526075913000, 1589234313000)
            ('OUTPUT', None, {'ID': 1, 'EVENT_TS': _at(1526075913000)}, 1526075913000),
            ('OUTPUT', None, {'ID': 2, 'EVENT_TS': _at(1589234313000)}, 1589234313000),
        ],
    ),
    Port(
        'timestampformat',
        'timestamp column of source should not influence sink',
        [
            "CREATE STREAM INPUT (K STRING KEY, ID bigint, EVENT_TS bigint) WITH (kafka_topic='test_topic', value_format='JSON', timestamp='EVENT_TS');",
            'CREATE STREAM OUTPUT AS SELECT K, id as EVENT_TS FROM INPUT;',
        ],
        inputs=[
            ('test_topic', None, {'ID': 1, 'EVENT_TS': 1526075913000}, 0),
            ('test_topic', None, {'ID': 2, 'EVENT_TS': 1589234313000}, 0),
        ],
        outputs=[
            ('OUTPUT', None, {'EVENT_TS': 1}, 1526075913000),
            ('OUTPUT', None, {'EVENT_TS': 2}, 1589234313000),
        ],
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)

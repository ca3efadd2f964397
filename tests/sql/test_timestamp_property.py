"""``CREATE STREAM|TABLE ... WITH (TIMESTAMP='col' [, TIMESTAMP_FORMAT='pattern'])``: the
source's timestamp extractor, ksqlDB's checks with its texts, and ksqlDB's
query-validation cases ported (each naming its file and test, as in
``test_qtt_ports.py``; inputs without a timestamp in ksqlDB's test are written at 0)."""

from __future__ import annotations

import datetime as dt

import pytest

from tablestream.plan import SqlExpr
from tablestream.sql.compiler import compile_sql
from tablestream.sql.dialect import parse_script
from tablestream.sql.errors import SqlError
from tablestream.sql.isolated import StatementCompiler

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
         "has no exact equivalent in Spark"),
        ("STRING", "timestamp='ts', timestamp_format='EEE, dd MMM yyyy'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:the pattern letter 'E' (day of week) "
         "is not read by Spark's parser"),
        ("STRING", "timestamp='ts', timestamp_format='HH:mm:ss.nnnnnn'",
         "Invalid datetime format for config:TIMESTAMP_FORMAT, reason:the pattern letter 'n' (nano of second) "
         "has no exact equivalent in Spark"),
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


def test_on_create_as_select_the_column_stamps_the_records_written():
    script = (
        "CREATE STREAM TEST (K STRING KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON');"
        "CREATE STREAM TS WITH (timestamp='sink_ts') AS SELECT K, id as sink_ts, id FROM test;"
    )
    nodes = compile_sql(script).topology.nodes
    assert [type(n).__name__ for n in nodes] == ["StreamSource", "MapValues", "WithTimestamp", "ToTopic"]
    assert nodes[2].timestamp == SqlExpr("value.`SINK_TS`")


@pytest.mark.parametrize(
    ("statement", "message", "at"),
    [
        # timestampformat.json: "timestamp column with invalid data type should throw exception"
        ("CREATE STREAM TS WITH (timestamp='event_ts') AS SELECT K, id, event_ts FROM test;",
         "Timestamp column, `EVENT_TS`, should be LONG(INT64), TIMESTAMP, or a String with a timestamp_format specified",
         "timestamp="),
        # timestampformat.json: "timestamp with column that does not exist should throw exception", with K
        # projected (ksqlDB checks the timestamp column first; without K tablestream reports the missing key)
        ("CREATE STREAM TS WITH (timestamp='invalid_ts') AS SELECT K, id, event_ts FROM test;",
         "The TIMESTAMP column set in the WITH clause does not exist in the schema: 'INVALID_TS'", "timestamp="),
    ],
)
def test_create_as_select_refuses_a_timestamp_column_of_its_result_it_cannot_read(statement, message, at):
    source = "CREATE STREAM TEST (K STRING KEY, ID bigint, EVENT_TS int) WITH (kafka_topic='test_topic', value_format='JSON');"
    with pytest.raises(SqlError) as error:
        compile_sql(source + "\n" + statement)
    assert error.value.detail == message
    assert (error.value.line, error.value.column) == (2, statement.index(at) + 1)


def test_records_inserted_into_a_stream_are_read_with_its_timestamp_column():
    script = (
        "CREATE STREAM s (k BIGINT KEY, at BIGINT) WITH (kafka_topic='t', value_format='JSON', timestamp='at');"
        "CREATE STREAM other (k BIGINT KEY, at BIGINT) WITH (kafka_topic='o', value_format='JSON');"
        "INSERT INTO s SELECT * FROM other;"
        "CREATE STREAM out AS SELECT * FROM s;"
    )
    topology = compile_sql(script).topology
    stamped = [n for n in topology.nodes if type(n).__name__ == "WithTimestamp"]
    assert [n.timestamp for n in stamped] == [SqlExpr("value.`AT`")]
    # other's records, written to t, meet s's own (read with the extractor) in the merge.
    assert [type(n).__name__ for n in topology.nodes if stamped[0].name in n.parents] == ["Merge"]


def test_a_server_query_reads_a_topic_with_the_timestamp_column_of_its_stream_or_table():
    # Each query of a server is a plan of its own reading its sources' topics.
    statements = [
        "CREATE SOURCE TABLE users (id BIGINT PRIMARY KEY, at BIGINT) WITH (kafka_topic='u', value_format='JSON', "
        "timestamp='at');",
        "CREATE STREAM s (k BIGINT KEY, n BIGINT) WITH (kafka_topic='t', value_format='JSON');",
        "CREATE STREAM late WITH (timestamp='m') AS SELECT k, n * 2 AS m FROM s;",
        "CREATE STREAM joined AS SELECT late.k, m, at FROM late JOIN users ON late.k = users.id;",
    ]
    sources, number = {}, 0
    for sql in statements:
        compiler = StatementCompiler(sources, number=number)
        compiler.compile_statement(parse_script(sql)[0], sql)
        sources, number = compiler.result.sources, compiler.next_number
    extractors = {n.topics[0]: n.timestamp_extractor for n in compiler.result.topology.sources}
    assert extractors == {"LATE": SqlExpr("value.`M`"), "u": SqlExpr("value.`AT`")}


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


PORTS += [
    Port(
        'timestamp-extractor',
        'sink bigint timestamp column',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE STREAM TS WITH (timestamp='sink_ts') AS SELECT K, id as sink_ts, id FROM test;",
        ],
        inputs=[
            ('test_topic', None, {'ID': 1}, 1526075913000),
            ('test_topic', None, {'ID': -2}, 1526075913000),
            ('test_topic', None, {'ID': 3}, 1589234313000),
        ],
        outputs=[
            ('TS', None, {'SINK_TS': 1, 'ID': 1}, 1),
            ('TS', None, {'SINK_TS': 3, 'ID': 3}, 3),
        ],
    ),
    Port(
        'timestamp-extractor',
        'sink key column',
        [
            "CREATE STREAM TEST (K BIGINT KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE STREAM TS WITH (timestamp='K') AS SELECT * FROM test;",
        ],
        inputs=[
            ('test_topic', 1, {'ID': 100}, 1526075913000),
            ('test_topic', -2, {'ID': 200}, 1526075913000),
            ('test_topic', 3, {'ID': 300}, 1589234313000),
        ],
        outputs=[
            ('TS', 1, {'ID': 100}, 1),
            ('TS', 3, {'ID': 300}, 3),
        ],
    ),
    Port(
        'timestampformat',
        'override output timestamp for CSAS using a string TIMESTAMP_FORMAT',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, EVENT_TS varchar) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE STREAM TS WITH (timestamp='event_ts', timestamp_format='yyyy-MM-dd''T''HH:mm:ssX') AS SELECT K, id, event_ts FROM test;",
        ],
        inputs=[
            ('test_topic', None, {'ID': 1, 'EVENT_TS': '2018-05-11T21:58:33Z'}, 10),
            ('test_topic', None, {'ID': 2, 'EVENT_TS': 'not a timestamp'}, 10),
            ('test_topic', None, {'ID': 3, 'EVENT_TS': '2019-05-11T21:58:33Z'}, 10),
        ],
        outputs=[
            ('TS', None, {'ID': 1, 'EVENT_TS': '2018-05-11T21:58:33Z'}, 1526075913000),
            ('TS', None, {'ID': 3, 'EVENT_TS': '2019-05-11T21:58:33Z'}, 1557611913000),
        ],
    ),
    Port(
        'timestampformat',
        'override output timestamp for CTAS',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE TABLE TS WITH (timestamp='sink_ts') AS SELECT K, id as sink_ts, id FROM test;",
        ],
        inputs=[
            ('test_topic', 'a', {'ID': 1}, 1526075913000),
            ('test_topic', 'a', {'ID': -2}, 1526075913000),
            ('test_topic', 'a', {'ID': 3}, 1589234313000),
        ],
        outputs=[
            ('TS', 'a', {'SINK_TS': 1, 'ID': 1}, 1),
            ('TS', 'a', {'SINK_TS': 3, 'ID': 3}, 3),
        ],
    ),
    Port(
        'join-with-custom-timestamp',
        'stream table join with ts extractor both sides',
        [
            "CREATE STREAM S1 (ID BIGINT KEY, NAME varchar, TS bigint) WITH (timestamp='TS', kafka_topic='s1', value_format='JSON');",
            "CREATE TABLE  T1 (ID BIGINT PRIMARY KEY, F1 varchar, F2 varchar, RTS bigint) WITH (timestamp='RTS', kafka_topic='t1', value_format='JSON');",
            "CREATE STREAM S1_JOIN_T1 WITH(timestamp='TS') as SELECT S1.ID, S1.name as name, S1.ts as ts, T1.f1, T1.f2 from S1 inner join T1 ON s1.id = t1.id;",
        ],
        inputs=[
            ('t1', 0, {'F1': 'blah', 'F2': 'foo', 'RTS': 10000}, 10000),
            ('s1', 0, {'NAME': 'zero', 'TS': 0}, 10000),
            ('t1', 10, {'F1': 'foo', 'F2': 'bar', 'RTS': 13000}, 90000),
            ('s1', 10, {'NAME': '100', 'TS': 11000}, 800000),
            ('s1', 0, {'NAME': 'jan', 'TS': 8000}, 0),
        ],
        outputs=[
            ('S1_JOIN_T1', 0, {'NAME': 'zero', 'TS': 0, 'F1': 'blah', 'F2': 'foo'}, 0),
            ('S1_JOIN_T1', 10, {'NAME': '100', 'TS': 11000, 'F1': 'foo', 'F2': 'bar'}, 11000),
            ('S1_JOIN_T1', 0, {'NAME': 'jan', 'TS': 8000, 'F1': 'blah', 'F2': 'foo'}, 8000),
        ],
    ),
    Port(
        'join-with-custom-timestamp',
        'table table inner join with ts',
        [
            "CREATE TABLE S1 (ID BIGINT PRIMARY KEY, NAME varchar, TS bigint) WITH (timestamp='TS', kafka_topic='s1', value_format='JSON');",
            "CREATE TABLE S2 (ID BIGINT PRIMARY KEY, F1 varchar, F2 varchar) WITH (kafka_topic='s2', value_format='JSON');",
            "CREATE TABLE S1_JOIN_S2 WITH(timestamp='TS') as SELECT S1.ID, S1.name as name, S1.ts as ts, s2.f1, s2.f2 from S1 join S2 ON s1.id = s2.id;",
        ],
        inputs=[
            ('s1', 0, {'NAME': 'zero', 'TS': 0}, 0),
            ('s2', 0, {'F1': 'blah', 'F2': 'foo'}, 10000),
            ('s2', 10, {'F1': 'foo', 'F2': 'bar'}, 13000),
            ('s1', 10, {'NAME': '100', 'TS': 19000}, 22000),
            ('s1', 0, {'NAME': 'jan', 'TS': 18000}, 33000),
        ],
        outputs=[
            ('S1_JOIN_S2', 0, {'NAME': 'zero', 'TS': 0, 'F1': 'blah', 'F2': 'foo'}, 0),
            ('S1_JOIN_S2', 10, {'NAME': '100', 'TS': 19000, 'F1': 'foo', 'F2': 'bar'}, 19000),
            ('S1_JOIN_S2', 0, {'NAME': 'jan', 'TS': 18000, 'F1': 'blah', 'F2': 'foo'}, 18000),
        ],
    ),
    Port(
        'join-with-custom-timestamp',
        'table table inner join with ts extractor both sides',
        [
            "CREATE TABLE S1 (ID BIGINT PRIMARY KEY, NAME varchar, TS bigint) WITH (timestamp='TS', kafka_topic='s1', value_format='JSON');",
            "CREATE TABLE S2 (ID BIGINT PRIMARY KEY, F1 varchar, F2 varchar, RTS bigint) WITH (timestamp='RTS', kafka_topic='s2', value_format='JSON');",
            "CREATE TABLE S1_JOIN_S2 WITH(timestamp='TS') as SELECT S1.ID, S1.name as name, S1.ts as ts, s2.f1, s2.f2 from S1 join S2 ON s1.id = s2.id;",
        ],
        inputs=[
            ('s1', 0, {'NAME': 'zero', 'TS': 0}, 0),
            ('s2', 0, {'F1': 'blah', 'F2': 'foo', 'RTS': 10000}, 0),
            ('s2', 10, {'F1': 'foo', 'F2': 'bar', 'RTS': 13000}, 0),
            ('s1', 10, {'NAME': '100', 'TS': 11000}, 0),
            ('s1', 0, {'NAME': 'jan', 'TS': 8000}, 0),
        ],
        outputs=[
            ('S1_JOIN_S2', 0, {'NAME': 'zero', 'TS': 0, 'F1': 'blah', 'F2': 'foo'}, 0),
            ('S1_JOIN_S2', 10, {'NAME': '100', 'TS': 11000, 'F1': 'foo', 'F2': 'bar'}, 11000),
            ('S1_JOIN_S2', 0, {'NAME': 'jan', 'TS': 8000, 'F1': 'blah', 'F2': 'foo'}, 8000),
        ],
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)

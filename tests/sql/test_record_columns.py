"""Columns named KEY, VALUE or ROWTIME-like names beside the record's own: the plan's SQL
reads the record's key, value and timestamp as ``record.key``, ``record.value`` and
``record.rowtime``, so a value column called KEY or VALUE is read as a column.

The ports name their ksqlDB query-validation file and case (see test_qtt_ports.py)."""

from __future__ import annotations

import pytest

from tablestream.sql.compiler import compile_sql

from .test_qtt_ports import Port, by_key, run

pytestmark = pytest.mark.spark

PORTS = [
    Port(
        'key-schemas',
        'KEY value field name',
        [
            "CREATE STREAM INPUT (K STRING KEY, KEY STRING, ID bigint) WITH (kafka_topic='input',value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM INPUT;',
        ],
        inputs=[('input', '1', {'KEY': 'a', 'ID': 1}, 0)],
        outputs=[('OUTPUT', '1', {'KEY': 'a', 'ID': 1}, 0)],
    ),
    Port(
        'project-filter',
        'project and filter',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, NAME varchar, VALUE double) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE STREAM S1 as SELECT K, name FROM test where id > 100;',
        ],
        inputs=[('test_topic', '0', '0,zero,0.0', 0), ('test_topic', '100', '100,100,0.0', 0), ('test_topic', '101', '101,101,0.0', 0)],
        outputs=[('S1', '101', '101', 0)],
    ),
    Port(
        'project-filter',
        'project and negative filter',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, NAME varchar, VALUE double) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE STREAM S2 as SELECT K, name, id FROM test where id < -100;',
        ],
        inputs=[('test_topic', '0', '0,zero,0.0', 0), ('test_topic', '100', '100,100,0.0', 0), ('test_topic', '101', '-101,101,0.0', 0)],
        outputs=[('S2', '101', '101,-101', 0)],
    ),
    Port(
        'delimited',
        'select delimited value_format',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, NAME varchar, VALUE integer) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE STREAM S2 as SELECT K, id, name, value FROM test;',
        ],
        inputs=[
            ('test_topic', '0', '0,zero,0', 0), ('test_topic', '0', '0,100,100', 0),
            ('test_topic', '100', '100,100,500', 0), ('test_topic', '100', '100,100,100', 0),
        ],
        outputs=[
            ('S2', '0', '0,zero,0', 0), ('S2', '0', '0,100,100', 0),
            ('S2', '100', '100,100,500', 0), ('S2', '100', '100,100,100', 0),
        ],
    ),
    Port(
        'partition-by',
        'partition by with projection select some',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, NAME varchar, VALUE bigint) with (kafka_topic='test_topic', value_format = 'delimited');",
            'CREATE STREAM REPARTITIONED AS select name, id from TEST partition by name;',
        ],
        inputs=[('test_topic', '0', '0,zero,50', 0)],
        outputs=[('REPARTITIONED', 'zero', '0', 0)],
    ),
    Port(
        'partition-by',
        'partition by with projection select all',
        [
            "CREATE STREAM TEST (K STRING KEY, ID bigint, NAME varchar, VALUE bigint) with (kafka_topic='test_topic', value_format = 'delimited');",
            'CREATE STREAM REPARTITIONED AS select * from TEST partition by name;',
        ],
        inputs=[('test_topic', '1', '0,zero,50', 0)],
        outputs=[('REPARTITIONED', 'zero', '0,50,1', 0)],
    ),
    Port(
        'partition-by',
        'partition by with null value',
        [
            "CREATE STREAM TEST (K BIGINT KEY, ID bigint, NAME varchar, VALUE bigint) with (kafka_topic='test_topic', value_format = 'delimited');",
            'CREATE STREAM REPARTITIONED AS select * from TEST partition by name;',
        ],
        inputs=[('test_topic', 0, None, 0), ('test_topic', 0, '0,zero,50', 0)],
        outputs=[('REPARTITIONED', None, None, 0), ('REPARTITIONED', 'zero', '0,50,0', 0)],
    ),
    Port(
        'count',
        'auto-incrementing id',
        [
            "CREATE STREAM INPUT (VALUE INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT 1 as k, latest_by_offset(value) as value, count(1) AS ID FROM INPUT group by 1;',
        ],
        inputs=[('test_topic', None, {'VALUE': 12}, 0), ('test_topic', None, {'VALUE': 8367}, 0), ('test_topic', None, {'VALUE': 764}, 0)],
        outputs=[('OUTPUT', 1, {'VALUE': 12, 'ID': 1}, None), ('OUTPUT', 1, {'VALUE': 8367, 'ID': 2}, None), ('OUTPUT', 1, {'VALUE': 764, 'ID': 3}, None)],
    ),
]

# Scenarios of our own: expressions over a VALUE column, a KEY column beside the key, a
# stream re-keyed for a join that keeps its key columns, a table with a KEY column.
SCENARIOS = [
    Port(
        'scenario',
        'expressions over a VALUE column of a stream',
        [
            "CREATE STREAM S (K STRING KEY, VALUE INT, NAME STRING) WITH (kafka_topic='s', value_format='JSON');",
            'CREATE STREAM OUT AS SELECT K, VALUE * 2 AS DOUBLED, VALUE, UCASE(NAME) AS N FROM S WHERE VALUE > 1;',
        ],
        inputs=[('s', 'a', {'VALUE': 1, 'NAME': 'x'}, 5), ('s', 'b', {'VALUE': 3, 'NAME': 'y'}, 6), ('s', 'c', None, 7)],
        outputs=[('OUT', 'b', {'DOUBLED': 6, 'VALUE': 3, 'N': 'Y'}, 6)],
    ),
    Port(
        'scenario',
        'a KEY value column and the key in one projection',
        [
            "CREATE STREAM S (K INT KEY, KEY STRING, ROWKEY STRING) WITH (kafka_topic='s', value_format='JSON');",
            'CREATE STREAM OUT AS SELECT K, KEY, K + 1 AS NEXT, CONCAT(KEY, ROWKEY) AS BOTH FROM S;',
        ],
        inputs=[('s', 1, {'KEY': 'v', 'ROWKEY': 'w'}, 5)],
        outputs=[('OUT', 1, {'KEY': 'v', 'NEXT': 2, 'BOTH': 'vw'}, 5)],
    ),
    Port(
        'scenario',
        'a stream with a VALUE column re-keyed for a join keeps its key column',
        [
            "CREATE STREAM S (K STRING KEY, VALUE INT, UID BIGINT) WITH (kafka_topic='s', value_format='JSON');",
            "CREATE TABLE U (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='u', value_format='JSON');",
            'CREATE STREAM OUT AS SELECT S.UID, S.K, S.VALUE, U.NAME FROM S JOIN U ON S.UID = U.ID;',
        ],
        inputs=[('u', 7, {'NAME': 'ann'}, 1), ('s', 'a', {'VALUE': 10, 'UID': 7}, 2)],
        outputs=[('OUT', 7, {'K': 'a', 'VALUE': 10, 'NAME': 'ann'}, 2)],
    ),
    Port(
        'scenario',
        'a table with a KEY value column',
        [
            "CREATE TABLE T (ID BIGINT PRIMARY KEY, KEY STRING, VALUE INT) WITH (kafka_topic='t', value_format='JSON');",
            'CREATE TABLE OUT AS SELECT ID, KEY, VALUE + 1 AS V FROM T WHERE KEY IS NOT NULL;',
        ],
        inputs=[('t', 1, {'KEY': 'k', 'VALUE': 1}, 1), ('t', 1, {'KEY': None, 'VALUE': 2}, 2)],
        outputs=[('OUT', 1, {'KEY': 'k', 'V': 2}, 1), ('OUT', 1, None, 2)],
    ),
]


def check(spark, port: Port) -> None:
    """The port's records, compared as test_qtt_ports.py compares them."""
    got = run(spark, port)
    unchecked = {(t, repr(k)) for t, k, _, ts in port.outputs if ts is None}
    got = [(t, k, v, None if (t, repr(k)) in unchecked else ts) for t, k, v, ts in got]
    assert by_key(got) == by_key(port.outputs)


@pytest.mark.parametrize("port", PORTS + SCENARIOS, ids=str)
def test_record_columns(spark, port: Port):
    check(spark, port)


def test_plan_sql_reads_the_record_qualified():
    """The compiled plan reads the record's value as record.value and the columns called
    KEY and VALUE as fields of the value."""
    compiled = compile_sql("""
        CREATE STREAM S (K STRING KEY, `KEY` INT, VALUE INT) WITH (kafka_topic='s', value_format='JSON');
        CREATE STREAM OUT AS SELECT K, `KEY` + 1 AS X, VALUE FROM S;
    """)
    mapper = compiled.topology.nodes[1].mapper.sql
    assert mapper == "CASE WHEN record.value IS NULL THEN NULL ELSE STRUCT(CAST(value.`KEY` + 1 AS INT) AS `X`, value.`VALUE` AS `VALUE`) END"

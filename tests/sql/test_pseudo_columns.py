"""The pseudo-columns ROWTIME, ROWPARTITION and ROWOFFSET: a stream record's timestamp,
and the partition and offset it has in its topic. ksqlDB's query-validation cases
ported (each names its file and case; see test_qtt_ports.py and test_qtt_errors.py);
an input record without a timestamp in ksqlDB's case has timestamp 0 here."""

from __future__ import annotations

import pytest

from tablestream.sql.compiler import compile_sql
from tablestream.sql.errors import SqlError

from .test_qtt_errors import Case
from .test_qtt_errors import test_ported_error as check_error
from .test_qtt_ports import Port
from .test_record_columns import check

PORTS = [
    Port(
        'row-offset-and-partition',
        'Select ROWPARTITION/ROWOFFSET columns with aliases - stream',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT id, ROWPARTITION AS rp, ROWOFFSET AS ro, ROWTIME AS rt FROM input;',
        ],
        inputs=[
            ('test_topic', 1, {'FOO': 'a'}, 5),
            ('test_topic', 2, {'FOO': 'b'}, 6),
            ('test_topic', 3, {'FOO': 'c'}, 7),
        ],
        outputs=[
            ('OUTPUT', 1, {'RP': 0, 'RO': 0, 'RT': 5}, 5),
            ('OUTPUT', 2, {'RP': 0, 'RO': 1, 'RT': 6}, 6),
            ('OUTPUT', 3, {'RP': 0, 'RO': 2, 'RT': 7}, 7),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'CAST ROWPARTITION and ROWOFFSET',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT id, CAST(ROWPARTITION AS BIGINT) AS rp, CAST(ROWOFFSET AS DOUBLE) AS ro FROM input;',
        ],
        inputs=[
            ('test_topic', 1, {'FOO': 'a'}, 5),
            ('test_topic', 2, {'FOO': 'b'}, 6),
            ('test_topic', 3, {'FOO': 'c'}, 7),
        ],
        outputs=[
            ('OUTPUT', 1, {'RP': 0, 'RO': 0.0}, 5),
            ('OUTPUT', 2, {'RP': 0, 'RO': 1.0}, 6),
            ('OUTPUT', 3, {'RP': 0, 'RO': 2.0}, 7),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'ROWPARTITION and ROWOFFSET in mathematical expression',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT id, ROWPARTITION + 3 AS rp, ROWOFFSET * 3 AS ro FROM input;',
        ],
        inputs=[
            ('test_topic', 1, {'FOO': 'a'}, 5),
            ('test_topic', 2, {'FOO': 'b'}, 6),
            ('test_topic', 3, {'FOO': 'c'}, 7),
        ],
        outputs=[
            ('OUTPUT', 1, {'RP': 3, 'RO': 0}, 5),
            ('OUTPUT', 2, {'RP': 3, 'RO': 3}, 6),
            ('OUTPUT', 3, {'RP': 3, 'RO': 6}, 7),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'PARTITION BY ROWOFFSET',
        [
            "CREATE STREAM input (id INT KEY, val INT) WITH (kafka_topic='input', value_format='JSON');",
            'CREATE STREAM output AS select * FROM input PARTITION BY ROWOFFSET;',
        ],
        inputs=[
            ('input', 10, {'VAL': 5}, 0),
            ('input', 9, {'VAL': 6}, 0),
            ('input', 8, {'VAL': 7}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'ID': 10, 'VAL': 5}, None),
            ('OUTPUT', 1, {'ID': 9, 'VAL': 6}, None),
            ('OUTPUT', 2, {'ID': 8, 'VAL': 7}, None),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'PARTITION BY ROWPARTITION',
        [
            "CREATE STREAM input (id INT KEY, val INT) WITH (kafka_topic='input', value_format='JSON');",
            'CREATE STREAM output AS select * FROM input PARTITION BY ROWPARTITION;',
        ],
        inputs=[
            ('input', 10, {'VAL': 5}, 0),
            ('input', 9, {'VAL': 6}, 0),
            ('input', 8, {'VAL': 7}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'ID': 10, 'VAL': 5}, None),
            ('OUTPUT', 0, {'ID': 9, 'VAL': 6}, None),
            ('OUTPUT', 0, {'ID': 8, 'VAL': 7}, None),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'Filter using ROWPARTITION',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT *, ROWTIME AS rt FROM input WHERE ROWPARTITION = 0;',
        ],
        inputs=[
            ('test_topic', 1, {'FOO': 'a'}, 5),
            ('test_topic', 2, {'FOO': 'b'}, 6),
            ('test_topic', 3, {'FOO': 'c'}, 7),
        ],
        outputs=[
            ('OUTPUT', 1, {'FOO': 'a', 'RT': 5}, 5),
            ('OUTPUT', 2, {'FOO': 'b', 'RT': 6}, 6),
            ('OUTPUT', 3, {'FOO': 'c', 'RT': 7}, 7),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'Filter using ROWOFFSET',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT *, ROWTIME AS rt FROM input WHERE ROWOFFSET % 3 = 0;',
        ],
        inputs=[
            ('test_topic', 1, {'FOO': 'a'}, 5),
            ('test_topic', 2, {'FOO': 'b'}, 6),
            ('test_topic', 3, {'FOO': 'c'}, 7),
            ('test_topic', 4, {'FOO': 'd'}, 8),
        ],
        outputs=[
            ('OUTPUT', 1, {'FOO': 'a', 'RT': 5}, 5),
            ('OUTPUT', 4, {'FOO': 'd', 'RT': 8}, 8),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'GROUP BY ROWPARTITION',
        [
            "CREATE STREAM L (A INT KEY, B INT) WITH (kafka_topic='LEFT', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(B) AS bc, ROWPARTITION AS rp FROM L GROUP BY ROWPARTITION;',
        ],
        inputs=[
            ('LEFT', 1, {'B': 100}, 11),
            ('LEFT', 2, {'B': 100}, 11),
            ('LEFT', 3, {'B': 100}, 11),
        ],
        outputs=[
            ('OUTPUT', 0, {'BC': 1}, 11),
            ('OUTPUT', 0, {'BC': 2}, 11),
            ('OUTPUT', 0, {'BC': 3}, 11),
        ],
    ),
    Port(
        'row-offset-and-partition',
        'GROUP BY ROWOFFSET',
        [
            "CREATE STREAM L (A INT KEY, B INT) WITH (kafka_topic='LEFT', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(B) as bc, ROWOFFSET AS ro FROM L GROUP BY ROWOFFSET;',
        ],
        inputs=[
            ('LEFT', 1, {'B': 1}, 11),
            ('LEFT', 1, {'B': 5}, 11),
            ('LEFT', 1, {'B': 10}, 11),
        ],
        outputs=[
            ('OUTPUT', 0, {'BC': 1}, 11),
            ('OUTPUT', 1, {'BC': 1}, 11),
            ('OUTPUT', 2, {'BC': 1}, 11),
        ],
    ),
]

ERRORS = [
    Case(
        'row-offset-and-partition',
        'create ROWOFFSET and ROWPARTITION sink user columns as STRINGs',
        [
            "CREATE STREAM input (id INT KEY, val STRING, other_val STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT id, val AS ROWPARTITION, other_val AS ROWOFFSET FROM input;',
        ],
        '`ROWPARTITION` is a reserved column name. You cannot use it as an alias for a column',
        (2, 43),
    ),
    Case(
        'row-offset-and-partition',
        'test ROWOFFSET and ROWPARTITION sink user columns with pseudocolumn data types',
        [
            "CREATE STREAM input (id INT KEY, val INTEGER, other_val BIGINT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT id, val AS ROWPARTITION, other_val AS ROWOFFSET FROM input;',
        ],
        '`ROWPARTITION` is a reserved column name. You cannot use it as an alias for a column',
        (2, 43),
    ),
    Case(
        'row-offset-and-partition',
        'create ROWOFFSET and ROWPARTITION source user columns as STRINGs',
        [
            "CREATE STREAM input (id INT KEY, ROWPARTITION string, ROWOFFSET string) WITH (kafka_topic='test_topic', value_format='JSON');",
        ],
        "'ROWPARTITION' is a reserved column name. You cannot use it as a name for a column",
        (1, 34),
    ),
    Case(
        'row-offset-and-partition',
        'INSERT INTO ROWPARTITION should fail',
        [
            "CREATE STREAM a (id INT KEY, val INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE STREAM b (id INT KEY) WITH (kafka_topic='test_topic_2', value_format='JSON');",
            'INSERT INTO a SELECT id, ROWPARTITION from b EMIT CHANGES;',
        ],
        'Reserved column name in select: `ROWPARTITION`. Please remove or alias the column',
        (3, 26),
    ),
    Case(
        'row-offset-and-partition',
        'INSERT INTO ROWOFFSET should fail',
        [
            "CREATE STREAM a (id INT KEY, val BIGINT) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE STREAM b (id INT KEY) WITH (kafka_topic='test_topic_2', value_format='JSON');",
            'INSERT INTO a SELECT id, ROWOFFSET from b EMIT CHANGES;',
        ],
        'Reserved column name in select: `ROWOFFSET`. Please remove or alias the column',
        (3, 26),
    ),
    Case(
        'row-offset-and-partition',
        'Should fail if select ROWPARTITION without aliases',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT id, ROWPARTITION FROM input;',
        ],
        'Reserved column name in select: `ROWPARTITION`. Please remove or alias the column',
        (2, 36),
    ),
    Case(
        'row-offset-and-partition',
        'Should fail if select ROWOFFSET without aliases',
        [
            "CREATE STREAM input (id INT KEY, foo STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM output AS SELECT id, ROWOFFSET FROM input;',
        ],
        'Reserved column name in select: `ROWOFFSET`. Please remove or alias the column',
        (2, 36),
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_error(case: Case):
    check_error(case)


def test_select_star_leaves_the_pseudo_columns_out():
    compiled = compile_sql("""
        CREATE STREAM S (ID INT KEY, FOO STRING) WITH (kafka_topic='s', value_format='JSON');
        CREATE STREAM OUT AS SELECT * FROM S PARTITION BY FOO;
    """)
    assert [c.name for c in compiled.sources["OUT"].value_columns] == ["ID"]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            "CREATE TABLE T (ID INT PRIMARY KEY, FOO STRING) WITH (kafka_topic='t', value_format='JSON');"
            "CREATE TABLE OUT AS SELECT ID, ROWOFFSET AS RO FROM T;",
            "The pseudo-column T.ROWOFFSET cannot be used in SELECT yet",
        ),
        (
            "CREATE STREAM S (ID INT KEY, FOO STRING) WITH (kafka_topic='s', value_format='JSON');"
            "CREATE STREAM MID AS SELECT ID, FOO FROM S;"
            "CREATE STREAM OUT AS SELECT ID, ROWPARTITION AS RP FROM MID;",
            "The pseudo-column MID.ROWPARTITION cannot be used in SELECT yet",
        ),
    ],
    ids=["a table's", "a query's output"],
)
def test_positions_of_tables_and_query_outputs_are_refused(sql, message):
    """A table's row and a query's output (read from the query, not from its topic) have
    no partition and offset of their own here."""
    with pytest.raises(SqlError, match=message):
        compile_sql(sql)

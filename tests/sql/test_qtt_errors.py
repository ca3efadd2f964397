"""ksqlDB's query-validation tests that expect an error, ported: the same statements,
the same error text, at the same line and column.

Source: confluentinc/ksql, ``ksqldb-functional-tests/src/test/resources/
query-validation-tests/<file>.json`` (master of 2026). Each case names its file and
test; ``{FORMAT}`` is replaced by the test's first format. ksqlDB's message is the
expected one-line detail; ours adds the position (``Line: l, Col: c:``) to every error
(ksqlDB to some) and the statement. ``more``: ksqlDB adds a second line of advice that
the one-line message leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tablestream.sql.compiler import compile_sql
from tablestream.sql.errors import SqlError, statement_excerpt


@dataclass(frozen=True)
class Case:
    file: str
    name: str
    statements: list[str]
    message: str
    position: tuple[int, int]
    format: str | None = None
    more: bool = False

    def __str__(self) -> str:
        return f"{self.file}: {self.name}"


CASES = [
    Case(
        'stream-table-join',
        'Should fail on outer-join',
        [
            "CREATE STREAM test_stream (id1 BIGINT KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE test_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE STREAM output AS SELECT id1, id2, f1, f2 FROM test_stream FULL OUTER JOIN test_table ON id1 = id2;',
        ],
        'Invalid join type: full-outer join not supported for stream-table join. Got TEST_STREAM [FULL] OUTER JOIN TEST_TABLE',
        (3, 82),
    ),
    Case(
        'stream-table-join',
        'Should fail on incorrect join order for inner-join',
        [
            "CREATE TABLE test_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE STREAM test_stream (id2 BIGINT KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, id2, f1, f2 FROM test_table JOIN test_stream ON id1 = id2;',
        ],
        'Invalid join order: table-stream joins are not supported; only stream-table joins. Got TEST_TABLE [INNER] JOIN TEST_STREAM',
        (3, 69),
    ),
    Case(
        'stream-table-join',
        'Should fail on incorrect join order for left-join',
        [
            "CREATE TABLE test_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE STREAM test_stream (id2 BIGINT KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, id2, f1, f2 FROM test_table LEFT JOIN test_stream ON id1 = id2;',
        ],
        'Invalid join order: table-stream joins are not supported; only stream-table joins. Got TEST_TABLE LEFT [OUTER] JOIN TEST_STREAM',
        (3, 74),
    ),
    Case(
        'stream-table-join',
        'Should fail on table-side non-key join attribute for inner-join',
        [
            "CREATE STREAM test_stream (id1 BIGINT KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE test_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE STREAM output AS SELECT id1, id2, f1, f2 FROM test_stream JOIN test_table ON id1 = f2;',
        ],
        "Invalid join condition: stream-table joins require to join on the table's primary key. Got TEST_STREAM.ID1 = TEST_TABLE.F2",
        (3, 85),
    ),
    Case(
        'stream-table-join',
        'Should fail on table-side non-key join attribute for left-join',
        [
            "CREATE STREAM test_stream (id1 BIGINT KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='AVRO');",
            "CREATE TABLE test_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='AVRO');",
            'CREATE STREAM output AS SELECT id1, id2, f1, f2 FROM test_stream LEFT JOIN test_table ON id1 = f2;',
        ],
        "Invalid join condition: stream-table joins require to join on the table's primary key. Got TEST_STREAM.ID1 = TEST_TABLE.F2",
        (3, 90),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table JOIN right_table ON id1 = f2;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LEFT_TABLE.ID1 = RIGHT_TABLE.F2',
        (3, 79),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join -- revers join condition order',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table JOIN right_table ON f2 = id1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got RIGHT_TABLE.F2 = LEFT_TABLE.ID1',
        (3, 79),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for left-join',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table LEFT JOIN right_table ON id1 = f2;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LEFT_TABLE.ID1 = RIGHT_TABLE.F2',
        (3, 84),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for left-join -- revers join condition order',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table LEFT JOIN right_table ON f2 = id1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got RIGHT_TABLE.F2 = LEFT_TABLE.ID1',
        (3, 84),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for outer-join',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table FULL OUTER JOIN right_table ON id1 = f2;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LEFT_TABLE.ID1 = RIGHT_TABLE.F2',
        (3, 90),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for outer-join -- reverse join condition order',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table FULL OUTER JOIN right_table ON f2 = id1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got RIGHT_TABLE.F2 = LEFT_TABLE.ID1',
        (3, 90),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join with qualifiers',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table JOIN right_table ON left_table.id1 = right_table.f2;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LEFT_TABLE.ID1 = RIGHT_TABLE.F2',
        (3, 79),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join with qualifiers -- reverse join condition order',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table JOIN right_table ON right_table.f2 = left_table.id1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got RIGHT_TABLE.F2 = LEFT_TABLE.ID1',
        (3, 79),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join with alias',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table AS lt JOIN right_table AS rt ON lt.id1 = rt.f2;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LT.ID1 = RT.F2',
        (3, 91),
    ),
    Case(
        'table-table-join',
        'Should fail on right non-key attribute for inner-join with alias -- reverse join condition order',
        [
            "CREATE TABLE left_table (id1 BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, f1, f2 FROM left_table AS lt JOIN right_table AS rt ON rt.f2 = lt.id1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got RT.F2 = LT.ID1',
        (3, 91),
    ),
    Case(
        'fk-join',
        "Should fail if types in join condition don't match",
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, foreign_key_wrong_type VARCHAR) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT * FROM left_table JOIN right_table ON foreign_key_wrong_type = r_id;',
        ],
        "Invalid join condition: types don't match. Got LEFT_TABLE.FOREIGN_KEY_WRONG_TYPE{STRING} = RIGHT_TABLE.R_ID{BIGINT}",
        (3, 69),
    ),
    Case(
        'fk-join',
        "Should fail if types in join condition don't match (expression)",
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON CAST(foreign_key AS STRING) = r_id;',
        ],
        "Invalid join condition: types don't match. Got CAST(LEFT_TABLE.FOREIGN_KEY AS STRING){STRING} = RIGHT_TABLE.R_ID{BIGINT}",
        (3, 93),
    ),
    Case(
        'fk-join',
        'Should not allow join on partial right source key',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id_1 BIGINT PRIMARY KEY, r_id_2 BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT * FROM left_table JOIN right_table ON foreign_key = r_id_1;',
        ],
        'Invalid join condition: table-table joins require to join on the primary key of the right input table. Got LEFT_TABLE.FOREIGN_KEY = RIGHT_TABLE.R_ID_1',
        (3, 69),
    ),
    Case(
        'fk-join',
        'Should fail if single result key column is missing in projection for inner-join',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, f1 VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT f1, foreign_key, r_id, f2 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        'Primary key column missing in projection. For foreign-key table-table joins, the projection must include all primary key columns from the left input table (`LEFT_TABLE`). Missing column: `L_ID`',
        (3, 24),
    ),
    Case(
        'fk-join',
        'Should fail with duplicate left source key in projection',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, f1 VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, l_id AS l_id_duplicate, f1, foreign_key r_id, f2 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        'The projection contains a key column (`LEFT_TABLE_L_ID`) more than once, aliased as: L_ID and L_ID_DUPLICATE',
        (3, 37),
    ),
    Case(
        'fk-join',
        'Should fail on a FK right join',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table RIGHT JOIN right_table ON foreign_key = r_id;',
        ],
        'RIGHT OUTER JOIN on a foreign key is not supported',
        (3, 79),
    ),
    Case(
        'joins',
        'stream stream left join - invalid join field - contains literal',
        [
            "CREATE STREAM TEST1 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t left join test2 tt ON t.id = 0;',
        ],
        "Invalid comparison expression '0' in join '(T.ID = 0)'. Each side of the join comparision must contain references from exactly one source",
        (3, 76),
    ),
    Case(
        'joins',
        'stream stream left join - invalid join field on lhs- contains literal',
        [
            "CREATE STREAM TEST1 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t left join test2 tt ON 0 = t.id;',
        ],
        "Invalid comparison expression '0' in join '(0 = T.ID)'. Each side of the join comparision must contain references from exactly one source",
        (3, 69),
    ),
    Case(
        'joins',
        'stream stream right join - invalid join field - contains literal',
        [
            "CREATE STREAM TEST1 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t RIGHT JOIN test2 tt ON t.id = 0;',
        ],
        "Invalid comparison expression '0' in join '(T.ID = 0)'. Each side of the join comparision must contain references from exactly one source",
        (3, 77),
    ),
    Case(
        'joins',
        'stream stream right join - invalid join field on lhs- contains literal',
        [
            "CREATE STREAM TEST1 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t RIGHT JOIN test2 tt ON 0 = t.id;',
        ],
        "Invalid comparison expression '0' in join '(0 = T.ID)'. Each side of the join comparision must contain references from exactly one source",
        (3, 70),
    ),
    Case(
        'joins',
        'stream stream left join - invalid left join expression - field does not exist',
        [
            "CREATE STREAM TEST1 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t left join test2 tt ON t.iid= tt.id;',
        ],
        "JOIN ON column 'T.IID' cannot be resolved",
        (3, 69),
    ),
    Case(
        'joins',
        'stream stream left join - invalid right join expression - field does not exist',
        [
            "CREATE STREAM TEST1 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t left join test2 tt ON t.id= tt.iid;',
        ],
        "JOIN ON column 'TT.IID' cannot be resolved",
        (3, 75),
    ),
    Case(
        'joins',
        'stream stream right join - invalid left join expression - field does not exist',
        [
            "CREATE STREAM TEST1 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t RIGHT JOIN test2 tt ON t.iid = tt.id;',
        ],
        "JOIN ON column 'T.IID' cannot be resolved",
        (3, 70),
    ),
    Case(
        'joins',
        'stream stream right join - invalid right join expression - field does not exist',
        [
            "CREATE STREAM TEST1 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE STREAM TEST2 (ID INT KEY, IGNORED STRING) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM test1 t RIGHT JOIN test2 tt ON t.id = tt.iid;',
        ],
        "JOIN ON column 'TT.IID' cannot be resolved",
        (3, 77),
    ),
    Case(
        'joins',
        'Should fail on ambiguous join attribute',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, id2, f1, f2 FROM left_table JOIN right_table ON id = id;',
        ],
        "Column 'ID' is ambiguous. Could be LEFT_TABLE.ID or RIGHT_TABLE.ID",
        (3, 84),
    ),
    Case(
        'joins',
        'Should fail on unknown qualifier -- left join attribute',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, id2, f1, f2 FROM left_table JOIN right_table ON unknown.id = id;',
        ],
        "'UNKNOWN' is not a valid stream/table name or alias",
        (3, 84),
    ),
    Case(
        'joins',
        'Should fail on unknown qualifier -- right join attribute',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT id1, id2, f1, f2 FROM left_table JOIN right_table ON id = unknown.id;',
        ],
        "'UNKNOWN' is not a valid stream/table name or alias",
        (3, 89),
    ),
    Case(
        'joins',
        'table-table key-to-key - SR-enabled key format - incompatible schemas',
        [
            "CREATE TABLE T1 (ID INT PRIMARY KEY, VAL STRING) WITH (kafka_topic='t1', key_format='AVRO', value_format='JSON');",
            "CREATE TABLE T2 (ID BIGINT PRIMARY KEY, FOO INT) WITH (kafka_topic='t2', key_format='AVRO', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT T2.ID, T1.VAL FROM T1 JOIN T2 ON T1.ID = T2.ID;',
        ],
        "Invalid join condition: types don't match. Got T1.ID{INTEGER} = T2.ID{BIGINT}",
        (3, 64),
    ),
    Case(
        'partition-by',
        'key in projection more than once',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) with (kafka_topic='input', value_format='JSON');",
            'CREATE STREAM OUTPUT AS select NAME, NAME AS NAME2, ID from INPUT partition by NAME;',
        ],
        'The projection contains a key column (`NAME`) more than once, aliased as: NAME and NAME2',
        (2, 38),
    ),
    Case(
        'partition-by',
        'expression - missing key from projection',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) with (kafka_topic='input', value_format='JSON');",
            'CREATE STREAM OUTPUT AS select NAME, ID from INPUT partition by ABS(ID);',
        ],
        'The query used to build `OUTPUT` must include the partitioning expression ABS(INPUT.ID) in its projection (eg, SELECT ABS(INPUT.ID)...)',
        (2, 25),
    ),
    Case(
        'partition-by',
        'expression - missing key from projection - with value column of same name',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) with (kafka_topic='input', value_format='JSON');",
            'CREATE STREAM OUTPUT AS select NAME AS ID, NAME from INPUT partition by ID;',
        ],
        'The query used to build `OUTPUT` must include the partitioning expression INPUT.ID in its projection (eg, SELECT INPUT.ID...)',
        (2, 25),
    ),
    Case(
        'partition-by',
        'multiple columns including null',
        [
            "CREATE STREAM INPUT (NAME STRING, ID INT, AGE INT) with (kafka_topic='input', format='JSON');",
            'CREATE STREAM OUTPUT AS select ID, AGE, NAME from INPUT partition by NULL, ID;',
        ],
        'Cannot PARTITION BY multiple columns including NULL',
        (2, 1),
    ),
    Case(
        'partition-by',
        'multiple columns - missing key from projection',
        [
            "CREATE STREAM INPUT (NAME STRING, ID INT, AGE INT) with (kafka_topic='input', format='JSON');",
            'CREATE STREAM OUTPUT AS select ID, NAME from INPUT partition by ID, AGE;',
        ],
        'The query used to build `OUTPUT` must include the partitioning expressions INPUT.ID and INPUT.AGE in its projection (eg, SELECT INPUT.ID, INPUT.AGE...)',
        (2, 25),
    ),
    Case(
        'partition-by',
        'partition by output col should give good error message',
        [
            "CREATE STREAM INPUT (NAME STRING, ID INT, AGE INT) with (kafka_topic='input', format='JSON');",
            'CREATE STREAM OUTPUT AS select ID, AGE, NAME AS something from INPUT partition by something;',
        ],
        "PARTITION BY column 'SOMETHING' cannot be resolved. 'SOMETHING' must be a column in the source schema since PARTITION BY is applied on the input",
        (2, 83),
    ),
    Case(
        'project-filter',
        'key in projection more than once',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT ID, ID AS ID2, NAME FROM INPUT;',
        ],
        'The projection contains a key column (`ID`) more than once, aliased as: ID and ID2',
        (2, 36),
    ),
    Case(
        'project-filter',
        'projection with missing key column',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT NAME FROM INPUT;',
        ],
        'The query used to build `OUTPUT` must include the key column ID in its projection (eg, SELECT ID...)',
        (2, 25),
    ),
    Case(
        'project-filter',
        'projection with missing multi-key column',
        [
            "CREATE STREAM INPUT (ID INT KEY, ID2 INT KEY, NAME STRING) WITH (kafka_topic='test_topic', format='JSON');",
            'CREATE STREAM OUTPUT as SELECT ID, NAME FROM INPUT;',
        ],
        'The query used to build `OUTPUT` must include the key columns ID and ID2 in its projection (eg, SELECT ID, ID2...)',
        (2, 25),
    ),
    Case(
        'project-filter',
        'projection with missing key column - with value column with same name',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT NAME AS ID, NAME FROM INPUT;',
        ],
        'The query used to build `OUTPUT` must include the key column ID in its projection (eg, SELECT ID...)',
        (2, 25),
    ),
    Case(
        'project-filter',
        'projection no value columns',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT ID FROM INPUT;',
        ],
        'The projection contains no value columns',
        (2, 1),
    ),
    Case(
        'group-by',
        'all columns - repartition (stream->table)',
        [
            "CREATE STREAM INPUT (NAME STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT NAME FROM INPUT GROUP BY NAME HAVING COUNT(NAME) = 1;',
        ],
        'The projection contains no value columns',
        (2, 1),
    ),
    Case(
        'group-by',
        'all columns - no repartition (stream->table)',
        [
            "CREATE STREAM INPUT (NAME STRING KEY, V0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT NAME FROM INPUT GROUP BY NAME HAVING COUNT(NAME) = 1;',
        ],
        'The projection contains no value columns',
        (2, 1),
    ),
    Case(
        'group-by',
        'single expression - key in projection more than once',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='input',value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT NAME, NAME AS NAME2, COUNT(1) FROM INPUT GROUP BY NAME;',
        ],
        'The projection contains a key column more than once: `NAME` and `NAME2`',
        (2, 37),
    ),
    Case(
        'group-by',
        'single expression - key missing from projection - with other column of same name',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='input',value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(1) AS NAME FROM INPUT GROUP BY NAME;',
        ],
        'The query used to build `OUTPUT` must include the grouping expression NAME in its projection (eg, SELECT NAME...)',
        (2, 24),
    ),
    Case(
        'group-by',
        'single expression - key missing from projection',
        [
            "CREATE STREAM INPUT (ID INT KEY, NAME STRING) WITH (kafka_topic='input',value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(1) FROM INPUT GROUP BY NAME;',
        ],
        'The query used to build `OUTPUT` must include the grouping expression NAME in its projection (eg, SELECT NAME...)',
        (2, 24),
    ),
    Case(
        'group-by',
        'multiple expressions - single key missing from projection',
        [
            "CREATE STREAM TEST (f1 INT KEY, f2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f2, COUNT(*) FROM TEST GROUP BY f1, f2;',
        ],
        'The query used to build `OUTPUT` must include the grouping expression F1 in its projection (eg, SELECT F1...)',
        (2, 24),
    ),
    Case(
        'group-by',
        'multiple expression - key in projection more than once',
        [
            "CREATE STREAM TEST (f1 INT KEY, f2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1, f2, f1 AS F3, COUNT(*) FROM TEST GROUP BY f1, f2;',
        ],
        'The projection contains a key column more than once: `F1` and `F3`',
        (2, 39),
    ),
    Case(
        'group-by',
        'multiple expressions - all keys missing from projection',
        [
            "CREATE STREAM TEST (f1 INT KEY, f2 INT, f3 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(*) FROM TEST GROUP BY f1, f2, f3;',
        ],
        'The query used to build `OUTPUT` must include the grouping expressions F1, F2 and F3 in its projection (eg, SELECT F1, F2, F3...)',
        (2, 24),
    ),
    Case(
        'group-by',
        'with key alias that clashes with value alias',
        [
            "CREATE STREAM TEST (ID INT KEY, data STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT DATA AS COUNT, COUNT(*) AS COUNT FROM TEST GROUP BY DATA;',
        ],
        'Duplicate value columns found in schema: `COUNT` BIGINT',
        (2, 46),
    ),
    Case(
        'group-by',
        'map used in non-aggregate function in select when group by uses subscript',
        [
            "CREATE STREAM INPUT (id INT KEY, col1 MAP<VARCHAR, VARCHAR>) WITH (kafka_topic='test_topic', value_format='json');",
            "CREATE TABLE OUTPUT AS SELECT col1['foo'], AS_VALUE(col1) AS foo, COUNT(*) FROM input GROUP BY col1['foo'];",
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: AS_VALUE(COL1)',
        (2, 24),
        more=True,
    ),
    Case(
        'group-by',
        'duplicate expressions',
        [
            "CREATE STREAM TEST (ID INT KEY, data STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(*) FROM TEST GROUP BY DATA, TEST.DATA;',
        ],
        'Duplicate GROUP BY expression: TEST.DATA',
        (2, 65),
    ),
    Case(
        'group-by',
        'with aggregate arithmetic involving source field not in group by (table->table)',
        [
            "CREATE TABLE TEST (ID INT PRIMARY KEY, f0 INT, f1 INT, f2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1 * SUM(f2) FROM TEST GROUP BY f0;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: (F1 * SUM(F2))',
        (2, 24),
        more=True,
    ),
    Case(
        'group-by',
        'function with select field that is a subset of group by (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, source VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(source, 0, 1) AS Thing, COUNT(*) FROM TEST GROUP BY SUBSTRING(source, 0, 2);',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: SUBSTRING(SOURCE, 0, 1)',
        (2, 24),
    ),
    Case(
        'group-by',
        'function with select field that is a subset of group by (table->table)',
        [
            "CREATE TABLE TEST (ID INT PRIMARY KEY, user INT, region VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(region, 7, 1), COUNT(*) FROM TEST GROUP BY SUBSTRING(region, 7, 2);',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: SUBSTRING(REGION, 7, 1)',
        (2, 24),
    ),
    Case(
        'group-by',
        'function with select field that is a superset of group by (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, source VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(source, 0, 3), COUNT(*) FROM TEST GROUP BY SUBSTRING(source, 0, 2);',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: SUBSTRING(SOURCE, 0, 3)',
        (2, 24),
    ),
    Case(
        'group-by',
        'function with select field that is a superset of group by (table->table)',
        [
            "CREATE TABLE TEST (K INT PRIMARY KEY, user INT, region VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(region, 7, 3), COUNT(*) FROM TEST GROUP BY SUBSTRING(region, 7, 2);',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: SUBSTRING(REGION, 7, 3)',
        (2, 24),
    ),
    Case(
        'group-by',
        'function with having field that is a subset of group by (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, source VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(source, 0, 2) AS Thing, COUNT(*) FROM TEST GROUP BY SUBSTRING(source, 0, 2) HAVING LEN(source) < 2;',
        ],
        'Non-aggregate HAVING expression not part of GROUP BY: SOURCE',
        (2, 128),
    ),
    Case(
        'group-by',
        'string concat using + op with projection field in wrong order (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, f1 VARCHAR, f2 VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1 + f2, COUNT(*) FROM TEST GROUP BY f2 + f1;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: (F1 + F2)',
        (2, 24),
    ),
    Case(
        'group-by',
        'string concat using + op with projection field in wrong order (table->table)',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, user INT, subregion VARCHAR, region VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT subregion + region, COUNT(*) FROM TEST GROUP BY region + subregion;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: (SUBREGION + REGION)',
        (2, 24),
    ),
    Case(
        'group-by',
        'string concat with separate fields in projection (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, f1 VARCHAR, f2 VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1, f2, COUNT(*) FROM TEST GROUP BY f2 + f1;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: F1, F2',
        (2, 24),
    ),
    Case(
        'group-by',
        'string concat with separate fields in projection (table->table)',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, user INT, subregion VARCHAR, region VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT subregion, region, COUNT(*) FROM TEST GROUP BY region + subregion;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: SUBREGION, REGION',
        (2, 24),
    ),
    Case(
        'group-by',
        'arithmetic binary expression with projection out-of-order & non-commutative group by (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, f1 INT, f2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1 - f2, COUNT(*) FROM TEST GROUP BY f2 - f1;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: (F1 - F2)',
        (2, 24),
    ),
    Case(
        'group-by',
        'arithmetic binary expression with projection out-of-order & non-commutative group by (table->table)',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, f0 INT, f1 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT f1 - f0, COUNT(*) FROM TEST GROUP BY f0 - f1;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: (F1 - F0)',
        (2, 24),
    ),
    Case(
        'group-by',
        'with non-aggregate projection field not in group by (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR, d2 VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT d1, COUNT(*) FROM TEST GROUP BY d2;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: D1',
        (2, 24),
    ),
    Case(
        'group-by',
        'with non-aggregate projection field not in group by (table->table)',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, d1 VARCHAR, d2 VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT d1, COUNT(*) FROM TEST GROUP BY d2;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: D1',
        (2, 24),
    ),
    Case(
        'group-by',
        'aggregate function (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR, d2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(*) FROM TEST GROUP BY SUM(d2);',
        ],
        'GROUP BY does not support aggregate functions: SUM is an aggregate function',
        (2, 59),
    ),
    Case(
        'group-by',
        'aggregate function nested in arithmetic (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR, d2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(*) FROM TEST GROUP BY 1 + SUM(d2);',
        ],
        'GROUP BY does not support aggregate functions: SUM is an aggregate function',
        (2, 63),
    ),
    Case(
        'group-by',
        'aggregate function nested in UDF (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR, d2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT COUNT(*) FROM TEST GROUP BY SUBSTRING(d1, SUM(d2), 1);',
        ],
        'GROUP BY does not support aggregate functions: SUM is an aggregate function',
        (2, 73),
    ),
    Case(
        'group-by',
        'without aggregate functions (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR, d2 INT) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUBSTRING(d1, 1, 2) FROM TEST GROUP BY d2;',
        ],
        'GROUP BY requires aggregate functions in either the SELECT or HAVING clause',
        (2, 70),
    ),
    Case(
        'group-by',
        'UDAF nested in UDAF in select expression (stream->table)',
        [
            "CREATE STREAM TEST (K STRING KEY, d1 VARCHAR) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT SUM(COUNT()) FROM TEST GROUP BY d1;',
        ],
        'Aggregate functions can not be nested: SUM(COUNT())',
        (2, 31),
    ),
    Case(
        'insert-into',
        'table',
        [
            "CREATE STREAM SOURCE (K STRING KEY, d1 VARCHAR) WITH (kafka_topic='SOURCE', value_format='DELIMITED');",
            "CREATE TABLE OUTPUT (d1 STRING PRIMARY KEY, COUNT BIGINT) WITH (kafka_topic='OUTPUT', value_format='DELIMITED');",
            'INSERT INTO OUTPUT SELECT d1, COUNT() AS COUNT FROM SOURCE GROUP BY d1;',
        ],
        'INSERT INTO can only be used to insert into a stream. OUTPUT is a table',
        (3, 13),
    ),
    Case(
        'insert-into',
        'unknown',
        [
            "CREATE STREAM SOURCE (K STRING KEY, d1 VARCHAR) WITH (kafka_topic='SOURCE', value_format='DELIMITED');",
            'INSERT INTO UNKNOWN SELECT d1, COUNT() FROM SOURCE GROUP BY d1;',
        ],
        'Source `UNKNOWN` does not exist',
        (2, 13),
    ),
    Case(
        'insert-into',
        'insert into source name without quotes',
        [
            'CREATE STREAM "input" (id INT KEY, val STRING) WITH (kafka_topic=\'test_topic\', value_format=\'JSON\');',
            "INSERT INTO input (id, val) VALUES (1, 'hello');",
        ],
        'Cannot insert values into an unknown stream/table: `INPUT`',
        (2, 13),
        more=True,
    ),
    Case(
        'insert-into',
        'insert into source name with quotes',
        [
            "CREATE STREAM input (id INT KEY, val STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'INSERT INTO "input" (id, val) VALUES (1, \'hello\');',
        ],
        'Cannot insert values into an unknown stream/table: `input`',
        (2, 13),
        more=True,
    ),
    Case(
        'source-table',
        'rejects INSERT VALUES statements for source streams',
        [
            "CREATE SOURCE TABLE INPUT (K INT PRIMARY KEY, text STRING) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            "INSERT INTO INPUT VALUES (1, 'b');",
        ],
        'Cannot insert values into read-only table: INPUT',
        (2, 13),
    ),
    Case(
        'source-table',
        'rejects DROP ... DELETE TOPIC statements for source tables',
        [
            "CREATE SOURCE TABLE INPUT (K INT PRIMARY KEY, text STRING) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'DROP TABLE INPUT DELETE TOPIC;',
        ],
        'Cannot delete topic for read-only source: INPUT',
        (2, 1),
    ),
    Case(
        'source-table',
        'rejects CREATE OR REPLACE SOURCE ... statements on existing non-source tables',
        [
            "CREATE TABLE INPUT (K INT PRIMARY KEY, text STRING) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            "CREATE OR REPLACE SOURCE TABLE INPUT (K INT PRIMARY KEY, text STRING) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
        ],
        "Cannot add table 'INPUT': CREATE OR REPLACE is not supported on source tables",
        (2, 1),
    ),
    Case(
        'group-by',
        'non-table udaf on table',
        [
            "CREATE TABLE INPUT (ID BIGINT PRIMARY KEY, F0 INT, F1 BIGINT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0), MIN(F1), MAX(F1) FROM INPUT GROUP BY ID;',
        ],
        'The aggregation functions LATEST_BY_OFFSET, MIN and MAX cannot be applied to a table source, only to a stream source',
        (2, 35),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ported_error(case: Case):
    with pytest.raises(SqlError) as info:
        compile_sql(case.statements)
    line, column = case.position
    # One statement per line, as ksqlDB's test runner joins them; a statement's text
    # ends before its semicolon.
    failing = case.statements[line - 1].rstrip().removesuffix(";")
    assert str(info.value) == f"Line: {line}, Col: {column}: {case.message}. Statement: {statement_excerpt(failing)}"

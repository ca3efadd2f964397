"""More of ksqlDB's query-validation tests, ported as in ``test_qtt_ports.py`` (same
runner, same rules): the statements, the input records and the records ksqlDB expects,
read back through TestDriver.from_sql one record per batch.

Source: confluentinc/ksql, ``ksqldb-functional-tests/src/test/resources/
query-validation-tests/<file>.json``; each port names its file and test. JSON input
field names are written as the columns are named (upper case; ksqlDB matches them in
any case).

Where tablestream's normalized semantics differ (a table emits no repeat of the value
last emitted for a key and no tombstone for a key without a row), ``differs`` says so
in one line, and the expected records are ksqlDB's with those records left out.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tablestream.testing.driver import TestDriver

from .test_qtt_ports import Port, check

pytestmark = pytest.mark.spark

PORTS = [
    Port(
        'fk-join',
        'Should support inner join with left value-column expression - with aliases',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT lt.id, rt.id AS rt_id_alias, name AS name_alias, rt.f1 FROM left_table AS lt JOIN right_table AS rt ON lt.foreign_key = rt.id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should support left join with left value-column expression - with aliases',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT lt.id, rt.id, name, rt.f1 FROM left_table AS lt LEFT JOIN right_table AS rt ON lt.foreign_key = rt.id;',
        ],
        inputs=[
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 0),
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 10000),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 11000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
            ('left_topic', 0, None, 19000),
        ],
        outputs=[
            ('OUTPUT', 1, {'RT_ID': None, 'NAME': 'zero', 'F1': None}, 0),
            ('OUTPUT', 1, {'RT_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 0, {'RT_ID': None, 'NAME': 'foo', 'F1': None}, 13000),
            ('OUTPUT', 1, {'RT_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'RT_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, {'RT_ID': None, 'NAME': 'zero', 'F1': None}, 17000),
            ('OUTPUT', 10, {'RT_ID': None, 'NAME': 'bar', 'F1': None}, 17000),
            ('OUTPUT', 1, None, 18000),
            ('OUTPUT', 0, None, 19000),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 1)",
    ),
    Port(
        'fk-join',
        'Should support non-column reference in left join expression',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON foreign_key + 1 = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': -1}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 99}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': -1}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should support non-column reference in left join expression with qualifier',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON left_table.foreign_key + 1 = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': -1}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 99}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': -1}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should support non-column reference in left join expression with alias',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT lt.l_id, r_id, lt.name, f1 FROM left_table AS lt JOIN right_table ON lt.foreign_key + 1 = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': -1}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 99}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': -1}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should support flipped join condition with aliases',
        [
            "CREATE TABLE left_table (id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT lt.id, rt.id AS rt_id_alias, name AS name_alias, rt.f1 FROM left_table AS lt LEFT JOIN right_table AS rt ON rt.id = lt.foreign_key;',
        ],
        inputs=[
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 0),
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 10000),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 11000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
            ('left_topic', 0, None, 19000),
        ],
        outputs=[
            ('OUTPUT', 1, {'RT_ID_ALIAS': None, 'NAME_ALIAS': 'zero', 'F1': None}, 0),
            ('OUTPUT', 1, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 0, {'RT_ID_ALIAS': None, 'NAME_ALIAS': 'foo', 'F1': None}, 13000),
            ('OUTPUT', 1, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'RT_ID_ALIAS': 0, 'NAME_ALIAS': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, {'RT_ID_ALIAS': None, 'NAME_ALIAS': 'zero', 'F1': None}, 17000),
            ('OUTPUT', 10, {'RT_ID_ALIAS': None, 'NAME_ALIAS': 'bar', 'F1': None}, 17000),
            ('OUTPUT', 1, None, 18000),
            ('OUTPUT', 0, None, 19000),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 1)",
    ),
    Port(
        'fk-join',
        'Should allow to omit join columns in projection',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, name, f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should support qualified `SELECT *` for right input',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT l_id, right_table.* FROM left_table LEFT JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 0),
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 10000),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 11000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'RIGHT_TABLE_R_ID': None, 'RIGHT_TABLE_F1': None, 'RIGHT_TABLE_F2': None}, 0),
            ('OUTPUT', 1, {'RIGHT_TABLE_R_ID': 0, 'RIGHT_TABLE_F1': 'blah', 'RIGHT_TABLE_F2': 4}, 10000),
            ('OUTPUT', 1, None, 18000),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 1)",
    ),
    Port(
        'fk-join',
        'Should support qualified `SELECT *` for left input',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE output AS SELECT left_table.*, right_table.f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('right_topic', 0, None, 17000),
        ],
        outputs=[
            ('OUTPUT', 1, {'LEFT_TABLE_NAME': 'zero', 'LEFT_TABLE_FOREIGN_KEY': 0, 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, None, 17000),
        ],
    ),
    Port(
        'fk-join',
        'Should allow key format mismatch',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should repartition RHS if the key format comes from Schema Registry',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key STRUCT<val BIGINT>) WITH (kafka_topic='left_topic', format='AVRO', partitions=128);",
            "CREATE TABLE right_table (r_id STRUCT<val BIGINT> PRIMARY KEY, f1 INTEGER) WITH (kafka_topic='right_topic', format='AVRO', partitions=128);",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', {'VAL': 0}, {'F1': 0}, 10000),
            ('right_topic', {'VAL': 1}, {'F1': 1}, 10000),
            ('right_topic', {'VAL': 2}, {'F1': 2}, 10000),
            ('left_topic', 0, {'NAME': 'zero', 'FOREIGN_KEY': {'VAL': 0}}, 11000),
            ('left_topic', 1, {'NAME': 'bar', 'FOREIGN_KEY': {'VAL': 1}}, 11000),
            ('left_topic', 2, {'NAME': 'foo', 'FOREIGN_KEY': {'VAL': 2}}, 11000),
        ],
        outputs=[
            ('OUTPUT', 0, {'R_ID': {'VAL': 0}, 'NAME': 'zero', 'F1': 0}, 11000),
            ('OUTPUT', 1, {'R_ID': {'VAL': 1}, 'NAME': 'bar', 'F1': 1}, 11000),
            ('OUTPUT', 2, {'R_ID': {'VAL': 2}, 'NAME': 'foo', 'F1': 2}, 11000),
        ],
    ),
    Port(
        'fk-join',
        'Should allow partition count mismatch',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', value_format='JSON', partitions=1);",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='JSON', partitions=2);",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'fk-join',
        'Should allow format mismatch without repartitioning',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, name VARCHAR, foreign_key BIGINT) WITH (kafka_topic='left_topic', format='AVRO');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT l_id, r_id, name, f1 FROM left_table JOIN right_table ON foreign_key = r_id;',
        ],
        inputs=[
            ('right_topic', 0, {'F1': 'blah', 'F2': 4}, 0),
            ('left_topic', 1, {'NAME': 'zero', 'FOREIGN_KEY': 0}, 10000),
            ('left_topic', 0, {'NAME': 'foo', 'FOREIGN_KEY': 100}, 13000),
            ('right_topic', 0, {'F1': 'a', 'F2': 10}, 15000),
            ('left_topic', 10, {'NAME': 'bar', 'FOREIGN_KEY': 0}, 16000),
            ('right_topic', 0, None, 17000),
            ('left_topic', 1, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'blah'}, 10000),
            ('OUTPUT', 1, {'R_ID': 0, 'NAME': 'zero', 'F1': 'a'}, 15000),
            ('OUTPUT', 10, {'R_ID': 0, 'NAME': 'bar', 'F1': 'a'}, 16000),
            ('OUTPUT', 1, None, 17000),
            ('OUTPUT', 10, None, 17000),
        ],
        differs="no tombstone for a key without a row (ksqlDB's for key 1 at 18000)",
    ),
    Port(
        'joins',
        'unaliased synthetic join key',
        [
            "CREATE TABLE L (ID INT PRIMARY KEY, V0 INT, V1 INT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE R (ID INT PRIMARY KEY, V0 INT, V1 INT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT ROWKEY, L.ID, R.ID, L.V0, R.V1 FROM L FULL OUTER JOIN R on L.id = R.id;',
        ],
        inputs=[
            ('left_topic', 1, {'V0': 2, 'V1': 3}, 0),
            ('right_topic', 1, {'V0': 4, 'V1': 5}, 100),
        ],
        outputs=[
            ('OUTPUT', 1, {'L_ID': 1, 'R_ID': None, 'L_V0': 2, 'R_V1': None}, 0),
            ('OUTPUT', 1, {'L_ID': 1, 'R_ID': 1, 'L_V0': 2, 'R_V1': 5}, 100),
        ],
    ),
    Port(
        'joins',
        'table table right join all fields',
        [
            "CREATE TABLE TEST (id BIGINT PRIMARY KEY, name VARCHAR, value BIGINT) WITH (kafka_topic='left_topic', value_format='DELIMITED');",
            "CREATE TABLE TEST_TABLE (id BIGINT PRIMARY KEY, f1 VARCHAR, f2 BIGINT) WITH (kafka_topic='right_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT * FROM test t RIGHT JOIN test_table tt ON t.id = tt.id;',
        ],
        inputs=[
            ('left_topic', 0, 'zero,0', 0),
            ('right_topic', 0, 'blah,50', 10000),
            ('left_topic', 10, '100,5', 11000),
            ('left_topic', 0, 'foo,100', 13000),
            ('right_topic', 0, 'a,10', 15000),
            ('right_topic', 100, 'newblah,150', 16000),
            ('left_topic', 90, 'ninety,90', 17000),
        ],
        outputs=[
            ('OUTPUT', 0, 'zero,0,0,blah,50', 10000),
            ('OUTPUT', 0, 'foo,100,0,blah,50', 13000),
            ('OUTPUT', 0, 'foo,100,0,a,10', 15000),
            ('OUTPUT', 100, ',,100,newblah,150', 16000),
        ],
    ),
    Port(
        'joins',
        'stream to table unwrapped single field value schema on inputs',
        [
            "CREATE STREAM S (ID BIGINT KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='S', value_format='JSON');",
            "CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT s.id, s.name name1, t.name name2 FROM S JOIN T ON S.id = T.id;',
        ],
        inputs=[
            ('T', 0, 'b', 0),
            ('S', 0, 'a', 10),
            ('S', 0, None, 20),
            ('T', 0, None, 30),
            ('S', 0, None, 40),
        ],
        outputs=[
            ('OUTPUT', 0, {'NAME1': 'a', 'NAME2': 'b'}, 10),
        ],
    ),
    Port(
        'joins',
        'stream to table unwrapped single field value schema on inputs and output',
        [
            "CREATE STREAM S (ID BIGINT KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='S', value_format='JSON');",
            "CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T', value_format='JSON');",
            'CREATE STREAM OUTPUT WITH (WRAP_SINGLE_VALUE=false) AS SELECT s.id, s.name name FROM S JOIN T ON S.id = T.id;',
        ],
        inputs=[
            ('T', 0, 'b', 0),
            ('S', 0, 'a', 10),
            ('S', 0, None, 20),
            ('T', 0, None, 30),
            ('S', 0, None, 40),
        ],
        outputs=[
            ('OUTPUT', 0, 'a', 10),
        ],
    ),
    Port(
        'joins',
        'table to table unwrapped single field value schema on inputs',
        [
            "CREATE TABLE T1 (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T1', value_format='JSON');",
            "CREATE TABLE T2 (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T2', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT t1.id, t1.name name1, t2.name name2 FROM T1 JOIN T2 ON T1.id = T2.id;',
        ],
        inputs=[
            ('T1', 0, 'a', 0),
            ('T2', 0, 'b', 10),
            ('T1', 0, None, 20),
            ('T2', 0, None, 30),
            ('T1', 0, None, 40),
        ],
        outputs=[
            ('OUTPUT', 0, {'NAME1': 'a', 'NAME2': 'b'}, 10),
            ('OUTPUT', 0, None, 20),
        ],
    ),
    Port(
        'joins',
        'table to table unwrapped single field value schema on inputs and output',
        [
            "CREATE TABLE T1 (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T1', value_format='JSON');",
            "CREATE TABLE T2 (ID BIGINT PRIMARY KEY, NAME STRING) WITH (WRAP_SINGLE_VALUE=false, kafka_topic='T2', value_format='JSON');",
            'CREATE TABLE OUTPUT WITH (WRAP_SINGLE_VALUE=false) AS SELECT t1.id, t1.name name FROM T1 JOIN T2 ON T1.id = T2.id;',
        ],
        inputs=[
            ('T1', 0, 'a', 0),
            ('T2', 0, 'b', 10),
            ('T1', 0, None, 20),
            ('T2', 0, None, 30),
            ('T1', 0, None, 40),
        ],
        outputs=[
            ('OUTPUT', 0, 'a', 10),
            ('OUTPUT', 0, None, 20),
        ],
    ),
    Port(
        'joins',
        'with generated column name clashes',
        [
            "CREATE TABLE L (ROWKEY INT PRIMARY KEY, ROWKEY_1 INT, ROWKEY_2 INT) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE R (ROWKEY_3 INT PRIMARY KEY, ROWKEY_4 INT, ROWKEY_5 INT) WITH (kafka_topic='right_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT ROWKEY_6, L.ROWKEY, R.ROWKEY_3, L.ROWKEY_1, R.ROWKEY_5 FROM L FULL OUTER JOIN R on L.ROWKEY = R.ROWKEY_3;',
        ],
        inputs=[
            ('left_topic', 1, {'ROWKEY_1': 2, 'ROWKEY_2': 3}, 0),
            ('right_topic', 1, {'ROWKEY_4': 4, 'ROWKEY_5': 5}, 100),
        ],
        outputs=[
            ('OUTPUT', 1, {'ROWKEY': 1, 'ROWKEY_3': None, 'ROWKEY_1': 2, 'ROWKEY_5': None}, 0),
            ('OUTPUT', 1, {'ROWKEY': 1, 'ROWKEY_3': 1, 'ROWKEY_1': 2, 'ROWKEY_5': 5}, 100),
        ],
    ),
    Port(
        'joins',
        'non-KAFKA key format',
        [
            "CREATE STREAM L (A INT KEY, B INT, C INT) WITH (kafka_topic='LEFT', format='JSON');",
            "CREATE TABLE R (A INT PRIMARY KEY, B INT, C INT) WITH (kafka_topic='RIGHT', format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT * FROM L INNER JOIN R ON L.A = R.A;',
        ],
        inputs=[
            ('RIGHT', 1, {'B': -1, 'C': -2}, 10),
            ('LEFT', 1, {'B': 1, 'C': 2}, 11),
            ('LEFT', 2, {'B': 2, 'C': 3}, 12),
        ],
        outputs=[
            ('OUTPUT', 1, {'R_A': 1, 'L_B': 1, 'R_B': -1, 'L_C': 2, 'R_C': -2}, 11),
        ],
    ),
    Port(
        'joins',
        'stream-table key-to-key - SR-enabled key format',
        [
            "CREATE TABLE T (ID INT PRIMARY KEY, VAL STRING) WITH (kafka_topic='t', key_format='AVRO', value_format='JSON');",
            "CREATE STREAM S (ID INT KEY, FOO INT) WITH (kafka_topic='s', key_format='AVRO', value_format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT S.ID, VAL FROM S JOIN T ON S.ID = T.ID;',
        ],
        inputs=[
            ('t', 10, {'VAL': 'hello'}, 0),
            ('s', 10, {'FOO': 22}, 0),
        ],
        outputs=[
            ('OUTPUT', 10, {'VAL': 'hello'}, None),
        ],
    ),
    Port(
        'joins',
        'table-table - SR-enabled key format',
        [
            "CREATE TABLE T1 (ID BIGINT PRIMARY KEY, NAME varchar) WITH (kafka_topic='t1', key_format='AVRO', value_format='JSON');",
            "CREATE TABLE T2 (ID BIGINT PRIMARY KEY, F1 varchar) WITH (kafka_topic='t2', key_format='AVRO', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT T1.id, name, f1 FROM T1 left join T2 on T1.id = T2.id;',
        ],
        inputs=[
            ('t1', 0, {'NAME': 'zero'}, 0),
            ('t2', 0, {'F1': 'blah'}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'NAME': 'zero', 'F1': None}, None),
            ('OUTPUT', 0, {'NAME': 'zero', 'F1': 'blah'}, None),
        ],
    ),
    Port(
        'joins',
        'table-table - SR-enabled key format - with nulls',
        [
            "CREATE TABLE T1 (ID BIGINT PRIMARY KEY, NAME varchar) WITH (kafka_topic='t1', key_format='AVRO', value_format='JSON');",
            "CREATE TABLE T2 (ID BIGINT PRIMARY KEY, F1 varchar) WITH (kafka_topic='t2', key_format='AVRO', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT T1.id, name, f1 FROM T1 left join T2 on T1.id = T2.id;',
        ],
        inputs=[
            ('t1', 0, {'NAME': 'zero'}, 0),
            ('t2', 0, {'F1': 'blah'}, 0),
            ('t2', 0, None, 0),
            ('t1', 0, None, 0),
            ('t2', 0, {'F1': 'foo'}, 0),
            ('t1', 0, {'NAME': 'goo'}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'NAME': 'zero', 'F1': None}, None),
            ('OUTPUT', 0, {'NAME': 'zero', 'F1': 'blah'}, None),
            ('OUTPUT', 0, {'NAME': 'zero', 'F1': None}, None),
            ('OUTPUT', 0, None, None),
            ('OUTPUT', 0, {'NAME': 'goo', 'F1': 'foo'}, None),
        ],
    ),
    Port(
        'count',
        'count literal',
        [
            "CREATE STREAM INPUT (ID STRING KEY, ignored STRING) WITH (kafka_topic='input_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT as SELECT ID, count(1) FROM input group by ID;',
        ],
        inputs=[
            ('input_topic', '0', '-', 0),
            ('input_topic', '0', '-', 0),
            ('input_topic', '100', '-', 0),
            ('input_topic', '100', None, 0),
            ('input_topic', '100', '-', 0),
        ],
        outputs=[
            ('OUTPUT', '0', '1', None),
            ('OUTPUT', '0', '2', None),
            ('OUTPUT', '100', '1', None),
            ('OUTPUT', '100', '2', None),
        ],
    ),
    Port(
        'count',
        'auto-incrementing id',
        [
            "CREATE STREAM INPUT (VALUE INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT 1 as k, latest_by_offset(value) as value, count(1) AS ID FROM INPUT group by 1;',
        ],
        inputs=[
            ('test_topic', None, {'VALUE': 12}, 0),
            ('test_topic', None, {'VALUE': 8367}, 0),
            ('test_topic', None, {'VALUE': 764}, 0),
        ],
        outputs=[
            ('OUTPUT', 1, {'VALUE': 12, 'ID': 1}, None),
            ('OUTPUT', 1, {'VALUE': 8367, 'ID': 2}, None),
            ('OUTPUT', 1, {'VALUE': 764, 'ID': 3}, None),
        ],
    ),
    Port(
        'sum',
        'sum int',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE integer) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, sum(value) AS SUM FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 0}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 500}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM': 0}, None),
            ('S2', 0, {'SUM': 100}, None),
            ('S2', 100, {'SUM': 500}, None),
            ('S2', 100, {'SUM': 600}, None),
        ],
    ),
    Port(
        'sum',
        'sum long',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE bigint) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, sum(value) as SUM FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 2147483648}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 500}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM': 2147483648}, None),
            ('S2', 0, {'SUM': 2147483748}, None),
            ('S2', 100, {'SUM': 500}, None),
            ('S2', 100, {'SUM': 600}, None),
        ],
    ),
    Port(
        'sum',
        'sum double',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE double) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, sum(value) AS SUM FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 5.4}, 0),
            ('test_topic', 0, {'VALUE': 100.1}, 0),
            ('test_topic', 100, {'VALUE': 500.9}, 0),
            ('test_topic', 100, {'VALUE': 300.8}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM': 5.4}, None),
            ('S2', 0, {'SUM': 105.5}, None),
            ('S2', 100, {'SUM': 500.9}, None),
            ('S2', 100, {'SUM': 801.7}, None),
        ],
    ),
    Port(
        'sum',
        'sum decimal',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE decimal(4,1)) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, sum(value) AS SUM FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': Decimal('5.4')}, 0),
            ('test_topic', 0, {'VALUE': Decimal('100.1')}, 0),
            ('test_topic', 100, {'VALUE': Decimal('500.9')}, 0),
            ('test_topic', 100, {'VALUE': Decimal('300.8')}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM': Decimal('5.4')}, None),
            ('S2', 0, {'SUM': Decimal('105.5')}, None),
            ('S2', 100, {'SUM': Decimal('500.9')}, None),
            ('S2', 100, {'SUM': Decimal('801.7')}, None),
        ],
    ),
    Port(
        'sum',
        'sum decimal should not overflow with cast to higher precision',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE decimal(4,1)) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, sum(CAST(value AS DECIMAL(6,2))) AS SUM FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': Decimal('5.4')}, 0),
            ('test_topic', 0, {'VALUE': Decimal('100.1')}, 0),
            ('test_topic', 100, {'VALUE': Decimal('500.9')}, 0),
            ('test_topic', 100, {'VALUE': Decimal('300.8')}, 0),
            ('test_topic', 100, {'VALUE': Decimal('400.8')}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM': Decimal('5.40')}, None),
            ('S2', 0, {'SUM': Decimal('105.50')}, None),
            ('S2', 100, {'SUM': Decimal('500.90')}, None),
            ('S2', 100, {'SUM': Decimal('801.70')}, None),
            ('S2', 100, {'SUM': Decimal('1202.50')}, None),
        ],
    ),
    Port(
        'sum',
        'sum double map',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, NAME varchar, VALUE map<varchar, double>) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE TABLE S2 as SELECT ID, sum(value['key1']) AS sum_val FROM test group by id;",
        ],
        inputs=[
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM_VAL': 10.0}, None),
            ('S2', 0, {'SUM_VAL': 20.0}, None),
            ('S2', 0, {'SUM_VAL': 30.0}, None),
            ('S2', 0, {'SUM_VAL': 40.0}, None),
            ('S2', 0, {'SUM_VAL': 50.0}, None),
        ],
    ),
    Port(
        'sum',
        'sum with constant int arg',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, NAME varchar, VALUE map<varchar, double>) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE S2 as SELECT ID, sum(2) AS sum_val FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM_VAL': 2}, None),
            ('S2', 0, {'SUM_VAL': 4}, None),
            ('S2', 0, {'SUM_VAL': 6}, None),
            ('S2', 0, {'SUM_VAL': 8}, None),
            ('S2', 0, {'SUM_VAL': 10}, None),
        ],
    ),
    Port(
        'sum',
        'sum with constant long arg',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, NAME varchar, VALUE map<varchar, double>) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE S2 as SELECT ID, sum(cast (2 as BIGINT)) AS sum_val FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM_VAL': 2}, None),
            ('S2', 0, {'SUM_VAL': 4}, None),
            ('S2', 0, {'SUM_VAL': 6}, None),
            ('S2', 0, {'SUM_VAL': 8}, None),
            ('S2', 0, {'SUM_VAL': 10}, None),
        ],
    ),
    Port(
        'sum',
        'sum with constant double arg',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, NAME varchar, VALUE map<varchar, double>) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE S2 as SELECT ID, sum(1E0) AS sum_val FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': 10.0, 'key2': 1.0}}, 0),
        ],
        outputs=[
            ('S2', 0, {'SUM_VAL': 1.0}, None),
            ('S2', 0, {'SUM_VAL': 2.0}, None),
            ('S2', 0, {'SUM_VAL': 3.0}, None),
            ('S2', 0, {'SUM_VAL': 4.0}, None),
            ('S2', 0, {'SUM_VAL': 5.0}, None),
        ],
    ),
    Port(
        'min-group-by',
        'min integer group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE integer) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, min(value) as MIN FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': -2147483647}, 0),
            ('test_topic', 0, {'VALUE': 5}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 6}, 0),
            ('test_topic', 100, {'VALUE': 300}, 0),
            ('test_topic', 0, {'VALUE': 2000}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 1, {'MIN': None}, None),
            ('S2', 0, {'MIN': -2147483647}, None),
            ('S2', 100, {'MIN': 100}, None),
            ('S2', 100, {'MIN': 6}, None),
        ],
        differs="no repeat of the value last emitted for a key (5 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'min-group-by',
        'min long group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE bigint) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, min(value) as MIN FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': -1000000}, 0),
            ('test_topic', 0, {'VALUE': 5}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 6}, 0),
            ('test_topic', 100, {'VALUE': 300}, 0),
            ('test_topic', 0, {'VALUE': -9223372036854775807}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 1, {'MIN': None}, None),
            ('S2', 0, {'MIN': -1000000}, None),
            ('S2', 100, {'MIN': 100}, None),
            ('S2', 100, {'MIN': 6}, None),
            ('S2', 0, {'MIN': -9223372036854775807}, None),
        ],
        differs="no repeat of the value last emitted for a key (4 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'min-group-by',
        'min double group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE double) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, min(value) as MIN FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': 1.7976931348623157e+308}, 0),
            ('test_topic', 0, {'VALUE': 5.1}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100.1}, 0),
            ('test_topic', 100, {'VALUE': 6.4}, 0),
            ('test_topic', 100, {'VALUE': 300.8}, 0),
            ('test_topic', 0, {'VALUE': -1.7976931348623157e+308}, 0),
            ('test_topic', 0, {'VALUE': 100.11}, 0),
        ],
        outputs=[
            ('S2', 1, {'MIN': None}, None),
            ('S2', 0, {'MIN': 1.7976931348623157e+308}, None),
            ('S2', 0, {'MIN': 5.1}, None),
            ('S2', 100, {'MIN': 100.1}, None),
            ('S2', 100, {'MIN': 6.4}, None),
            ('S2', 0, {'MIN': -1.7976931348623157e+308}, None),
        ],
        differs="no repeat of the value last emitted for a key (3 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'min-group-by',
        'min string group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE STRING) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, min(value) as value FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': 'B'}, 0),
            ('test_topic', 0, {'VALUE': 'A'}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 'E'}, 0),
            ('test_topic', 100, {'VALUE': 'C'}, 0),
            ('test_topic', 100, {'VALUE': 'G'}, 0),
            ('test_topic', 0, {'VALUE': 'F'}, 0),
            ('test_topic', 0, {'VALUE': 'D'}, 0),
        ],
        outputs=[
            ('S2', 1, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': 'B'}, None),
            ('S2', 0, {'VALUE': 'A'}, None),
            ('S2', 100, {'VALUE': 'E'}, None),
            ('S2', 100, {'VALUE': 'C'}, None),
        ],
        differs="no repeat of the value last emitted for a key (4 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'max-group-by',
        'max integer group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE integer) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, max(value) as value FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': -2147483647}, 0),
            ('test_topic', 0, {'VALUE': 5}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 6}, 0),
            ('test_topic', 100, {'VALUE': 300}, 0),
            ('test_topic', 0, {'VALUE': 2000}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 1, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': -2147483647}, None),
            ('S2', 0, {'VALUE': 5}, None),
            ('S2', 100, {'VALUE': 100}, None),
            ('S2', 100, {'VALUE': 300}, None),
            ('S2', 0, {'VALUE': 2000}, None),
        ],
        differs="no repeat of the value last emitted for a key (3 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'max-group-by',
        'max long group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE bigint) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, max(value) as value FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': -1000000}, 0),
            ('test_topic', 0, {'VALUE': 5}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 6}, 0),
            ('test_topic', 100, {'VALUE': 300}, 0),
            ('test_topic', 0, {'VALUE': 9223372036854775807}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 1, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': -1000000}, None),
            ('S2', 0, {'VALUE': 5}, None),
            ('S2', 100, {'VALUE': 100}, None),
            ('S2', 100, {'VALUE': 300}, None),
            ('S2', 0, {'VALUE': 9223372036854775807}, None),
        ],
        differs="no repeat of the value last emitted for a key (3 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'max-group-by',
        'max double group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE double) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, max(value) as value FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': -1000000.123}, 0),
            ('test_topic', 0, {'VALUE': 0.0}, 0),
            ('test_topic', 0, {'VALUE': 5.1}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 100.1}, 0),
            ('test_topic', 100, {'VALUE': 6.4}, 0),
            ('test_topic', 100, {'VALUE': 300.8}, 0),
            ('test_topic', 0, {'VALUE': 2000.99}, 0),
            ('test_topic', 0, {'VALUE': 100.11}, 0),
        ],
        outputs=[
            ('S2', 1, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': -1000000.123}, None),
            ('S2', 0, {'VALUE': 0.0}, None),
            ('S2', 0, {'VALUE': 5.1}, None),
            ('S2', 100, {'VALUE': 100.1}, None),
            ('S2', 100, {'VALUE': 300.8}, None),
            ('S2', 0, {'VALUE': 2000.99}, None),
        ],
        differs="no repeat of the value last emitted for a key (3 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'max-group-by',
        'max string group by',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE STRING) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, max(value) as value FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 1, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 0, {'VALUE': 'B'}, 0),
            ('test_topic', 0, {'VALUE': 'A'}, 0),
            ('test_topic', 0, {'VALUE': None}, 0),
            ('test_topic', 100, {'VALUE': 'E'}, 0),
            ('test_topic', 100, {'VALUE': 'C'}, 0),
            ('test_topic', 100, {'VALUE': 'G'}, 0),
            ('test_topic', 0, {'VALUE': 'F'}, 0),
            ('test_topic', 0, {'VALUE': 'D'}, 0),
        ],
        outputs=[
            ('S2', 1, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': None}, None),
            ('S2', 0, {'VALUE': 'B'}, None),
            ('S2', 100, {'VALUE': 'E'}, None),
            ('S2', 100, {'VALUE': 'G'}, None),
            ('S2', 0, {'VALUE': 'F'}, None),
        ],
        differs="no repeat of the value last emitted for a key (4 of ksqlDB's records left out; keys 0, 100)",
    ),
    Port(
        'latest-offset-udaf',
        'latest by offset with structs',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 STRUCT<A VARCHAR, B BIGINT>) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': {'A': 'Early0', 'B': 1}}, 0),
            ('test_topic', 1, {'F0': {'A': 'Early1', 'B': 2}}, 0),
            ('test_topic', 0, {'F0': {'A': 'Later0', 'B': 3}}, 0),
            ('test_topic', 1, {'F0': {'A': 'Later1', 'B': 4}}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': {'A': 'Early0', 'B': 1}}, None),
            ('OUTPUT', 1, {'L0': {'A': 'Early1', 'B': 2}}, None),
            ('OUTPUT', 0, {'L0': {'A': 'Later0', 'B': 3}}, None),
            ('OUTPUT', 1, {'L0': {'A': 'Later1', 'B': 4}}, None),
        ],
    ),
    Port(
        'latest-offset-udaf',
        'nulls ignored - single',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0, true) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12}, 0),
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': 13}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': 12}, None),
            ('OUTPUT', 0, {'L0': 13}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 0)",
    ),
    Port(
        'latest-offset-udaf',
        'nulls ignored - multiple',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0, 2, true) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12}, 0),
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': 13}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': [12]}, None),
            ('OUTPUT', 0, {'L0': [12, 13]}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 0)",
    ),
    Port(
        'latest-offset-udaf',
        'nulls not ignored - single',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0, false) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12}, 0),
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': 13}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': 12}, None),
            ('OUTPUT', 0, {'L0': None}, None),
            ('OUTPUT', 0, {'L0': 13}, None),
        ],
    ),
    Port(
        'latest-offset-udaf',
        'nulls not ignored - multiple',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0, 2, false) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12}, 0),
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': 13}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': [12]}, None),
            ('OUTPUT', 0, {'L0': [12, None]}, None),
            ('OUTPUT', 0, {'L0': [None, 13]}, None),
        ],
    ),
    Port(
        'latest-offset-udaf',
        'latest by offset with all nulls',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': None}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': None}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 0)",
    ),
    Port(
        'latest-offset-udaf',
        'latest n by offset',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT, F1 BIGINT, F2 DOUBLE, F3 BOOLEAN, F4 STRING) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0, 2) AS L0, LATEST_BY_OFFSET(F1, 2) AS L1, LATEST_BY_OFFSET(F2, 2) AS L2, LATEST_BY_OFFSET(F3, 2) AS L3, LATEST_BY_OFFSET(F4, 2) AS L4 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12, 'F1': 1000, 'F2': 1.23, 'F3': True, 'F4': 'foo'}, 0),
            ('test_topic', 1, {'F0': 12, 'F1': 1000, 'F2': 1.23, 'F3': True, 'F4': 'foo'}, 0),
            ('test_topic', 0, {'F0': 21, 'F1': 2000, 'F2': 2.23, 'F3': False, 'F4': 'bar'}, 0),
            ('test_topic', 1, {'F0': 21, 'F1': 2000, 'F2': 2.23, 'F3': False, 'F4': 'bar'}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': [12], 'L1': [1000], 'L2': [1.23], 'L3': [True], 'L4': ['foo']}, None),
            ('OUTPUT', 1, {'L0': [12], 'L1': [1000], 'L2': [1.23], 'L3': [True], 'L4': ['foo']}, None),
            ('OUTPUT', 0, {'L0': [12, 21], 'L1': [1000, 2000], 'L2': [1.23, 2.23], 'L3': [True, False], 'L4': ['foo', 'bar']}, None),
            ('OUTPUT', 1, {'L0': [12, 21], 'L1': [1000, 2000], 'L2': [1.23, 2.23], 'L3': [True, False], 'L4': ['foo', 'bar']}, None),
        ],
    ),
    Port(
        'latest-offset-udaf',
        'latest n by offset with nulls',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0,2) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': 12}, 0),
            ('test_topic', 0, {'F0': None}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': [12]}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 0)",
    ),
    Port(
        'latest-offset-udaf',
        'latest n by offset with all nulls',
        [
            "CREATE STREAM INPUT (ID BIGINT KEY, F0 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT ID, LATEST_BY_OFFSET(F0,2) AS L0 FROM INPUT GROUP BY ID;',
        ],
        inputs=[
            ('test_topic', 0, {'F0': None}, 0),
            ('test_topic', 0, {'F0': None}, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'L0': []}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 0)",
    ),
    Port(
        'collect-list',
        'collect_list arrays',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE ARRAY<INT>) WITH (kafka_topic='test_topic',value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': [0, 0, 1, 0, -1]}, 0),
            ('test_topic', 0, {'VALUE': [1, 2, 3, 4, -1]}, 0),
            ('test_topic', 100, {'VALUE': [0, 0, 1, 0, -1]}, 0),
            ('test_topic', 100, {'VALUE': [0, 0, 1, 0, -1]}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [[0, 0, 1, 0, -1]]}, None),
            ('S2', 0, {'COLLECTED': [[0, 0, 1, 0, -1], [1, 2, 3, 4, -1]]}, None),
            ('S2', 100, {'COLLECTED': [[0, 0, 1, 0, -1]]}, None),
            ('S2', 100, {'COLLECTED': [[0, 0, 1, 0, -1], [0, 0, 1, 0, -1]]}, None),
        ],
    ),
    Port(
        'collect-list',
        'collect_list long',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE bigint) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 2147483648}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 500}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [2147483648]}, None),
            ('S2', 0, {'COLLECTED': [2147483648, 100]}, None),
            ('S2', 100, {'COLLECTED': [500]}, None),
            ('S2', 100, {'COLLECTED': [500, 100]}, None),
        ],
    ),
    Port(
        'collect-list',
        'collect_list double',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, VALUE double) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 5.4}, 0),
            ('test_topic', 0, {'VALUE': 100.1}, 0),
            ('test_topic', 100, {'VALUE': 500.9}, 0),
            ('test_topic', 100, {'VALUE': 300.8}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [5.4]}, None),
            ('S2', 0, {'COLLECTED': [5.4, 100.1]}, None),
            ('S2', 100, {'COLLECTED': [500.9]}, None),
            ('S2', 100, {'COLLECTED': [500.9, 300.8]}, None),
        ],
    ),
    Port(
        'collect-list',
        'collect_list long table',
        [
            "CREATE TABLE TEST (ID BIGINT PRIMARY KEY, VALUE bigint) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 2147483648}, 0),
            ('test_topic', 0, {'VALUE': 100}, 0),
            ('test_topic', 100, {'VALUE': 500}, 0),
            ('test_topic', 100, {'VALUE': 100}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [2147483648]}, None),
            ('S2', 0, {'COLLECTED': [100]}, None),
            ('S2', 100, {'COLLECTED': [500]}, None),
            ('S2', 100, {'COLLECTED': [100]}, None),
        ],
    ),
    Port(
        'collect-list',
        'collect_list double table',
        [
            "CREATE TABLE TEST (ID BIGINT PRIMARY KEY, VALUE double) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 5.4}, 0),
            ('test_topic', 0, {'VALUE': 100.1}, 0),
            ('test_topic', 100, {'VALUE': 500.9}, 0),
            ('test_topic', 100, {'VALUE': 300.8}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [5.4]}, None),
            ('S2', 0, {'COLLECTED': [100.1]}, None),
            ('S2', 100, {'COLLECTED': [500.9]}, None),
            ('S2', 100, {'COLLECTED': [300.8]}, None),
        ],
    ),
    Port(
        'collect-list',
        'collect_list string table',
        [
            "CREATE TABLE TEST (ID BIGINT PRIMARY KEY, VALUE varchar) WITH (kafka_topic='test_topic', value_format='AVRO');",
            'CREATE TABLE S2 as SELECT ID, collect_list(value) as collected FROM test group by id;',
        ],
        inputs=[
            ('test_topic', 0, {'VALUE': 'foo'}, 0),
            ('test_topic', 100, {'VALUE': 'baz'}, 0),
            ('test_topic', 0, {'VALUE': 'bar'}, 0),
            ('test_topic', 100, {'VALUE': 'baz'}, 0),
            ('test_topic', 100, {'VALUE': 'foo'}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': ['foo']}, None),
            ('S2', 100, {'COLLECTED': ['baz']}, None),
            ('S2', 0, {'COLLECTED': ['bar']}, None),
            ('S2', 100, {'COLLECTED': ['foo']}, None),
        ],
        differs="no repeat of the value last emitted for a key (1 of ksqlDB's records left out; key 100)",
    ),
    Port(
        'collect-list',
        'collect_list bool map table',
        [
            "CREATE TABLE TEST (ID BIGINT PRIMARY KEY, NAME varchar, VALUE map<varchar, boolean>) WITH (kafka_topic='test_topic', value_format='JSON');",
            "CREATE TABLE S2 as SELECT ID, collect_list(value['key1']) AS collected FROM test group by id;",
        ],
        inputs=[
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': True, 'key2': False}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': False, 'key2': True}}, 0),
            ('test_topic', 0, {'NAME': 'zero', 'VALUE': {'key1': True, 'key2': True}}, 0),
        ],
        outputs=[
            ('S2', 0, {'COLLECTED': [True]}, None),
            ('S2', 0, {'COLLECTED': [False]}, None),
            ('S2', 0, {'COLLECTED': [True]}, None),
        ],
    ),
    Port(
        'table',
        'should not reuse source topic for change log by default',
        [
            "CREATE TABLE TEST (K STRING PRIMARY KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE T1 as SELECT * FROM test;',
        ],
        inputs=[
            ('test_topic', '1', '2', 0),
        ],
        outputs=[
            ('T1', '1', '2', None),
        ],
    ),
    Port(
        'table',
        'should forward nulls in changelog when table not materialized',
        [
            "CREATE TABLE INPUT (K STRING PRIMARY KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT as SELECT * FROM INPUT;',
        ],
        inputs=[
            ('test_topic', '1', '1', 0),
            ('test_topic', '1', None, 0),
            ('test_topic', '1', '2', 0),
        ],
        outputs=[
            ('OUTPUT', '1', '1', None),
            ('OUTPUT', '1', None, None),
            ('OUTPUT', '1', '2', None),
        ],
    ),
    Port(
        'table',
        'should not blow up on null key',
        [
            "CREATE TABLE INPUT (K STRING PRIMARY KEY, ID bigint) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT as SELECT * FROM INPUT;',
        ],
        inputs=[
            ('test_topic', '1', '1', 0),
            ('test_topic', None, '2', 0),
            ('test_topic', '1', '3', 0),
        ],
        outputs=[
            ('OUTPUT', '1', '1', None),
            ('OUTPUT', '1', '3', None),
        ],
    ),
    Port(
        'insert-into',
        'simple',
        [
            "CREATE STREAM SOURCE1 (K STRING KEY, data VARCHAR) WITH (kafka_topic='stream-source', value_format='DELIMITED');",
            "CREATE STREAM SOURCE2 (K STRING KEY, data VARCHAR) WITH (kafka_topic='insert-source', value_format='DELIMITED');",
            'CREATE STREAM OUTPUT AS SELECT * FROM SOURCE1;',
            'INSERT INTO OUTPUT SELECT * FROM SOURCE2;',
        ],
        inputs=[
            ('insert-source', 'k1', 'v1', 0),
        ],
        outputs=[
            ('OUTPUT', 'k1', 'v1', None),
        ],
    ),
    Port(
        'insert-into',
        'streams with no key columns',
        [
            "CREATE STREAM SOURCE1 (K STRING, data VARCHAR) WITH (kafka_topic='stream-source', value_format='JSON');",
            "CREATE STREAM SOURCE2 (K STRING, data VARCHAR) WITH (kafka_topic='insert-source', value_format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT * FROM SOURCE1;',
            'INSERT INTO OUTPUT SELECT * FROM SOURCE2;',
        ],
        inputs=[
            ('stream-source', None, {'K': 'k1', 'DATA': 'v1'}, 0),
            ('insert-source', None, {'K': 'k2', 'DATA': 'v2'}, 0),
        ],
        outputs=[
            ('OUTPUT', None, {'K': 'k1', 'DATA': 'v1'}, None),
            ('OUTPUT', None, {'K': 'k2', 'DATA': 'v2'}, None),
        ],
    ),
    Port(
        'insert-into',
        'with custom topic name',
        [
            "CREATE STREAM SOURCE1 (K STRING KEY, data VARCHAR) WITH (kafka_topic='stream-source', value_format='DELIMITED');",
            "CREATE STREAM SOURCE2 (K STRING KEY, data VARCHAR) WITH (kafka_topic='insert-source', value_format='DELIMITED');",
            "CREATE STREAM OUTPUT WITH(kafka_topic='custom') AS SELECT * FROM SOURCE1;",
            'INSERT INTO OUTPUT SELECT * FROM SOURCE2;',
        ],
        inputs=[
            ('insert-source', 'k1', 'v1', 0),
        ],
        outputs=[
            ('custom', 'k1', 'v1', None),
        ],
    ),
    Port(
        'insert-into',
        'convert formats: DELIMITED to JSON',
        [
            "CREATE STREAM SOURCE1 (K STRING KEY, data VARCHAR) WITH (kafka_topic='stream-source', value_format='DELIMITED');",
            "CREATE STREAM SOURCE2 (K STRING KEY, data VARCHAR) WITH (kafka_topic='insert-source', value_format='JSON');",
            'CREATE STREAM OUTPUT AS SELECT * FROM SOURCE1;',
            'INSERT INTO OUTPUT SELECT * FROM SOURCE2;',
        ],
        inputs=[
            ('insert-source', 'k1', {'DATA': 'v1'}, 0),
        ],
        outputs=[
            ('OUTPUT', 'k1', 'v1', None),
        ],
    ),
    Port(
        'insert-into',
        'convert formats: JSON to AVRO',
        [
            "CREATE STREAM SOURCE (K STRING KEY, A bigint, B varchar) WITH (kafka_topic='source', value_format='JSON');",
            "CREATE STREAM SINK (K STRING KEY, A bigint, B varchar) WITH (kafka_topic='sink', value_format='AVRO');",
            'INSERT INTO SINK SELECT * FROM SOURCE;',
        ],
        inputs=[
            ('source', '0', {'A': 123, 'B': 'falcon'}, 0),
            ('source', '0', {'A': 456, 'B': 'giraffe'}, 0),
            ('source', '0', {'A': 789, 'B': 'turtle'}, 0),
        ],
        outputs=[
            ('sink', '0', {'A': 123, 'B': 'falcon'}, 0),
            ('sink', '0', {'A': 456, 'B': 'giraffe'}, 0),
            ('sink', '0', {'A': 789, 'B': 'turtle'}, 0),
        ],
    ),
    Port(
        'insert-into',
        'convert formats: AVRO to JSON',
        [
            "CREATE STREAM SOURCE (K STRING KEY, A bigint, B varchar) WITH (kafka_topic='source', value_format='AVRO');",
            "CREATE STREAM SINK (K STRING KEY, A bigint, B varchar) WITH (kafka_topic='sink', value_format='JSON');",
            'INSERT INTO SINK SELECT * FROM SOURCE;',
        ],
        inputs=[
            ('source', '0', {'A': 123, 'B': 'falcon'}, 0),
            ('source', '0', {'A': 456, 'B': 'giraffe'}, 0),
            ('source', '0', {'A': 789, 'B': 'turtle'}, 0),
        ],
        outputs=[
            ('sink', '0', {'A': 123, 'B': 'falcon'}, 0),
            ('sink', '0', {'A': 456, 'B': 'giraffe'}, 0),
            ('sink', '0', {'A': 789, 'B': 'turtle'}, 0),
        ],
    ),
    Port(
        'source-table',
        'create source table',
        [
            "CREATE SOURCE TABLE INPUT (K INT PRIMARY KEY, text STRING) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE OUTPUT AS SELECT * FROM INPUT;',
        ],
        inputs=[
            ('test_topic', 1, 'a1', 0),
            ('test_topic', 2, 'a2', 0),
            ('test_topic', 3, 'a3', 0),
        ],
        outputs=[
            ('OUTPUT', 1, 'a1', None),
            ('OUTPUT', 2, 'a2', None),
            ('OUTPUT', 3, 'a3', None),
        ],
    ),
]


@pytest.mark.parametrize("port", PORTS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)


# ksqlDB's cases that end in an error: the records before it, then the error (ksqlDB's
# query fails with a StreamsException caused by a KsqlFunctionException).
OVERFLOWS = [
    (
        "sum decimal with overflow",
        "sum(value)",
        ["5.4", "100.1", "500.9", "300.8", "400.8"],
        [(0, "5.4"), (0, "105.5"), (100, "500.9"), (100, "801.7")],
        "Numeric field overflow: A field with precision 4 and scale 1 must round to an absolute value less than 10^3. Got 1202.5",
    ),
    (
        "sum decimal should overflow with cast to lower precision",
        "sum(CAST(value as DECIMAL(3,1)))",
        ["5.4", "10.1", "50.9", "50.8"],
        [(0, "5.4"), (0, "15.5"), (100, "50.9")],
        "Numeric field overflow: A field with precision 3 and scale 1 must round to an absolute value less than 10^2. Got 101.7",
    ),
]


@pytest.mark.parametrize(("name", "call", "values", "before", "error"), OVERFLOWS, ids=[o[0] for o in OVERFLOWS])
def test_ported_overflow(spark, name, call, values, before, error):
    """sum.json: a SUM of decimals that leaves its precision fails the query."""
    statements = [
        "CREATE STREAM TEST (ID BIGINT KEY, VALUE decimal(4,1)) WITH (kafka_topic='test_topic', value_format='AVRO');",
        f"CREATE TABLE S2 as SELECT ID, {call} AS SUM FROM test group by id;",
    ]
    keys = [0, 0, 100, 100, 100]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        topic = driver.create_input_topic("test_topic")
        output = driver.create_output_topic("S2")
        got = []
        for key, value in zip(keys[: len(values) - 1], values, strict=False):
            topic.pipe_input(key, {"VALUE": Decimal(value)}, 0)
            got += [(r.key, r.value["SUM"]) for r in output.read_records()]
        assert got == [(k, Decimal(v)) for k, v in before]
        with pytest.raises(Exception, match=re.escape(error)):
            topic.pipe_input(keys[len(values) - 1], {"VALUE": Decimal(values[-1])}, 0)

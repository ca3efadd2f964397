"""Joins of more than two sources, GROUP BY over a join and SELECT * with GROUP BY:
ksqlDB's query-validation tests ported (each names its file and case; see
test_qtt_ports.py for how records are compared), and its error cases with their texts
(see test_qtt_errors.py). Where ksqlDB's case reads two tables over one topic, the second
reads a topic of its own here: one script cannot read one topic twice (docs/sql.md); an
input record without a timestamp in ksqlDB's case has timestamp 0 here."""

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
        'multi-joins',
        'stream-table-table - inner-inner',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('right2', 0, {'V0': 3}, 10),
            ('right', 0, {'V0': 2}, 11),
            ('left', 0, {'V0': 1}, 12),
            ('left', 1, {'V0': 1}, 14),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - left-left',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.V0 FROM S1 LEFT JOIN T2 ON S1.ID = T2.ID LEFT JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('left', 0, {'V0': 1}, 9),
            ('right', 0, {'V0': 2}, 10),
            ('left', 0, {'V0': 1}, 11),
            ('right2', 0, {'V0': 3}, 12),
            ('left', 0, {'V0': 1}, 13),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': None, 'T3_V0': None}, 9),
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': None}, 11),
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 13),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - rekey',
        [
            "CREATE STREAM S1 (ID INT KEY, K INT, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.K, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON S1.K = T2.ID JOIN T3 ON S1.K = T3.ID;',
        ],
        inputs=[
            ('right2', 1, {'V0': 3}, 10),
            ('right', 1, {'V0': 2}, 11),
            ('left', 0, {'K': 1, 'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 1, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - rekey with different expression',
        [
            "CREATE STREAM S1 (ID INT KEY, K INT, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT T3.ID, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON S1.K - 1 = T2.ID JOIN T3 ON S1.K + 1 = T3.ID;',
        ],
        inputs=[
            ('right2', 3, {'V0': 3}, 10),
            ('right', 1, {'V0': 2}, 11),
            ('left', 0, {'K': 2, 'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 3, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - rekey on different expression',
        [
            "CREATE STREAM S1 (ID INT KEY, K INT, V0 int) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 int) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 int) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.K, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON S1.V0 = T2.ID JOIN T3 ON S1.K = T3.ID;',
        ],
        inputs=[
            ('right2', 2, {'V0': 3}, 10),
            ('right', 1, {'V0': 2}, 11),
            ('left', 0, {'K': 2, 'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 2, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - select * ',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('right2', 0, {'V0': 3}, 10),
            ('right', 0, {'V0': 2}, 11),
            ('left', 0, {'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_ID': 0, 'T2_V0': 2, 'T3_ID': 0, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - select sources.*',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT s1.*, t2.*, t3.* FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('right2', 0, {'V0': 3}, 10),
            ('right', 0, {'V0': 2}, 11),
            ('left', 0, {'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_ID': 0, 'T2_V0': 2, 'T3_ID': 0, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'table-table-table - inner-inner',
        [
            "CREATE TABLE T1 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT T1.ID, T1.V0, T2.V0, T3.V0 FROM T1 JOIN T2 ON T1.ID = T2.ID JOIN T3 ON T1.ID = T3.ID;',
        ],
        inputs=[
            ('left', 0, {'V0': 1}, 0),
            ('right', 0, {'V0': 2}, 1),
            ('right2', 0, {'V0': 3}, 2),
            ('left', 0, {'V0': 4}, 1000),
        ],
        outputs=[
            ('OUTPUT', 0, {'T1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 2),
            ('OUTPUT', 0, {'T1_V0': 4, 'T2_V0': 2, 'T3_V0': 3}, 1000),
        ],
    ),
    Port(
        'multi-joins',
        'table-table-table - inner-full',
        [
            "CREATE TABLE T1 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE TABLE OUTPUT as SELECT ROWKEY AS ID, T1.V0, T2.V0, T3.V0 FROM T1 JOIN T2 ON T1.ID = T2.ID FULL JOIN T3 ON T1.ID = T3.ID;',
        ],
        inputs=[
            ('left', 0, {'V0': 1}, 0),
            ('right2', 0, {'V0': 3}, 2),
            ('right', 0, {'V0': 2}, 3),
            ('left', 0, {'V0': 4}, 1000),
        ],
        outputs=[
            ('OUTPUT', 0, {'T1_V0': None, 'T2_V0': None, 'T3_V0': 3}, 2),
            ('OUTPUT', 0, {'T1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 3),
            ('OUTPUT', 0, {'T1_V0': 4, 'T2_V0': 2, 'T3_V0': 3}, 1000),
        ],
    ),
    Port(
        'multi-joins',
        'table-table-table - inner-inner - aliasing',
        [
            "CREATE TABLE left_table (l_id BIGINT PRIMARY KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE middle_table (m_id BIGINT PRIMARY KEY, f2 BIGINT, other STRING) WITH (kafka_topic='middle_topic', format='JSON');",
            "CREATE TABLE right_table (r_id BIGINT PRIMARY KEY, f3 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE TABLE output AS SELECT l_id, as_value(m_id) as m_id, f1, mt.f2, f3 FROM left_table AS lt JOIN middle_table AS mt ON lt.l_id = mt.m_id JOIN right_table AS rt ON lt.l_id = r_id;',
        ],
        inputs=[
            ('left_topic', 0, {'F1': 1}, 0),
            ('middle_topic', 0, {'F2': 2}, 1),
            ('right_topic', 0, {'F3': 3}, 2),
        ],
        outputs=[
            ('OUTPUT', 0, {'M_ID': 0, 'F1': 1, 'F2': 2, 'F3': 3}, 2),
        ],
    ),
    Port(
        'multi-joins',
        'should generate correct aliases when sources have some matching and some different columns',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, DIFF bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.DIFF FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('right2', 0, {'DIFF': 3}, 10),
            ('right', 0, {'V0': 2}, 11),
            ('left', 0, {'V0': 1}, 12),
            ('left', 1, {'V0': 1}, 14),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'DIFF': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - qualified select *',
        [
            "CREATE STREAM left_stream (id1 BIGINT KEY, f1 BIGINT) WITH (kafka_topic='left_topic', format='JSON');",
            "CREATE TABLE middle_table (id2 BIGINT PRIMARY KEY, f2 BIGINT, other STRING) WITH (kafka_topic='middle_topic', format='JSON');",
            "CREATE TABLE right_table (id3 BIGINT PRIMARY KEY, f3 BIGINT) WITH (kafka_topic='right_topic', format='JSON');",
            'CREATE STREAM output AS SELECT id1, f1, middle_table.*, right_table.* FROM left_stream JOIN middle_table ON id1 = id2 LEFT JOIN right_table ON f1 = id3;',
        ],
        inputs=[
            ('middle_topic', 0, {'F2': 100, 'OTHER': 'unused'}, 0),
            ('left_topic', 0, {'F1': 0}, 10000),
            ('right_topic', 0, {'F3': 4}, 11000),
            ('middle_topic', 8, {'F2': 10, 'OTHER': 'unused'}, 13000),
            ('left_topic', 8, {'F1': 8}, 16000),
            ('left_topic', 0, None, 18000),
        ],
        outputs=[
            ('OUTPUT', 0, {'ID1': 0, 'MIDDLE_TABLE_ID2': 0, 'MIDDLE_TABLE_F2': 100, 'MIDDLE_TABLE_OTHER': 'unused', 'RIGHT_TABLE_ID3': None, 'RIGHT_TABLE_F3': None}, 10000),
            ('OUTPUT', 8, {'ID1': 8, 'MIDDLE_TABLE_ID2': 8, 'MIDDLE_TABLE_F2': 10, 'MIDDLE_TABLE_OTHER': 'unused', 'RIGHT_TABLE_ID3': None, 'RIGHT_TABLE_F3': None}, 16000),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-left',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON S1.ID = T2.ID LEFT JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('left', 0, {'V0': 1}, 9),
            ('right', 0, {'V0': 2}, 10),
            ('left', 0, {'V0': 1}, 11),
            ('right2', 0, {'V0': 3}, 12),
            ('left', 0, {'V0': 1}, 13),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': None}, 11),
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 13),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - left-inner',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.V0 FROM S1 LEFT JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        inputs=[
            ('left', 0, {'V0': 1}, 9),
            ('right', 0, {'V0': 2}, 10),
            ('left', 0, {'V0': 1}, 11),
            ('right2', 0, {'V0': 3}, 12),
            ('left', 0, {'V0': 1}, 13),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 13),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - flip join expression',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT T2.ID, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON T2.ID = S1.ID JOIN T3 ON T3.ID = S1.ID;',
        ],
        inputs=[
            ('right2', 0, {'V0': 3}, 10),
            ('right', 0, {'V0': 2}, 11),
            ('left', 0, {'V0': 1}, 12),
            ('left', 1, {'V0': 1}, 14),
        ],
        outputs=[
            ('OUTPUT', 0, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'multi-joins',
        'stream-table-table - inner-inner - rekey and flip join expression',
        [
            "CREATE STREAM S1 (ID INT KEY, K INT, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT T3.ID, s1.V0, t2.V0, t3.V0 FROM S1 JOIN T2 ON T2.ID = S1.K JOIN T3 ON T3.ID = S1.K;',
        ],
        inputs=[
            ('right2', 1, {'V0': 3}, 10),
            ('right', 1, {'V0': 2}, 11),
            ('left', 0, {'K': 1, 'V0': 1}, 12),
        ],
        outputs=[
            ('OUTPUT', 1, {'S1_V0': 1, 'T2_V0': 2, 'T3_V0': 3}, 12),
        ],
    ),
    Port(
        'group-by',
        'on join',
        [
            "CREATE TABLE t1 (ID BIGINT PRIMARY KEY, TOTAL integer) WITH (kafka_topic='T1', value_format='JSON');",
            "CREATE TABLE t2 (ID BIGINT PRIMARY KEY, TOTAL integer) WITH (kafka_topic='T2', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT t1.ID, SUM(t1.total + CASE WHEN t2.total IS NULL THEN 0 ELSE t2.total END) as SUM FROM T1 LEFT JOIN T2 ON (t1.ID = t2.ID) GROUP BY t1.ID HAVING COUNT(1) > 0;',
        ],
        inputs=[
            ('T1', 0, {'TOTAL': 100}, 0),
            ('T1', 1, {'TOTAL': 101}, 0),
            ('T2', 0, {'TOTAL': 5}, 0),
            ('T2', 1, {'TOTAL': 10}, 0),
            ('T2', 0, {'TOTAL': 20}, 0),
            ('T2', 0, None, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'SUM': 100}, None),
            ('OUTPUT', 1, {'SUM': 101}, None),
            ('OUTPUT', 0, {'SUM': 105}, None),
            ('OUTPUT', 1, {'SUM': 111}, None),
            ('OUTPUT', 0, {'SUM': 120}, None),
            ('OUTPUT', 0, {'SUM': 100}, None),
        ],
    ),
    Port(
        'group-by',
        'select * where all columns in group by',
        [
            "CREATE STREAM TEST (id INT KEY, id2 INT) WITH (kafka_topic='test_topic', format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT *, COUNT() FROM TEST GROUP BY id, id2;',
        ],
        inputs=[
            ('test_topic', 1, {'ID2': 2}, 0),
        ],
        outputs=[
            ('OUTPUT', {'ID': 1, 'ID2': 2}, {'KSQL_COL_0': 1}, None),
        ],
    ),
    Port(
        'sum',
        'sum int left join of table',
        [
            "CREATE TABLE t1 (ID BIGINT PRIMARY KEY, TOTAL integer) WITH (kafka_topic='T1', value_format='JSON');",
            "CREATE TABLE t2 (ID BIGINT PRIMARY KEY, TOTAL integer) WITH (kafka_topic='T2', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT T1.ID, SUM(t2.total) as SUM FROM T1 LEFT JOIN T2 ON (t1.id = t2.id) GROUP BY t1.id;',
        ],
        inputs=[
            ('T1', 0, {'TOTAL': 100}, 0),
            ('T1', 1, {'TOTAL': 101}, 0),
            ('T2', 0, {'TOTAL': 5}, 0),
            ('T2', 1, {'TOTAL': 10}, 0),
            ('T2', 0, {'TOTAL': 20}, 0),
            ('T2', 0, None, 0),
        ],
        outputs=[
            ('OUTPUT', 0, {'SUM': 0}, None),
            ('OUTPUT', 1, {'SUM': 0}, None),
            ('OUTPUT', 0, {'SUM': 5}, None),
            ('OUTPUT', 1, {'SUM': 10}, None),
            ('OUTPUT', 0, {'SUM': 20}, None),
            ('OUTPUT', 0, {'SUM': 0}, None),
        ],
    ),
]

# Scenarios of our own: a foreign-key join, then a primary-key join of its result (the
# foreign-key join first, as ksqlDB takes it); a grouping of a stream-table-table join.
SCENARIOS = [
    Port(
        'scenario',
        'a foreign-key join, then a primary-key join of its result',
        [
            "CREATE TABLE ORDERS (ID INT PRIMARY KEY, PRODUCT STRING, QTY INT) WITH (kafka_topic='orders', value_format='JSON');",
            "CREATE TABLE PRODUCTS (NAME STRING PRIMARY KEY, PRICE DOUBLE) WITH (kafka_topic='products', value_format='JSON');",
            "CREATE TABLE SHIPPING (ORDER_ID INT PRIMARY KEY, CITY STRING) WITH (kafka_topic='shipping', value_format='JSON');",
            'CREATE TABLE OUT AS SELECT O.ID, O.QTY * P.PRICE AS TOTAL, S.CITY FROM ORDERS O JOIN PRODUCTS P ON O.PRODUCT = P.NAME LEFT JOIN SHIPPING S ON O.ID = S.ORDER_ID;',
        ],
        inputs=[
            ('products', 'kettle', {'PRICE': 2.5}, 1),
            ('orders', 1, {'PRODUCT': 'kettle', 'QTY': 2}, 2),
            ('shipping', 1, {'CITY': 'Oslo'}, 3),
            ('products', 'kettle', {'PRICE': 3.0}, 4),
            ('orders', 1, {'PRODUCT': 'mug', 'QTY': 2}, 5),
        ],
        outputs=[
            ('OUT', 1, {'TOTAL': 5.0, 'CITY': None}, 2),
            ('OUT', 1, {'TOTAL': 5.0, 'CITY': 'Oslo'}, 3),
            ('OUT', 1, {'TOTAL': 6.0, 'CITY': 'Oslo'}, 4),
            ('OUT', 1, None, 5),
        ],
    ),
    Port(
        'scenario',
        'GROUP BY over a stream-table-table join',
        [
            "CREATE STREAM CLICKS (USER_ID INT KEY, URL STRING) WITH (kafka_topic='clicks', value_format='JSON');",
            "CREATE TABLE USERS (ID INT PRIMARY KEY, REGION_ID INT) WITH (kafka_topic='users', value_format='JSON');",
            "CREATE TABLE REGIONS (ID INT PRIMARY KEY, NAME STRING) WITH (kafka_topic='regions', value_format='JSON');",
            'CREATE TABLE PER_REGION AS SELECT R.NAME, COUNT(*) AS CLICKS FROM CLICKS C JOIN USERS U ON C.USER_ID = U.ID JOIN REGIONS R ON U.REGION_ID = R.ID GROUP BY R.NAME;',
        ],
        inputs=[
            ('regions', 10, {'NAME': 'north'}, 1),
            ('users', 1, {'REGION_ID': 10}, 2),
            ('users', 2, {'REGION_ID': 10}, 3),
            ('clicks', 1, {'URL': 'a'}, 4),
            ('clicks', 2, {'URL': 'b'}, 5),
            ('clicks', 3, {'URL': 'c'}, 6),
        ],
        outputs=[
            ('PER_REGION', 'north', {'CLICKS': 1}, 4),
            ('PER_REGION', 'north', {'CLICKS': 2}, 5),
        ],
    ),
]

ERRORS = [
    Case(
        'multi-joins',
        'inner-inner - missing join columns in projection',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT s1.V0, t2.V0, t3.V0 FROM S1 INNER JOIN T2 ON S1.ID = T2.ID INNER JOIN T3 ON S1.ID = T3.ID;',
        ],
        'The query used to build `OUTPUT` must include the join expressions S1.ID, T2.ID or T3.ID in its projection (eg, SELECT S1.ID...)',
        (4, 25),
    ),
    Case(
        'multi-joins',
        'left-left - missing join columns in projection',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT s1.V0, t2.V0, t3.V0 FROM S1 LEFT JOIN T2 ON S1.ID = T2.ID LEFT JOIN T3 ON S1.ID = T3.ID;',
        ],
        'The query used to build `OUTPUT` must include the join expressions S1.ID, T2.ID or T3.ID in its projection (eg, SELECT S1.ID...)',
        (4, 25),
    ),
    Case(
        'multi-joins',
        'self join with multiple sources',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM S1 JOIN T2 ON S1.V0 = T2.V0 JOIN T3 ON S1.V0 = S1.V0;',
        ],
        'Each side of the join must reference exactly one source and not the same source. Left side references `S1` and right references `S1`',
        (4, 78),
    ),
    Case(
        'multi-joins',
        'criteria that does not use the joined source',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T2.ID;',
        ],
        'A join criteria is expected to reference the source (`T3`) in the FROM clause, instead the right source references `T2` and the left source references `S1`',
        (4, 78),
    ),
    Case(
        'multi-joins',
        'table-table-stream - Invalid',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM T2 JOIN T3 ON T2.ID = T3.ID JOIN S1 ON T2.ID = S1.ID;',
        ],
        'Invalid join order: table-stream joins are not supported; only stream-table joins. Got T2 [INNER] JOIN S1',
        (4, 72),
    ),
    Case(
        'multi-joins',
        'join on literal',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, DIFF bigint) WITH (kafka_topic='right2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT S1.ID, s1.V0, t2.V0, t3.DIFF FROM S1 JOIN T2 ON S1.ID = 0 JOIN T3 ON S1.ID = T3.ID;',
        ],
        "Invalid comparison expression '0' in join '(S1.ID = 0)'. Each side of the join comparision must contain references from exactly one source",
        (4, 88),
    ),
    Case(
        'multi-joins',
        'partition count mismatch',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left', value_format='JSON', PARTITIONS=1);",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right', value_format='JSON', PARTITIONS=1);",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right2', value_format='JSON', PARTITIONS=2);",
            'CREATE STREAM OUTPUT as SELECT * FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;',
        ],
        "Can't join `S1` with `T3` since the number of partitions don't match. `S1` partitions = 1; `T3` partitions = 2. Please repartition either one so that the number of partitions match",
        (4, 72),
    ),
    Case(
        'multi-joins',
        'duplicate source',
        [
            "CREATE STREAM S1 (ID INT KEY, V0 bigint) WITH (kafka_topic='left_topic', value_format='JSON');",
            "CREATE TABLE T2 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic', value_format='JSON');",
            "CREATE TABLE T3 (ID INT PRIMARY KEY, V0 bigint) WITH (kafka_topic='right_topic2', value_format='JSON');",
            'CREATE STREAM OUTPUT as SELECT * FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T2 ON S1.V0 = T2.V0;',
        ],
        "N-way joins do not support multiple occurrences of the same source. Source: 'T2'",
        (4, 72),
    ),
    Case(
        'group-by',
        'select * where not all columns in group by',
        [
            "CREATE STREAM TEST (id INT KEY, id2 INT) WITH (kafka_topic='test_topic', value_format='JSON');",
            'CREATE TABLE OUTPUT AS SELECT *, COUNT() FROM TEST GROUP BY id;',
        ],
        'Non-aggregate SELECT expression(s) not part of GROUP BY: ID2',
        (2, 24),
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", PORTS + SCENARIOS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)


@pytest.mark.parametrize("case", ERRORS, ids=str)
def test_error(case: Case):
    check_error(case)


def test_foreign_key_join_inside_an_n_way_join_is_refused():
    """ksqlDB (LogicalPlanner.verifyForeignKeyJoin) takes a foreign-key join only as the
    first join of a query."""
    with pytest.raises(SqlError, match="foreign-key table-table joins are not supported as part of n-way joins. Got T2.V0 = T3.ID"):
        compile_sql("""
            CREATE TABLE T1 (ID INT PRIMARY KEY, V0 INT) WITH (kafka_topic='a', value_format='JSON');
            CREATE TABLE T2 (ID INT PRIMARY KEY, V0 INT) WITH (kafka_topic='b', value_format='JSON');
            CREATE TABLE T3 (ID INT PRIMARY KEY, V0 INT) WITH (kafka_topic='c', value_format='JSON');
            CREATE TABLE OUT AS SELECT T1.ID, T3.V0 FROM T1 JOIN T2 ON T1.ID = T2.ID JOIN T3 ON T2.V0 = T3.ID;
        """)

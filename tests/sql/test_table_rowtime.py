"""A table's ROWTIME in a join: the timestamp of the table row the other side met (as
ksqlDB copies each source's ROWTIME into the join's value), beside the stream record's
own ROWTIME and the result's timestamp."""

from __future__ import annotations

import pytest

from tablestream.testing.driver import TestDriver

from .test_qtt_ports import Port
from .test_record_columns import check

USERS = "CREATE TABLE U (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='u', value_format='JSON');"
CLICKS = "CREATE STREAM C (K STRING KEY, UID BIGINT) WITH (kafka_topic='c', value_format='JSON');"

SCENARIOS = [
    Port(
        'scenario',
        "a stream-table join reads the matched table row's ROWTIME",
        [
            CLICKS,
            USERS,
            'CREATE STREAM OUT AS SELECT C.UID, C.K, C.ROWTIME AS CT, U.ROWTIME AS UT, U.NAME FROM C JOIN U ON C.UID = U.ID;',
        ],
        inputs=[
            ('u', 7, {'NAME': 'ann'}, 1),
            ('c', 'a', {'UID': 7}, 5),
            ('u', 7, {'NAME': 'bob'}, 3),
            ('c', 'b', {'UID': 7}, 9),
            ('c', 'c', {'UID': 8}, 10),
        ],
        outputs=[
            ('OUT', 7, {'K': 'a', 'CT': 5, 'UT': 1, 'NAME': 'ann'}, 5),
            ('OUT', 7, {'K': 'b', 'CT': 9, 'UT': 3, 'NAME': 'bob'}, 9),
        ],
    ),
    Port(
        'scenario',
        "a left stream-table join's table ROWTIME is null without a match, and filters",
        [
            CLICKS,
            USERS,
            'CREATE STREAM OUT AS SELECT C.UID, U.ROWTIME AS UT, U.ROWTIME + 1 AS NEXT FROM C LEFT JOIN U ON C.UID = U.ID '
            'WHERE U.ROWTIME IS NULL OR U.ROWTIME < 4;',
        ],
        inputs=[
            ('c', 'a', {'UID': 7}, 2),
            ('u', 7, {'NAME': 'ann'}, 3),
            ('c', 'b', {'UID': 7}, 5),
            ('u', 7, {'NAME': 'bob'}, 4),
            ('c', 'c', {'UID': 7}, 6),
        ],
        outputs=[
            ('OUT', 7, {'UT': None, 'NEXT': None}, 2),
            ('OUT', 7, {'UT': 3, 'NEXT': 4}, 5),
        ],
    ),
    Port(
        'scenario',
        "a primary-key table-table join reads both rows' ROWTIME; the result's is the larger",
        [
            "CREATE TABLE L (ID BIGINT PRIMARY KEY, A STRING) WITH (kafka_topic='l', value_format='JSON');",
            "CREATE TABLE R (ID BIGINT PRIMARY KEY, B STRING) WITH (kafka_topic='r', value_format='JSON');",
            'CREATE TABLE OUT AS SELECT L.ID, L.A, R.B, L.ROWTIME AS LT, R.ROWTIME AS RT FROM L LEFT JOIN R ON L.ID = R.ID;',
        ],
        inputs=[
            ('l', 1, {'A': 'x'}, 10),
            ('r', 1, {'B': 'y'}, 4),
            ('r', 1, {'B': 'z'}, 12),
            ('l', 1, {'A': 'w'}, 11),
        ],
        outputs=[
            ('OUT', 1, {'A': 'x', 'B': None, 'LT': 10, 'RT': None}, 10),
            ('OUT', 1, {'A': 'x', 'B': 'y', 'LT': 10, 'RT': 4}, 10),
            ('OUT', 1, {'A': 'x', 'B': 'z', 'LT': 10, 'RT': 12}, 12),
            ('OUT', 1, {'A': 'w', 'B': 'z', 'LT': 11, 'RT': 12}, 12),
        ],
    ),
    Port(
        'scenario',
        "a foreign-key join reads both rows' ROWTIME",
        [
            "CREATE TABLE O (ID BIGINT PRIMARY KEY, PID BIGINT, QTY INT) WITH (kafka_topic='o', value_format='JSON');",
            "CREATE TABLE P (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='p', value_format='JSON');",
            'CREATE TABLE OUT AS SELECT O.ID, O.QTY, P.NAME, O.ROWTIME AS OT, P.ROWTIME AS PT FROM O JOIN P ON O.PID = P.ID;',
        ],
        inputs=[
            ('p', 100, {'NAME': 'pen'}, 2),
            ('o', 1, {'PID': 100, 'QTY': 3}, 5),
            ('p', 100, {'NAME': 'ink'}, 8),
            ('o', 1, {'PID': 100, 'QTY': 4}, 6),
        ],
        outputs=[
            ('OUT', 1, {'QTY': 3, 'NAME': 'pen', 'OT': 5, 'PT': 2}, 5),
            ('OUT', 1, {'QTY': 3, 'NAME': 'ink', 'OT': 5, 'PT': 8}, 8),
            ('OUT', 1, {'QTY': 4, 'NAME': 'ink', 'OT': 6, 'PT': 8}, 8),
        ],
    ),
    Port(
        'scenario',
        "an aggregation over a stream-table join of the table rows' ROWTIME",
        [
            CLICKS,
            USERS,
            'CREATE TABLE OUT AS SELECT U.NAME, COUNT(*) AS N, MAX(U.ROWTIME) AS LATEST FROM C JOIN U ON C.UID = U.ID GROUP BY U.NAME;',
        ],
        inputs=[
            ('u', 7, {'NAME': 'ann'}, 1),
            ('u', 8, {'NAME': 'ann'}, 2),
            ('c', 'a', {'UID': 7}, 5),
            ('c', 'b', {'UID': 8}, 6),
        ],
        outputs=[
            ('OUT', 'ann', {'N': 1, 'LATEST': 1}, 5),
            ('OUT', 'ann', {'N': 2, 'LATEST': 2}, 6),
        ],
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", SCENARIOS, ids=str)
def test_table_rowtime_in_a_join(spark, port: Port):
    check(spark, port)


@pytest.mark.spark
def test_stream_records_of_one_batch_read_the_table_row_of_their_time(spark):
    """Table updates and stream records in one batch: each stream record reads the
    ROWTIME of the version its key had at the record's time."""
    statements = [
        CLICKS,
        USERS,
        'CREATE STREAM OUT AS SELECT C.UID, C.K, U.NAME, U.ROWTIME AS UT FROM C JOIN U ON C.UID = U.ID;',
    ]
    with TestDriver.from_sql(statements, spark=spark, batched=True) as driver:
        users, clicks = driver.create_input_topic("u"), driver.create_input_topic("c")
        users.pipe_input(7, {"NAME": "ann"}, timestamp=1)
        clicks.pipe_input("a", {"UID": 7}, timestamp=2)
        users.pipe_input(7, {"NAME": "bob"}, timestamp=3)
        clicks.pipe_input("b", {"UID": 7}, timestamp=4)
        driver.advance()
        records = [(r.key, r.value, r.timestamp) for r in driver.create_output_topic("OUT").read_records()]
    assert records == [
        (7, {"K": "a", "NAME": "ann", "UT": 1}, 2),
        (7, {"K": "b", "NAME": "bob", "UT": 3}, 4),
    ]

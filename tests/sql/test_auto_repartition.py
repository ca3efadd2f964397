"""SET 'tablestream.auto.repartition'='true': a join of sources whose partition counts
differ repartitions instead of ksqlDB's refusal (a stream to its table's count; of two
tables the one with fewer partitions), and the plan shows the repartition."""

from __future__ import annotations

import pytest

from tablestream.plan.stateless import Repartition
from tablestream.sql.compiler import compile_sql
from tablestream.sql.errors import SqlError

from .test_qtt_ports import Port
from .test_record_columns import check

AUTO = "SET 'tablestream.auto.repartition'='true';\n"
STREAM_TABLE = """
CREATE STREAM C (USER_ID BIGINT KEY, URL STRING) WITH (kafka_topic='c', value_format='JSON', partitions=1);
CREATE TABLE U (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='u', value_format='JSON', partitions=2);
CREATE STREAM J AS SELECT C.USER_ID, URL, NAME FROM C JOIN U ON C.USER_ID = U.ID;
"""
TABLE_TABLE = """
CREATE TABLE A (ID BIGINT PRIMARY KEY, X STRING) WITH (kafka_topic='a', value_format='JSON', partitions=3);
CREATE TABLE U (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='u', value_format='JSON', partitions=2);
CREATE TABLE J AS SELECT A.ID, X, NAME FROM A LEFT JOIN U ON A.ID = U.ID;
"""


def repartitions(sql: str) -> list[tuple[str, int | None]]:
    """The repartitions of the plan: (the node they read from, their partition count)."""
    topology = compile_sql(sql).topology
    parents = {n.name: n for n in topology.nodes}
    return [(type(parents[n.parent]).__name__, n.partitions) for n in topology.nodes if isinstance(n, Repartition)]


@pytest.mark.parametrize("value", ["false", "no"])
def test_without_the_property_the_counts_must_match(value):
    with pytest.raises(SqlError, match="Can't join `C` with `U` since the number of partitions don't match. `C` partitions = 1; `U` partitions = 2"):
        compile_sql(f"SET 'tablestream.auto.repartition'='{value}';" + STREAM_TABLE)


def test_a_stream_is_repartitioned_to_its_tables_count():
    assert repartitions(AUTO + STREAM_TABLE) == [("StreamSource", 2)]
    assert "KSTREAM-REPARTITION-0000000004-repartition" in str(compile_sql(AUTO + STREAM_TABLE).topology.describe())


def test_of_two_tables_the_one_with_fewer_partitions_is_repartitioned():
    # U (2 partitions) goes to A's 3: its changes through a repartition topic, read back
    # as a table.
    assert repartitions(AUTO + TABLE_TABLE) == [("ToStream", 3)]


def test_an_n_way_join_repartitions_once_for_the_count_it_reaches():
    sql = AUTO + """
        CREATE STREAM S1 (ID INT KEY, V0 BIGINT) WITH (kafka_topic='s1', value_format='JSON', partitions=1);
        CREATE TABLE T2 (ID INT PRIMARY KEY, V0 BIGINT) WITH (kafka_topic='t2', value_format='JSON', partitions=2);
        CREATE TABLE T3 (ID INT PRIMARY KEY, V0 BIGINT) WITH (kafka_topic='t3', value_format='JSON', partitions=2);
        CREATE STREAM OUT AS SELECT S1.ID, S1.V0, T2.V0, T3.V0 FROM S1 JOIN T2 ON S1.ID = T2.ID JOIN T3 ON S1.ID = T3.ID;
    """
    assert repartitions(sql) == [("StreamSource", 2)]


PORTS = [
    Port(
        'scenario',
        'a stream-table join of 1 and 2 partitions',
        [AUTO, *[s + ";" for s in STREAM_TABLE.strip().rstrip(";").split(";\n")]],
        inputs=[('u', 7, {'NAME': 'ann'}, 1), ('c', 7, {'URL': 'a'}, 2), ('c', 8, {'URL': 'b'}, 3)],
        outputs=[('J', 7, {'URL': 'a', 'NAME': 'ann'}, 2)],
    ),
    Port(
        'scenario',
        'a table-table join of 3 and 2 partitions',
        [AUTO, *[s + ";" for s in TABLE_TABLE.strip().rstrip(";").split(";\n")]],
        inputs=[('a', 1, {'X': 'x'}, 1), ('u', 1, {'NAME': 'ann'}, 2), ('u', 1, None, 3)],
        outputs=[('J', 1, {'X': 'x', 'NAME': None}, 1), ('J', 1, {'X': 'x', 'NAME': 'ann'}, 2), ('J', 1, {'X': 'x', 'NAME': None}, 3)],
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize("port", PORTS, ids=str)
def test_records(spark, port: Port):
    check(spark, port)

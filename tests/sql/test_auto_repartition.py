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


OWN_COUNT = """
CREATE STREAM A (ID BIGINT KEY, X BIGINT) WITH (kafka_topic='a', value_format='JSON', partitions=2);
CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='t', value_format='JSON', partitions=4);
CREATE STREAM B WITH (PARTITIONS=4) AS SELECT * FROM A;
CREATE STREAM C AS SELECT B.ID, X, NAME FROM B JOIN T ON B.ID = T.ID;
"""
OWN_COUNT_TABLE = """
CREATE TABLE A (ID BIGINT PRIMARY KEY, X BIGINT) WITH (kafka_topic='a', value_format='JSON', partitions=2);
CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='t', value_format='JSON', partitions=4);
CREATE TABLE B WITH (PARTITIONS=4) AS SELECT * FROM A;
CREATE TABLE C AS SELECT B.ID, X, NAME FROM B JOIN T ON B.ID = T.ID;
"""


def test_a_target_with_partitions_of_its_own_is_read_in_that_count():
    """B's topic has 4 partitions (its WITH), so C joins it with T's 4 without a
    repartition of its own: the plan reads B through a repartition to 4, as from its
    topic (not in A's 2, which the join's co-partitioning check would refuse)."""
    assert repartitions(OWN_COUNT) == [("StreamSource", 4)]
    assert repartitions(OWN_COUNT_TABLE) == [("ToStream", 4)]
    assert compile_sql(OWN_COUNT).topics == {"a": 2, "t": 4, "B": 4, "C": 4}


def test_a_target_without_partitions_has_its_querys_count():
    """A join's result has the count its join reached (T's 2, A being repartitioned to
    it), not its leftmost source's."""
    compiled = compile_sql(AUTO + """
        CREATE STREAM A (ID BIGINT KEY, X BIGINT) WITH (kafka_topic='a', value_format='JSON', partitions=1);
        CREATE TABLE T (ID BIGINT PRIMARY KEY, NAME STRING) WITH (kafka_topic='t', value_format='JSON', partitions=2);
        CREATE STREAM C AS SELECT A.ID, X, NAME FROM A JOIN T ON A.ID = T.ID;
    """)
    assert compiled.topics == {"a": 1, "t": 2, "C": 2}


PORTS = [
    Port(
        'scenario',
        'a join with a stream written in a partition count of its own',
        [s + ";" for s in OWN_COUNT.strip().rstrip(";").split(";\n")],
        inputs=[('t', 7, {'NAME': 'ann'}, 1), ('a', 7, {'X': 1}, 2), ('a', 8, {'X': 2}, 3)],
        outputs=[('B', 7, {'X': 1}, 2), ('B', 8, {'X': 2}, 3), ('C', 7, {'X': 1, 'NAME': 'ann'}, 2)],
    ),
    Port(
        'scenario',
        'a join with a table written in a partition count of its own',
        [s + ";" for s in OWN_COUNT_TABLE.strip().rstrip(";").split(";\n")],
        inputs=[('t', 7, {'NAME': 'ann'}, 1), ('a', 7, {'X': 1}, 2), ('a', 7, None, 3)],
        outputs=[
            ('B', 7, {'X': 1}, 2), ('B', 7, None, 3),
            ('C', 7, {'X': 1, 'NAME': 'ann'}, 2), ('C', 7, None, 3),
        ],
    ),
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

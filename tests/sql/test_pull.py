"""Pull queries: through ``TestDriver.from_sql``, the current rows of a CREATE TABLE AS
SELECT's table and of a source table after each record, the projection and WHERE
evaluated on them; without Spark, ksqlDB's errors for what pull queries do not read."""

from __future__ import annotations

import pytest

from tablestream.sql import SqlError, compile_sql, parse
from tablestream.sql.pull import PullQuery
from tablestream.testing.driver import TestDriver

SQL = """
CREATE STREAM s (id INT KEY, v STRING, amount INT) WITH (kafka_topic='s', value_format='json');
CREATE TABLE c AS SELECT v, COUNT(*) AS n, SUM(amount) AS total FROM s GROUP BY v;
CREATE TABLE d (id INT PRIMARY KEY, x STRING) WITH (kafka_topic='d', value_format='json');
CREATE SOURCE TABLE e (id INT PRIMARY KEY, x STRING) WITH (kafka_topic='e', value_format='json');
"""


@pytest.mark.spark
def test_pull_queries_read_current_rows(spark):
    with TestDriver.from_sql(SQL, spark=spark) as driver:
        s = driver.create_input_topic("s")
        s.pipe_input(1, {"V": "a", "AMOUNT": 3}, timestamp=5)
        s.pipe_input(2, {"V": "b", "AMOUNT": 4}, timestamp=6)
        assert driver.pull("SELECT * FROM c;") == [("a", 1, 3), ("b", 1, 4)]
        s.pipe_input(3, {"V": "a", "AMOUNT": 1}, timestamp=7)
        driver.create_input_topic("e").pipe_input(9, {"X": "nine"}, timestamp=8)
        assert driver.pull("SELECT * FROM c;") == [("a", 2, 4), ("b", 1, 4)]
        assert driver.pull("SELECT v, n, ROWTIME FROM c WHERE v = 'a';") == [("a", 2, 7)]
        assert driver.pull("SELECT v AS name FROM c WHERE v IN ('b', 'z') OR total > 100;") == [("b",)]
        assert driver.pull("SELECT * FROM c WHERE n BETWEEN 2 AND 3 AND NOT v IS NULL;") == [("a", 2, 4)]
        assert driver.pull("SELECT * FROM c LIMIT 1;") == [("a", 2, 4)]
        assert driver.pull("SELECT * FROM e WHERE id = 9;") == [(9, "nine")]
        driver.create_input_topic("e").pipe_input(9, None, timestamp=9)
        assert driver.pull("SELECT * FROM e;") == []


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FROM s;", "Line: 1, Col: 1: Pull queries on streams are disabled. To create a push query on the stream, add EMIT CHANGES to the end. Statement: SELECT * FROM s"),
        ("SELECT * FROM d;", "Line: 1, Col: 1: The `D` table isn't queryable. To derive a queryable table, you can do 'CREATE TABLE QUERYABLE_D AS SELECT * FROM D'. See https://cnfl.io/queries for more info. Add EMIT CHANGES if you intended to issue a push query. Statement: SELECT * FROM d"),
        ("SELECT v, COUNT(*) FROM c GROUP BY v;", "Line: 1, Col: 1: Pull queries don't support GROUP BY clauses. See https://cnfl.io/queries for more info. Add EMIT CHANGES if you intended to issue a push query. Statement: SELECT v, COUNT(*) FROM c GROUP BY v"),
        ("SELECT * FROM c JOIN d ON c.v = d.x;", "Line: 1, Col: 1: Pull queries don't support JOIN clauses. See https://cnfl.io/queries for more info. Add EMIT CHANGES if you intended to issue a push query. Statement: SELECT * FROM c JOIN d ON c.v = d.x"),
        ("SELECT UCASE(v) FROM c;", "Line: 1, Col: 8: Pull queries evaluate column references, literals, comparisons, IN, BETWEEN, IS NULL, AND, OR and NOT only (for now), got UCASE(V). Statement: SELECT UCASE(v) FROM c"),
        ("SELECT nope FROM c;", "Line: 1, Col: 8: SELECT column 'NOPE' cannot be resolved. Statement: SELECT nope FROM c"),
        ("SELECT * FROM nope;", "Line: 1, Col: 15: NOPE does not exist. Statement: SELECT * FROM nope"),
    ],
)
def test_pull_query_errors(sql, message):
    compiled = compile_sql(SQL)
    with pytest.raises(SqlError) as caught:
        PullQuery.plan(parse(sql)[0], sql, compiled.sources, compiled.queries)
    assert str(caught.value) == message

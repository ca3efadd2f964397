"""``tablestream sql`` through typer's CliRunner: statements on stdin or in a file run in
order, their results printed as tables; the first error ends the command. The
Spark-free part (declarations, SHOW, DESCRIBE, PRINT) and, with Spark, pull and push
queries over a persistent query's table."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from tablestream.cli import app
from tablestream.shell import statement_complete

runner = CliRunner()

SCRIPT = """\
CREATE STREAM clicks (user_id BIGINT KEY, url STRING)
  WITH (kafka_topic='clicks', value_format='json', partitions=1);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/home', 1000);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/shop', 2000);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (8, '/shop', 3000);
SHOW STREAMS;
DESCRIBE clicks;
PRINT clicks FROM BEGINNING LIMIT 2;
"""

EXPECTED = """\
+----------------+
| Message        |
|----------------|
| Stream created |
+----------------+
+------------------------------------------------------------------+
| Stream Name | Kafka Topic | Key Format | Value Format | Windowed |
|-------------+-------------+------------+--------------+----------|
| CLICKS      | clicks      | KAFKA      | JSON         | false    |
+------------------------------------------------------------------+
Name                 : CLICKS
+----------------------------------+
| Field   | Type                   |
|---------+------------------------|
| USER_ID | BIGINT           (key) |
| URL     | STRING                 |
+----------------------------------+
For runtime statistics and query details run: DESCRIBE <Stream,Table> EXTENDED;
Key format: KAFKA_BIGINT
Value format: JSON
rowtime: 1970/01/01 00:00:01.000 Z, key: 7, value: {"URL":"/home"}, partition: 0
rowtime: 1970/01/01 00:00:02.000 Z, key: 7, value: {"URL":"/shop"}, partition: 0
"""


def sql(home, *args: str, stdin: str | None = None, code: int = 0) -> str:
    result = runner.invoke(app, ["sql", *args, "--home", str(home)], input=stdin)
    assert result.exit_code == code, result.output
    return result.output


def test_statements_on_stdin_print_tables(tmp_path):
    assert sql(tmp_path / "home", stdin=SCRIPT) == EXPECTED


def test_file_and_first_error(tmp_path):
    script = tmp_path / "script.sql"
    script.write_text(SCRIPT + "DESCRIBE nope;\nSHOW STREAMS;\n")
    out = sql(tmp_path / "home", "--file", str(script), code=1)
    assert out == EXPECTED + (
        "Error: Line: 9, Col: 10: Could not find STREAM/TABLE 'NOPE' in the Metastore. Statement: DESCRIBE nope\n"
    )
    # The statements before the error are done: the next session sees the stream.
    assert "| CLICKS      | clicks" in sql(tmp_path / "home", stdin="SHOW STREAMS;")
    # Another application id has a metastore of its own.
    assert "| CLICKS" not in sql(tmp_path / "home", "--application-id", "other", stdin="SHOW STREAMS;")


def test_a_syntax_error_runs_nothing(tmp_path):
    out = sql(tmp_path / "home", stdin="SHOW STREAMS;\nSHOW STREAMZ;\n", code=1)
    assert out == (
        "Error: Line: 2, Col: 6: Expecting STREAMS, TABLES, TOPICS, QUERIES or PROPERTIES at or near 'STREAMZ'. "
        "Statement: SHOW STREAMZ\n"
    )


@pytest.mark.parametrize(
    ("buffer", "complete"),
    [
        ("SHOW STREAMS", False),
        ("SHOW STREAMS;", True),
        ("CREATE STREAM s (a INT)\n  WITH (kafka_topic='s;', value_format='json')", False),
        ("SELECT 'a;b' FROM t; -- done", True),
        ("SELECT `weird;name` FROM t", False),
    ],
)
def test_a_statement_ends_with_a_semicolon(buffer, complete):
    assert statement_complete(buffer) is complete


PULL_PUSH = """\
CREATE STREAM clicks (user_id BIGINT KEY, url STRING)
  WITH (kafka_topic='clicks', value_format='json', partitions=1);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/home', 1000);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/shop', 2000);
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (8, '/shop', 3000);
CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n, LATEST_BY_OFFSET(url) AS last_url
  FROM clicks GROUP BY user_id;
SELECT * FROM per_user;
SELECT user_id, n, ROWTIME FROM per_user WHERE user_id = 7;
SELECT url FROM clicks WHERE url = '/shop' EMIT CHANGES LIMIT 1;
INSERT INTO clicks (user_id, url, ROWTIME) VALUES (8, '/pay', 4000);
SELECT * FROM per_user WHERE user_id IN (8, 9);
SELECT user_id, n FROM per_user EMIT CHANGES;
PRINT PER_USER FROM BEGINNING LIMIT 1;
TERMINATE CTAS_PER_USER_0;
SELECT * FROM per_user;
"""

PULL_PUSH_EXPECTED = """\
+----------------+
| Message        |
|----------------|
| Stream created |
+----------------+
+---------------------------------------+
| Message                               |
|---------------------------------------|
| Created query with ID CTAS_PER_USER_0 |
+---------------------------------------+
+------------------------+
| USER_ID | N | LAST_URL |
|---------+---+----------|
| 7       | 2 | /shop    |
| 8       | 1 | /shop    |
+------------------------+
+-----------------------+
| USER_ID | N | ROWTIME |
|---------+---+---------|
| 7       | 2 | 2000    |
+-----------------------+
+------------+
| URL        |
+------------+
| /shop      |
+------------+
Limit Reached
Query terminated
+------------------------+
| USER_ID | N | LAST_URL |
|---------+---+----------|
| 8       | 2 | /pay     |
+------------------------+
+------------+------------+
| USER_ID    | N          |
+------------+------------+
| 7          | 2          |
| 8          | 2          |
+------------+------------+
Query terminated
Key format: KAFKA_BIGINT
Value format: JSON
rowtime: 1970/01/01 00:00:02.000 Z, key: 7, value: {"N":2,"LAST_URL":"/shop"}, partition: 0
+-------------------+
| Message           |
|-------------------|
| Query terminated. |
+-------------------+
Error: Line: 16, Col: 1: The `PER_USER` table isn't queryable. To derive a queryable table, you can do 'CREATE TABLE QUERYABLE_PER_USER AS SELECT * FROM PER_USER'. See https://cnfl.io/queries for more info. Add EMIT CHANGES if you intended to issue a push query. Statement: SELECT * FROM per_user
"""


@pytest.mark.spark
def test_pull_and_push_queries(spark, tmp_path):
    assert sql(tmp_path / "home", stdin=PULL_PUSH, code=1) == PULL_PUSH_EXPECTED

"""The ksqlDB dialect: every statement shape read into its statement, field for field,
and every syntax error one SqlError naming its line, column and statement."""

from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.errors import TablestreamError
from tablestream.schema import (
    BIGINT,
    BYTES,
    INT,
    STRING,
    ArrayType,
    Column,
    DecimalType,
    MapType,
    StructType,
)
from tablestream.sql import statements as s
from tablestream.sql.dialect import parse_script
from tablestream.sql.errors import SqlError

DATA = Path(__file__).parent / "data"
# The SQL of seed 002 (ksqlDB's partitioning page) and seed 004, verbatim.
SEED_002 = (DATA / "seed_002_clicks_users_join.sql").read_text()
SEED_004 = (DATA / "seed_004_my_stream.sql").read_text()


def one(sql: str) -> s.Statement:
    statements = parse_script(sql)
    assert len(statements) == 1
    return statements[0]


def names(elements) -> list[tuple[str, object, str | None]]:
    return [(e.name.text, e.type, e.constraint) for e in elements]


def test_seed_002_statements():
    clicks, users, query = parse_script(SEED_002)
    assert isinstance(clicks, s.CreateSource)
    assert (clicks.kind, clicks.name.text, clicks.position.line) == ("STREAM", "CLICKS", 3)
    assert names(clicks.elements) == [("USERID", BIGINT, None), ("URL", STRING, None)]
    assert [(p.name, p.value) for p in clicks.properties] == [
        ("KAFKA_TOPIC", "clickstream"), ("VALUE_FORMAT", "json"), ("PARTITIONS", 1)
    ]
    assert isinstance(users, s.CreateSource)
    assert names(users.elements) == [("ID", BIGINT, "PRIMARY KEY"), ("FULLNAME", STRING, None)]
    assert isinstance(query, s.SelectStatement)
    q = query.query
    assert (q.source.name.text, q.source.alias.text) == ("CLICKS", "C")
    assert [(j.kind, j.relation.alias_text, j.on.sql()) for j in q.joins] == [("INNER", "U", "c.userId = u.id")]
    assert [i.expression.sql() for i in q.select] == ["c.userId", "c.url", "u.fullName"]
    assert (q.emit, q.where, q.group_by, q.partition_by, q.limit) == ("CHANGES", None, (), (), None)


def test_seed_004_statement():
    stream = one(SEED_004)
    assert isinstance(stream, s.CreateSource)
    assert names(stream.elements) == [("USERNAME", STRING, None), ("LOCATION", STRING, None)]
    assert [(p.name, p.value) for p in stream.properties] == [("KAFKA_TOPIC", "input-topic"), ("VALUE_FORMAT", "...")]


def test_create_source_table_with_types_and_options():
    table = one(
        "CREATE OR REPLACE SOURCE TABLE IF NOT EXISTS `Mixed` (a STRUCT<x INT, `y` ARRAY<STRING>>, "
        "m MAP<STRING, INT>, d DECIMAL(4,2), b BYTES, id INT PRIMARY KEY) WITH (format='json', 'wrap_single_value'=false);"
    )
    assert isinstance(table, s.CreateSource)
    assert (table.name.text, table.name.quoted, table.or_replace, table.if_not_exists, table.source) == (
        "Mixed", True, True, True, True
    )
    assert names(table.elements) == [
        ("A", StructType((Column("X", INT), Column("y", ArrayType(STRING)))), None),
        ("M", MapType(INT), None),
        ("D", DecimalType(4, 2), None),
        ("B", BYTES, None),
        ("ID", INT, "PRIMARY KEY"),
    ]
    assert [(p.name, p.value) for p in table.properties] == [("FORMAT", "json"), ("WRAP_SINGLE_VALUE", False)]


def test_create_as_select_with_every_clause():
    create = one(
        "CREATE TABLE agg WITH (kafka_topic='out') AS SELECT region, COUNT(*) AS c, AS_VALUE(region) r, a->x "
        "FROM t WHERE a->x > 1 GROUP BY region HAVING COUNT(*) > 2 EMIT CHANGES;"
    )
    assert isinstance(create, s.CreateAsSelect)
    q = create.query
    assert [(type(i).__name__, i.expression.sql(), i.alias.text if i.alias else None) for i in q.select] == [
        ("SelectColumn", "region", None),
        ("SelectColumn", "COUNT(*)", "C"),
        ("SelectColumn", "AS_VALUE(region)", "R"),
        ("SelectColumn", "a.x", None),
    ]
    assert (q.where.sql(), [g.sql() for g in q.group_by], q.having.sql(), q.emit) == (
        "a.x > 1", ["region"], "COUNT(*) > 2", "CHANGES"
    )


def test_partition_by_star_and_limit():
    create = one("CREATE STREAM r WITH (PARTITIONS=6) AS SELECT * FROM products PARTITION BY product_id, ABS(x);")
    assert isinstance(create, s.CreateAsSelect)
    assert [p.sql() for p in create.query.partition_by] == ["product_id", "ABS(x)"]
    assert isinstance(create.query.select[0], s.SelectStar)
    push = one("SELECT t.* FROM t EMIT CHANGES LIMIT 3;")
    assert isinstance(push, s.SelectStatement)
    assert (push.query.select[0].qualifier.text, push.query.limit) == ("T", 3)


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("SELECT * FROM a LEFT JOIN b ON a.k = b.k EMIT CHANGES;", "LEFT"),
        ("SELECT * FROM a LEFT OUTER JOIN b ON a.k = b.k EMIT CHANGES;", "LEFT"),
        ("SELECT * FROM a RIGHT JOIN b ON a.k = b.k EMIT CHANGES;", "RIGHT"),
        ("SELECT * FROM a FULL OUTER JOIN b ON a.k = b.k EMIT CHANGES;", "FULL"),
        ("SELECT * FROM a INNER JOIN b ON a.k = b.k EMIT CHANGES;", "INNER"),
    ],
)
def test_join_kinds(sql, kind):
    assert one(sql).query.joins[0].kind == kind


def test_insert_drop_set_unset():
    insert, values, drop, set_, unset = parse_script(
        "INSERT INTO s SELECT * FROM t;\n"
        "INSERT INTO s (a, `b`) VALUES (1, 'it''s');\n"
        "DROP STREAM IF EXISTS s DELETE TOPIC;\n"
        "SET 'auto.offset.reset'='earliest';\n"
        "UNSET 'auto.offset.reset';"
    )
    assert isinstance(insert, s.InsertInto) and insert.target.text == "S"
    assert isinstance(values, s.InsertValues)
    assert [c.text for c in values.columns] == ["A", "b"]
    assert [v.sql() for v in values.values] == ["1", "'it''s'"]
    assert values.values[1].this == "it's"
    assert (drop.kind, drop.name.text, drop.if_exists, drop.delete_topic) == ("STREAM", "S", True, True)
    assert (set_.name, set_.value, unset.name) == ("auto.offset.reset", "earliest", "auto.offset.reset")
    assert [st_.index for st_ in (insert, values, drop, set_, unset)] == [0, 1, 2, 3, 4]
    assert [st_.position.line for st_ in (insert, values, drop, set_, unset)] == [1, 2, 3, 4, 5]


def test_arrow_reads_a_field_also_inside_a_call():
    select = one("SELECT LATEST_BY_OFFSET(x->y), s->`Inner`->z FROM t EMIT CHANGES;").query.select
    assert [i.expression.sql() for i in select] == ["LATEST_BY_OFFSET(x.y)", 's."Inner".z']


def test_last_semicolon_is_optional_and_comments_are_skipped():
    statements = parse_script("/* a */ SET 'a'='1'; -- b\nSET 'c'='2'")
    assert [(x.name, x.value) for x in statements] == [("a", "1"), ("c", "2")]


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT * FORM t;", "Line: 1, Col: 1: Expecting FROM at or near 'SELECT'. Statement: SELECT * FORM t"),
        (
            "CREATE STREAM x (a INT) WITH (a=;",
            "Line: 1, Col: 32: Expecting a literal value for property A at or near '='. Statement: CREATE STREAM x (a INT) WITH (a=",
        ),
        ("SELECT 'abc FROM t;", "Line: 1, Col: 8: Unterminated string starting with '. Statement: SELECT 'abc FROM t;"),
        (
            "SET 'a'='b';\nCREATE STREAM x (a FOO) WITH (a=1);",
            "Line: 2, Col: 20: Unknown type: FOO. Statement: CREATE STREAM x (a FOO) WITH (a=1)",
        ),
        ("ALTER STREAM s ADD COLUMN c INT;", "Line: 1, Col: 1: ALTER statements are not supported yet. Statement: ALTER STREAM s ADD COLUMN c INT"),
        (
            "SELECT a FROM t ORDER BY a;",
            "Line: 1, Col: 26: ORDER BY is not supported in ksqlDB's SQL. Statement: SELECT a FROM t ORDER BY a",
        ),
        (
            "CREATE STREAM s (a INT) WITH (x='y')\nCREATE STREAM t (a INT);",
            "Line: 2, Col: 1: Syntax error at or near 'CREATE'. Statement: CREATE STREAM s (a INT) WITH (x='y') CREATE STREAM t (a INT)",
        ),
        (
            "SELECT * FROM a JOIN b WITHIN 1 MINUTE ON a.k = b.k EMIT CHANGES;",
            "Line: 1, Col: 24: WITHIN (a stream-stream join) is not supported yet. Statement: SELECT * FROM a JOIN b WITHIN 1 MINUTE ON a.k = b.k EMIT CHANGES",
        ),
        (
            "SELECT k, COUNT(*) FROM a WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY k EMIT CHANGES;",
            "Line: 1, Col: 27: WINDOW (windowed aggregation) is not supported yet. Statement: SELECT k, COUNT(*) FROM a WINDOW TUMBLING (SIZE 1 HOUR) GROUP BY k EMIT CHANGES",
        ),
        (
            "CREATE STREAM s (m MAP<INT, INT>) WITH (kafka_topic='t');",
            "Line: 1, Col: 20: MAP keys must be STRING. Statement: CREATE STREAM s (m MAP<INT, INT>) WITH (kafka_topic='t')",
        ),
    ],
)
def test_syntax_errors_name_line_column_and_statement(sql, message):
    with pytest.raises(SqlError) as info:
        parse_script(sql)
    assert str(info.value) == message
    assert "\n" not in str(info.value)


# -- fuzzing: only SqlError, always with a position ------------------------------------

VALID = [
    SEED_002,
    SEED_004,
    "CREATE TABLE t (id INT PRIMARY KEY, v STRUCT<a INT>) WITH (kafka_topic='t', format='json');",
    "CREATE TABLE c AS SELECT k, COUNT(*), SUM(v->a) FROM t WHERE v->a > 1 GROUP BY k HAVING COUNT(*) > 1 EMIT CHANGES;",
    "CREATE STREAM r WITH (PARTITIONS=6) AS SELECT * FROM products PARTITION BY product_id;",
    "INSERT INTO s (a, b) VALUES (1, 'x'); DROP TABLE IF EXISTS t DELETE TOPIC; SET 'a'='b'; UNSET 'a';",
    "SELECT CASE WHEN a IN (1, 2) THEN CAST(b AS BIGINT) ELSE COALESCE(c, 0) END FROM x LEFT JOIN y ON x.k = y.k EMIT CHANGES LIMIT 1;",
]

TOKENS = [
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "PARTITION", "HAVING", "EMIT", "CHANGES", "CREATE",
    "STREAM", "TABLE", "AS", "WITH", "JOIN", "LEFT", "ON", "INSERT", "INTO", "VALUES", "DROP", "SET",
    "UNSET", "KEY", "PRIMARY", "(", ")", ",", ";", "=", "->", "*", "'x'", "`q`", '"d"', "1", "1.5",
    "CAST", "CASE", "WHEN", "THEN", "END", "STRUCT<", ">", "ARRAY<", "MAP<", "INT", "NULL", "a", "b.c",
    "--", "/*", "*/", "'", "`", '"', "[", "]", "=>", "::", "||", "AND", "NOT", "IN", "BETWEEN", "LIKE",
    "WINDOW", "WITHIN", "LIMIT",
]


def check_only_sql_errors(text: str) -> None:
    try:
        parse_script(text)
    except SqlError as error:
        assert error.line >= 1 and error.column >= 1
        assert str(error).startswith(f"Line: {error.line}, Col: {error.column}: ")
        assert "\n" not in str(error)
    except TablestreamError as error:  # pragma: no cover - the assertion says which
        raise AssertionError(f"{type(error).__name__} instead of SqlError: {error}") from None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(alphabet=string.printable, max_size=80))
def test_random_text_raises_only_sql_errors(text):
    check_only_sql_errors(text)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(TOKENS), max_size=25))
def test_random_token_sequences_raise_only_sql_errors(tokens):
    check_only_sql_errors(" ".join(tokens))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(VALID),
    st.lists(
        st.tuples(st.sampled_from(["delete", "insert", "replace", "swap"]), st.integers(0, 10_000), st.sampled_from(TOKENS)),
        min_size=1,
        max_size=4,
    ),
)
def test_mutated_statements_raise_only_sql_errors(statement, mutations):
    text = statement
    for kind, where, token in mutations:
        i = where % (len(text) + 1)
        if kind == "delete":
            text = text[:i] + text[i + 3 :]
        elif kind == "insert":
            text = text[:i] + f" {token} " + text[i:]
        elif kind == "replace":
            text = text[:i] + token + text[i + len(token) :]
        else:
            j = (i * 7 + 13) % (len(text) + 1)
            a, b = sorted((i, j))
            text = text[:a] + text[b:] + text[a:b]
    check_only_sql_errors(text)

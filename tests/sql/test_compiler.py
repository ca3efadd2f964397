"""SQL statements compiled to plan nodes: names as ksqlDB gives them, the nodes each
clause makes, and ksqlDB's checks with their texts (one line, with the position)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablestream.plan import (
    Map,
    MapValues,
    Merge,
    SelectKey,
    SqlExpr,
    StreamSource,
    TableSource,
    ToTable,
    ToTopic,
)
from tablestream.plan.joins import ForeignKeyJoin, StreamTableJoin
from tablestream.sql.compiler import InsertRecord, compile_sql
from tablestream.sql.errors import SqlError

DATA = Path(__file__).parent / "data"

CLICKS = "CREATE STREAM clicks (user_id BIGINT KEY, url STRING, ms INT) WITH (kafka_topic='clicks', value_format='json', partitions=3);\n"
USERS = "CREATE TABLE users (id BIGINT PRIMARY KEY, name STRING, region STRING) WITH (kafka_topic='users', format='json', partitions=3);\n"


def nodes_of(sql: str) -> list:
    return list(compile_sql(sql).topology.nodes)


def error_of(sql: str, **options) -> str:
    with pytest.raises(SqlError) as info:
        compile_sql(sql, **options)
    return str(info.value)


# -- names -----------------------------------------------------------------------------


def test_queries_are_named_as_ksqldb_names_them():
    compiled = compile_sql(
        CLICKS
        + USERS
        + "CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '/shop%';\n"
        + "CREATE TABLE per_region WITH (kafka_topic='regions', partitions=2) AS SELECT region, COUNT(*) AS n FROM users GROUP BY region;\n"
        + "INSERT INTO shop SELECT user_id, url FROM clicks WHERE ms > 100;\n"
        + "SELECT c.url FROM clicks c JOIN users u ON c.user_id = u.id EMIT CHANGES;"
    )
    assert [(q.id, q.sink_topic, q.target, q.columns) for q in compiled.queries] == [
        ("CSAS_SHOP_0", "SHOP", "SHOP", ()),
        ("CTAS_PER_REGION_1", "regions", "PER_REGION", ()),
        ("INSERTQUERY_2", "SHOP", "SHOP", ()),
        ("transient_C_3", "transient_C_3", None, ("URL",)),
    ]
    assert compiled.topics == {"clicks": 3, "users": 3, "SHOP": 3, "regions": 2}  # a push query's is not a topic
    shop = compiled.sources["SHOP"]
    assert (shop.kind, shop.key_schema, shop.value_schema, shop.key_format, shop.value_format) == (
        "STREAM", "BIGINT", "URL STRING", "KAFKA", "JSON"
    )
    assert compiled.sources["PER_REGION"].schema_text() == "`REGION` STRING PRIMARY KEY, `N` BIGINT"


def test_a_source_is_read_once_and_only_when_a_query_uses_it():
    compiled = compile_sql(
        CLICKS + USERS + "CREATE STREAM a AS SELECT * FROM clicks; CREATE STREAM b AS SELECT * FROM clicks;"
    )
    sources = [n for n in compiled.topology.nodes if isinstance(n, (StreamSource, TableSource))]
    assert [(type(n).__name__, n.topics) for n in sources] == [("StreamSource", ("clicks",))]
    # SELECT * keeps records as they are: the sinks read the source itself.
    assert [(n.parent, n.topic) for n in compiled.topology.sinks] == [
        ("KSTREAM-SOURCE-0000000000", "A"),
        ("KSTREAM-SOURCE-0000000000", "B"),
    ]


def test_a_table_over_a_declared_streams_topic_is_that_stream_made_a_table():
    """ksqlDB reads one topic as a stream and as a table; one plan reads it once."""
    table = "CREATE SOURCE TABLE current (user_id BIGINT PRIMARY KEY, url STRING, ms INT) WITH (kafka_topic='clicks', value_format='json');\n"
    compiled = compile_sql(
        CLICKS + table + "CREATE STREAM slow AS SELECT user_id, url FROM clicks WHERE ms > 100;\n"
        "CREATE TABLE per_url AS SELECT url, COUNT(*) AS n FROM current GROUP BY url;"
    )
    sources = [n for n in compiled.topology.nodes if isinstance(n, (StreamSource, TableSource))]
    assert [(type(n).__name__, n.topics) for n in sources] == [("StreamSource", ("clicks",))]
    to_table = next(n for n in compiled.topology.nodes if isinstance(n, ToTable))
    assert (to_table.parent, to_table.store, to_table.queryable) == ("KSTREAM-SOURCE-0000000000", "CURRENT", True)
    # Other columns than the stream's: two sources of one topic, refused as before.
    other = "CREATE TABLE t (user_id BIGINT PRIMARY KEY, url STRING) WITH (kafka_topic='clicks', value_format='json');\n"
    assert "Topic clicks has already been registered by another source" in error_of(
        CLICKS + other + "CREATE STREAM a AS SELECT * FROM clicks; CREATE TABLE b AS SELECT * FROM t;"
    )


def test_a_query_reads_the_output_of_another_directly():
    compiled = compile_sql(
        CLICKS
        + "CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '/shop%';\n"
        + "CREATE STREAM carts AS SELECT user_id, url FROM shop WHERE url LIKE '%cart%';"
    )
    names = [n.name for n in compiled.topology.nodes]
    carts_filter = compiled.topology.node(names[names.index("KSTREAM-SINK-0000000003") + 1])
    assert carts_filter.parent == "KSTREAM-MAPVALUES-0000000002"
    assert carts_filter.predicate == SqlExpr("value.`URL` LIKE '%cart%'")


def test_insert_into_merges_into_what_later_queries_read():
    compiled = compile_sql(
        CLICKS
        + "CREATE STREAM big (user_id BIGINT KEY, url STRING, ms INT) WITH (kafka_topic='big', value_format='json', partitions=3);\n"
        + "INSERT INTO big SELECT * FROM clicks WHERE ms > 1000;\n"
        + "CREATE STREAM urls AS SELECT user_id, url FROM big;"
    )
    merge = next(n for n in compiled.topology.nodes if isinstance(n, Merge))
    urls = next(n for n in compiled.topology.nodes if isinstance(n, MapValues))
    assert urls.parent == merge.name
    assert merge.parents == ("KSTREAM-SOURCE-0000000003", "KSTREAM-FILTER-0000000001")


def test_insert_values_gives_records_in_the_topic_formats():
    compiled = compile_sql(
        CLICKS
        + USERS
        + "INSERT INTO clicks (user_id, url, ms) VALUES (7, 'it''s', -3);\n"
        + "INSERT INTO users (name, id, ROWTIME) VALUES ('Ada', 1, 1000);"
    )
    assert [(r.topic, r.key, r.value, r.timestamp) for r in compiled.inserts] == [
        ("clicks", 7, {"URL": "it's", "MS": -3}, None),
        ("users", 1, {"NAME": "Ada", "REGION": None}, 1000),
    ]
    assert isinstance(compiled.inserts[0], InsertRecord)


# -- what each clause builds -------------------------------------------------------------


def test_where_and_projection_are_a_filter_and_a_map_values():
    _, where, project, sink = nodes_of(CLICKS + "CREATE STREAM s AS SELECT user_id, UCASE(url) AS u, ms / 2 AS half FROM clicks WHERE ms > 10;")
    assert where.predicate == SqlExpr("COALESCE(value.`MS` > 10, FALSE)")  # false on null, as ksqlDB
    assert isinstance(project, MapValues)
    assert project.mapper == SqlExpr(
        "CASE WHEN record.value IS NULL THEN NULL ELSE "
        "STRUCT(UPPER(value.`URL`) AS `U`, CAST(value.`MS` DIV 2 AS INT) AS `HALF`) END"
    )
    assert isinstance(sink, ToTopic) and (sink.key_schema, sink.value_schema) == ("BIGINT", "U STRING, HALF INT")


def test_partition_by_moves_the_columns_to_the_key():
    _, rekey, sink = nodes_of(CLICKS + "CREATE STREAM by_url AS SELECT * FROM clicks PARTITION BY url;")
    assert isinstance(rekey, Map)
    assert (rekey.mapper.key, rekey.mapper.value) == (
        SqlExpr("value.`URL`"),
        SqlExpr("CASE WHEN record.value IS NULL THEN NULL ELSE STRUCT(value.`MS` AS `MS`, record.key AS `USER_ID`) END"),
    )
    assert (sink.topic, sink.key_schema, sink.value_schema) == ("BY_URL", "STRING", "MS INT, USER_ID BIGINT")


def test_stream_table_join_rekeys_the_stream_and_is_strict():
    nodes = nodes_of(CLICKS + USERS + "CREATE STREAM named AS SELECT c.user_id, name FROM clicks c JOIN users u ON c.user_id = u.id;")
    join = next(n for n in nodes if isinstance(n, StreamTableJoin))
    assert (join.kind, join.strict, join.joiner) == ("inner", True, SqlExpr("struct(left AS L, right AS R)"))
    assert not any(isinstance(n, SelectKey) for n in nodes)  # joined on the stream's key
    project = next(n for n in nodes if isinstance(n, MapValues))
    assert project.mapper == SqlExpr("CASE WHEN record.value IS NULL THEN NULL ELSE STRUCT(value.`R`['NAME'] AS `NAME`) END")


def test_foreign_key_join():
    nodes = nodes_of(
        USERS
        + "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT, total DOUBLE) WITH (kafka_topic='orders', format='json', partitions=1);\n"
        + "CREATE TABLE named AS SELECT o.id, u.name, o.total FROM orders o LEFT JOIN users u ON o.user_id = u.id;"
    )
    join = next(n for n in nodes if isinstance(n, ForeignKeyJoin))
    assert (join.kind, join.foreign_key) == ("left", SqlExpr("value.`USER_ID`"))


# -- the seeds, verbatim ----------------------------------------------------------------


def test_seed_002_cast_join():
    compiled = compile_sql((DATA / "seed_002_cast_join.sql").read_text())
    select_key = next(n for n in compiled.topology.nodes if isinstance(n, SelectKey))
    assert select_key.selector == SqlExpr("CAST(record.key AS BIGINT)")
    assert [(q.id, q.columns) for q in compiled.queries] == [("transient_CLICKS_0", ("URL", "FULLNAME"))]


def test_seed_002_join_without_the_cast_is_refused():
    sql = (DATA / "seed_002_cast_join.sql").read_text().replace("CAST(clicks.userId AS BIGINT)", "clicks.userId")
    assert error_of(sql) == (
        "Line: 24, Col: 17: Invalid join condition: types don't match. Got CLICKS.USERID{INTEGER} = USERS.ID{BIGINT}. "
        "Statement: SELECT clicks.url, users.fullName FROM clicks JOIN users ON clicks.userId = users.id EMIT CHANGES"
    )


def test_seed_002_partition_counts_that_differ_are_refused():
    sql = (DATA / "seed_002_clicks_users_join.sql").read_text()
    sql = sql.replace("value_format='json',\n    partitions=1\n);", "value_format='json',\n    partitions=2\n);")
    assert error_of(sql) == (
        "Line: 30, Col: 8: Can't join `C` with `U` since the number of partitions don't match. "
        "`C` partitions = 1; `U` partitions = 2. Please repartition either one so that the number of partitions match. "
        "Statement: SELECT c.userId, c.url, u.fullName FROM clicks c JOIN users u ON c.userId = u.id EMIT CHANGES"
    )


def test_seed_002_repartition_keeps_the_key_with_six_partitions():
    sql = "CREATE STREAM products (id INT KEY, name STRING) WITH (kafka_topic='products', value_format='json', partitions=3);\n"
    compiled = compile_sql(sql + (DATA / "seed_002_products_repartition.sql").read_text())
    assert compiled.topics["PRODUCTS_REKEYED"] == 6
    assert [(s.parent, s.topic, s.key_schema) for s in compiled.topology.sinks] == [
        ("KSTREAM-SOURCE-0000000000", "PRODUCTS_REKEYED", "INT")
    ]


def test_seed_004_stream_with_its_placeholder_format():
    assert error_of((DATA / "seed_004_my_stream.sql").read_text()) == (
        "Line: 2, Col: 38: Unknown format: ... Statement: CREATE STREAM myStream (username VARCHAR, location VARCHAR) "
        "WITH (KAFKA_TOPIC='input-topic', VALUE_FORMAT='...')"
    )


# -- ksqlDB's checks --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        (
            CLICKS + "CREATE STREAM s AS SELECT user_id, nope FROM clicks;",
            "Line: 2, Col: 36: SELECT column 'NOPE' cannot be resolved. Statement: CREATE STREAM s AS SELECT user_id, nope FROM clicks",
        ),
        (
            CLICKS + "CREATE STREAM s AS SELECT user_id, url\n  FROM clicks WHERE ms > 'x';",
            "Line: 3, Col: 21: Error in WHERE expression: Cannot compare MS (INTEGER) to 'x' (STRING) with GREATER_THAN. Statement: CREATE STREAM s AS SELECT user_id, url FROM clicks WHERE ms > 'x'",
        ),
        (
            USERS + "CREATE TABLE t AS SELECT * FROM users PARTITION BY name;",
            "Line: 2, Col: 52: PARTITION BY is not supported on tables (ksqlDB does not repartition tables). Statement: CREATE TABLE t AS SELECT * FROM users PARTITION BY name",
        ),
        (
            CLICKS + "CREATE TABLE t AS SELECT url, HISTOGRAM(url) AS h FROM clicks GROUP BY url;",
            "Line: 2, Col: 31: The aggregate function HISTOGRAM is not supported yet (supported: AVG, COLLECT_LIST, COLLECT_SET, COUNT, COUNT_DISTINCT, EARLIEST_BY_OFFSET, LATEST_BY_OFFSET, MAX, MIN, SUM). Statement: CREATE TABLE t AS SELECT url, HISTOGRAM(url) AS h FROM clicks GROUP BY url",
        ),
        (
            USERS + "CREATE TABLE t AS SELECT region, MAX(id) AS top FROM users GROUP BY region;",
            "Line: 2, Col: 34: The aggregation function MAX cannot be applied to a table source, only to a stream source. Statement: CREATE TABLE t AS SELECT region, MAX(id) AS top FROM users GROUP BY region",
        ),
        (
            USERS + "CREATE TABLE t AS SELECT region, COLLECT_LIST(name), COUNT_DISTINCT(name), EARLIEST_BY_OFFSET(id), COLLECT_SET(name), COUNT_DISTINCT(id) FROM users GROUP BY region;",
            "Line: 2, Col: 54: The aggregation functions COUNT_DISTINCT, EARLIEST_BY_OFFSET and COLLECT_SET cannot be applied to a table source, only to a stream source. Statement: CREATE TABLE t AS SELECT region, COLLECT_LIST(name), COUNT_DISTINCT(name), EARLIEST_BY_OFFSET(id), COLLECT_SET(name),...",
        ),
        (
            CLICKS + "CREATE TABLE t AS SELECT url, LATEST_BY_OFFSET(ms, 0) AS ms FROM clicks GROUP BY url;",
            "Line: 2, Col: 52: latestN must be 1 or greater. Statement: CREATE TABLE t AS SELECT url, LATEST_BY_OFFSET(ms, 0) AS ms FROM clicks GROUP BY url",
        ),
        (
            CLICKS + "CREATE TABLE t AS SELECT url, EARLIEST_BY_OFFSET(ms, url) AS ms FROM clicks GROUP BY url;",
            "Line: 2, Col: 54: Function 'EARLIEST_BY_OFFSET' takes EARLIEST_BY_OFFSET(col[, N][, ignoreNulls]) with N a literal INT and ignoreNulls a literal BOOLEAN, got URL. Statement: CREATE TABLE t AS SELECT url, EARLIEST_BY_OFFSET(ms, url) AS ms FROM clicks GROUP BY url",
        ),
        (
            CLICKS + "CREATE TABLE t AS SELECT url, LATEST_BY_OFFSET(ms, 1, true, 2) AS ms FROM clicks GROUP BY url;",
            "Line: 2, Col: 31: Function 'LATEST_BY_OFFSET' takes 1 to 3 arguments, got 4. Statement: CREATE TABLE t AS SELECT url, LATEST_BY_OFFSET(ms, 1, true, 2) AS ms FROM clicks GROUP BY url",
        ),
        (
            CLICKS + "CREATE TABLE t AS SELECT url, COLLECT_SET(ms, 2) AS ms FROM clicks GROUP BY url;",
            "Line: 2, Col: 31: Function 'COLLECT_SET' takes one argument, got 2. Statement: CREATE TABLE t AS SELECT url, COLLECT_SET(ms, 2) AS ms FROM clicks GROUP BY url",
        ),
        (
            "CREATE STREAM blobs (k STRING KEY, data BYTES) WITH (kafka_topic='blobs', value_format='json', partitions=1);\n"
            "CREATE TABLE t AS SELECT k, COUNT_DISTINCT(data) AS n FROM blobs GROUP BY k;",
            "Line: 2, Col: 29: Function 'COUNT_DISTINCT' does not accept parameters (BYTES). Statement: CREATE TABLE t AS SELECT k, COUNT_DISTINCT(data) AS n FROM blobs GROUP BY k",
        ),
        (
            CLICKS + "SET 'ksql.functions.collect_list.limit'='many';\nCREATE TABLE t AS SELECT url, COLLECT_LIST(ms) AS ms FROM clicks GROUP BY url;",
            "Line: 3, Col: 1: The property 'ksql.functions.collect_list.limit' must be an integer, got 'many': SET 'ksql.functions.collect_list.limit'='1000' (a negative value: no limit). Statement: CREATE TABLE t AS SELECT url, COLLECT_LIST(ms) AS ms FROM clicks GROUP BY url",
        ),
        (
            CLICKS + "CREATE STREAM s AS SELECT url, COUNT(*) FROM clicks GROUP BY url;",
            "Line: 2, Col: 1: Invalid result type. Your SELECT query produces a TABLE. Please use CREATE TABLE AS SELECT statement instead. Statement: CREATE STREAM s AS SELECT url, COUNT(*) FROM clicks GROUP BY url",
        ),
        (
            "CREATE STREAM s (a INT) WITH (kafka_topic='s', value_format='json', colour='red');",
            "Line: 1, Col: 69: Invalid config variable(s) in the WITH clause: COLOUR. Statement: CREATE STREAM s (a INT) WITH (kafka_topic='s', value_format='json', colour='red')",
        ),
        (
            "CREATE TABLE t (a INT) WITH (kafka_topic='t', value_format='json');",
            "Line: 1, Col: 1: Tables require a PRIMARY KEY. Please define the PRIMARY KEY. Statement: CREATE TABLE t (a INT) WITH (kafka_topic='t', value_format='json')",
        ),
        (
            USERS
            + "CREATE TABLE orders (id BIGINT PRIMARY KEY, user_id BIGINT) WITH (kafka_topic='orders', format='json', partitions=1);\n"
            + "CREATE TABLE t AS SELECT o.id, name FROM orders o FULL OUTER JOIN users u ON o.user_id = u.id;",
            "Line: 3, Col: 67: Invalid join type: full-outer join not supported for foreign-key table-table join. Got ORDERS [FULL] OUTER JOIN USERS. Statement: CREATE TABLE t AS SELECT o.id, name FROM orders o FULL OUTER JOIN users u ON o.user_id = u.id",
        ),
        (
            CLICKS + "SELECT * FROM clicks;",
            "Line: 2, Col: 1: Pull queries (SELECT without EMIT CHANGES) are not supported yet. Statement: SELECT * FROM clicks",
        ),
        (
            CLICKS + "CREATE STREAM s AS SELECT * FROM clicks; DROP STREAM clicks;",
            "Line: 2, Col: 42: Cannot drop CLICKS: the query CSAS_S_0 of this script uses it (dropping what a query uses is not supported yet). Statement: DROP STREAM clicks",
        ),
    ],
)
def test_checks_name_position_and_statement(sql, message):
    assert error_of(sql) == message


def test_a_topic_must_exist_unless_partitions_are_given():
    sql = "CREATE STREAM s (a INT) WITH (kafka_topic='missing', value_format='json');"
    assert error_of(sql, topic_partitions=lambda topic: None) == (
        "Line: 1, Col: 1: Topic 'missing' does not exist. If you want to create a new topic for the stream/table "
        "please re-run the statement providing the required 'PARTITIONS' configuration in the WITH clause "
        "(and optionally 'REPLICAS'). Statement: CREATE STREAM s (a INT) WITH (kafka_topic='missing', value_format='json')"
    )
    compiled = compile_sql(sql, topic_partitions=lambda topic: 5)
    assert compiled.sources["S"].partitions == 5

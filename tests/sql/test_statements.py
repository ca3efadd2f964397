"""The statements around queries, without Spark: SHOW/LIST, DESCRIBE, EXPLAIN,
TERMINATE, DROP [DELETE TOPIC], PRINT, RUN SCRIPT, SET/UNSET, as ksqlDB gives them
(columns, messages, error texts), on an engine over an embedded store. Persistent
queries are created and described here; none processes a record (no application
starts until something reads their results)."""

from __future__ import annotations

import pytest

from tablestream.runtime.sql_engine import Result, SqlEngine
from tablestream.sql import SqlError, parse
from tablestream.sql import statements as st
from tablestream.storage.embedded import EmbeddedStore

SOURCES = """
CREATE STREAM clicks (user_id BIGINT KEY, url STRING) WITH (kafka_topic='clicks', value_format='json', partitions=2);
CREATE TABLE users (id BIGINT PRIMARY KEY, name STRING) WITH (kafka_topic='users', format='json', partitions=2);
"""
QUERIES = """
CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '/shop%';
CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;
"""


@pytest.fixture
def engine(tmp_path):
    return SqlEngine(EmbeddedStore(tmp_path / "home"), service_id="test", base_dir=tmp_path)


def one(engine: SqlEngine, sql: str) -> Result:
    results = engine.execute(sql)
    assert len(results) == 1
    return results[0]


def error_of(engine: SqlEngine, sql: str) -> str:
    with pytest.raises(SqlError) as caught:
        engine.execute(sql)
    return str(caught.value)


# ---------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SHOW STREAMS;", st.ListStatement(what="STREAMS", text="", position=None, index=0)),
        ("list tables extended;", st.ListStatement(what="TABLES", extended=True, text="", position=None, index=0)),
        ("SHOW ALL TOPICS;", st.ListStatement(what="TOPICS", all_topics=True, text="", position=None, index=0)),
        ("show queries extended;", st.ListStatement(what="QUERIES", extended=True, text="", position=None, index=0)),
        ("DESCRIBE STREAMS;", st.Describe(name=None, every="STREAM", text="", position=None, index=0)),
        ("TERMINATE csas_x_0;", st.Terminate(query_id="CSAS_X_0", text="", position=None, index=0)),
        ('TERMINATE "transient_x_1";', st.Terminate(query_id="transient_x_1", text="", position=None, index=0)),
        ("TERMINATE ALL;", st.Terminate(query_id=None, text="", position=None, index=0)),
        ("EXPLAIN CTAS_T_3;", st.Explain(query_id="CTAS_T_3", text="", position=None, index=0)),
        ("PRINT orders-v1.eu FROM BEGINNING INTERVAL 2 LIMIT 3;",
         st.PrintTopic(topic="orders-v1.eu", from_beginning=True, interval=2, limit=3, text="", position=None, index=0)),
        ("PRINT 'Orders';", st.PrintTopic(topic="Orders", text="", position=None, index=0)),
        ("RUN SCRIPT 'more.sql';", st.RunScript(path="more.sql", text="", position=None, index=0)),
    ],
)
def test_statements_parse(sql, expected):
    assert parse(sql) == [expected]


def test_describe_and_explain_parse_their_parts():
    describe, explain = parse("DESCRIBE `Mixed` EXTENDED;\nEXPLAIN SELECT * FROM s EMIT CHANGES;")
    assert (describe.name.text, describe.name.quoted, describe.extended) == ("Mixed", True, True)
    assert isinstance(explain.statement, st.SelectStatement) and explain.statement.text == "SELECT * FROM s EMIT CHANGES"
    assert explain.statement.position.line == 2


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SHOW FOO;", "Line: 1, Col: 6: Expecting STREAMS, TABLES, TOPICS, QUERIES or PROPERTIES at or near 'FOO'. Statement: SHOW FOO"),
        ("SHOW FUNCTIONS;", "Line: 1, Col: 6: SHOW FUNCTIONS is not supported yet. Statement: SHOW FUNCTIONS"),
        ("SHOW STREAMS now;", "Line: 1, Col: 14: Syntax error at or near 'now'. Statement: SHOW STREAMS now"),
        ("RUN file.sql;", "Line: 1, Col: 5: Expecting SCRIPT after RUN at or near 'file'. Statement: RUN file.sql"),
        ("PRINT t LIMIT x;", "Line: 1, Col: 9: LIMIT takes a whole number. Statement: PRINT t LIMIT x"),
        ("PAUSE CSAS_X_0;", "Line: 1, Col: 1: PAUSE statements are not supported yet. Statement: PAUSE CSAS_X_0"),
    ],
)
def test_syntax_errors(sql, message):
    with pytest.raises(SqlError) as caught:
        parse(sql)
    assert str(caught.value) == message


# ---------------------------------------------------------------------- SHOW
def test_show_streams_tables_topics_and_queries(engine):
    assert [r.message for r in engine.execute(SOURCES + QUERIES)] == [
        "Stream created", "Table created", "Created query with ID CSAS_SHOP_0", "Created query with ID CTAS_PER_USER_1",
    ]
    streams = one(engine, "SHOW STREAMS;")
    assert streams.columns == ("Stream Name", "Kafka Topic", "Key Format", "Value Format", "Windowed")
    assert streams.rows == (("CLICKS", "clicks", "KAFKA", "JSON", "false"), ("SHOP", "SHOP", "KAFKA", "JSON", "false"))
    assert one(engine, "LIST TABLES;").rows == (
        ("PER_USER", "PER_USER", "KAFKA", "JSON", "false"), ("USERS", "users", "JSON", "JSON", "false"),
    )
    topics = one(engine, "SHOW TOPICS EXTENDED;")
    assert topics.columns == ("Kafka Topic", "Partitions", "Partition Replicas", "Consumers", "ConsumerGroups")
    assert topics.rows == (
        ("PER_USER", "2", "1", "0", "0"), ("SHOP", "2", "1", "0", "0"),
        ("clicks", "2", "1", "4", "2"), ("users", "2", "1", "0", "0"),
    )
    queries = one(engine, "SHOW QUERIES;")
    assert queries.columns == ("Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String")
    assert queries.rows == (
        ("CSAS_SHOP_0", "PERSISTENT", "RUNNING:1", "SHOP", "SHOP",
         "CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '/shop%';"),
        ("CTAS_PER_USER_1", "PERSISTENT", "RUNNING:1", "PER_USER", "PER_USER",
         "CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;"),
    )
    assert queries.footer == "For detailed information on a Query run: EXPLAIN <Query ID>;"
    extended = one(engine, "SHOW STREAMS EXTENDED;")
    assert [r.fields[0] for r in extended.results] == [("Name", "CLICKS"), ("Name", "SHOP")]


def test_keyless_streams_show_key_format_none(engine):
    engine.execute("CREATE STREAM logs (line STRING) WITH (kafka_topic='logs', value_format='json', partitions=1);")
    assert one(engine, "SHOW STREAMS;").rows == (("LOGS", "logs", "NONE", "JSON", "false"),)


# ---------------------------------------------------------------------- DESCRIBE
def test_describe_lists_columns_with_key_markers(engine):
    engine.execute(SOURCES)
    clicks = one(engine, "DESCRIBE clicks;")
    assert clicks.fields == (("Name", "CLICKS"),)
    assert clicks.rows == (("USER_ID", "BIGINT           (key)"), ("URL", "STRING"))
    assert clicks.footer == "For runtime statistics and query details run: DESCRIBE <Stream,Table> EXTENDED;"
    assert one(engine, "DESCRIBE users;").rows == (("ID", "BIGINT           (primary key)"), ("NAME", "STRING"))


def test_describe_extended_names_topic_formats_partitions_and_queries(engine):
    engine.execute(SOURCES + QUERIES)
    clicks = one(engine, "DESCRIBE clicks EXTENDED;")
    assert clicks.fields == (
        ("Name", "CLICKS"),
        ("Type", "STREAM"),
        ("Timestamp field", "Not set - using <ROWTIME>"),
        ("Key format", "KAFKA"),
        ("Value format", "JSON"),
        ("Kafka topic", "clicks (partitions: 2, replication: 1)"),
        ("Statement", "CREATE STREAM clicks (user_id BIGINT KEY, url STRING) WITH (kafka_topic='clicks', value_format='json', partitions=2);"),
    )
    assert clicks.sections == ((
        "Queries that read from this STREAM",
        ("CSAS_SHOP_0 (RUNNING) : CREATE STREAM shop AS SELECT user_id, url FROM clicks WHERE url LIKE '/shop%';",
         "CTAS_PER_USER_1 (RUNNING) : CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;"),
    ),)
    per_user = one(engine, "DESCRIBE per_user EXTENDED;")
    assert per_user.sections == ((
        "Queries that write from this TABLE",
        ("CTAS_PER_USER_1 (RUNNING) : CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;",),
    ),)


def test_describe_extended_names_the_timestamp_column(engine):
    engine.execute(
        "CREATE STREAM orders (id BIGINT KEY, placed BIGINT) WITH (kafka_topic='orders', value_format='json', "
        "partitions=1, timestamp='placed');"
        "CREATE STREAM late WITH (timestamp='at') AS SELECT id, placed + 1000 AS at FROM orders;"
    )
    assert dict(one(engine, "DESCRIBE orders EXTENDED;").fields)["Timestamp field"] == "PLACED"
    assert dict(one(engine, "DESCRIBE late EXTENDED;").fields)["Timestamp field"] == "AT"


def test_describe_unknown_source(engine):
    assert error_of(engine, "DESCRIBE nope;") == (
        "Line: 1, Col: 10: Could not find STREAM/TABLE 'NOPE' in the Metastore. Statement: DESCRIBE nope"
    )


# ---------------------------------------------------------------------- EXPLAIN
def test_explain_query_id_gives_the_plan_the_dsl_prints(engine):
    from tablestream.dsl import StreamsBuilder

    engine.execute(SOURCES + QUERIES)
    explained = one(engine, "EXPLAIN CTAS_PER_USER_1;")
    assert explained.fields[:3] == (
        ("ID", "CTAS_PER_USER_1"), ("Query Type", "PERSISTENT"),
        ("SQL", "CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;"),
    )
    assert explained.rows == (("USER_ID", "BIGINT           (primary key)"), ("N", "BIGINT"))
    sections = dict(explained.sections)
    assert sections["Sources that this query reads from: "] == ("CLICKS",)
    assert sections["Sinks that this query writes to: "] == ("PER_USER",)
    assert "Repartitions" not in sections
    # The same query in the DSL, its table materialized under the table's name.
    builder = StreamsBuilder()
    clicks = builder.stream("clicks", key_format="KAFKA", value_format="JSON", key_schema="BIGINT", value_schema="URL STRING")
    counts = clicks.group_by_key().count()
    counts.map_values("struct(value AS N)", materialized_as="PER_USER").to(
        "PER_USER", key_format="KAFKA", value_format="JSON", key_schema="BIGINT", value_schema="N BIGINT")
    assert sections["Processing topology"] == tuple(str(builder.build().describe()).rstrip().splitlines())


def test_explain_statement_shows_a_repartition(engine):
    engine.execute(SOURCES)
    explained = one(engine, "EXPLAIN CREATE TABLE per_url AS SELECT url, COUNT(*) AS n FROM clicks GROUP BY url;")
    sections = dict(explained.sections)
    assert explained.fields[0] == ("ID", "CTAS_PER_URL_0")
    assert sections["Repartitions"] == ("KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition (by KSTREAM-KEY-SELECT-0000000001)",)
    assert any("KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition" in line for line in sections["Processing topology"])
    assert one(engine, "SHOW QUERIES;").rows == ()  # EXPLAIN runs nothing


def test_explain_errors(engine):
    engine.execute(SOURCES)
    assert error_of(engine, "EXPLAIN CSAS_NOPE_0;") == (
        "Line: 1, Col: 1: Query with id:CSAS_NOPE_0 does not exist, use SHOW QUERIES to view the full set of queries. "
        "Statement: EXPLAIN CSAS_NOPE_0"
    )
    assert error_of(engine, "EXPLAIN SHOW STREAMS;") == (
        "Line: 1, Col: 1: The provided statement does not run a ksql query. Statement: EXPLAIN SHOW STREAMS"
    )


# ---------------------------------------------------------------------- TERMINATE, DROP
def test_drop_needs_the_queries_that_use_it_terminated(engine):
    engine.execute(SOURCES + QUERIES)
    assert error_of(engine, "DROP STREAM clicks;") == (
        "Line: 1, Col: 1: Cannot drop CLICKS. The following queries read from this source: [CSAS_SHOP_0, CTAS_PER_USER_1]. "
        "The following queries write into this source: []. You need to terminate them before dropping CLICKS. "
        "Statement: DROP STREAM clicks"
    )
    assert error_of(engine, "TERMINATE CSAS_NOPE_9;") == "Line: 1, Col: 1: Unknown queryId: CSAS_NOPE_9. Statement: TERMINATE CSAS_NOPE_9"
    assert one(engine, "TERMINATE csas_shop_0;").message == "Query terminated."
    assert [row[0] for row in one(engine, "SHOW QUERIES;").rows] == ["CTAS_PER_USER_1"]
    # Dropping a CREATE ... AS SELECT's table terminates its query.
    assert one(engine, "DROP TABLE per_user;").message == "Source `PER_USER` (topic: PER_USER) was dropped."
    assert one(engine, "SHOW QUERIES;").rows == ()
    assert one(engine, "DROP STREAM clicks DELETE TOPIC;").message == "Source `CLICKS` (topic: clicks) was dropped."
    assert [row[0] for row in one(engine, "SHOW TOPICS;").rows] == ["PER_USER", "SHOP", "users"]
    assert [row[0] for row in one(engine, "SHOW STREAMS;").rows] == ["SHOP"]


def test_terminate_all(engine):
    engine.execute(SOURCES + QUERIES)
    assert one(engine, "TERMINATE ALL;").message == "Query terminated."
    assert one(engine, "SHOW QUERIES;").rows == ()


# ---------------------------------------------------------------------- metastore
def test_the_metastore_is_replayed_by_the_next_engine(engine, tmp_path):
    engine.execute(SOURCES + QUERIES + "TERMINATE CSAS_SHOP_0; SET 'auto.offset.reset'='earliest';")
    again = SqlEngine(EmbeddedStore(tmp_path / "home"), service_id="test")
    assert [row[0] for row in one(again, "SHOW QUERIES;").rows] == ["CTAS_PER_USER_1"]
    assert [row[0] for row in one(again, "SHOW STREAMS;").rows] == ["CLICKS", "SHOP"]
    assert one(again, "CREATE STREAM more AS SELECT * FROM clicks;").message == "Created query with ID CSAS_MORE_2"
    # In the shell a second CREATE of a name is ksqlDB's error, the same definition too.
    assert error_of(again, "CREATE STREAM more AS SELECT * FROM clicks;") == (
        "Line: 1, Col: 1: Cannot add stream 'MORE': A stream with the same name already exists. "
        "Statement: CREATE STREAM more AS SELECT * FROM clicks"
    )
    other = SqlEngine(EmbeddedStore(tmp_path / "home"), service_id="other")
    assert one(other, "SHOW STREAMS;").rows == ()


def test_rerun_unchanged_statements_are_no_ops(tmp_path):
    store = EmbeddedStore(tmp_path / "home")
    first = SqlEngine(store, service_id="app", rerun=True)
    first.execute(SOURCES + QUERIES + "INSERT INTO clicks (user_id, url) VALUES (1, '/a');")
    again = SqlEngine(store, service_id="app", rerun=True)
    results = again.execute(SOURCES + QUERIES + "INSERT INTO clicks (user_id, url) VALUES (1, '/a');")
    assert [r.message for r in results] == [
        "Stream CLICKS unchanged", "Table USERS unchanged", "Stream SHOP unchanged", "Table PER_USER unchanged", None,
    ]
    assert store.describe_topic("clicks").record_count == 1  # the INSERT is not produced twice
    assert error_of(again, "CREATE TABLE per_user AS SELECT user_id, COUNT(url) AS n FROM clicks GROUP BY user_id;") == (
        "Line: 1, Col: 1: Cannot add table 'PER_USER': A table with the same name already exists. "
        "Statement: CREATE TABLE per_user AS SELECT user_id, COUNT(url) AS n FROM clicks GROUP BY user_id"
    )


def test_create_or_replace_keeps_the_query_id_and_checks_the_schema(engine):
    engine.execute(SOURCES + QUERIES)
    replaced = one(engine, "CREATE OR REPLACE STREAM shop AS SELECT user_id, url, UCASE(url) AS loud FROM clicks;")
    assert replaced.message == "Created query with ID CSAS_SHOP_0"
    assert one(engine, "DESCRIBE shop;").rows == (("USER_ID", "BIGINT           (key)"), ("URL", "STRING"), ("LOUD", "STRING"))
    assert error_of(engine, "CREATE OR REPLACE STREAM shop AS SELECT user_id, UCASE(url) AS loud FROM clicks;") == (
        "Line: 1, Col: 1: Cannot upgrade data source: DataSource 'SHOP' has schema = [`USER_ID` BIGINT, `URL` STRING, "
        "`LOUD` STRING] which is not upgradeable to [`USER_ID` BIGINT, `LOUD` STRING]. (The following columns are changed, "
        "missing or reordered: [`URL` STRING, `LOUD` STRING]). "
        "Statement: CREATE OR REPLACE STREAM shop AS SELECT user_id, UCASE(url) AS loud FROM clicks"
    )
    replaced_source = one(engine, "CREATE OR REPLACE STREAM clicks (user_id BIGINT KEY, url STRING, ms BIGINT) "
                                  "WITH (kafka_topic='clicks', value_format='json', partitions=2);")
    assert replaced_source.message == "Stream created"
    assert one(engine, "DESCRIBE clicks;").rows[-1] == ("MS", "BIGINT")


# ---------------------------------------------------------------------- PRINT, SET, RUN SCRIPT
def test_print_shows_rowtime_key_value_partition(engine):
    engine.execute(SOURCES)
    engine.execute(
        "INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/home', 1700000000123);"
        "INSERT INTO clicks (user_id, url, ROWTIME) VALUES (7, '/shop', 1700000000456);"
        "INSERT INTO users (id, name) VALUES (1, 'ada');"
    )
    printed = one(engine, "PRINT clicks FROM BEGINNING LIMIT 1;")
    assert list(printed.rows) == [
        "Key format: KAFKA_BIGINT",
        "Value format: JSON",
        "rowtime: 2023/11/14 22:13:20.123 Z, key: 7, value: {\"URL\":\"/home\"}, partition: 1",
    ]
    assert list(one(engine, "PRINT 'CLICKS' FROM BEGINNING INTERVAL 2;").rows)[2:] == [
        "rowtime: 2023/11/14 22:13:20.123 Z, key: 7, value: {\"URL\":\"/home\"}, partition: 1",
    ]
    assert list(one(engine, "PRINT users FROM BEGINNING;").rows)[2].endswith(", key: 1, value: {\"NAME\":\"ada\"}, partition: 1")
    assert list(one(engine, "PRINT clicks;").rows) == ["Key format: KAFKA_BIGINT", "Value format: JSON"]  # new records only
    assert error_of(engine, "PRINT nope;") == (
        "Line: 1, Col: 1: Could not find topic 'nope', or the KSQL user does not have permissions to list the topic. "
        "Topic names are case-sensitive. Statement: PRINT nope"
    )


def test_set_unset_and_show_properties(engine):
    assert one(engine, "SET 'auto.offset.reset'='earliest';").message == (
        "Successfully changed local property 'auto.offset.reset' to 'earliest'. Use the UNSET command to revert your change."
    )
    assert one(engine, "SHOW PROPERTIES;").rows == (("auto.offset.reset", "KSQL", "SESSION", "earliest"),)
    assert one(engine, "UNSET 'auto.offset.reset';").message == (
        "Successfully unset local property 'auto.offset.reset' (value was 'earliest')."
    )


def test_run_script_runs_a_file_relative_to_the_base_directory(engine, tmp_path):
    (tmp_path / "sources.sql").write_text(SOURCES)
    result = one(engine, "RUN SCRIPT 'sources.sql';")
    assert [r.message for r in result.results] == ["Stream created", "Table created"]
    assert error_of(engine, "RUN SCRIPT 'missing.sql';") == (
        "Line: 1, Col: 1: Failed to read file: missing.sql (No such file or directory). Statement: RUN SCRIPT 'missing.sql'"
    )

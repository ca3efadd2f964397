"""A DSL program and the SQL of the same query build the same plan: equal describe()
text (Kafka Streams' TopologyDescription), snapshotted here."""

from __future__ import annotations

from pathlib import Path

from tablestream.dsl import StreamsBuilder
from tablestream.dsl import aggregates as agg
from tablestream.sql.compiler import compile_sql

DATA = Path(__file__).parent / "data"


def same(sql: str, builder: StreamsBuilder) -> str:
    """The describe() text of the SQL, asserted equal to the DSL program's."""
    text = str(compile_sql(sql).topology.describe())
    assert text == str(builder.build().describe())
    return text


def test_aggregation():
    sql = """
        CREATE STREAM pageviews (user_id BIGINT KEY, region STRING, ms BIGINT)
          WITH (kafka_topic='pageviews', value_format='json');
        CREATE TABLE per_region AS
          SELECT region, COUNT(*) AS views, SUM(ms) AS total_ms FROM pageviews GROUP BY region;
    """
    builder = StreamsBuilder()
    views = builder.stream("pageviews", key_schema="BIGINT", value_schema="REGION STRING, MS BIGINT")
    grouped = views.group_by("region", name="PER_REGION-GroupBy")
    grouped.agg(A0=agg.count(), A1=agg.sum("ms")).map_values(
        "struct(value.A0 AS VIEWS, value.A1 AS TOTAL_MS)"
    ).to("PER_REGION", key_schema="STRING", value_schema="VIEWS BIGINT, TOTAL_MS BIGINT")
    # One aggregate processor and one store, as ksqlDB's topology for this query.
    assert same(sql, builder) == """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [pageviews])
      --> PER_REGION-GroupBy
    Processor: PER_REGION-GroupBy (stores: [])
      --> PER_REGION-GroupBy-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: PER_REGION-GroupBy-repartition-filter (stores: [])
      --> PER_REGION-GroupBy-repartition-sink
      <-- PER_REGION-GroupBy
    Sink: PER_REGION-GroupBy-repartition-sink (topic: PER_REGION-GroupBy-repartition)
      <-- PER_REGION-GroupBy-repartition-filter

  Sub-topology: 1
    Source: PER_REGION-GroupBy-repartition-source (topics: [PER_REGION-GroupBy-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-MAPVALUES-0000000007
      <-- PER_REGION-GroupBy-repartition-source
    Processor: KTABLE-MAPVALUES-0000000007 (stores: [])
      --> KTABLE-TOSTREAM-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])
      --> KSTREAM-SINK-0000000009
      <-- KTABLE-MAPVALUES-0000000007
    Sink: KSTREAM-SINK-0000000009 (topic: PER_REGION)
      <-- KTABLE-TOSTREAM-0000000008

"""


def test_aggregation_of_numeric_and_other_aggregates():
    """COUNT, SUM and AVG in one aggregation, MAX in its own, joined on the group key."""
    sql = """
        CREATE STREAM pageviews (user_id BIGINT KEY, region STRING, ms BIGINT)
          WITH (kafka_topic='pageviews', value_format='json');
        CREATE TABLE per_region AS
          SELECT region, COUNT(*) AS views, MAX(ms) AS longest, AVG(ms) AS mean FROM pageviews GROUP BY region;
    """
    builder = StreamsBuilder()
    views = builder.stream("pageviews", key_schema="BIGINT", value_schema="REGION STRING, MS BIGINT")
    grouped = views.group_by("region", name="PER_REGION-GroupBy")
    grouped.agg(A0=agg.count(), A2=agg.avg("ms")).left_join(
        grouped.max("ms"), "struct(left.A0 AS A0, left.A2 AS A2, right AS A1)"
    ).map_values("struct(value.A0 AS VIEWS, value.A1 AS LONGEST, value.A2 AS MEAN)").to(
        "PER_REGION", key_schema="STRING", value_schema="VIEWS BIGINT, LONGEST BIGINT, MEAN DOUBLE"
    )
    text = same(sql, builder)
    assert text[text.index("  Sub-topology: 1"):] == """\
  Sub-topology: 1
    Source: PER_REGION-GroupBy-repartition-source (topics: [PER_REGION-GroupBy-repartition])
      --> KSTREAM-AGGREGATE-0000000003, KSTREAM-AGGREGATE-0000000008
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-LEFTTHIS-0000000013
      <-- PER_REGION-GroupBy-repartition-source
    Processor: KSTREAM-AGGREGATE-0000000008 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000007])
      --> KTABLE-LEFTOTHER-0000000014
      <-- PER_REGION-GroupBy-repartition-source
    Processor: KTABLE-LEFTOTHER-0000000014 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-MERGE-0000000012
      <-- KSTREAM-AGGREGATE-0000000008
    Processor: KTABLE-LEFTTHIS-0000000013 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000007])
      --> KTABLE-MERGE-0000000012
      <-- KSTREAM-AGGREGATE-0000000003
    Processor: KTABLE-MERGE-0000000012 (stores: [])
      --> KTABLE-MAPVALUES-0000000015
      <-- KTABLE-LEFTTHIS-0000000013, KTABLE-LEFTOTHER-0000000014
    Processor: KTABLE-MAPVALUES-0000000015 (stores: [])
      --> KTABLE-TOSTREAM-0000000016
      <-- KTABLE-MERGE-0000000012
    Processor: KTABLE-TOSTREAM-0000000016 (stores: [])
      --> KSTREAM-SINK-0000000017
      <-- KTABLE-MAPVALUES-0000000015
    Sink: KSTREAM-SINK-0000000017 (topic: PER_REGION)
      <-- KTABLE-TOSTREAM-0000000016

"""


def test_stream_table_join_of_seed_002():
    builder = StreamsBuilder()
    clicks = builder.stream("clickstream", value_schema="USERID BIGINT, URL STRING")
    users = builder.table("users", key_schema="BIGINT", value_schema="FULLNAME STRING")
    clicks.select_key("userId").join(users, "struct(left AS L, right AS R)", strict=True).map_values(
        "CASE WHEN record.value IS NULL THEN NULL "
        "ELSE struct(record.key AS USERID, value.L.URL AS URL, value.R.FULLNAME AS FULLNAME) END"
    ).to("transient_C_0", key_schema="BIGINT", value_schema="USERID BIGINT, URL STRING, FULLNAME STRING")
    assert same((DATA / "seed_002_clicks_users_join.sql").read_text(), builder) == """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [clickstream])
      --> KSTREAM-KEY-SELECT-0000000004
    Processor: KSTREAM-KEY-SELECT-0000000004 (stores: [])
      --> KSTREAM-FILTER-0000000007
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000006
      <-- KSTREAM-KEY-SELECT-0000000004
    Sink: KSTREAM-SINK-0000000006 (topic: KSTREAM-KEY-SELECT-0000000004-repartition)
      <-- KSTREAM-FILTER-0000000007

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000008 (topics: [KSTREAM-KEY-SELECT-0000000004-repartition])
      --> KSTREAM-JOIN-0000000005
    Processor: KSTREAM-JOIN-0000000005 (stores: [users-STATE-STORE-0000000001])
      --> KSTREAM-MAPVALUES-0000000009
      <-- KSTREAM-SOURCE-0000000008
    Processor: KSTREAM-MAPVALUES-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KSTREAM-JOIN-0000000005
    Source: KSTREAM-SOURCE-0000000002 (topics: [users])
      --> KTABLE-SOURCE-0000000003
    Sink: KSTREAM-SINK-0000000010 (topic: transient_C_0)
      <-- KSTREAM-MAPVALUES-0000000009
    Processor: KTABLE-SOURCE-0000000003 (stores: [users-STATE-STORE-0000000001])
      --> none
      <-- KSTREAM-SOURCE-0000000002

"""


def test_primary_key_join():
    sql = """
        CREATE TABLE customers (id BIGINT PRIMARY KEY, name STRING) WITH (kafka_topic='customers', format='json');
        CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance DOUBLE) WITH (kafka_topic='accounts', format='json');
        CREATE TABLE balances AS SELECT c.id, name, balance FROM customers c LEFT JOIN accounts a ON c.id = a.id;
    """
    builder = StreamsBuilder()
    customers = builder.table("customers", key_format="JSON", key_schema="BIGINT", value_schema="NAME STRING")
    accounts = builder.table("accounts", key_format="JSON", key_schema="BIGINT", value_schema="BALANCE DOUBLE")
    customers.left_join(accounts, "struct(left AS L, right AS R)").map_values(
        "struct(value.L.NAME AS NAME, value.R.BALANCE AS BALANCE)"
    ).to("BALANCES", key_format="JSON", key_schema="BIGINT", value_schema="NAME STRING, BALANCE DOUBLE")
    assert same(sql, builder) == """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000001 (topics: [customers])
      --> KTABLE-SOURCE-0000000002
    Source: KSTREAM-SOURCE-0000000004 (topics: [accounts])
      --> KTABLE-SOURCE-0000000005
    Processor: KTABLE-SOURCE-0000000002 (stores: [customers-STATE-STORE-0000000000])
      --> KTABLE-LEFTTHIS-0000000007
      <-- KSTREAM-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000005 (stores: [accounts-STATE-STORE-0000000003])
      --> KTABLE-LEFTOTHER-0000000008
      <-- KSTREAM-SOURCE-0000000004
    Processor: KTABLE-LEFTOTHER-0000000008 (stores: [customers-STATE-STORE-0000000000])
      --> KTABLE-MERGE-0000000006
      <-- KTABLE-SOURCE-0000000005
    Processor: KTABLE-LEFTTHIS-0000000007 (stores: [accounts-STATE-STORE-0000000003])
      --> KTABLE-MERGE-0000000006
      <-- KTABLE-SOURCE-0000000002
    Processor: KTABLE-MERGE-0000000006 (stores: [])
      --> KTABLE-MAPVALUES-0000000009
      <-- KTABLE-LEFTTHIS-0000000007, KTABLE-LEFTOTHER-0000000008
    Processor: KTABLE-MAPVALUES-0000000009 (stores: [])
      --> KTABLE-TOSTREAM-0000000010
      <-- KTABLE-MERGE-0000000006
    Processor: KTABLE-TOSTREAM-0000000010 (stores: [])
      --> KSTREAM-SINK-0000000011
      <-- KTABLE-MAPVALUES-0000000009
    Sink: KSTREAM-SINK-0000000011 (topic: BALANCES)
      <-- KTABLE-TOSTREAM-0000000010

"""


def test_foreign_key_join():
    sql = """
        CREATE TABLE orders (id BIGINT PRIMARY KEY, product_id STRING, qty INT) WITH (kafka_topic='orders', format='json');
        CREATE TABLE products (id STRING PRIMARY KEY, price DOUBLE) WITH (kafka_topic='products', format='json');
        CREATE TABLE priced AS SELECT o.id, qty * price AS total FROM orders o JOIN products p ON o.product_id = p.id;
    """
    builder = StreamsBuilder()
    orders = builder.table("orders", key_format="JSON", key_schema="BIGINT", value_schema="PRODUCT_ID STRING, QTY INT")
    products = builder.table("products", key_format="JSON", key_schema="STRING", value_schema="PRICE DOUBLE")
    orders.join(products, "struct(left AS L, right AS R)", foreign_key="product_id").map_values(
        "struct(value.L.QTY * value.R.PRICE AS TOTAL)"
    ).to("PRICED", key_format="JSON", key_schema="BIGINT", value_schema="TOTAL DOUBLE")
    assert same(sql, builder) == """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000001 (topics: [orders])
      --> KTABLE-SOURCE-0000000002
    Source: KSTREAM-SOURCE-0000000004 (topics: [products])
      --> KTABLE-SOURCE-0000000005
    Processor: KTABLE-SOURCE-0000000002 (stores: [orders-STATE-STORE-0000000000])
      --> KTABLE-FK-JOIN-OUTPUT-0000000006
      <-- KSTREAM-SOURCE-0000000001
    Processor: KTABLE-SOURCE-0000000005 (stores: [products-STATE-STORE-0000000003])
      --> KTABLE-FK-JOIN-OUTPUT-0000000006
      <-- KSTREAM-SOURCE-0000000004
    Processor: KTABLE-FK-JOIN-OUTPUT-0000000006 (stores: [orders-STATE-STORE-0000000000, KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007, products-STATE-STORE-0000000003])
      --> KTABLE-MAPVALUES-0000000008
      <-- KTABLE-SOURCE-0000000002, KTABLE-SOURCE-0000000005
    Processor: KTABLE-MAPVALUES-0000000008 (stores: [])
      --> KTABLE-TOSTREAM-0000000009
      <-- KTABLE-FK-JOIN-OUTPUT-0000000006
    Processor: KTABLE-TOSTREAM-0000000009 (stores: [])
      --> KSTREAM-SINK-0000000010
      <-- KTABLE-MAPVALUES-0000000008
    Sink: KSTREAM-SINK-0000000010 (topic: PRICED)
      <-- KTABLE-TOSTREAM-0000000009

"""


def test_partition_by_of_seed_002():
    sql = "CREATE STREAM products (id INT KEY, product_id STRING, name STRING) WITH (kafka_topic='products', value_format='json', partitions=3);\n"
    sql += (DATA / "seed_002_products_partition_by.sql").read_text()
    builder = StreamsBuilder()
    products = builder.stream("products", key_schema="INT", value_schema="PRODUCT_ID STRING, NAME STRING")
    products.map(("product_id", "CASE WHEN record.value IS NULL THEN NULL ELSE struct(value.NAME AS NAME, record.key AS ID) END")).to(
        "PRODUCTS_REKEYED", key_schema="STRING", value_schema="NAME STRING, ID INT"
    )
    assert same(sql, builder) == """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [products])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: PRODUCTS_REKEYED)
      <-- KSTREAM-MAP-0000000001

"""

"""The SQL of seeds 002 and 004, verbatim, run by TestDriver.from_sql with records of our
choosing, one record per batch: the exact rows each query gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

DATA = Path(__file__).parent / "data"
R = TestRecord


def test_seed_002_join_repartitions_the_keyless_clicks(spark):
    sql = (DATA / "seed_002_clicks_users_join.sql").read_text()
    with TestDriver.from_sql(sql, spark=spark) as driver:
        users = driver.create_input_topic("users")
        clicks = driver.create_input_topic("clickstream")
        rows = driver.sql_output("transient_C_0")
        users.pipe_input(1, {"FULLNAME": "Ada Lovelace"}, timestamp=1)
        clicks.pipe_input("ignored", {"USERID": 1, "URL": "/home"}, timestamp=2)
        clicks.pipe_input(None, {"USERID": 2, "URL": "/cart"}, timestamp=3)  # no user 2 yet
        users.pipe_input(2, {"FULLNAME": "Grace Hopper"}, timestamp=4)
        clicks.pipe_input(None, {"USERID": 2, "URL": "/pay"}, timestamp=5)
        users.pipe_input(1, None, timestamp=6)
        clicks.pipe_input(None, {"USERID": 1, "URL": "/bye"}, timestamp=7)  # user 1 deleted
        assert rows.read_records() == [
            R(1, {"USERID": 1, "URL": "/home", "FULLNAME": "Ada Lovelace"}, 2),
            R(2, {"USERID": 2, "URL": "/pay", "FULLNAME": "Grace Hopper"}, 5),
        ]


def test_seed_002_cast_join_meets_int_clicks_with_bigint_users(spark):
    sql = (DATA / "seed_002_cast_join.sql").read_text()
    with TestDriver.from_sql(sql, spark=spark) as driver:
        users = driver.create_input_topic("users")
        clicks = driver.create_input_topic("clickstream")
        rows = driver.sql_output("transient_CLICKS_0")
        users.pipe_input(3_000_000_000, {"FULLNAME": "Big Id"}, timestamp=1)
        users.pipe_input(7, {"FULLNAME": "Seven"}, timestamp=2)
        clicks.pipe_input(7, {"URL": "/seven"}, timestamp=3)
        clicks.pipe_input(8, {"URL": "/eight"}, timestamp=4)
        assert rows.read_records() == [R(7, {"URL": "/seven", "FULLNAME": "Seven"}, 3)]


def test_seed_002_partition_by_moves_product_id_into_the_key(spark):
    sql = (
        "CREATE STREAM products (id INT KEY, product_id STRING, name STRING) "
        "WITH (kafka_topic='products', value_format='json', partitions=2);\n"
    ) + (DATA / "seed_002_products_partition_by.sql").read_text()
    with TestDriver.from_sql(sql, spark=spark) as driver:
        products = driver.create_input_topic("products")
        assert products.partitions == 2
        rekeyed = driver.sql_output("PRODUCTS_REKEYED")
        products.pipe_input(1, {"PRODUCT_ID": "p-1", "NAME": "kettle"}, timestamp=10)
        products.pipe_input(2, {"PRODUCT_ID": None, "NAME": "mug"}, timestamp=11)
        products.pipe_input(3, None, timestamp=12)
        assert rekeyed.read_records() == [
            R("p-1", {"NAME": "kettle", "ID": 1}, 10),
            R(None, {"NAME": "mug", "ID": 2}, 11),
            R(None, None, 12),  # a record without a value stays one, with the key of its (null) value
        ]
        assert driver.sql.topics["PRODUCTS_REKEYED"] == 6


def test_seed_002_repartition_keeps_records_as_they_are(spark):
    sql = (
        "CREATE STREAM products (id INT KEY, name STRING) "
        "WITH (kafka_topic='products', value_format='json', partitions=2);\n"
    ) + (DATA / "seed_002_products_repartition.sql").read_text()
    with TestDriver.from_sql(sql, spark=spark) as driver:
        driver.create_input_topic("products").pipe_input(4, {"NAME": "teapot"}, timestamp=3)
        assert driver.sql_output("PRODUCTS_REKEYED").read_records() == [R(4, {"NAME": "teapot"}, 3)]


def test_insert_values_are_piped_in_order(spark):
    statements = [
        "CREATE STREAM orders (id BIGINT KEY, customer STRING, amount DOUBLE) WITH (kafka_topic='orders', value_format='json')",
        "CREATE TABLE totals AS SELECT customer, SUM(amount) AS total, COUNT(*) AS n FROM orders GROUP BY customer",
        "INSERT INTO orders (id, customer, amount, ROWTIME) VALUES (1, 'ada', 10.5, 100)",
        "INSERT INTO orders (id, customer, amount, ROWTIME) VALUES (2, 'ada', 2.0, 200)",
        "INSERT INTO orders (id, customer, amount, ROWTIME) VALUES (3, 'bob', 1.0, 300)",
    ]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        assert driver.sql_output("TOTALS").read_records() == [
            R("ada", {"TOTAL": 10.5, "N": 1}, 100),
            R("ada", {"TOTAL": 12.5, "N": 2}, 200),
            R("bob", {"TOTAL": 1.0, "N": 1}, 300),
        ]

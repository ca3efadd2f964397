"""ksqlDB's LATEST_BY_OFFSET, EARLIEST_BY_OFFSET, COLLECT_LIST, COLLECT_SET and
COUNT_DISTINCT through TestDriver.from_sql, one record per batch: the exact records of
each grouped table (keys, values, timestamps). A table emits no repeat of its last row."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from tablestream.sql.errors import SqlError
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

R = TestRecord

ORDERS = "CREATE STREAM orders (id BIGINT KEY, customer STRING, item STRING, amount BIGINT) WITH (kafka_topic='orders', value_format='json', partitions=1);"
USERS = "CREATE TABLE users (id STRING PRIMARY KEY, region STRING, name STRING) WITH (kafka_topic='users', value_format='json', partitions=1);"


def _orders(driver, rows):
    orders = driver.create_input_topic("orders")
    for ts, (customer, item, amount) in enumerate(rows, start=1):
        orders.pipe_input(ts, {"CUSTOMER": customer, "ITEM": item, "AMOUNT": amount}, timestamp=100 * ts)


def test_latest_and_earliest_by_offset_skip_nulls_unless_told(spark):
    """The N variant is an array, oldest first, and a group of only nulls is an empty
    array (so the group has a row); ``false`` keeps a latest null."""
    statements = [ORDERS, (
        "CREATE TABLE last AS SELECT customer, LATEST_BY_OFFSET(amount) AS latest, EARLIEST_BY_OFFSET(amount) AS earliest, "
        "LATEST_BY_OFFSET(amount, 2) AS latest2, LATEST_BY_OFFSET(amount, false) AS with_nulls FROM orders GROUP BY customer;"
    )]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        _orders(driver, [("ada", "tea", 10), ("ada", "jam", None), ("ada", "tea", 30), ("bob", "jam", None)])
        assert driver.sql_output("LAST").read_records() == [
            R("ada", {"LATEST": 10, "EARLIEST": 10, "LATEST2": [10], "WITH_NULLS": 10}, 100),
            R("ada", {"LATEST": 10, "EARLIEST": 10, "LATEST2": [10], "WITH_NULLS": None}, 200),
            R("ada", {"LATEST": 30, "EARLIEST": 10, "LATEST2": [10, 30], "WITH_NULLS": 30}, 300),
            R("bob", {"LATEST": None, "EARLIEST": None, "LATEST2": [], "WITH_NULLS": None}, 400),
        ]


def test_earliest_n_keeps_the_first_values(spark):
    statements = [ORDERS, "CREATE TABLE first AS SELECT customer, EARLIEST_BY_OFFSET(item, 2, false) AS items FROM orders GROUP BY customer;"]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        _orders(driver, [("ada", None, 1), ("ada", "jam", 2), ("ada", "tea", 3)])
        assert driver.sql_output("FIRST").read_records() == [
            R("ada", {"ITEMS": [None]}, 100),
            R("ada", {"ITEMS": [None, "jam"]}, 200),
        ]


def test_collections_and_count_distinct_of_a_stream(spark):
    """COLLECT_LIST keeps every value, nulls included; COLLECT_SET each value once, null
    too; COUNT_DISTINCT counts the distinct non-null values (a group of nulls: 0)."""
    statements = [ORDERS, (
        "CREATE TABLE bought AS SELECT customer, COLLECT_LIST(item) AS items, COLLECT_SET(item) AS kinds, "
        "COUNT_DISTINCT(item) AS n FROM orders GROUP BY customer;"
    )]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        _orders(driver, [("ada", "tea", 1), ("ada", "jam", 2), ("ada", "tea", 3), ("ada", None, 4), ("bob", None, 5)])
        assert driver.sql_output("BOUGHT").read_records() == [
            R("ada", {"ITEMS": ["tea"], "KINDS": ["tea"], "N": 1}, 100),
            R("ada", {"ITEMS": ["tea", "jam"], "KINDS": ["tea", "jam"], "N": 2}, 200),
            R("ada", {"ITEMS": ["tea", "jam", "tea"], "KINDS": ["tea", "jam"], "N": 2}, 300),
            R("ada", {"ITEMS": ["tea", "jam", "tea", None], "KINDS": ["tea", "jam", None], "N": 2}, 400),
            R("bob", {"ITEMS": [None], "KINDS": [None], "N": 0}, 500),
        ]


def test_the_collect_list_limit_leaves_later_values_out(spark):
    """SET 'ksql.functions.collect_list.limit' bounds COLLECT_LIST (not COLLECT_SET, which
    has its own); a value past the limit changes nothing, so nothing is emitted."""
    statements = [
        ORDERS,
        "SET 'ksql.functions.collect_list.limit'='2';",
        "CREATE TABLE bought AS SELECT customer, COLLECT_LIST(amount) AS amounts FROM orders GROUP BY customer;",
        "SET 'ksql.functions.collect_set.limit'='1';",
        "CREATE TABLE kinds AS SELECT customer, COLLECT_SET(item) AS kinds FROM orders GROUP BY customer;",
    ]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        _orders(driver, [("ada", "tea", 1), ("ada", "jam", 2), ("ada", "tea", 3)])
        assert driver.sql_output("BOUGHT").read_records() == [
            R("ada", {"AMOUNTS": [1]}, 100),
            R("ada", {"AMOUNTS": [1, 2]}, 200),
        ]
        assert driver.sql_output("KINDS").read_records() == [R("ada", {"KINDS": ["tea"]}, 100)]


def test_collect_list_of_a_table_moves_a_row_value_between_groups(spark):
    """An update removes the row's old value from its old group's list (its last
    occurrence) and adds the new value to its new group's; an emptied group is a
    tombstone."""
    statements = [USERS, "CREATE TABLE names AS SELECT region, COLLECT_LIST(name) AS names FROM users GROUP BY region;"]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        users = driver.create_input_topic("users")
        out = driver.sql_output("NAMES")
        got = []
        for ts, (key, value) in enumerate([
            ("u1", {"REGION": "eu", "NAME": "ada"}),
            ("u2", {"REGION": "eu", "NAME": "bob"}),
            ("u3", {"REGION": "eu", "NAME": "ada"}),
            ("u1", {"REGION": "us", "NAME": "ada"}),
            ("u2", None),
            ("u3", {"REGION": "eu", "NAME": "cy"}),
            ("u3", None),
        ], start=1):
            users.pipe_input(key, value, timestamp=ts)
            got.append(sorted(out.read_records(), key=lambda r: r.key))
        assert got == [
            [R("eu", {"NAMES": ["ada"]}, 1)],
            [R("eu", {"NAMES": ["ada", "bob"]}, 2)],
            [R("eu", {"NAMES": ["ada", "bob", "ada"]}, 3)],
            [R("eu", {"NAMES": ["ada", "bob"]}, 4), R("us", {"NAMES": ["ada"]}, 4)],
            [R("eu", {"NAMES": ["ada"]}, 5)],
            [R("eu", {"NAMES": ["cy"]}, 6)],
            [R("eu", None, 7)],
        ]


def test_new_and_old_aggregates_in_one_select_with_having(spark):
    """The new aggregates join the others on the group key; HAVING reads any of them."""
    statements = [ORDERS, (
        "CREATE TABLE stats AS SELECT customer, COUNT(*) AS n, MIN(amount) AS low, LATEST_BY_OFFSET(item) AS last_item, "
        "COUNT_DISTINCT(item) AS kinds FROM orders GROUP BY customer HAVING COUNT_DISTINCT(item) > 1;"
    )]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        _orders(driver, [("ada", "tea", 5), ("ada", "tea", 3), ("ada", "jam", 4), ("bob", "tea", 1), ("ada", None, 2)])
        assert driver.sql_output("STATS").read_records() == [
            R("ada", {"N": 3, "LOW": 3, "LAST_ITEM": "jam", "KINDS": 2}, 300),
            R("ada", {"N": 4, "LOW": 2, "LAST_ITEM": "jam", "KINDS": 2}, 500),
        ]


def test_min_and_max_of_decimals_order_by_value(spark):
    """MIN and MAX of a DECIMAL keep its type and order by value: a negative number,
    and more digits than a string order would put right."""
    statements = [
        "CREATE STREAM prices (id STRING KEY, shop STRING, price DECIMAL(6,2)) "
        "WITH (kafka_topic='prices', value_format='json', partitions=1);",
        "CREATE TABLE bounds AS SELECT shop, MIN(price) AS low, MAX(price) AS high FROM prices GROUP BY shop;",
    ]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        prices = driver.create_input_topic("prices")
        prices.pipe_input("a", {"SHOP": "s", "PRICE": "9.50"}, timestamp=1)
        prices.pipe_input("b", {"SHOP": "s", "PRICE": "10.25"}, timestamp=2)
        prices.pipe_input("c", {"SHOP": "s", "PRICE": "-0.75"}, timestamp=3)
        prices.pipe_input("d", {"SHOP": "s", "PRICE": None}, timestamp=4)
        prices.pipe_input("e", {"SHOP": "t", "PRICE": "-10.25"}, timestamp=5)
        records = driver.sql_output("BOUNDS").read_records()
    assert [(r.key, r.value, r.timestamp) for r in records] == [
        ("s", {"LOW": Decimal("9.50"), "HIGH": Decimal("9.50")}, 1),
        ("s", {"LOW": Decimal("9.50"), "HIGH": Decimal("10.25")}, 2),
        ("s", {"LOW": Decimal("-0.75"), "HIGH": Decimal("10.25")}, 3),
        ("t", {"LOW": Decimal("-10.25"), "HIGH": Decimal("-10.25")}, 5),
    ]


def test_sum_of_decimals_is_exact_and_keeps_the_type(spark):
    """SUM of a DECIMAL(p, s) is a DECIMAL(p, s), exact (0.10 + 0.20 is 0.30, and digits
    beyond a double's), also as a table's rows change and retract."""
    statements = [
        "CREATE STREAM pays (id STRING KEY, shop STRING, amount DECIMAL(20,2)) "
        "WITH (kafka_topic='pays', value_format='json', partitions=1);",
        "CREATE TABLE totals AS SELECT shop, SUM(amount) AS total, COUNT(*) AS n FROM pays GROUP BY shop;",
        "CREATE TABLE accounts (id STRING PRIMARY KEY, shop STRING, balance DECIMAL(20,2)) "
        "WITH (kafka_topic='accounts', value_format='json', partitions=1);",
        "CREATE TABLE balances AS SELECT shop, SUM(balance) AS total FROM accounts GROUP BY shop;",
    ]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        pays = driver.create_input_topic("pays")
        pays.pipe_input("a", {"SHOP": "s", "AMOUNT": "0.10"}, timestamp=1)
        pays.pipe_input("b", {"SHOP": "s", "AMOUNT": "0.20"}, timestamp=2)
        pays.pipe_input("c", {"SHOP": "s", "AMOUNT": "123456789012345678.01"}, timestamp=3)
        pays.pipe_input("d", {"SHOP": "s", "AMOUNT": None}, timestamp=4)
        accounts = driver.create_input_topic("accounts")
        accounts.pipe_input("x", {"SHOP": "s", "BALANCE": "99999999999999999.99"}, timestamp=5)
        accounts.pipe_input("y", {"SHOP": "s", "BALANCE": "0.01"}, timestamp=6)
        accounts.pipe_input("x", {"SHOP": "t", "BALANCE": "-1.50"}, timestamp=7)
        totals = driver.sql_output("TOTALS").read_records()
        balances = driver.sql_output("BALANCES").read_records()
    assert [(r.key, r.value, r.timestamp) for r in totals] == [
        ("s", {"TOTAL": Decimal("0.10"), "N": 1}, 1),
        ("s", {"TOTAL": Decimal("0.30"), "N": 2}, 2),
        ("s", {"TOTAL": Decimal("123456789012345678.31"), "N": 3}, 3),
        ("s", {"TOTAL": Decimal("123456789012345678.31"), "N": 4}, 4),
    ]
    assert [(r.key, r.value, r.timestamp) for r in balances] == [
        ("s", {"TOTAL": Decimal("99999999999999999.99")}, 5),
        ("s", {"TOTAL": Decimal("100000000000000000.00")}, 6),
        ("s", {"TOTAL": Decimal("0.01")}, 7),
        ("t", {"TOTAL": Decimal("-1.50")}, 7),
    ]


def test_a_sum_of_decimals_beyond_its_precision_fails_with_ksqldbs_error(spark):
    """A SUM of DECIMAL(4, 2) reaching 100 fails as ksqlDB's does (not a null, not a
    rounded number); AVG takes no DECIMAL, as in ksqlDB."""
    statements = [
        "CREATE STREAM pays (id STRING KEY, shop STRING, amount DECIMAL(4,2)) "
        "WITH (kafka_topic='pays', value_format='json', partitions=1);",
        "CREATE TABLE totals AS SELECT shop, SUM(amount) AS total FROM pays GROUP BY shop;",
    ]
    with TestDriver.from_sql(statements, spark=spark) as driver:
        pays = driver.create_input_topic("pays")
        pays.pipe_input("a", {"SHOP": "s", "AMOUNT": "60.00"}, timestamp=1)
        with pytest.raises(Exception, match=re.escape(
            "Numeric field overflow: A field with precision 4 and scale 2 must round to an absolute value less than 10^2. Got 110.00"
        )):
            pays.pipe_input("b", {"SHOP": "s", "AMOUNT": "50.00"}, timestamp=2)
    with pytest.raises(SqlError, match=re.escape("Function 'AVG' does not accept parameters (DECIMAL(4, 2))")):
        TestDriver.from_sql([statements[0], "CREATE TABLE means AS SELECT shop, AVG(amount) AS m FROM pays GROUP BY shop;"], spark=spark)

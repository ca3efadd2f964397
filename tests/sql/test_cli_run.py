"""``tablestream run FILE.sql --until-idle`` on the embedded store, end to end: the
script's topics are created, records produced with ``produce`` are processed, the
outputs read back with ``consume``; a second run resumes each query from its checkpoint,
unchanged statements are no-ops, a changed one needs CREATE OR REPLACE, and a
replacement whose state cannot follow names ``tablestream app reset``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tablestream.cli import app
from tablestream.sql.errors import statement_excerpt

pytestmark = pytest.mark.spark

runner = CliRunner()

SCRIPT = """
CREATE TABLE products (id STRING PRIMARY KEY, price DOUBLE)
  WITH (kafka_topic='products', format='json', partitions=1);
CREATE TABLE lines (id BIGINT PRIMARY KEY, product_id STRING, qty INT)
  WITH (kafka_topic='lines', format='json', partitions=1);
CREATE TABLE priced AS
  SELECT l.id, qty * price AS total FROM lines l JOIN products p ON l.product_id = p.id;
CREATE STREAM orders (id BIGINT KEY, customer STRING, amount DOUBLE)
  WITH (kafka_topic='orders', value_format='json', partitions=1);
CREATE TABLE per_customer AS SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer;
INSERT INTO products (id, price, ROWTIME) VALUES ('kettle', 20.0, 1);
"""


def cli(home, *args, stdin: str | None = None):
    result = runner.invoke(app, [*args, "--home", str(home)], input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


def consumed(home, topic: str) -> list[tuple]:
    out = cli(home, "consume", topic, "--from-beginning", "--timeout", "0.1")
    return [(r["key"], r["value"], r["timestamp"]) for r in map(json.loads, out.splitlines())]


def produce(home, topic: str, *records: dict) -> None:
    cli(home, "produce", topic, stdin="".join(json.dumps(r) + "\n" for r in records))


def test_run_until_idle_then_resume(spark, tmp_path):
    script = tmp_path / "shop.sql"
    script.write_text(SCRIPT)
    home = tmp_path / "home"
    assert cli(home, "run", str(script), "--until-idle") == (
        "Running shop: CTAS_PRICED_0, CTAS_PER_CUSTOMER_1\nshop: caught up\n"
    )
    assert cli(home, "topics", "list").splitlines() == [
        "PER_CUSTOMER", "PRICED", "lines", "orders", "products",
        "shop-CTAS_PER_CUSTOMER_1-processing-log", "shop-CTAS_PRICED_0-processing-log",
    ]
    produce(home, "lines", {"key": 1, "value": {"PRODUCT_ID": "kettle", "QTY": 2}, "timestamp": 5})
    produce(home, "orders", {"key": 10, "value": {"CUSTOMER": "ada", "AMOUNT": 3.5}, "timestamp": 6})
    cli(home, "run", str(script), "--until-idle")
    assert consumed(home, "PRICED") == [(1, {"TOTAL": 40.0}, 5)]
    assert consumed(home, "PER_CUSTOMER") == [("ada", {"TOTAL": 3.5}, 6)]
    # The second run resumes: only the new records are processed.
    produce(home, "products", {"key": "kettle", "value": {"PRICE": 25.0}, "timestamp": 7})
    produce(home, "orders", {"key": 11, "value": {"CUSTOMER": "ada", "AMOUNT": 1.5}, "timestamp": 8})
    cli(home, "run", str(script), "--until-idle")
    assert consumed(home, "PRICED") == [(1, {"TOTAL": 40.0}, 5), (1, {"TOTAL": 50.0}, 7)]
    assert consumed(home, "PER_CUSTOMER") == [("ada", {"TOTAL": 3.5}, 6), ("ada", {"TOTAL": 5.0}, 8)]


def fails(home, *args) -> str:
    result = runner.invoke(app, [*args, "--home", str(home)])
    assert result.exit_code == 1, result.output
    return result.output


def test_rerun_with_changed_statements(spark, tmp_path):
    script = tmp_path / "shop.sql"
    home = tmp_path / "home"
    script.write_text(SCRIPT)
    cli(home, "topics", "create", "orders")  # the script's CREATE STREAM finds it
    produce(home, "orders", {"key": 10, "value": {"CUSTOMER": "ada", "AMOUNT": 3.5}, "timestamp": 6})
    cli(home, "run", str(script), "--until-idle")
    assert consumed(home, "PER_CUSTOMER") == [("ada", {"TOTAL": 3.5}, 6)]
    # A changed definition without OR REPLACE is ksqlDB's error; nothing runs.
    changed = SCRIPT.replace("SUM(amount) AS total", "SUM(amount) * 2 AS total")
    script.write_text(changed)
    assert fails(home, "run", str(script), "--until-idle") == (
        "Error: Line: 10, Col: 1: Cannot add table 'PER_CUSTOMER': A table with the same name already exists. "
        "Statement: CREATE TABLE per_customer AS SELECT customer, SUM(amount) * 2 AS total FROM orders GROUP BY customer\n"
    )
    # OR REPLACE with the same state (the projection after the aggregate): the query
    # resumes, the new projection for new records; a new query reads all the input.
    script.write_text(
        changed.replace("CREATE TABLE per_customer", "CREATE OR REPLACE TABLE per_customer")
        + "CREATE TABLE order_count AS SELECT customer, COUNT(*) AS n FROM orders GROUP BY customer;\n"
    )
    produce(home, "orders", {"key": 11, "value": {"CUSTOMER": "ada", "AMOUNT": 1.5}, "timestamp": 8})
    assert cli(home, "run", str(script), "--until-idle") == (
        "Running shop: CTAS_PRICED_0, CTAS_PER_CUSTOMER_1, CTAS_ORDER_COUNT_2\nshop: caught up\n"
    )
    assert consumed(home, "PER_CUSTOMER") == [("ada", {"TOTAL": 3.5}, 6), ("ada", {"TOTAL": 10.0}, 8)]
    assert consumed(home, "ORDER_COUNT") == [("ada", {"N": 2}, 8)]
    # A replacement whose state cannot follow (another grouping) names the reset.
    regrouped = (
        "CREATE OR REPLACE TABLE per_customer AS SELECT customer, SUM(amount) * 2 AS total "
        "FROM orders WHERE amount > 0 GROUP BY customer;"
    )
    script.write_text(SCRIPT.split("CREATE TABLE per_customer")[0] + regrouped + "\n")
    assert fails(home, "run", str(script), "--until-idle") == (
        "Error: Line: 10, Col: 1: Cannot replace query CTAS_PER_CUSTOMER_1: the new plan changes what its state stores "
        "keep, which the state of its application cannot follow; reset it first with 'tablestream app reset "
        "shop-CTAS_PER_CUSTOMER_1' (it then starts over from its source topics). Statement: "
        + statement_excerpt(regrouped[:-1]) + "\n"
    )
    cli(home, "app", "reset", "shop-CTAS_PER_CUSTOMER_1")
    cli(home, "run", str(script), "--until-idle")
    # Started over: both orders in its first batch.
    assert consumed(home, "PER_CUSTOMER")[2:] == [("ada", {"TOTAL": 10.0}, 8)]


# A foreign-key join and a grouped table aggregation, fed step by step.
JOIN_AND_AGGREGATE = """
CREATE TABLE products (id STRING PRIMARY KEY, price DOUBLE)
  WITH (kafka_topic='products', key_format='kafka', value_format='json');
CREATE TABLE lines (id BIGINT PRIMARY KEY, product_id STRING, qty INT)
  WITH (kafka_topic='lines', key_format='kafka', value_format='json');
CREATE TABLE priced AS
  SELECT l.id, product_id AS product, qty * price AS total
  FROM lines l JOIN products p ON l.product_id = p.id;
CREATE TABLE users (id BIGINT PRIMARY KEY, region STRING, credit INT)
  WITH (kafka_topic='users', key_format='kafka', value_format='json');
CREATE TABLE per_region AS
  SELECT region, COUNT(*) AS users, SUM(credit) AS credit FROM users GROUP BY region;
"""

# (topic, key, value, timestamp): updates, a moved foreign key, a deleted product, a
# user moving to another group.
STEPS = [
    ("products", "kettle", {"PRICE": 20.0}, 1),
    ("lines", 1, {"PRODUCT_ID": "kettle", "QTY": 2}, 2),
    ("lines", 2, {"PRODUCT_ID": "kettle", "QTY": 1}, 3),
    ("products", "kettle", {"PRICE": 25.0}, 4),
    ("lines", 1, {"PRODUCT_ID": "mug", "QTY": 2}, 5),
    ("products", "mug", {"PRICE": 3.0}, 6),
    ("products", "kettle", None, 7),
    ("users", 1, {"REGION": "eu", "CREDIT": 5}, 8),
    ("users", 2, {"REGION": "eu", "CREDIT": 3}, 9),
    ("users", 1, {"REGION": "us", "CREDIT": 5}, 10),
    ("users", 3, {"REGION": "us", "CREDIT": 1}, 11),
]


def _per_key(records: list[tuple]) -> dict:
    """Each key's records (value, timestamp) in the order ``consume`` gives them."""
    out: dict = {}
    for key, value, timestamp in records:
        out.setdefault(key, []).append((value, timestamp))
    return out


def _run_script(tmp_path, steps_per_run: int) -> tuple[dict, dict]:
    script = tmp_path / "app.sql"
    script.write_text(JOIN_AND_AGGREGATE)
    home = tmp_path / "home"
    for topic, partitions, key in (("products", 2, "STRING"), ("lines", 1, "BIGINT"), ("users", 2, "BIGINT")):
        cli(home, "topics", "create", topic, "--partitions", str(partitions), "--compact", "--key-schema", key)
    for start in range(0, len(STEPS), steps_per_run):
        for topic, key, value, timestamp in STEPS[start : start + steps_per_run]:
            produce(home, topic, {"key": key, "value": value, "timestamp": timestamp})
        cli(home, "run", str(script), "--until-idle")
    return _per_key(consumed(home, "PRICED")), _per_key(consumed(home, "PER_REGION"))


def test_a_record_per_run_gives_the_changelogs_record_for_record(spark, tmp_path):
    """One record produced and one ``run --until-idle`` per step: each run is a batch of
    one record, and the outputs are the per-record changelogs (a join's timestamp is
    the later of its inputs'; a line whose product is missing or deleted is deleted)."""
    priced, per_region = _run_script(tmp_path, steps_per_run=1)
    assert priced == {
        1: [
            ({"PRODUCT": "kettle", "TOTAL": 40.0}, 2),
            ({"PRODUCT": "kettle", "TOTAL": 50.0}, 4),
            (None, 5),
            ({"PRODUCT": "mug", "TOTAL": 6.0}, 6),
        ],
        2: [({"PRODUCT": "kettle", "TOTAL": 20.0}, 3), ({"PRODUCT": "kettle", "TOTAL": 25.0}, 4), (None, 7)],
    }
    assert per_region == {
        "eu": [
            ({"USERS": 1, "CREDIT": 5}, 8),
            ({"USERS": 2, "CREDIT": 8}, 9),
            ({"USERS": 1, "CREDIT": 3}, 10),
        ],
        "us": [({"USERS": 1, "CREDIT": 5}, 10), ({"USERS": 2, "CREDIT": 6}, 11)],
    }


def test_all_records_in_one_run_give_one_record_per_key(spark, tmp_path):
    """Every record produced first, then one ``run --until-idle``: one batch, so each key
    gets one record, its final row, and a key whose row came and went gets none."""
    priced, per_region = _run_script(tmp_path, steps_per_run=len(STEPS))
    assert priced == {1: [({"PRODUCT": "mug", "TOTAL": 6.0}, 6)]}
    # eu's timestamp: see test_a_batch_stamps_a_group_with_its_members_changes.
    assert per_region == {"eu": [({"USERS": 1, "CREDIT": 3}, 9)], "us": [({"USERS": 2, "CREDIT": 6}, 11)]}


def test_a_batch_stamps_a_group_with_its_members_changes(spark):
    """Three changes of the users table in one batch: a batch applies one change per
    key, as Kafka Streams' record cache forwards one per key at a commit, so user 1
    (eu at 8, us at 10) reaches the grouping once, as a move from nothing to us. eu
    never sees user 1: its one record has the value of every change applied and user 2's
    timestamp (9); the per-record changelog's last eu record has 10 (user 1 leaving)."""
    from tablestream.testing.driver import TestDriver, TestRecord

    with TestDriver.from_sql(JOIN_AND_AGGREGATE, spark=spark, batched=True) as driver:
        users = driver.create_input_topic("users")
        for _, key, value, timestamp in STEPS[7:10]:
            users.pipe_input(key, value, timestamp)
        driver.advance()
        assert sorted(driver.sql_output("PER_REGION").read_records(), key=lambda r: r.key) == [
            TestRecord("eu", {"USERS": 1, "CREDIT": 3}, 9),
            TestRecord("us", {"USERS": 1, "CREDIT": 5}, 10),
        ]

"""``tablestream run FILE.sql --until-idle`` on the embedded store, end to end: the
script's topics are created, records produced with ``produce`` are processed, the
outputs read back with ``consume``; a second run resumes from the checkpoint."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from tablestream.cli import app

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
        "PER_CUSTOMER", "PRICED", "lines", "orders", "products", "shop-processing-log",
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

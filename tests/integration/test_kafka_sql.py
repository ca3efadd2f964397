"""``tablestream run FILE.sql --bootstrap-servers`` on a real broker: the script's topics
are created on the cluster, its INSERT records produced there, its query's output read
back with ``consume``; run again, the query resumes and processes only new records;
``tablestream sql`` on the same cluster answers a pull query."""

from __future__ import annotations

import json
import time
import uuid

from typer.testing import CliRunner

from tablestream.cli import app

runner = CliRunner()
NOW = int(time.time() * 1000) - 3_600_000  # recent: within any broker retention


def cli(servers: str, home, *args: str, stdin: str | None = None) -> str:
    result = runner.invoke(app, [*args, "--bootstrap-servers", servers, "--home", str(home)], input=stdin)
    assert result.exit_code == 0, result.output
    return result.output


def test_run_a_script_on_kafka_then_resume(kafka_broker, spark, tmp_path):
    servers = kafka_broker.bootstrap_servers
    suffix = uuid.uuid4().hex[:8]
    orders, totals = f"orders-{suffix}", f"TOTALS_{suffix.upper()}"
    script = tmp_path / "shop.sql"
    script.write_text(
        f"CREATE STREAM orders (id BIGINT KEY, customer STRING, amount DOUBLE)\n"
        f"  WITH (kafka_topic='{orders}', value_format='json', partitions=2);\n"
        f"CREATE TABLE totals_{suffix} AS SELECT customer, SUM(amount) AS total FROM orders GROUP BY customer;\n"
        f"INSERT INTO orders (id, customer, amount, ROWTIME) VALUES (1, 'ada', 3.5, {NOW});\n"
    )
    home = tmp_path / "home"
    assert cli(servers, home, "run", str(script), "--until-idle") == (
        f"Running shop: CTAS_{totals}_0\nshop: caught up\n"
    )

    def consumed() -> list[tuple]:
        out = cli(servers, home, "consume", totals, "--from-beginning", "--timeout", "2")
        return [(r["key"], r["value"], r["timestamp"]) for r in map(json.loads, out.splitlines())]

    assert consumed() == [("ada", {"TOTAL": 3.5}, NOW)]
    cli(servers, home, "produce", orders, stdin=json.dumps({"key": 2, "value": {"CUSTOMER": "ada", "AMOUNT": 1.5}, "timestamp": NOW + 1}) + "\n")
    cli(servers, home, "run", str(script), "--until-idle")  # the INSERT is not produced again
    assert consumed() == [("ada", {"TOTAL": 3.5}, NOW), ("ada", {"TOTAL": 5.0}, NOW + 1)]
    shown = cli(servers, home, "sql", "--application-id", "shop", stdin=f"SELECT * FROM totals_{suffix} WHERE customer = 'ada';")
    assert shown == (
        "+------------------+\n"
        "| CUSTOMER | TOTAL |\n"
        "|----------+-------|\n"
        "| ada      | 5.0   |\n"
        "+------------------+\n"
    )

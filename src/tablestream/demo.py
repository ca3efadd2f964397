"""The quick-start demo: a change-data-capture data set on the embedded store.

customers (a table: inserts, updates and deletes on a compacted topic, as a CDC
connector writes them) and orders (a stream of events, one of them malformed) are
produced to topics, read back through Spark with their formats, and shown.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .storage.embedded import EmbeddedStore
from .storage.topic import Record, TopicConfig

CUSTOMER_SCHEMA = "id BIGINT, name STRING, city STRING, tier STRING"
ORDER_SCHEMA = "order_id BIGINT, customer_id BIGINT, product STRING, amount DOUBLE"

BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

# (key, value or None for a delete, seconds after BASE_TS)
CUSTOMER_CHANGES: list[tuple[int, dict | None, int]] = [
    (1, {"id": 1, "name": "Ada Lovelace", "city": "London", "tier": "gold"}, 0),
    (2, {"id": 2, "name": "Grace Hopper", "city": "New York", "tier": "silver"}, 1),
    (3, {"id": 3, "name": "Alan Turing", "city": "Manchester", "tier": "silver"}, 2),
    (4, {"id": 4, "name": "Edsger Dijkstra", "city": "Eindhoven", "tier": "bronze"}, 3),
    (2, {"id": 2, "name": "Grace Hopper", "city": "Arlington", "tier": "silver"}, 60),  # moved
    (3, {"id": 3, "name": "Alan Turing", "city": "Manchester", "tier": "gold"}, 90),  # upgraded
    (4, None, 120),  # account closed: a tombstone
    (5, {"id": 5, "name": "Barbara Liskov", "city": "Boston", "tier": "gold"}, 150),
]

ORDER_EVENTS: list[tuple[int, str, int]] = [
    (1, json.dumps({"order_id": 100, "customer_id": 1, "product": "analytical engine", "amount": 120.0}), 10),
    (2, json.dumps({"order_id": 101, "customer_id": 2, "product": "compiler", "amount": 80.5}), 20),
    (1, json.dumps({"order_id": 102, "customer_id": 1, "product": "punch cards", "amount": 15.25}), 70),
    (3, json.dumps({"order_id": 103, "customer_id": 3, "product": "bombe", "amount": 300.0}), 95),
    (2, '{"order_id": 104, "customer_id": 2, "product": "cobol manual", "amount": }', 100),  # malformed
    (5, json.dumps({"order_id": 105, "customer_id": 5, "product": "clu", "amount": 42.0}), 160),
    (3, json.dumps({"order_id": 106, "customer_id": 3, "product": "ace", "amount": 999.99}), 170),
]


def produce_demo_data(store: EmbeddedStore) -> None:
    """Create the demo topics and write the CDC data set."""
    from .storage.formats import get_format

    store.create_topic(
        TopicConfig(
            "customers",
            partitions=2,
            cleanup_policy="compact",
            delete_retention_ms=0,
            key_schema="BIGINT",
            value_schema=CUSTOMER_SCHEMA,
        )
    )
    store.create_topic(TopicConfig("orders", partitions=3, key_schema="BIGINT", value_schema=ORDER_SCHEMA))
    key = get_format("KAFKA", "BIGINT")
    customer = get_format("JSON", CUSTOMER_SCHEMA)
    store.produce(
        "customers",
        [Record(key.serialize(k), customer.serialize(v), BASE_TS + s * 1000) for k, v, s in CUSTOMER_CHANGES],
    )
    store.produce(
        "orders",
        [Record(key.serialize(k), v.encode(), BASE_TS + s * 1000) for k, v, s in ORDER_EVENTS],
    )


def run_demo(home: str | None, console: Console) -> None:
    from pyspark.sql import functions as F

    from .spark import get_spark
    from .storage.formats import get_format
    from .storage.processing_log import decode_records

    root = Path(home) if home else Path(tempfile.mkdtemp(prefix="tablestream-demo-"))
    store = EmbeddedStore(root)
    produce_demo_data(store)
    console.print(f"[bold]tablestream demo[/bold]  (embedded store in {root})\n")

    for name in ("customers", "orders"):
        d = store.describe_topic(name)
        console.print(
            f"topic [cyan]{name}[/cyan]: {d.config.partitions} partitions, {d.config.cleanup_policy}, "
            f"{d.record_count} records, end offsets {d.end_offsets}"
        )

    console.print("\nStarting Spark (local) ...")
    spark = get_spark(app_name="tablestream-demo")

    def decoded(topic: str, value_schema: str):
        batch = store.read_batch(spark, [topic])
        return decode_records(batch, get_format("KAFKA", "BIGINT"), get_format("JSON", value_schema))

    customers = decoded("customers", CUSTOMER_SCHEMA).good
    _show(
        console,
        "customers changelog (CDC: inserts, updates, a delete)",
        customers.orderBy("partition", "offset").select(
            "partition", "offset", F.col("key").alias("id"), "value.name", "value.city", "value.tier",
            F.when(F.col("value").isNull(), F.lit("DELETE")).otherwise(F.lit("upsert")).alias("change"),
        ),
    )

    result = store.compact("customers")
    console.print(
        f"\nLog compaction of [cyan]customers[/cyan]: {result['before']} -> {result['after']} records "
        "(latest value per key; the deleted customer's tombstone is gone)"
    )
    current = decoded("customers", CUSTOMER_SCHEMA).good
    _show(
        console,
        "customers table after compaction (offsets kept)",
        current.orderBy("key").select("partition", "offset", F.col("key").alias("id"), "value.*"),
    )

    orders = decoded("orders", ORDER_SCHEMA)
    _show(
        console,
        "orders stream",
        orders.good.orderBy("timestamp").select(
            F.timestamp_millis("timestamp").alias("at"), "partition", "offset", "value.*"
        ),
    )
    _show(
        console,
        "processing log (records that could not be decoded; nothing is dropped silently)",
        orders.errors.select("topic", "partition", "offset", "error"),
    )


def _show(console: Console, title: str, frame) -> None:
    rows = frame.collect()
    table = Table(title=title, title_justify="left", title_style="bold")
    for name in frame.columns:
        table.add_column(name)
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    console.print()
    console.print(table)

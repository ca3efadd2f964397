"""The quick-start demo: a change-data-capture data set on the embedded store, or on a
Kafka cluster.

``customers`` is a table topic as a CDC connector writes it (inserts, updates, a delete
as a tombstone, compacted). ``orders`` is a stream of order events keyed by order id:
new orders, a corrected amount, a cancellation (a tombstone) and one malformed record.
``order-lines`` is a table of order lines, each naming a product of the ``products``
table. An application turns the orders into the table of current orders and aggregates
it into revenue per customer (a correction and a cancellation retract what they
replace), counts customers per tier, enriches each order with its customer (a
stream-table join, as of the order's time), prices every order line with its product (a
foreign-key join: a price change reaches every line of the product), and sends the
malformed record to its processing log.

The same application is also written as ksqlDB statements (``demo.sql``, also
``examples/demo.sql``): ``tablestream demo --sql`` runs them on the same data and prints
the same tables.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

from .errors import TablestreamError
from .progress import batch_lines
from .storage.embedded import EmbeddedStore
from .storage.kafka import KafkaStore
from .storage.topic import Record, TopicConfig, TopicStore

CUSTOMER_SCHEMA = "id BIGINT, name STRING, city STRING, tier STRING"
ORDER_SCHEMA = "order_id BIGINT, customer_id BIGINT, product STRING, amount DOUBLE"
PRODUCT_SCHEMA = "name STRING, price DOUBLE"
LINE_SCHEMA = "order_id BIGINT, product_id STRING, qty BIGINT"

BASE_TS = 1_767_225_600_000  # 2026-01-01T00:00:00Z

# (key, value or None for a delete, seconds after BASE_TS); the first PHASE_ONE of each
# list are written before the application first runs, the rest after.
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


def _order(order_id: int, customer: int, product: str, amount: float) -> str:
    return json.dumps({"order_id": order_id, "customer_id": customer, "product": product, "amount": amount})


# (order id, JSON value or None for a cancellation, seconds after BASE_TS)
ORDER_EVENTS: list[tuple[int, str | None, int]] = [
    (100, _order(100, 1, "analytical engine", 120.0), 10),
    (101, _order(101, 2, "compiler", 80.5), 20),
    (102, _order(102, 1, "punch cards", 15.25), 70),
    (103, _order(103, 3, "bombe", 300.0), 95),
    (101, _order(101, 2, "compiler", 95.0), 100),  # amount corrected
    (104, '{"order_id": 104, "customer_id": 2, "product": "cobol manual", "amount": }', 110),  # malformed
    (105, _order(105, 5, "clu", 42.0), 160),
    (102, None, 165),  # cancelled
    (106, _order(106, 3, "ace", 999.99), 170),
]


# (product id, value, seconds after BASE_TS)
PRODUCT_CHANGES: list[tuple[str, dict | None, int]] = [
    ("AE", {"name": "analytical engine", "price": 120.0}, 0),
    ("PC", {"name": "punch cards", "price": 1.5}, 0),
    ("CB", {"name": "cobol manual", "price": 30.0}, 0),
    ("BB", {"name": "bombe", "price": 300.0}, 0),
    ("PC", {"name": "punch cards", "price": 2.0}, 130),  # price change: every line of PC
    ("CB", None, 140),  # discontinued: its lines lose their price
    ("BB", {"name": "bombe", "price": 250.0}, 175),
    ("XX", {"name": "unused", "price": 9.0}, 180),
]

# (line id, value or None for a removed line, seconds after BASE_TS)
LINE_CHANGES: list[tuple[str, dict | None, int]] = [
    ("100-1", {"order_id": 100, "product_id": "AE", "qty": 1}, 10),
    ("102-1", {"order_id": 102, "product_id": "PC", "qty": 10}, 70),
    ("103-1", {"order_id": 103, "product_id": "BB", "qty": 1}, 95),
    ("100-2", {"order_id": 100, "product_id": "PC", "qty": 100}, 96),
    ("101-1", {"order_id": 101, "product_id": "CB", "qty": 2}, 100),
    ("102-1", None, 165),  # order 102 cancelled
    ("106-1", {"order_id": 106, "product_id": "CB", "qty": 1}, 170),
    ("100-2", {"order_id": 100, "product_id": "BB", "qty": 1}, 171),  # line changed product
]

PHASE_ONE = 4

#: The demo's application as ksqlDB statements (``tablestream demo --sql``).
DEMO_SQL = Path(__file__).with_name("demo.sql")

#: Where each table the demo prints is: its materialized store (the DSL application),
#: or the topic the SQL query writes its changelog to, with the topic's key type.
DEMO_TABLES = {
    "revenue-per-customer": ("revenue-changes", "BIGINT"),
    "customers-per-tier": ("customers-per-tier", "STRING"),
    "priced-lines": ("priced-lines", "STRING"),
}

#: The demo application's topics: sources, outputs, processing log (and on Kafka, its
#: commit markers).
SOURCE_TOPICS = ("customers", "orders", "products", "order-lines")
#: Their partition counts (the two topics of the stream-table join alike, as ksqlDB
#: requires of a join's sources).
SOURCE_PARTITIONS = {"customers": 3, "orders": 3, "products": 1, "order-lines": 2}
OUTPUT_TOPICS = ("revenue-changes", "enriched-orders", "demo-processing-log")
MARKER_TOPIC = "demo-batch-commits"


class DemoError(TablestreamError):
    """The demo cannot run where it was asked to."""


def create_demo_topics(store: TopicStore) -> None:
    # The records carry 2026-01-01 timestamps: a broker's time-based retention (7 days
    # by default) would delete them, so every demo topic keeps its records.
    store.create_topic(
        TopicConfig(
            "customers",
            partitions=SOURCE_PARTITIONS["customers"],
            cleanup_policy="compact",
            delete_retention_ms=0,
            retention_ms=-1,
            key_schema="BIGINT",
            value_schema=CUSTOMER_SCHEMA,
        )
    )
    store.create_topic(
        TopicConfig("orders", partitions=SOURCE_PARTITIONS["orders"], retention_ms=-1, key_schema="BIGINT", value_schema=ORDER_SCHEMA)
    )
    store.create_topic(
        TopicConfig("products", partitions=SOURCE_PARTITIONS["products"], cleanup_policy="compact", retention_ms=-1, value_schema=PRODUCT_SCHEMA)
    )
    store.create_topic(TopicConfig("order-lines", partitions=SOURCE_PARTITIONS["order-lines"], retention_ms=-1, value_schema=LINE_SCHEMA))


def produce_demo_data(store: TopicStore, phase: slice = slice(None)) -> None:
    """Write (a phase of) the CDC data set."""
    from .storage.formats import get_format

    key = get_format("KAFKA", "BIGINT")
    customer = get_format("JSON", CUSTOMER_SCHEMA)
    store.produce(
        "customers",
        [Record(key.serialize(k), customer.serialize(v), BASE_TS + s * 1000) for k, v, s in CUSTOMER_CHANGES[phase]],
    )
    store.produce(
        "orders",
        [
            Record(key.serialize(k), None if v is None else v.encode(), BASE_TS + s * 1000)
            for k, v, s in ORDER_EVENTS[phase]
        ],
    )
    text = get_format("KAFKA", "STRING")
    for topic, changes, schema in (("products", PRODUCT_CHANGES, PRODUCT_SCHEMA), ("order-lines", LINE_CHANGES, LINE_SCHEMA)):
        fmt = get_format("JSON", schema)
        store.produce(
            topic,
            [Record(text.serialize(k), None if v is None else fmt.serialize(v), BASE_TS + s * 1000) for k, v, s in changes[phase]],
        )


def demo_topology():
    """Orders -> current orders -> revenue per customer; customers -> customers per tier;
    orders enriched with their customer; order lines priced with their product."""
    from .dsl import StreamsBuilder

    builder = StreamsBuilder()
    orders = builder.stream("orders", key_schema="BIGINT", value_schema=ORDER_SCHEMA)
    current_orders = orders.to_table(materialized_as="current-orders")
    revenue = current_orders.group_by(("customer_id", "value")).sum(
        "amount", materialized_as="revenue-per-customer"
    )
    revenue.to_stream().to("revenue-changes")
    customers = builder.table("customers", key_schema="BIGINT", value_schema=CUSTOMER_SCHEMA)
    customers.group_by(("tier", "value")).count(materialized_as="customers-per-tier")
    # Each order meets its customer as of the order's time (re-keyed by customer first).
    orders.select_key("customer_id").join(
        customers, "struct(left.order_id AS order_id, right.name AS customer, right.city AS city, left.amount AS amount)"
    ).to("enriched-orders")
    lines = builder.table("order-lines", value_schema=LINE_SCHEMA)
    products = builder.table("products", value_schema=PRODUCT_SCHEMA)
    lines.left_join(
        products,
        "struct(left.order_id AS order_id, right.name AS product, left.qty AS qty, left.qty * right.price AS total)",
        foreign_key="product_id",
        materialized_as="priced-lines",
    )
    return builder.build()


def demo_sql_application(store: TopicStore):
    """The compiled ``demo.sql`` against ``store`` (which holds the demo's topics): the
    topics its queries write are created, with no retention limit (the records carry
    2026 timestamps) and the partitions ksqlDB gives them."""
    from .sql.compiler import compile_sql

    sql = DEMO_SQL.read_text(encoding="utf-8")
    existing = set(store.list_topics())
    partitions = {t: store.topic_config(t).partitions for t in SOURCE_TOPICS if t in existing}
    compiled = compile_sql(sql, topic_partitions=partitions.get)
    for topic, count in compiled.topics.items():
        if topic not in existing:
            store.create_topic(TopicConfig(topic, partitions=count, retention_ms=-1))
    return compiled


def _sql_topics() -> set[str]:
    """The topics ``demo.sql``'s queries write."""
    from .sql.compiler import compile_sql

    compiled = compile_sql(DEMO_SQL.read_text(encoding="utf-8"), topic_partitions=SOURCE_PARTITIONS.get)
    return set(compiled.topics) - set(SOURCE_TOPICS)


def run_demo(
    directory: str | None, console: Console, bootstrap_servers: str | None = None, sql: bool = False
) -> None:
    """Run the demo in ``directory`` (default: a new temporary one): on an embedded store
    there, or with its topics on the Kafka cluster at ``bootstrap_servers`` (the
    application's own files stay in the directory). On Kafka, every topic the demo writes
    must be new: :class:`DemoError` names those that exist. ``sql``: the application is
    ``demo.sql``'s statements instead of the DSL program."""
    from pyspark.sql import SparkSession

    from .runtime.app import Application
    from .spark import get_spark

    root = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="tablestream-demo-"))
    store: EmbeddedStore | KafkaStore
    if bootstrap_servers:
        store = KafkaStore(bootstrap_servers)
        written = {*OUTPUT_TOPICS, *_sql_topics()} if sql else set(OUTPUT_TOPICS)
        taken = sorted(set(store.list_topics()) & {*SOURCE_TOPICS, *written, MARKER_TOPIC})
        if taken:
            raise DemoError(
                f"The demo's topics already exist on {bootstrap_servers}: {', '.join(taken)} "
                "(delete them with 'tablestream topics delete NAME --bootstrap-servers ...' to run it again)"
            )
        create_demo_topics(store)
        # The outputs keep the demo's 2026 timestamps: created here with no retention
        # limit, and with the partitions the application would give them (its state
        # partitions, the largest source's; one for the processing log).
        partitions = max(store.topic_config(t).partitions for t in SOURCE_TOPICS)
        for name in OUTPUT_TOPICS:
            count = 1 if name == "demo-processing-log" else partitions
            store.create_topic(TopicConfig(name, partitions=count, retention_ms=-1))
        where = f"Kafka cluster at {bootstrap_servers}, application files in {root}"
    else:
        store = EmbeddedStore(root)
        create_demo_topics(store)
        where = f"embedded store in {root}"
    produce_demo_data(store, slice(0, PHASE_ONE))
    console.print(f"[bold]tablestream demo[/bold]  ({where})")
    console.print("Starting Spark (local) ...")
    started_here = SparkSession.getActiveSession() is None
    spark = get_spark(app_name="tablestream-demo")
    if sql:
        compiled = demo_sql_application(store)
        topology = compiled.topology
        console.print(f"Queries of {DEMO_SQL.name}: {', '.join(q.id for q in compiled.queries)}")
    else:
        topology = demo_topology()
    app = Application(topology, "demo", store=store, home=root, spark=spark, progress=batch_lines(console))
    console.print()
    console.print(app.describe(), markup=False, highlight=False)

    app.run_until_caught_up()
    console.print(f"[bold]1.[/bold] {PHASE_ONE} customers and {PHASE_ONE} orders processed.\n")
    tables = demo_tables(app, store, sql)
    before, tiers_before, priced_before = (tables[t] for t in DEMO_TABLES)

    produce_demo_data(store, slice(PHASE_ONE, None))
    app.run_until_caught_up()
    console.print(
        "[bold]2.[/bold] More changes processed: customer 2 moved, customer 3 upgraded to gold, customer 4 "
        "deleted, customer 5 added; order 101 corrected from 80.50 to 95.00, order 102 cancelled, "
        "orders 105 and 106 added, and one malformed order; punch cards went up to 2.00, the cobol "
        "manual was discontinued, the bombe went down to 250.00, and order lines changed.\n"
    )
    tables = demo_tables(app, store, sql)
    after, tiers, priced = (tables[t] for t in DEMO_TABLES)
    table = Table(title="revenue-per-customer (a correction and a cancellation retract what they replace)", title_justify="left", title_style="bold")
    for column in ("customer", "after step 1", "after step 2"):
        table.add_column(column)
    for customer in sorted(set(before) | set(after)):
        table.add_row(str(customer), _money(before.get(customer)), _money(after.get(customer)))
    console.print(table)

    table = Table(title="customers-per-tier", title_justify="left", title_style="bold")
    for column in ("tier", "after step 1", "after step 2"):
        table.add_column(column)
    for tier in sorted(set(tiers_before) | set(tiers)):
        table.add_row(tier, str(tiers_before.get(tier, "-")), str(tiers.get(tier, "- (deleted)")))
    console.print(table)

    table = Table(
        title="priced-lines (a foreign-key join: the bombe's price change reached every bombe line)",
        title_justify="left", title_style="bold",
    )
    for column in ("line", "order", "product", "qty", "total after step 1", "total after step 2"):
        table.add_column(column)
    for line in sorted(set(priced_before) | set(priced)):
        row = priced.get(line) or priced_before[line]
        table.add_row(
            line, str(row["order_id"]), str(row["product"] or "-"), str(row["qty"]),
            _money((priced_before.get(line) or {}).get("total")),
            "- (removed)" if line not in priced else _money(priced[line]["total"]),
        )
    console.print(table)

    from .storage.formats import get_format

    bigint, number = get_format("KAFKA", "BIGINT"), get_format("JSON", None)
    enriched = Table(title="enriched-orders topic (each order with its customer as of the order's time)", title_justify="left", title_style="bold")
    for column in ("customer", "order", "name", "city", "amount", "event time"):
        enriched.add_column(column)
    for r in sorted(_committed(store, "enriched-orders"), key=lambda r: r.timestamp):
        value = json.loads(r.value)
        enriched.add_row(
            str(bigint.deserialize(r.key)), str(value["order_id"]), value["customer"], value["city"],
            _money(value["amount"]), _clock(r.timestamp),
        )
    console.print(enriched)
    changes = Table(title="revenue-changes topic (the table's changelog)", title_justify="left", title_style="bold")
    for column in ("partition", "offset", "customer", "revenue", "event time"):
        changes.add_column(column)
    for r in _committed(store, "revenue-changes"):
        changes.add_row(str(r.partition), str(r.offset), str(bigint.deserialize(r.key)), _money(number.deserialize(r.value)), _clock(r.timestamp))
    console.print(changes)

    log = Table(title="demo-processing-log (records that could not be read; nothing is dropped silently)", title_justify="left", title_style="bold")
    for column in ("topic", "partition", "offset", "error"):
        log.add_column(column)
    for record in _committed(store, "demo-processing-log"):
        entry = json.loads(record.value)
        log.add_row(entry["topic"], str(entry["partition"]), str(entry["offset"]), entry["error"])
    console.print(log)
    if started_here:
        spark.stop()


def _committed(store: EmbeddedStore | KafkaStore, topic: str) -> list[Record]:
    """A topic's records as a ``read_committed`` consumer reads them (every record of the
    embedded log is committed)."""
    if isinstance(store, KafkaStore):
        return store.consume(topic, read_committed=True)
    return store.consume(topic)


def demo_tables(app, store: EmbeddedStore | KafkaStore, sql: bool) -> dict[str, dict]:
    """The contents of the tables the demo prints: the DSL application's materialized
    stores, or the changelogs the SQL queries write, folded by key."""
    if not sql:
        return {name: _contents(app, name) for name in DEMO_TABLES}
    from .storage.formats import get_format

    value = get_format("JSON", None)
    tables: dict[str, dict] = {}
    for name, (topic, key_type) in DEMO_TABLES.items():
        key = get_format("KAFKA", key_type)
        rows: dict = {}
        for record in sorted(_committed(store, topic), key=lambda r: (r.partition, r.offset)):
            if record.value is None:
                rows.pop(key.deserialize(record.key), None)
            else:
                rows[key.deserialize(record.key)] = value.deserialize(record.value)
        tables[name] = rows
    return tables


def _contents(app, table: str) -> dict:
    return {row.key: row.value.asDict() if hasattr(row.value, "asDict") else row.value for row in app.table(table).collect()}


def _money(value: float | None) -> str:
    return "-" if value is None else f"{value:,.2f}"


def _clock(ts: int) -> str:
    seconds = (ts - BASE_TS) // 1000
    return f"00:{seconds // 60:02d}:{seconds % 60:02d}"

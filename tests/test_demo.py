"""The demo's application over its data set, in its two phases: every materialized table
and the enriched-orders topic hold exactly what the data set implies."""

from __future__ import annotations

import json

import pytest

from tablestream.demo import (
    BASE_TS,
    PHASE_ONE,
    create_demo_topics,
    demo_sql_application,
    demo_tables,
    demo_topology,
    produce_demo_data,
)
from tablestream.runtime.app import Application
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.formats import get_format

pytestmark = pytest.mark.spark


def _contents(app, table: str) -> dict:
    return {
        row.key: row.value.asDict() if hasattr(row.value, "asDict") else row.value
        for row in app.table(table).collect()
    }


def _line(order_id, product, qty, total):
    return {"order_id": order_id, "product": product, "qty": qty, "total": total}


def test_demo_application(spark, tmp_path):
    store = EmbeddedStore(tmp_path / "home")
    create_demo_topics(store)
    produce_demo_data(store, slice(0, PHASE_ONE))
    app = Application(demo_topology(), "demo", store=store, spark=spark)
    app.run_until_caught_up()

    assert _contents(app, "revenue-per-customer") == {1: 135.25, 2: 80.5, 3: 300.0}
    assert _contents(app, "customers-per-tier") == {"gold": 1, "silver": 2, "bronze": 1}
    assert _contents(app, "priced-lines") == {
        "100-1": _line(100, "analytical engine", 1, 120.0),
        "102-1": _line(102, "punch cards", 10, 15.0),
        "103-1": _line(103, "bombe", 1, 300.0),
        "100-2": _line(100, "punch cards", 100, 150.0),
    }

    produce_demo_data(store, slice(PHASE_ONE, None))
    app.run_until_caught_up()

    assert _contents(app, "revenue-per-customer") == {1: 120.0, 2: 95.0, 3: 1299.99, 5: 42.0}
    assert _contents(app, "customers-per-tier") == {"gold": 3, "silver": 1}
    # Punch cards went up, the cobol manual was discontinued (its lines keep no price in
    # the left join), line 102-1 was removed and line 100-2 moved to the bombe.
    assert _contents(app, "priced-lines") == {
        "100-1": _line(100, "analytical engine", 1, 120.0),
        "100-2": _line(100, "bombe", 1, 250.0),
        "101-1": _line(101, None, 2, None),
        "103-1": _line(103, "bombe", 1, 250.0),
        "106-1": _line(106, None, 1, None),
    }

    # Each order meets its customer as of the order's time: order 101's correction comes
    # after customer 2 moved; the cancellation (a tombstone) joins nothing.
    bigint = get_format("KAFKA", "BIGINT")
    enriched = sorted(
        (
            (bigint.deserialize(r.key), json.loads(r.value), (r.timestamp - BASE_TS) // 1000)
            for r in store.consume("enriched-orders")
        ),
        key=lambda r: (r[0], r[2]),
    )

    def order(order_id, customer, city, amount):
        return {"order_id": order_id, "customer": customer, "city": city, "amount": amount}

    assert enriched == sorted([
        (1, order(100, "Ada Lovelace", "London", 120.0), 10),
        (2, order(101, "Grace Hopper", "New York", 80.5), 20),
        (1, order(102, "Ada Lovelace", "London", 15.25), 70),
        (3, order(103, "Alan Turing", "Manchester", 300.0), 95),
        (2, order(101, "Grace Hopper", "Arlington", 95.0), 100),
        (5, order(105, "Barbara Liskov", "Boston", 42.0), 160),
        (3, order(106, "Alan Turing", "Manchester", 999.99), 170),
    ], key=lambda r: (r[0], r[2]))
    logged = [json.loads(r.value) for r in store.consume("demo-processing-log")]
    # The malformed order, and the order tombstone the enrichment join skips.
    assert sorted((e["topic"], e["error"]) for e in logged) == [
        ("orders", "KSTREAM-JOIN-0000000016: null value: a stream-table join skips it (record skipped)"),
        ("orders", "value: line 1 column 74: Expecting value"),
    ]


def _records(store, topic: str) -> dict:
    """A topic's records per (partition, key): their values and timestamps in offset order."""
    out: dict = {}
    for r in sorted(store.consume(topic), key=lambda r: (r.partition, r.offset)):
        out.setdefault((r.partition, r.key), []).append((r.value, r.timestamp))
    return out


def _demo_outputs(spark, store, sql: bool) -> dict:
    create_demo_topics(store)
    produce_demo_data(store, slice(0, PHASE_ONE))
    topology = demo_sql_application(store).topology if sql else demo_topology()
    app = Application(topology, "demo", store=store, spark=spark)
    app.run_until_caught_up()
    first = demo_tables(app, store, sql)
    produce_demo_data(store, slice(PHASE_ONE, None))
    app.run_until_caught_up()
    logged = [json.loads(r.value) for r in store.consume("demo-processing-log")]
    return {
        "tables after step 1": first,
        "tables after step 2": demo_tables(app, store, sql),
        "enriched-orders": _records(store, "enriched-orders"),
        "revenue-changes": _records(store, "revenue-changes"),
        "malformed records": sorted(
            (e["topic"], e["partition"], e["offset"], e["error"]) for e in logged if e["error"].startswith("value:")
        ),
    }


def test_sql_demo_gives_the_outputs_of_the_dsl_demo(spark, tmp_path):
    """demo.sql (``tablestream demo --sql``) over the same data: the same tables after
    each step, the same records (keys, values, timestamps, partitions) in the
    enriched-orders and revenue-changes topics, the same malformed record logged."""
    dsl = _demo_outputs(spark, EmbeddedStore(tmp_path / "dsl"), sql=False)
    sql = _demo_outputs(spark, EmbeddedStore(tmp_path / "sql"), sql=True)
    assert sql["tables after step 1"]["revenue-per-customer"] == {1: 135.25, 2: 80.5, 3: 300.0}
    assert len(sql["malformed records"]) == 1
    for output in dsl:
        assert sql[output] == dsl[output], output

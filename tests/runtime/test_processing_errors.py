"""Records an operator cannot process: a user function that raises (or returns what the
operator cannot use) sends its record to the processing log and the batch goes on, or,
with ``processing_errors="fail"``, fails with one line; records a rule drops are logged
as skipped."""

from __future__ import annotations

import json

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.errors import TablestreamError
from tablestream.runtime.failures import ProcessingError
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

ORDERS = "id BIGINT, amount BIGINT"


def log_of(driver: TestDriver) -> list[tuple]:
    return [
        (e["topic"], e["partition"], e["offset"], e["timestamp"], e["error"], e["key"], e["value"])
        for e in driver.processing_log
    ]


def values_of(driver: TestDriver, topic: str) -> list[tuple]:
    return [(r.key, r.value, r.timestamp) for r in driver.create_output_topic(topic).read_records()]


def pipe(driver: TestDriver, topic: str, records) -> None:
    source = driver.create_input_topic(topic)
    for key, value, ts in records:
        source.pipe_input(key, value, timestamp=ts)
    driver.advance()


ORDERS_IN = [("a", {"id": 1, "amount": 4}, 10), ("b", {"id": 2, "amount": 0}, 11), ("c", {"id": 3, "amount": 5}, 12)]


def inverse_topology(name: str | None = None):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).map_values(
        lambda v: {"inv": 1 / v["amount"]}, name=name
    ).to("inverse")
    return builder.build()


def test_a_mapper_that_raises_logs_its_record_and_the_batch_goes_on(spark):
    with TestDriver(inverse_topology("invert"), spark=spark, batched=True) as driver:
        pipe(driver, "orders", ORDERS_IN)
        assert values_of(driver, "inverse") == [("a", {"inv": 0.25}, 10), ("c", {"inv": 0.2}, 12)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "invert: ZeroDivisionError: division by zero", b"b", b'{"id":2,"amount":0}'),
        ]


def test_fail_mode_fails_the_batch_with_one_line_naming_operator_and_record(spark):
    with TestDriver(inverse_topology("invert"), spark=spark, batched=True, processing_errors="fail") as driver:
        with pytest.raises(ProcessingError) as failure:
            pipe(driver, "orders", ORDERS_IN)
        assert str(failure.value) == (
            "invert failed on record orders/0@1: ZeroDivisionError: division by zero "
            "(processing_errors='fail'; with 'log_and_continue' the record goes to the processing log)"
        )
        assert driver.processing_log == []


def test_an_unknown_processing_errors_mode_is_refused(spark):
    with pytest.raises(TablestreamError) as failure:
        TestDriver(inverse_topology(), spark=spark, processing_errors="ignore")
    assert str(failure.value) == "processing_errors must be one of log_and_continue, fail (got 'ignore')"


def test_a_predicate_that_returns_no_bool_is_a_failure_of_its_record(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).filter(
        lambda k, v: "no" if v["amount"] == 0 else v["amount"] > 4, name="big"
    ).to("big")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", ORDERS_IN)
        assert values_of(driver, "big") == [("c", {"id": 3, "amount": 5}, 12)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "big: TypeError: a predicate must return a bool, not str ('no')", b"b",
             b'{"id":2,"amount":0}'),
        ]


def test_filter_not_leaves_out_a_record_its_predicate_fails_on(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).filter_not(lambda k, v: 1 / v["amount"] > 0.21).to("small")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", ORDERS_IN)
        assert values_of(driver, "small") == [("c", {"id": 3, "amount": 5}, 12)]
        assert [e["offset"] for e in driver.processing_log] == [1]


def test_a_raising_key_selector_and_aggregation_downstream(spark):
    builder = StreamsBuilder()
    (
        builder.stream("orders", value_schema=ORDERS)
        .select_key(lambda k, v: 100 // v["amount"], name="bucket")
        .group_by_key()
        .count(name="counts")
        .to_stream()
        .to("counts")
    )
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", ORDERS_IN)
        assert sorted(values_of(driver, "counts")) == [(20, 1, 12), (25, 1, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "bucket: ZeroDivisionError: integer division or modulo by zero", b"b",
             b'{"id":2,"amount":0}'),
        ]


def test_a_raising_joiner_leaves_its_record_out(spark):
    builder = StreamsBuilder()
    users = builder.table("users", value_schema="name STRING")
    builder.stream("orders", value_schema=ORDERS).join(
        users, lambda order, user: {"who": user["name"][order["amount"]]}, name="enrich"
    ).to("enriched")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "users", [("a", {"name": "alice"}, 1), ("b", {"name": "bo"}, 1), ("c", {"name": "carol"}, 1)])
        pipe(driver, "orders", [("a", {"id": 1, "amount": 4}, 10), ("b", {"id": 2, "amount": 7}, 11)])
        assert values_of(driver, "enriched") == [("a", {"who": "e"}, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "enrich: IndexError: string index out of range", b"b", b'{"id":2,"amount":7}'),
        ]


def test_a_row_a_table_mapper_fails_on_is_absent_from_its_result(spark):
    builder = StreamsBuilder()
    builder.table("prices", value_schema="price BIGINT").map_values(
        lambda v: {"per_unit": 100 // v["price"]}, name="unit"
    ).to_stream().to("units")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "prices", [("x", {"price": 4}, 1), ("y", {"price": 0}, 2)])
        pipe(driver, "prices", [("x", {"price": 0}, 3), ("y", {"price": 5}, 4)])
        # x's new row fails: its earlier result is deleted; y's old row failed (it was
        # never in the result): its new row is inserted.
        assert values_of(driver, "units") == [("x", {"per_unit": 25}, 1), ("x", None, 3), ("y", {"per_unit": 20}, 4)]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (1, "unit: ZeroDivisionError: integer division or modulo by zero"),
            (2, "unit: ZeroDivisionError: integer division or modulo by zero"),
        ]


def test_a_version_a_table_mapper_fails_on_is_logged_once_and_absent_for_the_stream(spark):
    """A stream-table join meets the mapped table as of each record's time: the mapper
    runs on every version of the batch (each failure logged once), also on one that a
    later change of the batch replaces."""
    builder = StreamsBuilder()
    prices = builder.table("prices", value_schema="price BIGINT").map_values(
        lambda v: {"per_unit": 100 // v["price"]}, name="unit"
    )
    builder.stream("orders", value_schema="qty BIGINT").left_join(
        prices, lambda o, p: {"qty": o["qty"], "per_unit": p and p["per_unit"]}
    ).to("priced")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        prices_in, orders_in = driver.create_input_topic("prices"), driver.create_input_topic("orders")
        for price, ts in [(4, 1), (0, 3), (5, 5)]:
            prices_in.pipe_input("x", {"price": price}, timestamp=ts)
        for qty, ts in [(1, 2), (2, 4), (3, 6)]:
            orders_in.pipe_input("x", {"qty": qty}, timestamp=ts)
        driver.advance()  # one batch
        assert values_of(driver, "priced") == [
            ("x", {"qty": 1, "per_unit": 25}, 2), ("x", {"qty": 2, "per_unit": None}, 4), ("x", {"qty": 3, "per_unit": 20}, 6),
        ]
        assert [(e["topic"], e["offset"], e["error"]) for e in driver.processing_log] == [
            ("prices", 1, "unit: ZeroDivisionError: integer division or modulo by zero"),
        ]


@pytest.mark.parametrize("replicate_right", [False, True])
def test_a_row_a_foreign_key_extractor_fails_on_is_absent(spark, replicate_right):
    builder = StreamsBuilder()
    products = builder.table("products", key_schema="STRING", value_schema="name STRING")
    builder.table("orders", key_schema="STRING", value_schema="product STRING").left_join(
        products, lambda o, p: {"name": p and p["name"]}, foreign_key=lambda v: v["product"].upper(), name="fk",
        replicate_right=replicate_right,
    ).to_stream().to("named")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "products", [("P", {"name": "pen"}, 1)])
        pipe(driver, "orders", [("o1", {"product": "p"}, 2), ("o2", {"product": None}, 3), ("o3", {"product": "q"}, 4)])
        # o1 fails later: its earlier result is deleted, as a row a filter leaves out.
        pipe(driver, "orders", [("o1", {"product": None}, 5), ("o2", {"product": "p"}, 6)])
        assert values_of(driver, "named") == [
            ("o1", {"name": "pen"}, 2), ("o3", {"name": None}, 4), ("o1", None, 5), ("o2", {"name": "pen"}, 6),
        ]
        assert [(e["topic"], e["offset"], e["error"]) for e in driver.processing_log] == [
            ("orders", 1, "fk: AttributeError: 'NoneType' object has no attribute 'upper'"),
            ("orders", 3, "fk: AttributeError: 'NoneType' object has no attribute 'upper'"),
        ]


def test_a_record_a_global_table_key_selector_fails_on_leaves_the_join(spark):
    builder = StreamsBuilder()
    users = builder.global_table("users", key_schema="STRING", value_schema="name STRING")
    builder.stream("orders", value_schema="user STRING").left_join(
        users, lambda o, u: {"name": u and u["name"]}, key_selector=lambda k, v: v["user"].upper(), name="lookup"
    ).to("named")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "users", [("A", {"name": "ann"}, 1)])
        pipe(driver, "orders", [("1", {"user": "a"}, 2), ("2", {"user": None}, 3), ("3", {"user": "b"}, 4)])
        assert values_of(driver, "named") == [("1", {"name": "ann"}, 2), ("3", {"name": None}, 4)]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (1, "lookup: AttributeError: 'NoneType' object has no attribute 'upper'"),
        ]


def test_a_raising_branch_predicate_is_logged_once_under_the_split(spark):
    builder = StreamsBuilder()
    branches = builder.stream("orders", value_schema=ORDERS).split(name="by-size-").branch(
        lambda k, v: 10 / v["amount"] < 2.1, name="big"
    ).default_branch(name="small")
    branches["by-size-big"].to("big")
    branches["by-size-small"].to("small")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", ORDERS_IN)
        assert values_of(driver, "big") == [("c", {"id": 3, "amount": 5}, 12)]
        assert values_of(driver, "small") == [("a", {"id": 1, "amount": 4}, 10)]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (1, "by-size-: ZeroDivisionError: division by zero"),
        ]


# ------------------------------------------------------------------ skipped records
def test_a_null_group_by_key_is_a_logged_skipped_record(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema="id BIGINT, region STRING").group_by("region", name="by-region").count(
        name="per-region"
    ).to_stream().to("counts")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "region": "eu"}, 10), ("b", {"id": 2, "region": None}, 11)])
        assert values_of(driver, "counts") == [("eu", 1, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "by-region: null key: an aggregation needs a key (record skipped)", None, None),
        ]
        assert driver.runner.failures.skipped_total == 1


def test_skipped_records_are_counted_but_not_logged_when_asked(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema="id BIGINT, region STRING").group_by("region").count().to_stream().to(
        "counts"
    )
    with TestDriver(builder.build(), spark=spark, batched=True, log_skipped_records=False) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "region": "eu"}, 10), ("b", {"id": 2, "region": None}, 11)])
        assert values_of(driver, "counts") == [("eu", 1, 10)]
        assert driver.processing_log == []
        assert driver.runner.failures.skipped_total == 1


def test_a_null_key_into_a_table_and_into_an_inner_join_are_skipped_records(spark):
    builder = StreamsBuilder()
    users = builder.stream("users", key_schema="STRING", value_schema="name STRING").to_table(name="users-table")
    users.to_stream().to("users-out")
    builder.stream("orders", key_schema="STRING", value_schema=ORDERS).join(
        users, "right.name", name="who"
    ).to("who")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "users", [("a", {"name": "ann"}, 1), (None, {"name": "nobody"}, 2)])
        pipe(driver, "orders", [("a", {"id": 1, "amount": 2}, 3), (None, {"id": 2, "amount": 3}, 4)])
        assert values_of(driver, "users-out") == [("a", {"name": "ann"}, 1)]
        assert values_of(driver, "who") == [("a", "ann", 3)]
        assert [(e["topic"], e["offset"], e["error"]) for e in driver.processing_log] == [
            ("users", 1, "users-table: null key: a table record needs a key (record skipped)"),
            ("orders", 1, "who: null join key: an inner join skips it (record skipped)"),
        ]


# ------------------------------------------------------------------ applications
def _inverse_app(home, spark, **settings):
    from tablestream.runtime.app import Application
    from tablestream.storage.embedded import EmbeddedStore
    from tablestream.storage.topic import TopicConfig

    store = EmbeddedStore(home)
    if "orders" not in store.list_topics():
        store.create_topic(TopicConfig("orders", partitions=1))
    return store, Application(inverse_topology("invert"), "inverse-app", store=store, spark=spark, **settings)


def _produce_orders(store):
    from tablestream.storage.topic import Record

    store.produce("orders", [
        Record(k.encode(), json.dumps(v).encode(), ts, partition=0) for k, v, ts in ORDERS_IN
    ])


def test_an_application_logs_a_raising_mapper_and_writes_the_other_records(tmp_path, spark):
    store, app = _inverse_app(tmp_path / "home", spark)
    _produce_orders(store)
    app.run_until_caught_up()
    assert [(r.key, json.loads(r.value), r.timestamp) for r in store.consume("inverse")] == [
        (b"a", {"inv": 0.25}, 10), (b"c", {"inv": 0.2}, 12),
    ]
    assert [json.loads(r.value) for r in store.consume("inverse-app-processing-log")] == [{
        "topic": "orders", "partition": 0, "offset": 1, "timestamp": 11,
        "error": "invert: ZeroDivisionError: division by zero",
        "key": "Yg==", "value": "eyJpZCI6MiwiYW1vdW50IjowfQ==",
    }]


def test_an_application_in_fail_mode_stops_and_fails_the_same_way_on_restart(tmp_path, spark):
    from tablestream.runtime.layout import ApplicationError

    store, app = _inverse_app(tmp_path / "home", spark, processing_errors="fail")
    _produce_orders(store)
    expected = (
        "invert failed on record orders/0@1: ZeroDivisionError: division by zero "
        "(processing_errors='fail'; with 'log_and_continue' the record goes to the processing log)"
    )
    for _attempt in range(2):
        with pytest.raises(ApplicationError) as failure:
            app.run_until_caught_up()
        assert str(failure.value) == f"Application 'inverse-app' failed in batch 0: {expected}"
        assert store.consume("inverse") == []
        store, app = _inverse_app(tmp_path / "home", spark, processing_errors="fail")

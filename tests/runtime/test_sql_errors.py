"""SQL expressions that fail at run time (Spark's ANSI mode raises on a cast of bad text,
a division by zero, an overflow): the batch is run again carefully and the records go
to the processing log, as a raising Python function's do; the batches after it run on
the normal path."""

from __future__ import annotations

import json

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.failures import ProcessingError
from tablestream.testing.driver import TestDriver

from .test_processing_errors import log_of, pipe, values_of

pytestmark = pytest.mark.spark

ORDERS = "id BIGINT, code STRING, qty INT"


def codes_topology():
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).map_values(
        "struct(id, CAST(code AS INT) AS code)", name="parse"
    ).to("parsed")
    return builder.build()


def test_a_cast_of_bad_text_logs_its_record_and_the_next_batch_runs_normally(spark):
    with TestDriver(codes_topology(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "12", "qty": 1}, 10),
                                ("b", {"id": 2, "code": "abc", "qty": 1}, 11),
                                ("c", {"id": 3, "code": None, "qty": 1}, 12)])
        assert values_of(driver, "parsed") == [("a", {"id": 1, "code": 12}, 10), ("c", {"id": 3, "code": None}, 12)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "parse: CAST(code AS INT): cannot cast 'abc' to INT", b"b",
             b'{"id":2,"code":"abc","qty":1}'),
        ]
        assert driver.runner.careful_runs == 1
        pipe(driver, "orders", [("d", {"id": 4, "code": "7", "qty": 1}, 13)])
        assert values_of(driver, "parsed") == [("d", {"id": 4, "code": 7}, 13)]
        assert len(driver.processing_log) == 1
        assert driver.runner.careful_runs == 1


def test_a_division_by_zero_in_a_filter_leaves_its_record_out(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).filter("100 / qty > 30", name="small-orders").to("small")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 2}, 10),
                                ("b", {"id": 2, "code": "y", "qty": 0}, 11),
                                ("c", {"id": 3, "code": "z", "qty": 3}, 12),
                                ("d", {"id": 4, "code": "w", "qty": 5}, 13)])
        assert values_of(driver, "small") == [("a", {"id": 1, "code": "x", "qty": 2}, 10),
                                               ("c", {"id": 3, "code": "z", "qty": 3}, 12)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "small-orders: 100 / qty: division by zero", b"b", b'{"id":2,"code":"y","qty":0}'),
        ]


def test_a_case_branch_not_taken_is_neither_reported_nor_failing(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).map_values(
        "CASE WHEN qty = 0 THEN 0 ELSE 100 / qty END", name="per-unit"
    ).map_values("CAST(value AS INT) + CAST('x' AS INT) * 0", name="never").to("units")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 0}, 10), ("b", {"id": 2, "code": "y", "qty": 4}, 11)])
        # The second mapper fails on every record: only its failures are logged.
        assert values_of(driver, "units") == []
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (0, "never: CAST('x' AS INT): cannot cast 'x' to INT"),
            (1, "never: CAST('x' AS INT): cannot cast 'x' to INT"),
        ]


def test_a_case_branch_not_taken_never_starts_a_careful_run(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).map_values(
        "CASE WHEN qty = 0 THEN 0 ELSE 100 / qty END", name="per-unit"
    ).to("units")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 0}, 10), ("b", {"id": 2, "code": "y", "qty": 4}, 11)])
        assert values_of(driver, "units") == [("a", 0.0, 10), ("b", 25.0, 11)]
        assert driver.processing_log == []
        assert driver.runner.careful_runs == 0


def test_a_division_by_zero_in_an_aggregate_column_adds_nothing_to_its_group(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).group_by("code", name="by-code").sum(
        "100 / qty", name="shares"
    ).to_stream().to("shares")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 4}, 10),
                                ("b", {"id": 2, "code": "x", "qty": 0}, 11),
                                ("c", {"id": 3, "code": "y", "qty": 5}, 12)])
        assert sorted(values_of(driver, "shares")) == [("x", 25.0, 10), ("y", 20.0, 12)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "shares: 100 / qty: division by zero", b"x", b'{"id":2,"code":"x","qty":0}'),
        ]
        pipe(driver, "orders", [("d", {"id": 4, "code": "x", "qty": 2}, 13)])
        assert values_of(driver, "shares") == [("x", 75.0, 13)]
        assert len(driver.processing_log) == 1


def test_a_table_aggregate_column_that_fails_on_a_row_takes_nothing_away_when_it_changes(spark):
    builder = StreamsBuilder()
    builder.table("stock", value_schema=ORDERS).group_by(
        ("code", "value"), name="by-code"
    ).sum("100 / qty", name="shares").to_stream().to("shares")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "stock", [("a", {"id": 1, "code": "x", "qty": 4}, 10), ("b", {"id": 2, "code": "x", "qty": 0}, 11)])
        # b's new row fails once; when b changes, its old row is neither subtracted nor
        # reported again.
        pipe(driver, "stock", [("b", {"id": 2, "code": "x", "qty": 5}, 12)])
        assert values_of(driver, "shares") == [("x", 25.0, 10), ("x", 45.0, 12)]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (1, "shares: 100 / qty: division by zero"),
        ]


def test_a_joiner_that_divides_by_zero_leaves_its_record_out(spark):
    builder = StreamsBuilder()
    prices = builder.table("prices", value_schema="price INT")
    builder.stream("orders", value_schema=ORDERS).join(
        prices, "right.price DIV left.qty", name="unit-price"
    ).to("unit-prices")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "prices", [("a", {"price": 100}, 1), ("b", {"price": 50}, 1)])
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 4}, 10), ("b", {"id": 2, "code": "y", "qty": 0}, 11)])
        assert values_of(driver, "unit-prices") == [("a", 25, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "unit-price: right.price DIV left.qty: division by zero", b"b",
             b'{"id":2,"code":"y","qty":0}'),
        ]


def test_every_stream_operator_leaves_out_the_records_its_sql_fails_on(spark):
    builder = StreamsBuilder()
    (
        builder.stream("orders", value_schema=ORDERS)
        .select_key("CAST(code AS INT)", name="code-key")
        .flat_map_values("array(100 DIV qty)", name="shares")
        .map(("key * 1000000000", "value"), name="scale")
        .flat_map("array(struct(CAST(key AS STRING) AS key, 100 % (value - 5) AS value))", name="rest")
        .to("out")
    )
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "orders", [("a", {"id": 1, "code": "1", "qty": 10}, 10),
                                ("b", {"id": 2, "code": "abc", "qty": 1}, 11),
                                ("c", {"id": 3, "code": "2", "qty": 0}, 12),
                                ("d", {"id": 4, "code": "3", "qty": 10}, 13),
                                ("e", {"id": 5, "code": "0", "qty": 20}, 14)])
        assert values_of(driver, "out") == [("1000000000", 0, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "code-key: CAST(code AS INT): cannot cast 'abc' to INT", b"b",
             b'{"id":2,"code":"abc","qty":1}'),
            ("orders", 0, 2, 12, "shares: 100 DIV qty: division by zero", b"2", b'{"id":3,"code":"2","qty":0}'),
            ("orders", 0, 3, 13, "scale: key * 1000000000: arithmetic overflow", b"3", b"10"),
            ("orders", 0, 4, 14, "rest: 100 % (value - 5): division by zero", b"0", b"5"),
        ]


def test_every_table_operator_leaves_out_the_rows_its_sql_fails_on(spark):
    builder = StreamsBuilder()
    products = builder.table("products", key_schema="INT", value_schema="name STRING")
    builder.table("orders", key_schema="STRING", value_schema="product STRING, qty INT").filter(
        "100 DIV qty > 1", name="enough"
    ).map_values("struct(product, 100000000 * qty AS big)", name="scale").join(
        products, "struct(right.name, left.big)", foreign_key="CAST(product AS INT)", name="named"
    ).to_stream().to("named")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        pipe(driver, "products", [(1, {"name": "pen"}, 1)])
        pipe(driver, "orders", [("o1", {"product": "1", "qty": 2}, 10), ("o2", {"product": "1", "qty": 0}, 11),
                                ("o3", {"product": "1", "qty": 30}, 12), ("o4", {"product": "abc", "qty": 2}, 13)])
        assert values_of(driver, "named") == [("o1", {"name": "pen", "big": 200000000}, 10)]
        assert log_of(driver) == [
            ("orders", 0, 1, 11, "enough: 100 DIV qty: division by zero", b"o2", b'{"product":"1","qty":0}'),
            ("orders", 0, 2, 12, "scale: 100000000 * qty: arithmetic overflow", b"o3", b'{"product":"1","qty":30}'),
            ("orders", 0, 3, 13, "named: CAST(product AS INT): cannot cast 'abc' to INT", b"o4",
             b'{"product":"abc","big":200000000}'),
        ]


def test_a_failure_a_careful_run_does_not_rewrite_fails_the_batch_as_before(spark):
    from pyspark.errors import PySparkException

    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).map_values("array(1, 2)[qty]", name="pick").to("picked")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        with pytest.raises(PySparkException) as failure:
            pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 1}, 10), ("b", {"id": 2, "code": "y", "qty": 5}, 11)])
        assert (failure.value.getCondition(), failure.value.getSqlState()) == ("INVALID_ARRAY_INDEX", "22003")
        assert driver.runner.careful_runs == 1
        assert driver.processing_log == []


def test_fail_mode_fails_the_batch_with_one_line_naming_operator_and_record(spark):
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).filter("100 / qty > 30", name="small-orders").to("small")
    with TestDriver(builder.build(), spark=spark, batched=True, processing_errors="fail") as driver:
        with pytest.raises(ProcessingError) as failure:
            pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 2}, 10), ("b", {"id": 2, "code": "y", "qty": 0}, 11)])
        assert str(failure.value) == (
            "small-orders failed on record orders/0@1: 100 / qty: division by zero "
            "(processing_errors='fail'; with 'log_and_continue' the record goes to the processing log)"
        )
        assert driver.processing_log == []


def test_a_failure_after_a_store_stage_replays_the_stores_exactly(spark, monkeypatch):
    """The mapper fails in the tasks of the second store stage (a table of the counts),
    after every task of the first (the counts) has committed the batch: the careful run
    reads both as they were before it."""
    builder = StreamsBuilder()
    builder.stream("orders", value_schema=ORDERS).group_by("code", name="by-code").count(
        name="counts"
    ).to_stream().to_table(name="latest").to_stream().map_values("100 DIV (value - 2)", name="spread").to("spread")
    with TestDriver(builder.build(), spark=spark, batched=True, partitions=2) as driver:
        runner = driver.runner
        counts = [s.name for s in runner.physical.stores if s.owner == "counts"]
        committed = []

        def run(records, batch_id, **options):
            careful = options.get("careful", False)
            if careful:  # what the failed run committed
                committed.extend(
                    (store, p) for store in counts for p in range(2)
                    if any(driver.layout.changelog_dir(store, p).glob(f"{batch_id}-*.arrow"))
                )
            return type(runner).run(runner, records, batch_id, **options)

        monkeypatch.setattr(runner, "run", run)
        pipe(driver, "orders", [("a", {"id": 1, "code": "x", "qty": 1}, 10), ("b", {"id": 2, "code": "y", "qty": 1}, 11),
                                ("c", {"id": 3, "code": "z", "qty": 1}, 12)])
        assert sorted(values_of(driver, "spread")) == [("x", -100, 10), ("y", -100, 11), ("z", -100, 12)]
        pipe(driver, "orders", [("d", {"id": 4, "code": "x", "qty": 1}, 13), ("e", {"id": 5, "code": "z", "qty": 1}, 14),
                                ("f", {"id": 6, "code": "z", "qty": 1}, 15)])
        # x counts 2 (100 DIV 0 fails), z counts 3.
        assert committed  # the failed run committed the counts of the batch
        assert values_of(driver, "spread") == [("z", 100, 15)]
        pipe(driver, "orders", [("g", {"id": 7, "code": "y", "qty": 1}, 16), ("h", {"id": 8, "code": "x", "qty": 1}, 17)])
        assert values_of(driver, "spread") == [("x", 100, 17)]
        assert log_of(driver) == [
            (None, None, None, 13, "spread: 100 DIV (value - 2): division by zero", b"x", b"2"),
            (None, None, None, 16, "spread: 100 DIV (value - 2): division by zero", b"y", b"2"),
        ]
        assert runner.careful_runs == 2


# ------------------------------------------------------------------ applications
def test_an_application_logs_a_bad_cast_and_is_not_stuck(tmp_path, spark):
    from tablestream.runtime.app import Application
    from tablestream.storage.embedded import EmbeddedStore
    from tablestream.storage.topic import Record, TopicConfig

    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("orders", partitions=1))
    app = Application(codes_topology(), "codes-app", store=store, spark=spark)
    store.produce("orders", [
        Record(b"a", json.dumps({"id": 1, "code": "12", "qty": 1}).encode(), 10, partition=0),
        Record(b"b", json.dumps({"id": 2, "code": "abc", "qty": 1}).encode(), 11, partition=0),
    ])
    app.run_until_caught_up()
    store.produce("orders", [Record(b"c", json.dumps({"id": 3, "code": "5", "qty": 1}).encode(), 12, partition=0)])
    app.run_until_caught_up()
    assert [(r.key, json.loads(r.value), r.timestamp) for r in store.consume("parsed")] == [
        (b"a", {"id": 1, "code": 12}, 10), (b"c", {"id": 3, "code": 5}, 12),
    ]
    assert [json.loads(r.value) for r in store.consume("codes-app-processing-log")] == [{
        "topic": "orders", "partition": 0, "offset": 1, "timestamp": 11,
        "error": "parse: CAST(code AS INT): cannot cast 'abc' to INT",
        "key": "Yg==", "value": "eyJpZCI6MiwiY29kZSI6ImFiYyIsInF0eSI6MX0=",
    }]

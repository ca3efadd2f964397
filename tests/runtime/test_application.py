"""Applications on the embedded store: a streaming query, outputs committed once."""

from __future__ import annotations

import json

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark


def _orders_app(home, spark):
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("orders", partitions=2))
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="customer STRING, amount DOUBLE")
    orders.filter("amount > 0").to("valid-orders")
    orders.group_by("customer").sum("amount", materialized_as="revenue")
    return store, Application(builder.build(), "orders-app", store=store, spark=spark)


def test_malformed_value_goes_to_the_processing_log_and_the_next_record_is_processed(tmp_path, spark):
    store, app = _orders_app(tmp_path / "home", spark)
    store.produce(
        "orders",
        [
            Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000, partition=0),
            Record(b"o2", b'{"customer": "ada", "amount": }', 1_001, partition=0),
            Record(b"o3", b'{"customer": "bob", "amount": 5.5}', 1_002, partition=0),
        ],
    )
    app.run_until_caught_up()
    log = store.consume("orders-app-processing-log")
    assert [json.loads(r.value) for r in log] == [
        {
            "topic": "orders",
            "partition": 0,
            "offset": 1,
            "timestamp": 1_001,
            "error": "value: line 1 column 31: Expecting value",
            "key": "bzI=",
            "value": "eyJjdXN0b21lciI6ICJhZGEiLCAiYW1vdW50IjogfQ==",
        }
    ]
    assert [(r.key, json.loads(r.value), r.timestamp) for r in store.consume("valid-orders")] == [
        (b"o1", {"customer": "ada", "amount": 10.0}, 1_000),
        (b"o3", {"customer": "bob", "amount": 5.5}, 1_002),
    ]
    revenue = {row.key: (row.value, row.ts) for row in app.table("revenue").collect()}
    assert revenue == {"ada": (10.0, 1_000), "bob": (5.5, 1_002)}


def test_a_replayed_batch_writes_nothing_twice(tmp_path, spark):
    store, app = _orders_app(tmp_path / "home", spark)
    store.produce("orders", [Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000)])
    batch = store.read_batch(spark, ["orders"])
    app.process_batch(batch, 0)
    app.process_batch(batch, 0)  # a retry of the same batch id
    assert len(store.consume("valid-orders")) == 1
    assert [(r.key, r.value) for r in app.table("revenue").collect()] == [("ada", 10.0)]
    (o2,) = store.produce("orders", [Record(b"o2", b'{"customer": "ada", "amount": 2.5}', 1_001)])
    app.process_batch(store.read_batch(spark, ["orders"]).where(f"partition = {o2.partition} AND offset = {o2.offset}"), 1)
    assert [(r.key, r.value) for r in app.table("revenue").collect()] == [("ada", 12.5)]


def test_compacting_a_materialized_table_keeps_its_rows(tmp_path, spark):
    store, app = _orders_app(tmp_path / "home", spark)
    store.produce("orders", [Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000)])
    app.process_batch(store.read_batch(spark, ["orders"]), 0)
    (o2,) = store.produce("orders", [Record(b"o2", b'{"customer": "bob", "amount": 1.0}', 1_001)])
    app.process_batch(store.read_batch(spark, ["orders"]).where(f"partition = {o2.partition} AND offset = {o2.offset}"), 1)
    before = sorted(map(tuple, app.table("revenue").collect()))
    app.compact_table("revenue")
    from deltalake import DeltaTable

    assert DeltaTable(str(app.paths.table("revenue"))).to_pyarrow_table().num_rows == 2
    assert sorted(map(tuple, app.table("revenue").collect())) == before == [("ada", 10.0, 1_000), ("bob", 1.0, 1_001)]


def test_a_batch_after_a_large_one_has_its_positions_summed_up_by_its_tasks(tmp_path, spark, monkeypatch):
    """The first batch and any batch after a large one (here: 3 records or more) sum up
    their positions in the tasks; a batch after a small one brings them to the driver.
    Both give the same outputs. (Batches whose positions are read first: not bounded
    by their planned offsets.)"""
    from tablestream.runtime import app as app_module
    from tablestream.runtime import runner

    store, app = _orders_app(tmp_path / "home", spark)
    monkeypatch.setattr(runner, "_LARGE", 3)
    monkeypatch.setattr(app_module, "_records_between", lambda start, end: None)
    chosen = []
    read = runner.read_positions

    def spy(records, checks, *, summarize, **rest):
        chosen.append(summarize)
        return read(records, checks, summarize=summarize, **rest)

    monkeypatch.setattr(runner, "read_positions", spy)
    amounts = [[1.0, 2.0, 3.0], [4.0], [5.0], [6.0, 7.0, 8.0], [9.0]]
    ts = 1_000
    for batch in amounts:
        records = [Record(b"o", json.dumps({"customer": "ada", "amount": a}).encode(), ts + i) for i, a in enumerate(batch)]
        ts += len(batch)
        store.produce("orders", records)
        app.run_until_caught_up()
    assert chosen == [True, True, False, False, True]
    revenue = {row.key: (row.value, row.ts) for row in app.table("revenue").collect()}
    assert revenue == {"ada": (45.0, 1_008)}


def test_state_written_in_an_earlier_format_is_refused_with_the_reset(tmp_path, spark):
    """An application whose ``app.json`` records another state format (or none: the
    first format) is refused, never run on keys kept in another form; a reset runs it
    again from its topics."""
    from tablestream.runtime.app import ApplicationError

    store, app = _orders_app(tmp_path / "home", spark)
    store.produce("orders", [Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000)])
    app.run_until_caught_up()
    assert json.loads(app.paths.meta.read_text())["state_format"] == 3
    app.paths.meta.write_text(json.dumps({"partitions": 2, "run": "r1"}))
    with pytest.raises(ApplicationError) as refused:
        Application(app.topology, "orders-app", store=store, spark=spark)
    assert str(refused.value) == (
        "Application 'orders-app' keeps its state in format 1; this version of tablestream reads "
        "format 3 (reset the application to run it again from its topics: Application.reset() or "
        "'tablestream app reset orders-app')"
    )
    app.reset()
    again = Application(app.topology, "orders-app", store=store, spark=spark)
    again.run_until_caught_up()
    assert [tuple(r) for r in again.table("revenue").collect()] == [("ada", 10.0, 1_000)]


def test_reset_starts_over_from_the_beginning_and_allows_another_partition_count(tmp_path, spark):
    """After ``reset()`` the application reads its topics from the start again (its
    tables are rebuilt, its output topics are kept, so they hold the outputs twice) and
    a new instance may choose another state partition count; a running one is refused."""
    from tablestream.runtime.app import ApplicationError

    store, app = _orders_app(tmp_path / "home", spark)
    store.produce("orders", [
        Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000),
        Record(b"o2", b'{"customer": "bob", "amount": 2.5}', 1_001),
    ])
    app.run_until_caught_up()
    with pytest.raises(ApplicationError) as changed:
        Application(app.topology, "orders-app", store=store, spark=spark, partitions=3)
    assert str(changed.value) == (
        "Application 'orders-app' was started with 2 state partitions; it cannot change to 3 "
        "(reset the application to change it: Application.reset() or 'tablestream app reset orders-app')"
    )

    app.reset()
    assert app.table("revenue").collect() == []
    assert not app.paths.checkpoint.exists()
    app.run_until_caught_up()
    assert sorted(map(tuple, app.table("revenue").collect())) == [("ada", 10.0, 1_000), ("bob", 2.5, 1_001)]
    assert sorted(r.key for r in store.consume("valid-orders")) == [b"o1", b"o1", b"o2", b"o2"]

    app.reset()
    again = Application(app.topology, "orders-app", store=store, spark=spark, partitions=3)
    assert again.partitions == 3
    query = again.start(processing_time="1 second")
    try:
        with pytest.raises(ApplicationError) as running:
            again.reset()
        assert str(running.value) == "Application 'orders-app' is running; stop it before resetting it"
    finally:
        again.stop()
    assert not query.isActive


def test_progress_reports_each_batch_its_records_and_the_lag(tmp_path, spark):
    """Three records per micro-batch: the first batch reads the first three records and
    leaves two behind. The position after the last batch is kept, so
    a new instance of the application knows its lag before it runs."""
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("events", partitions=1))
    builder = StreamsBuilder()
    builder.stream("events", value_schema="n BIGINT").filter("n > 1").to("big-events")
    topology = builder.build()
    store.produce("events", [Record(b"a", b'{"n": 1}', 1), Record(b"b", b'{"n": 2}', 2), Record(b"c", b'{"n": 3}', 3)])
    store.produce("events", [Record(b"d", b'{"n": 4}', 4), Record(b"e", b'{"n": 5}', 5)])
    seen = []
    app = Application(topology, "counter", store=store, spark=spark, max_records_per_batch=3, progress=seen.append)
    assert app.lag() == 5  # nothing read yet: from the start of the partition
    app.run_until_caught_up()
    assert [(p.application_id, p.batch_id, p.records, p.lag) for p in seen] == [
        ("counter", 0, 3, 2),
        ("counter", 1, 2, 0),
    ]
    assert all(p.seconds > 0 for p in seen)
    assert [r.key for r in store.consume("big-events")] == [b"b", b"c", b"d", b"e"]

    store.produce("events", [Record(b"f", b'{"n": 6}', 6)])
    again = []
    restarted = Application(topology, "counter", store=store, spark=spark, progress=again.append)
    assert restarted.lag() == 1
    restarted.run_until_caught_up()
    assert [(p.batch_id, p.records, p.lag) for p in again] == [(2, 1, 0)]
    restarted.reset()
    assert restarted.lag() == 6


def test_integer_keys_without_a_key_schema_in_a_materialized_table(tmp_path, spark):
    """Keys 200 and 201 (8 bytes each, not UTF-8) are rows of their own, before and after
    compaction; the key column holds their bytes."""
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("clicks"))
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().count(materialized_as="clicks-per-user")
    app = Application(builder.build(), "clicks-app", store=store, spark=spark)
    keys = [200, 201, 200, -1, 3]
    store.produce("clicks", [Record(k.to_bytes(8, "big", signed=True), b"{}", i) for i, k in enumerate(keys)])
    app.run_until_caught_up()

    def rows():
        table = app.table("clicks-per-user").selectExpr("CAST(key AS BINARY) AS key", "value", "ts")
        return sorted((int.from_bytes(r.key, "big", signed=True), r.value, r.ts) for r in table.collect())

    assert rows() == [(-1, 1, 3), (3, 1, 4), (200, 2, 2), (201, 1, 1)]
    app.compact_table("clicks-per-user")
    assert rows() == [(-1, 1, 3), (3, 1, 4), (200, 2, 2), (201, 1, 1)]
    assert store.consume("clicks-app-processing-log") == []


def test_batches_run_without_adaptive_execution_and_with_simple_plan_texts_in_a_copy_of_the_given_session(tmp_path, spark):
    # A store stage's shuffle has its partitions fixed; adaptive execution would only
    # run the stages one by one; the UI's formatted plan text costs every batch tens of
    # milliseconds. The session given keeps its own settings.
    spark.conf.set("spark.tablestream.test.marker", "kept")
    try:
        store, app = _orders_app(tmp_path / "home", spark)
        seen = []
        process = app.process_batch

        def process_batch(records, batch_id, **planned):
            conf = records.sparkSession.conf
            seen.append(
                (
                    conf.get("spark.sql.adaptive.enabled"),
                    conf.get("spark.sql.ui.explainMode"),
                    conf.get("spark.tablestream.test.marker"),
                )
            )
            process(records, batch_id, **planned)

        app.process_batch = process_batch
        store.produce("orders", [Record(b"o1", b'{"customer": "ada", "amount": 10.0}', 1_000)])
        app.run_until_caught_up()
    finally:
        spark.conf.unset("spark.tablestream.test.marker")
    assert seen == [("false", "simple", "kept")]
    assert spark.conf.get("spark.sql.adaptive.enabled") == "true"
    assert spark.conf.get("spark.sql.ui.explainMode") == "FORMATTED"
    assert {row.key: row.value for row in app.table("revenue").collect()} == {"ada": 10.0}


_SECOND_BATCHES = {
    "clean": [
        Record(b"o2", b'{"customer": "bob", "amount": 5.5}', 3_000, partition=0),
        Record(b"o3", b'{"customer": "ada", "amount": 1.0}', 3_001, partition=1),
    ],
    "malformed": [
        Record(b"o2", b'{"customer": "bob", "amount": 5.5}', 3_000, partition=0),
        Record(b"o3", b'{"customer": "ada", "amount": }', 3_001, partition=1),
    ],
    "late": [  # o3 is later in its partition than o2 but older
        Record(b"o2", b'{"customer": "bob", "amount": 5.5}', 3_000, partition=0),
        Record(b"o3", b'{"customer": "bob", "amount": 2.0}', 2_500, partition=0),
    ],
}


_O1 = (b"o1", {"customer": "ada", "amount": 10.0}, 1_000)
_O2 = (b"o2", {"customer": "bob", "amount": 5.5}, 3_000)


@pytest.mark.parametrize(
    ("second", "records", "revenue", "log"),
    [
        ("clean", [_O1, _O2, (b"o3", {"customer": "ada", "amount": 1.0}, 3_001)],
         {"ada": (11.0, 3_001), "bob": (5.5, 3_000)}, []),
        ("malformed", [_O1, _O2],
         {"ada": (10.0, 1_000), "bob": (5.5, 3_000)}, [(1, 0, 3_001, "value: line 1 column 31: Expecting value")]),
        ("late", [_O1, _O2, (b"o3", {"customer": "bob", "amount": 2.0}, 2_500)],
         {"ada": (10.0, 1_000), "bob": (7.5, 3_000)}, []),
    ],
)
def test_a_small_batch_runs_in_one_job_and_gives_what_reading_its_positions_first_gives(
    tmp_path, spark, monkeypatch, second, records, revenue, log
):
    """The query knows the second batch holds at most two records (its planned
    offsets): it computes it with its positions collected beside its outputs, and
    never reads them first. A malformed value or a late record, which the batch was
    not computed for, has it computed again from the positions it collected. Every
    output is the same as when the positions are read first."""
    from tablestream.runtime import app as app_module
    from tablestream.runtime import runner

    reads = []
    read = runner.read_positions

    def spy(records, checks, **options):
        reads.append(options["summarize"])
        return read(records, checks, **options)

    monkeypatch.setattr(runner, "read_positions", spy)

    def run(home):
        store, app = _orders_app(home, spark)
        store.produce("orders", [Record(*_O1[:1], json.dumps(_O1[1]).encode(), _O1[2], partition=0)])
        app.run_until_caught_up()
        store.produce("orders", _SECOND_BATCHES[second])
        app.run_until_caught_up()
        entries = [json.loads(r.value) for r in store.consume("orders-app-processing-log")]
        return (
            sorted((r.key, json.loads(r.value), r.timestamp) for r in store.consume("valid-orders")),
            [(e["partition"], e["offset"], e["timestamp"], e["error"]) for e in entries],
            {row.key: (row.value, row.ts) for row in app.table("revenue").collect()},
        )

    at_once = run(tmp_path / "one-job")
    assert reads == [True]  # the first batch's only: its start was not planned
    monkeypatch.setattr(app_module, "_records_between", lambda start, end: None)
    positions_first = run(tmp_path / "positions-first")
    assert reads == [True, True, False]
    assert at_once == positions_first == (records, log, revenue)

"""Outputs written by the executors: embedded topics' records and materialized tables'
changes become data files in the tasks, the driver commits their summaries."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from tablestream.dsl import StreamsBuilder
from tablestream.runtime import app as app_module
from tablestream.runtime.app import Application
from tablestream.runtime.output_files import murmur3_int, spark_partition_values
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.partitioner import partition_for_key
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark

ORDERS = [
    [("o1", "ada", 12), ("o2", "bob", 3), ("o3", "ada", 30), ("o4", "cy", 7), ("o5", "bob", 15)],
    [("o6", "cy", 40), ("o2", "bob", 9), ("o7", "dan", 1), ("o1", "ada", 2)],
]
USERS = [[("ada", "eu"), ("bob", "us")], [("cy", "eu"), ("bob", None)]]


def _topology():
    """Several sinks (two of them into one topic), a table read from its topic and an
    aggregation, both materialized."""
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="customer STRING, amount BIGINT")
    orders.filter("amount > 10").to("picked")
    orders.filter("amount < 5").map_values(lambda v: {"amount": v["amount"] * 100}).to("picked")
    totals = orders.group_by("customer").sum("amount", materialized_as="totals")
    totals.to_stream().to("totals-out")
    builder.table("users", value_schema="region STRING", materialized_as="users").to_stream().to("users-out")
    return builder.build()


def _app(home, spark, app_id="shop", *, executors=True):
    """An application whose executors write its outputs, as on a cluster (in local mode
    the driver writes them by default)."""
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("orders", partitions=2))
    store.create_topic(TopicConfig("users", partitions=1))
    return store, Application(
        _topology(), app_id, store=store, spark=spark, partitions=3, write_on_executors=executors
    )


def _produce(store, number):
    ts = 1_000 * (number + 1)
    store.produce(
        "orders",
        [
            Record(key.encode(), json.dumps({"customer": c, "amount": a}).encode(), ts + i, partition=i % 2)
            for i, (key, c, a) in enumerate(ORDERS[number])
        ],
    )
    store.produce(
        "users",
        [
            Record(key.encode(), None if region is None else json.dumps({"region": region}).encode(), ts + 50 + i)
            for i, (key, region) in enumerate(USERS[number])
        ],
    )


def _batch(store, spark, number):
    """Batch ``number``'s records (each batch's records are the ones produced for it)."""
    starts = {"orders": [0, 0], "users": [0]}
    for earlier in ORDERS[:number]:
        for i, _ in enumerate(earlier):
            starts["orders"][i % 2] += 1
    starts["users"][0] = sum(len(u) for u in USERS[:number])
    records = store.read_batch(spark, ["orders", "users"])
    condition = " OR ".join(
        f"(topic = '{t}' AND partition = {p} AND offset >= {o})" for t, parts in starts.items() for p, o in enumerate(parts)
    )
    return records.where(condition)


def _outputs(store, app):
    topics = {t: store.read(t).to_pylist() for t in ("picked", "totals-out", "users-out")}
    tables = {}
    for name in ("totals", "users"):
        changes = DeltaTable(str(app.tables.path(name))).to_pyarrow_table().to_pylist()
        # The changes of each key in (batch, seq) order: what a read of the table decides by.
        per_key = {}
        for row in sorted(changes, key=lambda r: (r["batch"], r["seq"])):
            per_key.setdefault(row["key"], []).append((row["value"], row["ts"], row["batch"]))
        current = sorted(tuple(r) for r in app.table(name).collect())
        tables[name] = (per_key, current)
    return topics, tables


def _run_both(store, app, spark, batches):
    for number in batches:
        _produce(store, number)
        app.process_batch(_batch(store, spark, number), number)


def test_outputs_written_by_the_executors_are_those_the_driver_wrote(tmp_path, spark, monkeypatch):
    collected = []
    commit = app_module.commit_batch

    def spy(batch, sink, batch_id):
        collected.append(batch)
        commit(batch, sink, batch_id)

    monkeypatch.setattr(app_module, "commit_batch", spy)
    store, app = _app(tmp_path / "executors", spark)
    _run_both(store, app, spark, [0, 1])
    written = _outputs(store, app)

    # The driver's path: every output collected as rows and appended on the driver.
    store_d, app_d = _app(tmp_path / "driver", spark, executors=False)
    _run_both(store_d, app_d, spark, [0, 1])
    assert written == _outputs(store_d, app_d)
    assert all(batch.topic_files == {} and batch.table_files == {} for batch in collected[2:4])

    # Local mode's default: chosen per batch by its size. Batch 0 has 7 records (written
    # by the executors), batch 1 has 6 (by the driver).
    monkeypatch.setattr(app_module, "EXECUTORS_WRITE_FROM", 7)
    store_c, app_c = _app(tmp_path / "chosen", spark, executors=None)
    assert (app.write_on_executors, app_d.write_on_executors, app_c.write_on_executors) == (True, False, None)
    _run_both(store_c, app_c, spark, [0, 1])
    assert written == _outputs(store_c, app_c)
    large, small = collected[4:]
    assert (sorted(large.topic_files), sorted(large.table_files)) == (["picked", "totals-out", "users-out"], ["totals", "users"])
    assert (large.records, large.tables) == ({}, {})
    assert (small.topic_files, small.table_files) == ({}, {})
    assert sorted(small.records) == ["picked", "totals-out", "users-out"] and sorted(small.tables) == ["totals", "users"]

    # The driver received summaries only: no record or change as rows.
    first, second = collected[:2]
    assert (first.records, first.tables, second.records, second.tables) == ({}, {}, {}, {})
    assert sorted(first.topic_files) == ["picked", "totals-out", "users-out"]
    assert sorted(first.table_files) == ["totals", "users"]
    assert sum(f.rows for f in first.topic_files["picked"]) == 4  # o1, o2, o3, o5
    assert sorted((r["partition"], r["offset"]) for r in written[0]["picked"]) == sorted(
        (p, o) for p in range(3) for o in range(sum(r["partition"] == p for r in written[0]["picked"]))
    )
    assert written[1]["totals"][1] == [("ada", 44, 2_003), ("bob", 27, 2_001), ("cy", 47, 2_000), ("dan", 1, 2_002)]
    assert [(key, value[0], ts) for key, value, ts in written[1]["users"][1]] == [("ada", "eu", 1_050), ("cy", "eu", 2_050)]


def _log_files(store, topic):
    log = store.log_path(topic)
    on_disk = {str(p.relative_to(log)) for p in log.glob("partition=*/*.parquet")}
    committed = set(pa.table(DeltaTable(str(log)).get_add_actions(flatten=True)).column("path").to_pylist())
    return on_disk, committed


def test_a_replayed_batch_writes_no_file_and_no_commit(tmp_path, spark):
    store, app = _app(tmp_path / "home", spark)
    _produce(store, 0)
    app.process_batch(_batch(store, spark, 0), 0)
    before = {t: (store.read(t), _log_files(store, t), DeltaTable(str(store.log_path(t))).version()) for t in ("picked", "totals-out")}
    tables = {n: DeltaTable(str(app.tables.path(n))).version() for n in ("totals", "users")}
    app.process_batch(_batch(store, spark, 0), 0)  # the same batch id again
    after = {t: (store.read(t), _log_files(store, t), DeltaTable(str(store.log_path(t))).version()) for t in ("picked", "totals-out")}
    assert after == before
    assert {n: DeltaTable(str(app.tables.path(n))).version() for n in ("totals", "users")} == tables
    assert sorted(
        (r["key"], json.loads(r["value"])["amount"]) for r in store.read("picked").to_pylist()
    ) == [(b"o1", 12), (b"o2", 300), (b"o3", 30), (b"o5", 15)]


def test_a_batch_whose_job_failed_after_tasks_wrote_files_is_written_once_when_run_again(tmp_path, spark):
    """Tasks run in destination order on two task slots: those of 'picked' before that
    of a 'users-out' partition whose directory cannot be made, which fails the job after
    'picked' files were written. Run again, the batch commits each record once: the
    first attempt's files are in no commit."""
    store, app = _app(tmp_path / "home", spark)
    reference_store, reference = _app(tmp_path / "reference", spark)
    _produce(reference_store, 0)
    reference.process_batch(_batch(reference_store, spark, 0), 0)

    _produce(store, 0)
    blocker = store.log_path("users-out") / f"partition={partition_for_key(b'ada', 3)}"
    blocker.write_text("not a directory")
    with pytest.raises(Exception, match="users-out"):
        app.process_batch(_batch(store, spark, 0), 0)
    assert store.read("picked").num_rows == 0
    orphans, committed = _log_files(store, "picked")
    assert orphans and not committed

    blocker.unlink()
    app.process_batch(_batch(store, spark, 0), 0)
    on_disk, committed = _log_files(store, "picked")
    assert len(committed) == len(on_disk - orphans) and committed == on_disk - orphans
    for topic in ("picked", "totals-out", "users-out"):
        assert store.read(topic) == reference_store.read(topic)
        assert store.end_offsets(topic) == reference_store.end_offsets(topic)
    assert sorted(map(tuple, app.table("totals").collect())) == sorted(map(tuple, reference.table("totals").collect()))


def test_each_destination_has_a_shuffle_value_of_its_own(spark):
    from pyspark.sql import functions as F

    values = spark_partition_values(7)
    placed = spark.createDataFrame([(v,) for v in values], "v int").select(F.pmod(F.hash("v"), F.lit(7)).alias("p"))
    assert [r.p for r in placed.collect()] == list(range(7))
    assert [murmur3_int(v) for v in (0, 1, -1)] == [
        r.h for r in spark.createDataFrame([(0,), (1,), (-1,)], "v int").select(F.hash("v").alias("h")).collect()
    ]


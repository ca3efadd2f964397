"""A small batch's plan is built once and made again on each later batch's records
(:class:`~tablestream.runtime.jvm.PlanSwap`): the same outputs as a plan built for each
batch, its stages reading the versions the batch before left."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from tablestream.dsl import StreamsBuilder, aggregates
from tablestream.runtime.app import Application
from tablestream.runtime.jvm import PlanSwap
from tablestream.runtime.runner import BatchRunner
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark


def _parquet(path, a, b):
    pq.write_table(pa.table({"a": pa.array(a, pa.int64()), "b": pa.array(b, pa.string())}), path)
    return str(path)


def test_a_plan_is_made_again_on_other_rows_through_every_copy_of_its_base(tmp_path, spark):
    first = spark.read.parquet(_parquet(tmp_path / "first.parquet", [1, 2, 3], ["x", "y", "z"]))
    # A union of two branches of one relation: Spark reads it under new ids in one.
    doubled = first.select((F.col("a") * 2).alias("a"), F.upper("b").alias("b"))
    cached = first.where("a > 1")
    whole = doubled.union(cached)
    swap = PlanSwap(whole, first, [cached])
    second = spark.read.parquet(_parquet(tmp_path / "second.parquet", [5, 1, 7], ["p", "q", "r"]))
    again, cached_again = swap.on(second)
    assert sorted(map(tuple, again.collect())) == [(2, "Q"), (5, "p"), (7, "r"), (10, "P"), (14, "R")]
    assert sorted(map(tuple, cached_again.collect())) == [(5, "p"), (7, "r")]
    # The plan it was built on is unchanged.
    assert sorted(map(tuple, whole.collect())) == [(2, "X"), (2, "y"), (3, "z"), (4, "Y"), (6, "Z")]


def test_a_plan_reading_its_base_relation_outside_a_copy_is_refused(tmp_path, spark):
    path = _parquet(tmp_path / "rows.parquet", [1, 2], ["x", "y"])
    base = spark.read.parquet(path).select("a", F.upper("b").alias("b"))
    elsewhere = spark.read.parquet(path).where("a > 1").select("a", "b")
    with pytest.raises(ValueError, match=r"^1 copies of the base plan hold 2 of its relations$"):
        PlanSwap(base.union(elsewhere), base, [])


def _topology():
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING, qty BIGINT")
    products = builder.table("products", value_schema="price BIGINT")
    orders.join(
        products, "left.qty * right.price", foreign_key="product", replicate_right=False
    ).to_stream().to("priced")
    orders.group_by(("product", "value")).agg(
        orders=aggregates.count(), qty=aggregates.sum("qty"), materialized_as="per-product"
    )
    return builder.build()


def _order(key, product, qty, ts, partition):
    value = None if product is None else json.dumps({"product": product, "qty": qty}).encode()
    return Record(key.encode(), value, ts, partition=partition)


def _product(key, price, ts, partition):
    return Record(key.encode(), json.dumps({"price": price}).encode(), ts, partition=partition)


def test_small_batches_after_the_first_run_on_its_plan_made_again(tmp_path, spark, monkeypatch):
    made_again = []
    original = BatchRunner._made_again

    def counting(self, plan, records, batch_id, committed):
        made_again.append(batch_id)
        return original(self, plan, records, batch_id, committed)

    monkeypatch.setattr(BatchRunner, "_made_again", counting)
    store = EmbeddedStore(tmp_path)
    store.create_topic(TopicConfig("orders", partitions=2))
    store.create_topic(TopicConfig("products", partitions=2))
    app = Application(_topology(), "plans", store=store, spark=spark)
    rounds = [
        ("products", [_product("p1", 10, 100, 0), _product("p2", 20, 101, 1)]),
        ("orders", [_order("o1", "p1", 2, 1_000, 0), _order("o2", "p2", 3, 1_001, 1)]),
        # o1 moves to p2, o3 arrives; then p2's price changes and o2 is deleted.
        ("orders", [_order("o1", "p2", 2, 2_000, 0), _order("o3", "p1", 1, 2_001, 1)]),
        ("products", [_product("p2", 25, 3_000, 1)]),
        ("orders", [_order("o2", None, 0, 4_000, 1), _order("o3", "p1", 4, 4_001, 1)]),
    ]
    for topic, records in rounds:
        store.produce(topic, records)
        app.run_until_caught_up()
    # Batch 0 has no planned positions before it to bound it; batch 1 builds the small
    # batches' plan, and the next ones run on it made again.
    assert made_again == [2, 3, 4]
    priced = [(r.key, r.value, r.timestamp) for r in store.consume("priced")]
    assert sorted(priced, key=lambda r: (r[2], r[0])) == [
        (b"o1", b"20", 1_000), (b"o2", b"60", 1_001),
        (b"o1", b"40", 2_000), (b"o3", b"10", 2_001),
        (b"o1", b"50", 3_000), (b"o2", b"75", 3_000),
        (b"o2", None, 4_000), (b"o3", b"40", 4_001),
    ]
    per_product = sorted((r.key, r.value.orders, r.value.qty, r.ts) for r in app.table("per-product").collect())
    assert per_product == [("p1", 1, 4, 4_001), ("p2", 1, 2, 4_000)]
    assert store.consume("plans-processing-log") == []

"""A large batch whose table feeds several consumers (a materialized table, a foreign-key
join, an aggregation): the consumers' stages start together in the batch's one output
job and the table's stage runs once for them (the first to reach a partition of its
cached rows computes it, the others wait on Spark's lock of that block), with the
results of a small batch."""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.dsl import aggregates as agg
from tablestream.runtime import runner
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

# (topic, key, value, timestamp) per batch.
BATCHES = [
    [
        ("products", "p1", {"name": "pen"}, 1),
        ("products", "p2", {"name": "ink"}, 2),
        ("orders", "o1", {"product": "p1", "qty": 2}, 3),
        ("orders", "o2", {"product": "p1", "qty": 3}, 4),
        ("orders", "o3", {"product": "p2", "qty": 1}, 5),
    ],
    [
        ("orders", "o2", {"product": "p2", "qty": 3}, 6),
        ("orders", "o3", None, 7),
        ("products", "p1", {"name": "pencil"}, 8),
    ],
]


# Per batch: the join's records, the aggregate's records (key, value, timestamp) and
# the materialized orders. A joined row's timestamp is the larger of its order's and its
# product's (a deleted order's: of its own and its old product's); an aggregate's, that
# of the latest change it took.
EXPECTED = [
    (
        [("o1", {"qty": 2, "name": "pen"}, 3), ("o2", {"qty": 3, "name": "pen"}, 4), ("o3", {"qty": 1, "name": "ink"}, 5)],
        [("p1", {"orders": 2, "qty": 5}, 4), ("p2", {"orders": 1, "qty": 1}, 5)],
        [("o1", {"product": "p1", "qty": 2}), ("o2", {"product": "p1", "qty": 3}), ("o3", {"product": "p2", "qty": 1})],
    ),
    (
        [("o1", {"qty": 2, "name": "pencil"}, 8), ("o2", {"qty": 3, "name": "ink"}, 6), ("o3", None, 7)],
        [("p1", {"orders": 1, "qty": 2}, 6), ("p2", {"orders": 1, "qty": 3}, 7)],
        [("o1", {"product": "p1", "qty": 2}), ("o2", {"product": "p2", "qty": 3})],
    ),
]


def _topology():
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING, qty BIGINT", materialized_as="order-rows")
    products = builder.table("products", value_schema="name STRING")
    orders.join(products, "struct(left.qty AS qty, right.name AS name)", foreign_key="product").to_stream().to(
        "enriched"
    )
    orders.group_by(("product", "value")).agg(orders=agg.count(), qty=agg.sum("qty")).to_stream().to("per-product")
    return builder.build()


def _run(spark):
    outputs = []
    with TestDriver(_topology(), spark=spark, batched=True) as driver:
        inputs = {t: driver.create_input_topic(t) for t in ("orders", "products")}
        enriched, per_product = driver.create_output_topic("enriched"), driver.create_output_topic("per-product")
        for batch in BATCHES:
            for topic, key, value, ts in batch:
                inputs[topic].pipe_input(key, value, timestamp=ts)
            driver.advance()
            outputs.append((
                sorted((r.key, r.value, r.timestamp) for r in enriched.read_records()),
                sorted((r.key, r.value, r.timestamp) for r in per_product.read_records()),
                sorted(driver.table("order-rows").items()),
            ))
    return outputs


@pytest.mark.parametrize("large", [True, False], ids=["large", "small"])
def test_a_table_read_by_several_consumers_gives_them_the_same_rows_in_a_large_batch(spark, monkeypatch, large):
    if large:
        monkeypatch.setattr(runner, "_LARGE", 1)  # every batch computed as a large one
    assert _run(spark) == EXPECTED


@pytest.mark.parametrize(("bound", "rows_only"), [(26, True), (25, False)], ids=["small-records", "a-large-record"])
def test_a_large_batch_of_small_records_sends_its_rows_to_python_in_batches_cut_by_rows_only(
    spark, monkeypatch, bound, rows_only
):
    # Each batch's largest record is an order of 26 bytes: key "o1" (2), value
    # {"product":"p1","qty":2} (24).
    import contextlib

    monkeypatch.setattr(runner, "_LARGE", 1)
    monkeypatch.setattr(runner, "_SMALL_RECORD", bound)
    real, seen = runner.arrow_batches_cut_by_rows, []

    @contextlib.contextmanager
    def spy(session, cut_by_rows_only=True):
        setting = "spark.sql.execution.arrow.maxBytesPerBatch"
        with real(session, cut_by_rows_only):
            seen.append((cut_by_rows_only, session.conf.get(setting)))
            yield
        seen.append(("after", session.conf.get(setting)))

    monkeypatch.setattr(runner, "arrow_batches_cut_by_rows", spy)
    assert _run(spark) == EXPECTED
    inside = "2147483647" if rows_only else "67108864b"
    assert seen == [(rows_only, inside), ("after", "67108864b")] * 2

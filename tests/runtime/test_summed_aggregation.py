"""A large batch's count, sum and avg of integers: Spark sums each group's deltas before
the store stage (each task its own rows first), and the results, timestamps and skipped
records are those of the changes' own rows."""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.dsl import aggregates as agg
from tablestream.runtime import runner
from tablestream.runtime.rules.aggregate.numeric import NumericRule
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

USERS = "region STRING, age BIGINT"
# Batches of users -> (region, age): inserts, a null age, a null region (a null
# group-by key: skipped and logged), moves between groups, deletes, an older timestamp.
BATCHES = [
    [
        ("alice", {"region": "E", "age": 30}, 1),
        ("bob", {"region": "E", "age": None}, 2),
        ("carol", {"region": "A", "age": None}, 3),
        ("erin", {"region": None, "age": 7}, 4),
        ("frank", {"region": "E", "age": 5}, 5),
    ],
    [
        ("alice", {"region": "A", "age": 40}, 7),
        ("bob", None, 6),
        ("frank", {"region": "E", "age": 6}, 4),
    ],
    [
        ("frank", None, 8),
        ("alice", {"region": "A", "age": 50}, 6),
        ("dave", {"region": "E", "age": 20}, 9),
        ("erin", {"region": "E", "age": 7}, 10),
    ],
]
# What each batch emits: (key, (users, aged, total, mean), timestamp).
EMITTED = [
    [("A", (1, 0, 0, None), 3), ("E", (3, 2, 35, 17.5), 5)],
    [("A", (2, 1, 40, 40.0), 7), ("E", (1, 1, 6, 6.0), 7)],
    [("A", (2, 1, 50, 50.0), 7), ("E", (2, 2, 27, 13.5), 10)],
]


def _stats(value):
    return None if value is None else dict(zip(("users", "aged", "total", "mean"), value, strict=True))


def _topology():
    builder = StreamsBuilder()
    builder.table("users", value_schema=USERS).group_by(("region", "value"), name="by-region").agg(
        users=agg.count(), aged=agg.count("age"), total=agg.sum("age"), mean=agg.avg("age"),
        materialized_as="region-stats",
    ).to_stream().to("stats")
    return builder.build()


@pytest.mark.parametrize("large", [True, False], ids=["summed-by-spark", "rows"])
def test_a_large_batchs_integer_aggregates_are_summed_by_spark_with_the_same_results(spark, monkeypatch, large):
    summed = []
    original = NumericRule.summed

    def spy(self, rows):
        summed.append(self.node.name)
        return original(self, rows)

    monkeypatch.setattr(NumericRule, "summed", spy)
    if large:
        monkeypatch.setattr(runner, "_LARGE", 1)  # every batch computed as a large one
    with TestDriver(_topology(), spark=spark, batched=True) as driver:
        source, out = driver.create_input_topic("users"), driver.create_output_topic("stats")
        for batch, emitted in zip(BATCHES, EMITTED, strict=True):
            for key, value, ts in batch:
                source.pipe_input(key, value, timestamp=ts)
            driver.advance()
            records = sorted((r.key, r.value, r.timestamp) for r in out.read_records())
            assert records == [(key, _stats(value), ts) for key, value, ts in emitted]
        assert driver.table("region-stats") == {"A": _stats((2, 1, 50, 50.0)), "E": _stats((2, 2, 27, 13.5))}
        assert [(e["offset"], e["timestamp"], e["error"]) for e in driver.processing_log] == [
            (3, 4, "by-region: null group-by key (record skipped)"),
        ]
    assert len(summed) == (3 if large else 0)


def test_a_large_batchs_double_sums_keep_the_changes_rows(spark, monkeypatch):
    """Sums of doubles depend on the order they are added in: they are not summed ahead."""
    summed = []
    monkeypatch.setattr(NumericRule, "summed", lambda self, rows: summed.append(rows))
    monkeypatch.setattr(runner, "_LARGE", 1)
    builder = StreamsBuilder()
    builder.stream("orders", value_schema="amount DOUBLE").group_by_key().agg(
        total=agg.sum("amount"), orders=agg.count()
    ).to_stream().to("totals")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        source = driver.create_input_topic("orders")
        for key, amount, ts in [("a", 1.5, 1), ("a", 2.25, 2), ("b", None, 3), (None, 4.0, 4)]:
            source.pipe_input(key, {"amount": amount}, timestamp=ts)
        driver.advance()
        records = sorted((r.key, r.value, r.timestamp) for r in driver.create_output_topic("totals").read_records())
        assert records == [("a", {"total": 3.75, "orders": 2}, 2), ("b", {"total": 0.0, "orders": 1}, 3)]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (3, "KSTREAM-SOURCE-0000000000: null key: an aggregation needs a key (record skipped)"),
        ]
    assert summed == []


def test_a_large_batchs_integer_sums_are_exact_whatever_spark_ansi_mode_says(spark, monkeypatch):
    """Spark's sums of longs wrap around with ANSI mode off: the summed path sums
    exactly, so a batch whose own sum is past 2**63 - 1 makes a total past it, which
    fails the batch naming its group, never a wrapped total."""
    monkeypatch.setattr(runner, "_LARGE", 1)
    builder = StreamsBuilder()
    builder.stream("amounts", value_schema="amount BIGINT").group_by_key().agg(
        total=agg.sum("amount"), rows=agg.count()
    ).to_stream().to("totals")
    before = spark.conf.get("spark.sql.ansi.enabled")
    spark.conf.set("spark.sql.ansi.enabled", "false")
    try:
        with TestDriver(builder.build(), spark=spark, batched=True) as driver:
            source = driver.create_input_topic("amounts")
            for amount, ts in [(2**62 + 5, 1), (2**62 - 3, 2), (-(2**62) - 7, 3)]:
                source.pipe_input("g", {"amount": amount}, timestamp=ts)
            driver.advance()
            records = [(r.key, r.value, r.timestamp) for r in driver.create_output_topic("totals").read_records()]
            assert records == [("g", {"total": 2**62 - 5, "rows": 3}, 3)]
            # A batch whose own sum leaves 64 bits (2**63 + 1): the total is no BIGINT.
            for amount, ts in [(2**62 + 1, 4), (2**62, 5)]:
                source.pipe_input("g", {"amount": amount}, timestamp=ts)
            with pytest.raises(Exception, match=rf"the sum of group b'.*' overflows BIGINT: {2**62 + 2**63 - 4}"):
                driver.advance()
    finally:
        spark.conf.set("spark.sql.ansi.enabled", before)

"""User functions that raise on some records: the outputs are the outputs of the same
topology over the input without those records, and the processing log holds exactly
those records, once per operator that failed on them."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))
KEYS = ["a", "b", "c", "d"]
OPERATORS = ("inv", "big", "rekey", "enrich", "locate")
OUTPUTS = ("inverse", "counted", "summed", "enriched", "located")

records = st.lists(st.tuples(st.sampled_from(KEYS), st.integers(-3, 3)), min_size=1, max_size=20)
batch_sizes = st.lists(st.integers(1, 7), min_size=1, max_size=5)


def _topology():
    """Every user function divides by ``n``: it raises on a record with ``n == 0``."""
    builder = StreamsBuilder()
    users = builder.table("users", key_schema="STRING", value_schema="name STRING")
    orders = builder.stream("orders", key_schema="STRING", value_schema="n BIGINT")
    orders.map_values(lambda v: {"inv": 12 // v["n"]}, name="inv").to("inverse")
    orders.filter(lambda k, v: 12 // v["n"] > 2, name="big").group_by_key().count().to_stream().to("counted")
    orders.select_key(lambda k, v: f"{k}{12 // v['n'] % 3}", name="rekey").group_by_key().sum("n").to_stream().to(
        "summed"
    )
    orders.join(users, lambda o, u: {"x": u["name"] * (12 // o["n"] % 3)}, name="enrich").to("enriched")
    regions = builder.global_table("regions", key_schema="STRING", value_schema="name STRING")
    orders.left_join(
        regions, lambda o, r: {"r": r and r["name"]}, key_selector=lambda k, v: KEYS[12 // v["n"] % 4], name="locate"
    ).to("located")
    return builder.build()


def _run(spark, batches: list[list[tuple[str, int, int]]]):
    with TestDriver(_topology(), spark=spark, batched=True) as driver:
        users = driver.create_input_topic("users")
        for key in KEYS:
            users.pipe_input(key, {"name": key.upper()}, timestamp=0)
        regions = driver.create_input_topic("regions")
        for key in KEYS[:2]:  # the others look nothing up: the left join emits them with null
            regions.pipe_input(key, {"name": key * 2}, timestamp=0)
        driver.advance()
        orders = driver.create_input_topic("orders")
        for batch in batches:
            for key, n, ts in batch:
                orders.pipe_input(key, {"n": n}, timestamp=ts)
            driver.advance()
        outputs = {
            topic: [(r.key, r.value, r.timestamp) for r in driver.create_output_topic(topic).read_records()]
            for topic in OUTPUTS
        }
        return outputs, list(driver.processing_log)


def _batches(log, sizes):
    stamped = [(key, n, 10 * (i + 1)) for i, (key, n) in enumerate(log)]
    batches, start = [], 0
    for size in sizes * (len(stamped) // max(sum(sizes), 1) + 1):
        if start >= len(stamped):
            break
        batches.append(stamped[start : start + size])
        start += size
    return batches


def _check(spark, log, sizes):
    batches = _batches(log, sizes)
    outputs, failures = _run(spark, batches)
    kept = [[r for r in batch if r[1] != 0] for batch in batches]
    expected, none = _run(spark, [b for b in kept if b])
    assert none == []
    assert outputs == expected
    failing = [(i, key, n, ts) for i, (key, n, ts) in enumerate(r for b in batches for r in b) if n == 0]
    assert sorted((e["offset"], e["error"].split(":")[0], e["key"], e["timestamp"]) for e in failures) == sorted(
        (i, op, key.encode(), ts) for i, key, _n, ts in failing for op in OPERATORS
    )
    assert all(e["error"].endswith("ZeroDivisionError: integer division or modulo by zero") for e in failures)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=records, sizes=batch_sizes)
def test_outputs_equal_the_outputs_without_the_failing_records(spark, log, sizes):
    _check(spark, log, sizes)


@pytest.mark.slow
@settings(max_examples=max(EXAMPLES, 1) * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=records, sizes=batch_sizes)
def test_outputs_equal_the_outputs_without_the_failing_records_many_examples(spark, log, sizes):
    """The slow tier: ten times the examples."""
    _check(spark, log, sizes)

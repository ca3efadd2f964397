"""Integer keys without a key schema give what ``key_schema="BIGINT"`` gives, whatever
their bytes.

Each example draws a few random 64-bit integers (most of whose 8 bytes are not UTF-8)
and records keyed by them: events into a table (latest value per key), counted per key
as a stream, and the table counted per key (SQL ``key``) and per an integer of its
values; orders and products (tombstones included) joined by a callable's integer
foreign key. The same records, cut into the same batches, run once with no key schemas
and once with ``key_schema="BIGINT"`` everywhere: every output topic holds the same
records (key bytes, values, timestamps, in the same order), the materialized table the
same rows, and both processing logs stay empty.

An integer whose 8 bytes are printable UTF-8 text (``0x4142434445464748`` is
``ABCDEFGH``) reads as that STRING without a key schema, by design: such integers are
left out of the draw.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.dsl import StreamsBuilder
from tablestream.storage.formats import get_format
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))
OUTPUTS = ("latest", "counts", "per-key", "per-g", "joined")
BYTES = get_format("KAFKA", "BYTES")


def _not_text(key: int) -> bool:
    try:
        return not key.to_bytes(8, "big", signed=True).decode("utf-8").isprintable()
    except UnicodeDecodeError:
        return True


INTEGERS = st.integers(-(2**63), 2**63 - 1).filter(_not_text)


@st.composite
def workloads(draw):
    """Records ``(topic, key, value)`` in the order they are piped, and the indexes
    where a batch ends."""
    pool = draw(st.lists(INTEGERS, min_size=2, max_size=5, unique=True))
    key = st.sampled_from(pool)
    events = draw(st.lists(st.tuples(st.just("events"), key, st.fixed_dictionaries({"g": key})), max_size=8))
    orders = draw(st.lists(
        st.tuples(st.just("orders"), key, st.none() | st.fixed_dictionaries({"p": key})), max_size=6
    ))
    products = draw(st.lists(
        st.tuples(st.just("products"), key, st.none() | st.fixed_dictionaries({"name": st.integers(0, 9)})),
        max_size=6,
    ))
    records = draw(st.permutations(events + orders + products))
    cuts = draw(st.lists(st.integers(1, max(len(records) - 1, 1)), max_size=2, unique=True))
    return records, sorted(cuts)


def topology(key_schema: str | None):
    builder = StreamsBuilder()
    events = builder.stream("events", key_schema=key_schema)
    table = events.to_table(materialized_as="latest")
    table.to_stream().to("latest")
    events.group_by_key().count().to_stream().to("counts")
    table.group_by(("key", "value")).count().to_stream().to("per-key")
    table.group_by(lambda k, v: (v["g"], v)).count().to_stream().to("per-g")
    orders = builder.table("orders", key_schema=key_schema)
    products = builder.table("products", key_schema=key_schema)
    orders.left_join(products, lambda left, right: [left, right], foreign_key=lambda v: v["p"]).to_stream().to("joined")
    return builder.build()


def run(spark, key_schema: str | None, records, cuts):
    """Each output topic's records, the materialized table and the processing log."""
    with TestDriver(topology(key_schema), spark=spark, batched=True) as driver:
        inputs = {topic: driver.create_input_topic(topic) for topic in ("events", "orders", "products")}
        outputs = {out: driver.create_output_topic(out, key_format=BYTES) for out in OUTPUTS}
        for i, (topic, key, value) in enumerate(records):
            if i in cuts:
                driver.advance()
            inputs[topic].pipe_input(key, value, i)
        driver.advance()
        written = {out: topic.read_records() for out, topic in outputs.items()}
        return written, driver.table("latest"), driver.processing_log


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(workload=workloads())
def test_undeclared_integer_keys_equal_bigint_keys(spark, workload):
    records, cuts = workload
    undeclared, table, log = run(spark, None, records, cuts)
    declared, declared_table, declared_log = run(spark, "BIGINT", records, cuts)
    assert undeclared == declared
    assert table == declared_table
    assert log == declared_log == []

"""Table aggregation against DuckDB: after every batch, each materialized aggregate equals
SQL over the input table's current contents (random changelogs, random batch sizes).
COLLECT_LIST and COLLECT_SET of a table keep no promised order: they are compared as
multisets (``list``, ``list(DISTINCT ...)``), COUNT_DISTINCT as ``count(DISTINCT ...)``."""

from __future__ import annotations

import os

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))

keys = st.one_of(st.none(), st.sampled_from(["k1", "k2", "k3", "k4", "k5", "k6"]))
values = st.one_of(
    st.none(),  # a delete
    st.fixed_dictionaries(
        {
            "grp": st.one_of(st.none(), st.sampled_from(["a", "b", "c"])),
            "amount": st.one_of(st.none(), st.integers(-5, 20)),
        }
    ),
)
changes = st.lists(st.tuples(keys, values), min_size=1, max_size=24)
batch_sizes = st.lists(st.integers(1, 8), min_size=1, max_size=6)


def _topology():
    builder = StreamsBuilder()
    items = builder.table("items", value_schema="grp STRING, amount BIGINT")
    doubled = items.filter("amount IS NULL OR amount >= 0").map_values("struct(grp, amount * 2 AS amount)")
    grouped = doubled.group_by(("grp", "value"))
    grouped.count(materialized_as="cnt")
    grouped.sum("amount", materialized_as="total")
    grouped.min("amount", materialized_as="lowest")
    grouped.max("amount", materialized_as="highest")
    grouped.collect_list("amount", materialized_as="amounts")
    grouped.collect_set("amount", materialized_as="kinds")
    grouped.count_distinct("amount", materialized_as="distinct")
    return builder.build()


TOPOLOGY = _topology()

ORACLE = """
SELECT grp, count(*) AS cnt, coalesce(sum(amount * 2), 0) AS total,
       min(amount * 2) AS lowest, max(amount * 2) AS highest,
       list(amount * 2) AS amounts, list(DISTINCT amount * 2) AS kinds, count(DISTINCT amount * 2) AS "distinct"
FROM items
WHERE (amount IS NULL OR amount >= 0) AND grp IS NOT NULL
GROUP BY grp
"""


def _expected(current: dict[str, dict]) -> dict[str, dict]:
    con = duckdb.connect()
    con.execute("CREATE TABLE items (k VARCHAR, grp VARCHAR, amount BIGINT)")
    if current:
        con.executemany("INSERT INTO items VALUES (?, ?, ?)", [(k, v["grp"], v["amount"]) for k, v in current.items()])
    rows = con.execute(ORACLE).fetchall()
    return {
        "cnt": {g: c for g, c, *_ in rows},
        "total": {g: t for g, _, t, *_ in rows},
        "lowest": {g: lo for g, _, _, lo, *_ in rows if lo is not None},
        "highest": {g: hi for g, _, _, _, hi, *_ in rows if hi is not None},
        "amounts": {g: _multiset(a) for g, *_, a, _, _ in rows},
        "kinds": {g: _multiset(k) for g, *_, k, _ in rows},
        "distinct": {g: d for g, *_, d in rows},
    }


def _multiset(values: list) -> list:
    return sorted(values, key=lambda v: (v is not None, v or 0))


def _table(driver, name: str) -> dict:
    rows = driver.table(name)
    return {g: _multiset(v) for g, v in rows.items()} if name in ("amounts", "kinds") else rows


def _run(spark, log, sizes, partitions):
    current: dict[str, dict] = {}
    with TestDriver(TOPOLOGY, spark=spark, batched=True, partitions=partitions) as driver:
        items = driver.create_input_topic("items", partitions=3)
        position = 0
        ts = 1_000
        null_keys = no_group = 0
        for size in sizes * (len(log) // max(sum(sizes), 1) + 1):
            if position >= len(log):
                break
            before = dict(current)
            for key, value in log[position : position + size]:
                items.pipe_input(key, value, ts)
                ts += 1
                if key is not None:
                    if value is None:
                        current.pop(key, None)
                    else:
                        current[key] = value
            position += size
            driver.advance()
            # A record without a key cannot be read as a table record; a key whose value
            # changed in the batch to a row without a group (that the filter passes) is
            # a skipped record of the grouping, logged once.
            null_keys += sum(1 for key, _ in log[position - size : position] if key is None)
            no_group += sum(
                1 for key, value in current.items()
                if value != before.get(key) and value["grp"] is None
                and (value["amount"] is None or value["amount"] >= 0)
            )
            expected = _expected(current)
            for table, rows in expected.items():
                assert _table(driver, table) == rows, (table, log[:position])
        # A record without a key cannot be read as a table record; a row without a group
        # (that the filter passes) is a skipped record, logged once.
        assert len(driver.processing_log) == null_keys + no_group


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=changes, sizes=batch_sizes)
def test_aggregates_equal_sql_after_every_batch(spark, log, sizes):
    _run(spark, log, sizes, partitions=2)


@settings(max_examples=max(EXAMPLES // 2, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=changes, sizes=batch_sizes)
def test_tiny_arrow_batches_and_more_state_partitions_than_keys(spark, log, sizes):
    """Tasks see Arrow batches of two records and most state partitions hold one key or
    none: the last change of a key must win by its ordering key, not by arrival."""
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "2")
    try:
        _run(spark, log, sizes, partitions=8)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")


@pytest.mark.slow
@settings(max_examples=max(EXAMPLES, 1) * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=changes, sizes=batch_sizes, partitions=st.integers(1, 8))
def test_aggregates_equal_sql_many_examples(spark, log, sizes, partitions):
    """The slow tier: ten times the examples, any number of state partitions."""
    _run(spark, log, sizes, partitions=partitions)

"""Table-table joins against DuckDB: after every batch, each materialized join equals SQL
over the current contents of both input tables (random interleaved changelogs of both
sides, random batch sizes). Foreign-key joins (inner and left, one topology) and
primary-key joins (inner, left and outer, one topology)."""

from __future__ import annotations

import functools
import os

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))

ARROW_BATCH = "spark.sql.execution.arrow.maxRecordsPerBatch"


def _maybe(strategy, one_in: int):
    """``strategy``, or None about once in ``one_in`` draws (shrinks towards a value)."""
    return st.tuples(st.integers(0, one_in - 1), strategy).map(
        lambda drawn: None if drawn[0] == one_in - 1 else drawn[1]
    )


# --- foreign key ---------------------------------------------------------------------------
# Order keys and product keys share strings on purpose: the two key spaces must not mix.
PRODUCT_KEYS = ["a", "b", "c", "d"]
ORDER_KEYS = ["a", "b", "c", "d", "e", "f"]

order_values = _maybe(  # None: a delete
    st.fixed_dictionaries(
        {
            "product": st.sampled_from([*PRODUCT_KEYS, None]),  # None: a null foreign key
            "qty": _maybe(st.integers(-3, 20), 5),
        }
    ),
    4,
)
product_values = _maybe(
    st.fixed_dictionaries(
        {
            "name": _maybe(st.sampled_from(["pen", "ink", "pad"]), 5),
            "price": _maybe(st.integers(0, 99), 5),
        }
    ),
    4,
)
fk_changes = st.lists(
    st.one_of(
        st.tuples(st.just("orders"), st.sampled_from([*ORDER_KEYS, None]), order_values),
        st.tuples(st.just("products"), st.sampled_from([*PRODUCT_KEYS, None]), product_values),
    ),
    min_size=1,
    max_size=24,
)

FK_JOINER = "struct(left.qty AS qty, right.name AS name, right.price AS price)"


FK_STRATEGIES = {
    # both joins over the same two tables (each table read twice: stores of its own)
    "shuffled": (("inner", "left"), False),
    "replicated": (("inner", "left"), True),
    # one join, the only reader of both tables: the join keeps them (records in)
    "replicated-left-join-alone": (("left",), True),
}


@functools.cache
def _fk_topology(strategy: str):
    kinds, replicate = FK_STRATEGIES[strategy]
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING, qty BIGINT")
    products = builder.table("products", value_schema="name STRING, price BIGINT")
    for kind in kinds:
        join = orders.join if kind == "inner" else orders.left_join
        join(products, FK_JOINER, foreign_key="product", materialized_as=kind, replicate_right=replicate)
    return builder.build()


FK_TABLES = {
    "orders": ("k VARCHAR, product VARCHAR, qty BIGINT", ("product", "qty")),
    "products": ("k VARCHAR, name VARCHAR, price BIGINT", ("name", "price")),
}
FK_ORACLE = {
    "inner": "SELECT o.k, o.qty, p.name, p.price FROM orders o JOIN products p ON o.product = p.k",
    "left": "SELECT o.k, o.qty, p.name, p.price FROM orders o LEFT JOIN products p ON o.product = p.k",
}
FK_FIELDS = ("qty", "name", "price")

# --- primary key ---------------------------------------------------------------------------
PK_KEYS = ["k1", "k2", "k3", "k4", "k5"]

a_values = _maybe(st.fixed_dictionaries({"x": _maybe(st.integers(-5, 20), 4)}), 4)
b_values = _maybe(st.fixed_dictionaries({"y": _maybe(st.sampled_from(["u", "v", "w"]), 4)}), 4)
pk_changes = st.lists(
    st.one_of(
        st.tuples(st.just("a"), st.sampled_from([*PK_KEYS, None]), a_values),
        st.tuples(st.just("b"), st.sampled_from([*PK_KEYS, None]), b_values),
    ),
    min_size=1,
    max_size=24,
)

PK_JOINER = "struct(left.x AS x, right.y AS y)"


@functools.cache
def _pk_topology():
    builder = StreamsBuilder()
    a = builder.table("a", value_schema="x BIGINT")
    b = builder.table("b", value_schema="y STRING")
    a.join(b, PK_JOINER, materialized_as="inner")
    a.left_join(b, PK_JOINER, materialized_as="left")
    a.outer_join(b, PK_JOINER, materialized_as="outer")
    return builder.build()


PK_TABLES = {
    "a": ("k VARCHAR, x BIGINT", ("x",)),
    "b": ("k VARCHAR, y VARCHAR", ("y",)),
}
PK_ORACLE = {
    "inner": "SELECT a.k, a.x, b.y FROM a JOIN b ON a.k = b.k",
    "left": "SELECT a.k, a.x, b.y FROM a LEFT JOIN b ON a.k = b.k",
    "outer": "SELECT coalesce(a.k, b.k), a.x, b.y FROM a FULL OUTER JOIN b ON a.k = b.k",
}
PK_FIELDS = ("x", "y")

batch_sizes = st.lists(st.integers(1, 8), min_size=1, max_size=6)


# --- the oracle and the runner --------------------------------------------------------------
def _expected(tables, oracle, fields, current: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Each query of ``oracle`` over the current contents of the input tables, as
    ``{store: {key: {field: value}}}`` (a query's first column is the key)."""
    con = duckdb.connect()
    try:
        for table, (columns, names) in tables.items():
            con.execute(f"CREATE TABLE {table} ({columns})")
            rows = [(k, *(v[n] for n in names)) for k, v in current[table].items()]
            if rows:
                marks = ", ".join("?" * (len(names) + 1))
                con.executemany(f"INSERT INTO {table} VALUES ({marks})", rows)
        expected = {}
        for store, query in oracle.items():
            rows = con.execute(query).fetchall()
            keys = [row[0] for row in rows]
            assert len(keys) == len(set(keys)), (store, rows)  # one result per key
            expected[store] = {row[0]: dict(zip(fields, row[1:], strict=True)) for row in rows}
        return expected
    finally:
        con.close()


def _run(spark, topology, tables, oracle, fields, log, sizes, partitions, topic_partitions):
    """Pipe ``log`` (``(topic, key, value)``) in batches of ``sizes`` (cycled), then one
    last batch deleting every row of the right table; compare every store with the
    oracle after each batch."""
    right = list(tables)[1]
    current: dict[str, dict[str, dict]] = {table: {} for table in tables}
    with TestDriver(topology, spark=spark, batched=True, partitions=partitions) as driver:
        inputs = {
            table: driver.create_input_topic(table, partitions=n)
            for table, n in zip(tables, topic_partitions, strict=True)
        }
        ts = 1_000

        def pipe(batch):
            nonlocal ts
            for table, key, value in batch:
                inputs[table].pipe_input(key, value, ts)
                ts += 1
                if key is not None:
                    if value is None:
                        current[table].pop(key, None)
                    else:
                        current[table][key] = value
            driver.advance()

        def check(context):
            expected = _expected(tables, oracle, fields, current)
            for store, rows in expected.items():
                assert driver.table(store) == rows, (store, context)

        position = 0
        for size in sizes * (len(log) // max(sum(sizes), 1) + 1):
            if position >= len(log):
                break
            pipe(log[position : position + size])
            position += size
            check(log[:position])
        # The right side emptied at once: inner results all retracted, outer ones kept.
        pipe([(right, key, None) for key in sorted(current[right])])
        check("after deleting every row of " + right)
        null_keys = sum(1 for _, key, _ in log if key is None)
        assert len(driver.processing_log) == null_keys, driver.processing_log


def _run_fk(spark, log, sizes, partitions, topic_partitions, strategy="shuffled"):
    _run(
        spark,
        _fk_topology(strategy),
        FK_TABLES,
        {kind: FK_ORACLE[kind] for kind in FK_STRATEGIES[strategy][0]},
        FK_FIELDS,
        log,
        sizes,
        partitions,
        topic_partitions,
    )


def _run_pk(spark, log, sizes, partitions, topic_partitions):
    _run(
        spark,
        _pk_topology(),
        PK_TABLES,
        PK_ORACLE,
        PK_FIELDS,
        log,
        sizes,
        partitions,
        topic_partitions,
    )


# --- properties -----------------------------------------------------------------------------
@pytest.mark.parametrize("strategy", ["shuffled", "replicated"])
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=fk_changes, sizes=batch_sizes)
def test_foreign_key_joins_equal_sql_after_every_batch(spark, strategy, log, sizes):
    """The two topics have different partition counts: a foreign-key join needs no
    co-partitioning. Both ways of keeping the join's state (``replicate_right``)."""
    _run_fk(spark, log, sizes, partitions=2, topic_partitions=(3, 1), strategy=strategy)


@settings(
    max_examples=max(EXAMPLES // 2, 1), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@pytest.mark.parametrize("strategy", ["shuffled", "replicated-left-join-alone"])
@given(log=fk_changes, sizes=batch_sizes)
def test_foreign_key_joins_with_tiny_arrow_batches_and_three_state_partitions(spark, strategy, log, sizes):
    """Tasks see Arrow batches of two records, across three state partitions: the last
    change of each side must win by its ordering key, not by arrival (with a replicated
    right table and the join the only reader of both tables, the join's one stage gets
    the topics' records themselves)."""
    previous = spark.conf.get(ARROW_BATCH, None)
    spark.conf.set(ARROW_BATCH, "2")
    try:
        _run_fk(spark, log, sizes, partitions=3, topic_partitions=(1, 2), strategy=strategy)
    finally:
        if previous is None:
            spark.conf.unset(ARROW_BATCH)
        else:
            spark.conf.set(ARROW_BATCH, previous)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log=pk_changes, sizes=batch_sizes)
def test_primary_key_joins_equal_sql_after_every_batch(spark, log, sizes):
    _run_pk(spark, log, sizes, partitions=2, topic_partitions=(2, 2))


@pytest.mark.slow
@settings(
    max_examples=max(EXAMPLES, 1) * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    log=fk_changes,
    sizes=batch_sizes,
    partitions=st.integers(1, 8),
    topic_partitions=st.tuples(st.integers(1, 4), st.integers(1, 4)),
)
@pytest.mark.parametrize("strategy", list(FK_STRATEGIES))
def test_foreign_key_joins_equal_sql_many_examples(spark, strategy, log, sizes, partitions, topic_partitions):
    """The slow tier: ten times the examples, any number of state partitions, any
    partition counts of the two topics."""
    _run_fk(spark, log, sizes, partitions=partitions, topic_partitions=topic_partitions, strategy=strategy)


@pytest.mark.slow
@settings(
    max_examples=max(EXAMPLES, 1) * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    log=pk_changes,
    sizes=batch_sizes,
    partitions=st.integers(1, 8),
    topic_partitions=st.integers(1, 4),
)
def test_primary_key_joins_equal_sql_many_examples(spark, log, sizes, partitions, topic_partitions):
    """The slow tier: ten times the examples, any number of state partitions (both
    topics with the same partition count: a primary-key join is co-partitioned)."""
    _run_pk(
        spark,
        log,
        sizes,
        partitions=partitions,
        topic_partitions=(topic_partitions, topic_partitions),
    )

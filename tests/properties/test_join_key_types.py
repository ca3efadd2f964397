"""Joins over keys of random types against DuckDB: never an empty result without a trace.

Each example takes one kind of join (stream-table, table-table on primary keys, or
foreign-key with a column, SQL or callable extractor), draws the key type of its left
side (no key schema, STRING, INT, BIGINT, DOUBLE; a callable's foreign keys are Python
values of any JSON type) and joins it with five right tables, one of each key type,
fed with records whose keys come from small overlapping pools. For each right table,
exactly one of:

- the types can never match (the rule below): building the topology fails, or for a
  Spark Column creating the driver, with ksqlDB's "types don't match";
- the join's results equal DuckDB's join over the values converted to the looked-up
  table's key type, after every batch, and each record whose key does not convert has
  one processing-log entry per join that reads it.

The rule, written here apart from the code: a string converts to STRING, an integer to
INT or BIGINT when in range, a float to DOUBLE; a key without key schema is read as
``pipe_input`` writes it (an int as 8 bytes, read back as a BIGINT; a str as text), and
converts to STRING or BIGINT as that value would. Two types can match when one of their
values can convert.
"""

from __future__ import annotations

import json
import os

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from tablestream.dsl import StreamsBuilder
from tablestream.plan import JoinTypeError
from tablestream.storage.formats import get_format
from tablestream.storage.undeclared import undeclared_kafka_value
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))

KEY_TYPES = (None, "STRING", "INT", "BIGINT", "DOUBLE")  # None: no key schema
FK_TYPES = ("STRING", "INT", "BIGINT", "DOUBLE")  # a foreign key field's declared type
POOLS = {
    None: (1, 2, 2**40, "1", "a"),
    "STRING": ("1", "2", "a"),
    "INT": (1, 2, 3),
    "BIGINT": (1, 2, 2**40),
    "DOUBLE": (1.0, 2.0, 2.5),
}
JSON_POOL = (1, 2, 2**40, "1", "a", 2.0, True, {"id": 1})  # a callable's foreign keys
RANGES = {"INT": 2**31, "BIGINT": 2**63}
MISSING = object()  # a value that does not convert
JOINS = ("stream-table", "table-table", "fk-column", "fk-sql", "fk-callable")


# --- the rule --------------------------------------------------------------------------------
def convert(value, target):
    """``value`` as a key of type ``target`` (None: no key schema), or MISSING."""
    if value is None:
        return None
    if isinstance(value, bool):
        return MISSING
    if isinstance(value, int) and target in (None, "INT", "BIGINT"):
        bound = RANGES[target or "BIGINT"]
        return value if -bound <= value < bound else MISSING
    if isinstance(value, str) and target in (None, "STRING"):
        return value
    if isinstance(value, float) and target == "DOUBLE":
        return value
    return MISSING


def can_match(source, target) -> bool:
    """Whether some value of type ``source`` converts to ``target``."""
    family = {"STRING": "STRING", "INT": "INTEGER", "BIGINT": "INTEGER", "DOUBLE": "DOUBLE"}
    if source is None or target is None:
        return (target if source is None else source) in (None, "STRING", "INT", "BIGINT")
    return family[source] == family[target]


def read(key, key_type):
    """A key as its table reads it back (without key schema, as ``pipe_input`` writes)."""
    if key_type is None:
        return undeclared_kafka_value(get_format("KAFKA").serialize(key))
    return key


def text(value) -> str | None:
    """A key's JSON text, so DuckDB compares keys of any type (None stays NULL)."""
    return None if value is None or value is MISSING else json.dumps(value)


# --- the examples ----------------------------------------------------------------------------
def right_topic(key_type) -> str:
    return f"r_{(key_type or 'none').lower()}"


def values(name: str):
    return st.fixed_dictionaries({name: st.integers(0, 9)})


@st.composite
def examples(draw, join: str):
    """The left key type, and the batches of ``(topic, key, value)`` records."""
    rights = [
        st.tuples(st.just(right_topic(t)), st.sampled_from(POOLS[t]), st.one_of(st.none(), values("w")))
        for t in KEY_TYPES
    ]
    if join.startswith("fk"):
        source_type = None if join == "fk-callable" else draw(st.sampled_from(FK_TYPES))
        pool = JSON_POOL if join == "fk-callable" else POOLS[source_type]
        value = st.fixed_dictionaries({"fk": st.one_of(st.none(), st.sampled_from(pool)), "v": st.integers(0, 9)})
        left = st.tuples(st.just("l"), st.sampled_from(("o1", "o2", "o3")), st.one_of(st.none(), value))
    else:
        source_type = draw(st.sampled_from(KEY_TYPES))
        deletes = st.none() if join == "table-table" else st.nothing()
        left = st.tuples(st.just("l"), st.sampled_from(POOLS[source_type]), st.one_of(deletes, values("v")))
    if join == "stream-table":  # the tables first, then the stream records that look them up
        batches = [draw(st.lists(st.one_of(*rights), min_size=1, max_size=12)),
                   draw(st.lists(left, min_size=1, max_size=6))]
    else:
        records = draw(st.lists(st.one_of(left, *rights), min_size=1, max_size=20))
        cut = draw(st.integers(0, len(records)))
        batches = [records[:cut], records[cut:]]
    return source_type, batches


def joiner():
    """``{"v": left.v, "w": right.w}`` (None for a missing side), over values with or
    without a schema (made here: Spark's workers cannot import this module)."""

    def join(left, right):
        return {"v": None if left is None else left["v"], "w": None if right is None else right["w"]}

    return join


KINDS = {"stream-table": ("join", "left_join"), "table-table": ("join", "left_join", "outer_join")}


def topology(join: str, source_type, right_types):
    """The join of the left side with each right table (``<kind>-<topic>`` names a
    table join's store, a stream join's output topic)."""
    builder = StreamsBuilder()
    if join in ("stream-table", "table-table"):
        read = builder.stream if join == "stream-table" else builder.table
        left, foreign_key = read("l", key_schema=source_type, value_schema="v BIGINT"), None
    elif join == "fk-callable":
        left, foreign_key = builder.table("l"), (lambda value: value["fk"])
    else:
        left = builder.table("l", value_schema=f"fk {source_type}, v BIGINT")
        foreign_key = F.col("value.fk") if join == "fk-column" else "fk"
    for right_type in right_types:
        topic = right_topic(right_type)
        right = builder.table(topic, key_schema=right_type, value_schema="w BIGINT")
        for kind in KINDS.get(join, ("join", "left_join")):
            if join == "stream-table":
                getattr(left, kind)(right, joiner()).to(f"{kind}-{topic}")
            elif join == "table-table":
                getattr(left, kind)(right, joiner(), materialized_as=f"{kind}-{topic}")
            else:
                getattr(left, kind)(right, joiner(), foreign_key=foreign_key, materialized_as=f"{kind}-{topic}")
    return builder.build()


# --- the oracle ------------------------------------------------------------------------------
def query(sql: str, tables: dict[str, tuple[str, list[tuple]]]) -> list[tuple]:
    con = duckdb.connect()
    try:
        for name, (columns, rows) in tables.items():
            con.execute(f"CREATE TABLE {name} ({columns})")
            if rows:
                con.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        return con.execute(sql).fetchall()
    finally:
        con.close()


TABLE_SQL = {
    "join": "SELECT l.k, l.v, r.w FROM l JOIN r ON l.ck = r.k",
    "left_join": "SELECT l.k, l.v, r.w FROM l LEFT JOIN r ON l.ck = r.k",
    "outer_join": "SELECT coalesce(l.k, r.lk) AS k, l.v, r.w FROM l FULL JOIN r ON l.ck = r.k "
                  "WHERE coalesce(l.k, r.lk) IS NOT NULL",
}


def table_oracle(join, source_type, right_type, left_rows, right_rows) -> dict[str, dict]:
    """Each materialized join with one right table as DuckDB computes it over the
    converted keys (a right key alone keyed by its value as a left key)."""
    right = [(text(read(k, right_type)), text(convert(read(k, right_type), source_type)), v["w"])
             for k, v in right_rows.items()]
    if join == "table-table":
        left = [(text(read(k, source_type)), text(convert(read(k, source_type), right_type)), v["v"])
                for k, v in left_rows.items()]
    else:
        left = [(text(k), text(convert(v["fk"], right_type)), v["v"]) for k, v in left_rows.items()]
    tables = {"l": ("k VARCHAR, ck VARCHAR, v BIGINT", left), "r": ("k VARCHAR, lk VARCHAR, w BIGINT", right)}
    topic = right_topic(right_type)
    return {
        f"{kind}-{topic}": {k: {"v": v, "w": w} for k, v, w in query(TABLE_SQL[kind], tables)}
        for kind in KINDS.get(join, ("join", "left_join"))
    }


def logged(join, source_type, right_type, before, after) -> int:
    """Processing-log entries of one batch for one right table: per join, each changed
    left row whose key (foreign key) does not convert; in the outer join, each changed
    right row whose key has no value of the left key type."""
    count = 0
    for k in set(before["l"]) | set(after["l"]):
        new = after["l"].get(k)
        if new is None or new == before["l"].get(k):
            continue
        key = new["fk"] if join.startswith("fk") else read(k, source_type)
        count += convert(key, right_type) is MISSING
    count *= len(KINDS.get(join, ("join", "left_join")))
    if join == "table-table":
        topic = right_topic(right_type)
        for k in set(before[topic]) | set(after[topic]):
            if before[topic].get(k) != after[topic].get(k):
                count += convert(read(k, right_type), source_type) is MISSING
    return count


def stream_oracle(source_type, right_type, table, records) -> tuple[dict[str, list], int]:
    """What each stream join with one right table writes, and its log entries."""
    right = [(text(read(k, right_type)), v["w"]) for k, v in table.items()]
    stream = [(i, text(convert(read(k, source_type), right_type)), v["v"]) for i, (_, k, v) in enumerate(records)]
    tables = {"s": ("i INTEGER, ck VARCHAR, v BIGINT", stream), "r": ("k VARCHAR, w BIGINT", right)}
    keys = [read(k, source_type) for _, k, _ in records]
    topic = right_topic(right_type)
    expected = {
        f"{kind}-{topic}": [(keys[i], {"v": v, "w": w}) for i, v, w in query(
            f"SELECT s.i, s.v, r.w FROM s {how} JOIN r ON s.ck = r.k ORDER BY s.i", tables
        )]
        for kind, how in (("join", "INNER"), ("left_join", "LEFT"))
    }
    return expected, 2 * sum(1 for _, ck, _ in stream if ck is None)


# --- running ---------------------------------------------------------------------------------
def table_keys(contents: dict) -> dict:
    """A materialized table's keys as JSON text (keys without key schema are read back as
    ``pipe_input`` wrote them)."""
    return {text(k): v for k, v in contents.items()}


def check_refused(spark, join, source_type, right_type):
    """A join of types that never match fails to build, or with a Spark Column (whose
    type Spark knows), when the driver is created and analyzes it."""
    if join != "fk-column":
        with pytest.raises(JoinTypeError, match="types don't match"):
            topology(join, source_type, [right_type])
        return
    with pytest.raises(JoinTypeError, match="types don't match"):
        TestDriver(topology(join, source_type, [right_type]), spark=spark)


def run(spark, join, source_type, batches):
    matching = [t for t in KEY_TYPES if join == "fk-callable" or can_match(source_type, t)]
    for right_type in KEY_TYPES:
        if right_type not in matching:
            check_refused(spark, join, source_type, right_type)
    with TestDriver(topology(join, source_type, matching), spark=spark, batched=True, partitions=2) as driver:
        inputs = {topic: driver.create_input_topic(topic) for topic in ("l", *map(right_topic, matching))}
        current: dict[str, dict] = {topic: {} for topic in ("l", *map(right_topic, KEY_TYPES))}
        ts, entries = 1, 0
        for batch in batches:
            before = {topic: dict(rows) for topic, rows in current.items()}
            for topic, key, value in batch:
                if topic in inputs:
                    inputs[topic].pipe_input(key, value, ts)
                    ts += 1
                if join == "stream-table" and topic == "l":
                    continue  # stream records are not kept
                if value is None:
                    current[topic].pop(key, None)
                else:
                    current[topic][key] = value
            driver.advance()
            for right_type in matching:
                topic = right_topic(right_type)
                if join != "stream-table":
                    entries += logged(join, source_type, right_type, before, current)
                    oracle = table_oracle(join, source_type, right_type, current["l"], current[topic])
                    for store, rows in oracle.items():
                        assert table_keys(driver.table(store)) == rows, store
                elif batch and batch[0][0] == "l":
                    expected, count = stream_oracle(source_type, right_type, current[topic], batch)
                    entries += count
                    key_format = None if source_type is None else get_format("KAFKA", source_type)
                    for output, records in expected.items():
                        got = driver.create_output_topic(output, key_format=key_format).read_key_values()
                        assert got == records, output
            assert len(driver.processing_log) == entries, driver.processing_log
            assert all("cannot" in entry["error"] for entry in driver.processing_log), driver.processing_log


# The left key type of the example that pairs every key of the pools (per kind of join).
EVERY_KEY = {"stream-table": None, "table-table": None, "fk-column": "BIGINT", "fk-sql": "INT", "fk-callable": None}


def every_key(join: str):
    """Every key of the right pools in their tables, every left key (foreign key) of its
    pool looking them up; then the first key of each right table deleted and every left
    row updated."""
    source_type = EVERY_KEY[join]
    rights = [(right_topic(t), key, {"w": i}) for t in KEY_TYPES for i, key in enumerate(POOLS[t])]
    if join.startswith("fk"):
        pool = JSON_POOL if join == "fk-callable" else POOLS[source_type]
        lefts = [("l", f"o{i}", {"fk": fk, "v": i}) for i, fk in enumerate(pool)]
        updates = [("l", f"o{i}", {"fk": fk, "v": i + 10}) for i, fk in enumerate(pool)]
    else:
        lefts = [("l", key, {"v": i}) for i, key in enumerate(POOLS[source_type])]
        updates = [("l", key, {"v": i + 10}) for i, key in enumerate(POOLS[source_type])]
    deletes = [(right_topic(t), POOLS[t][0], None) for t in KEY_TYPES]
    if join == "stream-table":
        return source_type, [rights, lefts, deletes, updates]
    return source_type, [rights + lefts, deletes + updates]


@pytest.mark.parametrize("join", JOINS)
def test_every_key_of_the_pools_against_every_right_table(spark, join):
    run(spark, join, *every_key(join))


@pytest.mark.parametrize("join", JOINS)
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_joins_across_key_types_match_as_duckdb_or_refuse_or_log(spark, join, data):
    run(spark, join, *data.draw(examples(join)))


@pytest.mark.slow
@pytest.mark.parametrize("join", JOINS)
@settings(max_examples=max(EXAMPLES, 1) * 10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_joins_across_key_types_many_examples(spark, join, data):
    run(spark, join, *data.draw(examples(join)))

"""Exact-record scenarios for the stateless operators of the DSL, run through the test
driver: keys, values and timestamps of every record written.

Most tests pipe several records and run them as one batch (``batched=True``), which is
much faster than one batch per record; several advance batch by batch to show a table's
changelog. Within a batch the output order is fixed per key and free across keys
(DESIGN.md, "Semantics contract"), so batched outputs are compared per key
(:func:`by_key`); outputs of separate batches are compared batch by batch.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

ORDER = "name STRING, qty BIGINT"

Input = tuple[str, Any, Any, int]  # (topic, key, value, timestamp)


# ----------------------------------------------------------------------------- helpers
def by_key(records: Iterable[TestRecord]) -> dict[Any, list[tuple[Any, int]]]:
    """``key -> [(value, timestamp), ...]`` in output order: per-key order is kept,
    order across keys is not (it is free within a batch)."""
    result: dict[Any, list[tuple[Any, int]]] = {}
    for record in records:
        result.setdefault(record.key, []).append((record.value, record.timestamp))
    return result


def run_batches(
    spark, builder: StreamsBuilder, batches: Sequence[Sequence[Input]], *topics: str
) -> list[dict[str, list[TestRecord]]]:
    """Run each group of input records as one batch; per batch, the records written to
    each of ``topics``."""
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        return _drive(driver, batches, topics)


def run_batch(
    spark, builder: StreamsBuilder, records: Sequence[Input], *topics: str
) -> dict[str, list[TestRecord]]:
    """Run ``records`` as one batch; the records written to each of ``topics``."""
    return run_batches(spark, builder, [records], *topics)[0]


def _drive(
    driver: TestDriver, batches: Sequence[Sequence[Input]], topics: Sequence[str]
) -> list[dict[str, list[TestRecord]]]:
    inputs = {}
    outputs = {topic: driver.create_output_topic(topic) for topic in topics}
    results = []
    for batch in batches:
        for topic, key, value, timestamp in batch:
            if topic not in inputs:
                inputs[topic] = driver.create_input_topic(topic)
            inputs[topic].pipe_input(key, value, timestamp)
        driver.advance()
        results.append({topic: out.read_records() for topic, out in outputs.items()})
    return results


def recorder(path: Path) -> Callable[[Any, Any], None]:
    """A peek action that appends each ``(key, value)`` it is called with to ``path``
    (the action runs in Spark's Python workers, so it records to a file)."""

    def action(key: Any, value: Any) -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps([key, value]) + "\n")

    return action


def recorded_calls(path: Path) -> list[tuple[Any, str]]:
    """The calls :func:`recorder` wrote: ``(key, value as canonical JSON)``."""
    if not path.exists():
        return []
    calls = []
    for line in path.read_text(encoding="utf-8").splitlines():
        key, value = json.loads(line)
        calls.append((key, json.dumps(value, sort_keys=True)))
    return calls


def call(key: Any, value: Any) -> tuple[Any, str]:
    return key, json.dumps(value, sort_keys=True)


R = TestRecord
X1 = {"name": "x", "qty": 1}
Y2 = {"name": "y", "qty": 2}
Z3 = {"name": "z", "qty": 3}
W5 = {"name": "w", "qty": 5}

ORDERS: list[Input] = [("in", "a", X1, 10), ("in", "b", Y2, 11), ("in", "c", Z3, 12)]


# ------------------------------------------------------------------ KStream: filter
def test_filter_and_filter_not_split_the_records_between_them(spark):
    """filter keeps the records whose SQL predicate holds; filter_not keeps the others.
    A predicate that is null (a tombstone has no qty) counts as false."""
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.filter("qty > 1").to("passing")
    s.filter_not("qty > 1").to("failing")
    out = run_batch(spark, b, [*ORDERS, ("in", "d", None, 13)], "passing", "failing")
    assert by_key(out["passing"]) == by_key([R("b", Y2, 11), R("c", Z3, 12)])
    assert by_key(out["failing"]) == by_key([R("a", X1, 10), R("d", None, 13)])


def test_filter_with_a_callable_and_with_a_column(spark):
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.filter(lambda key, value: value["qty"] % 2 == 1).to("odd")
    s.filter(F.col("value.qty") >= 2).to("big")
    s.filter_not(lambda key, value: key == "b").to("not-b")
    out = run_batch(spark, b, ORDERS, "odd", "big", "not-b")
    assert by_key(out["odd"]) == by_key([R("a", X1, 10), R("c", Z3, 12)])
    assert by_key(out["big"]) == by_key([R("b", Y2, 11), R("c", Z3, 12)])
    assert by_key(out["not-b"]) == by_key([R("a", X1, 10), R("c", Z3, 12)])


# -------------------------------------------------------------- KStream: map_values
def test_map_values_with_sql_struct_keeps_keys_and_timestamps(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).filter("qty > 1").map_values(
        "struct(upper(name) AS name, qty * 2 AS qty)"
    ).to("out")
    out = run_batch(spark, b, ORDERS, "out")["out"]
    assert by_key(out) == by_key(
        [R("b", {"name": "Y", "qty": 4}, 11), R("c", {"name": "Z", "qty": 6}, 12)]
    )


def test_map_values_keeps_datetime_patterns_as_written(spark):
    """'y' reads a two-digit year as it is (year 21); 'yyyy' would refuse it."""
    b = StreamsBuilder()
    b.stream("in", value_schema="d STRING").map_values(
        "struct(CAST(to_date(value.d, 'd/M/y') AS STRING) AS day, date_format(to_date(value.d, 'd/M/y'), 'y E') AS text)"
    ).to("out")
    out = run_batch(spark, b, [("in", "a", {"d": "1/2/21"}, 5)], "out")["out"]
    assert out == [R("a", {"day": "0021-02-01", "text": "21 Mon"}, 5)]


def test_map_values_with_a_spark_column(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).map_values(F.col("value.qty") * 10).to("out")
    out = run_batch(spark, b, ORDERS, "out")["out"]
    assert by_key(out) == by_key([R("a", 10, 10), R("b", 20, 11), R("c", 30, 12)])


def test_map_values_with_callables_of_value_and_of_key_and_value(spark):
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.map_values(lambda value: {"name": value["name"] * 2, "qty": value["qty"] + 1}).to(
        "value-only"
    )
    s.map_values(lambda key, value: f"{key}:{value['name']}:{value['qty']}").to("key-and-value")
    out = run_batch(spark, b, ORDERS, "value-only", "key-and-value")
    assert by_key(out["value-only"]) == by_key(
        [
            R("a", {"name": "xx", "qty": 2}, 10),
            R("b", {"name": "yy", "qty": 3}, 11),
            R("c", {"name": "zz", "qty": 4}, 12),
        ]
    )
    assert by_key(out["key-and-value"]) == by_key(
        [R("a", "a:x:1", 10), R("b", "b:y:2", 11), R("c", "c:z:3", 12)]
    )


def test_chained_callables_receive_the_previous_result_as_python_values(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).map_values(
        lambda v: {"n": v["name"], "q": [v["qty"]] * 2}
    ).map_values(lambda v: f"{type(v).__name__}:{v['n']}:{sum(v['q'])}").to("out")
    out = run_batch(spark, b, ORDERS[:2], "out")["out"]
    assert by_key(out) == by_key([R("a", "dict:x:2", 10), R("b", "dict:y:4", 11)])


# --------------------------------------------------------------------- KStream: map
def test_map_with_a_pair_of_sql_expressions(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).map(("upper(name)", "qty + 100")).to("out")
    out = run_batch(spark, b, [*ORDERS, ("in", "d", {"name": "x", "qty": 4}, 13)], "out")["out"]
    assert by_key(out) == by_key(
        [R("X", 101, 10), R("Y", 102, 11), R("Z", 103, 12), R("X", 104, 13)]
    )


def test_map_with_a_callable(spark):
    """New keys of any type (here BIGINT), new values of any shape; timestamps kept."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).map(
        lambda k, v: (v["qty"] * 10, {"was": k, "name": v["name"]})
    ).to("out")
    out = run_batch(spark, b, ORDERS, "out")["out"]
    assert by_key(out) == by_key(
        [
            R(10, {"was": "a", "name": "x"}, 10),
            R(20, {"was": "b", "name": "y"}, 11),
            R(30, {"was": "c", "name": "z"}, 12),
        ]
    )


# --------------------------------------------------------- KStream: flat_map(_values)
def test_flat_map_with_a_callable(spark):
    """Zero or more records per record, each with its own key and the input's timestamp;
    one input record's outputs keep the order the mapper gave them."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).flat_map(
        lambda k, v: [(f"{k}{i}", i) for i in range(v["qty"] - 1)] + [("all", k)]
    ).to("out")
    out = run_batch(spark, b, ORDERS, "out")["out"]
    assert by_key(out) == by_key(
        [
            R("all", "a", 10),
            R("b0", 0, 11),
            R("all", "b", 11),
            R("c0", 0, 12),
            R("c1", 1, 12),
            R("all", "c", 12),
        ]
    )


def test_flat_map_with_sql(spark):
    b = StreamsBuilder()
    b.stream("baskets", value_schema="customer STRING, items ARRAY<STRING>").flat_map(
        "transform(items, i -> struct(i AS key, customer AS value))"
    ).to("out")
    records = [
        ("baskets", "o1", {"customer": "c1", "items": ["pen", "ink"]}, 10),
        ("baskets", "o2", {"customer": "c2", "items": []}, 11),
        ("baskets", "o3", {"customer": "c3", "items": ["pen"]}, 12),
    ]
    out = run_batch(spark, b, records, "out")["out"]
    assert by_key(out) == by_key([R("pen", "c1", 10), R("ink", "c1", 10), R("pen", "c3", 12)])


def test_flat_map_values_with_sql_and_callables(spark):
    """Each output value keeps the input's key and timestamp, in the mapper's order."""
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.flat_map_values("sequence(1, qty)").to("sql")
    s.flat_map_values(lambda v: [v["name"] * i for i in range(1, v["qty"])]).to("value-only")
    s.flat_map_values(lambda k, v: [k, v["name"]]).to("key-and-value")
    out = run_batch(spark, b, ORDERS, "sql", "value-only", "key-and-value")
    assert by_key(out["sql"]) == {
        "a": [(1, 10)],
        "b": [(1, 11), (2, 11)],
        "c": [(1, 12), (2, 12), (3, 12)],
    }
    assert by_key(out["value-only"]) == {"b": [("y", 11)], "c": [("z", 12), ("zz", 12)]}
    assert by_key(out["key-and-value"]) == {
        "a": [("a", 10), ("x", 10)],
        "b": [("b", 11), ("y", 11)],
        "c": [("c", 12), ("z", 12)],
    }


def test_flat_map_and_flat_map_values_with_spark_columns(spark):
    """A Spark Column works as the mapper as SQL text does: an array of values, or of
    ``struct<key, value>`` records."""
    b = StreamsBuilder()
    baskets = b.stream("baskets", value_schema="customer STRING, items ARRAY<STRING>")
    baskets.flat_map(
        F.transform(F.col("value.items"), lambda i: F.struct(i.alias("key"), F.col("value.customer").alias("value")))
    ).to("records")
    baskets.flat_map_values(F.col("value.items")).to("values")
    records = [
        ("baskets", "o1", {"customer": "c1", "items": ["pen", "ink"]}, 10),
        ("baskets", "o2", {"customer": "c2", "items": []}, 11),
        ("baskets", "o3", {"customer": "c3", "items": ["pen"]}, 12),
    ]
    out = run_batch(spark, b, records, "records", "values")
    assert by_key(out["records"]) == by_key([R("pen", "c1", 10), R("ink", "c1", 10), R("pen", "c3", 12)])
    assert by_key(out["values"]) == {"o1": [("pen", 10), ("ink", 10)], "o3": [("pen", 12)]}


# -------------------------------------------------------------- KStream: select_key
def test_select_key_with_sql_callable_and_column(spark):
    """The key changes, value and timestamp do not."""
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.select_key("name").to("by-name")
    s.select_key(lambda k, v: k + v["name"]).to("by-callable")
    s.select_key(F.col("value.qty") * 100).to("by-column")
    out = run_batch(spark, b, ORDERS, "by-name", "by-callable", "by-column")
    assert by_key(out["by-name"]) == by_key([R("x", X1, 10), R("y", Y2, 11), R("z", Z3, 12)])
    assert by_key(out["by-callable"]) == by_key([R("ax", X1, 10), R("by", Y2, 11), R("cz", Z3, 12)])
    assert by_key(out["by-column"]) == by_key([R(100, X1, 10), R(200, Y2, 11), R(300, Z3, 12)])


# --------------------------------------------------------------------- KStream: peek
def test_peek_passes_records_on_unchanged_and_sees_python_values(spark, tmp_path):
    calls = tmp_path / "calls.jsonl"
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).peek(recorder(calls)).map_values("qty").to("out")
    out = run_batch(spark, b, [*ORDERS, ("in", "d", None, 13)], "out")["out"]
    assert by_key(out) == by_key([R("a", 1, 10), R("b", 2, 11), R("c", 3, 12), R("d", None, 13)])
    assert set(recorded_calls(calls)) == {
        call("a", X1),
        call("b", Y2),
        call("c", Z3),
        call("d", None),
    }


def test_peek_calls_the_action_once_per_record(spark, tmp_path):
    calls = tmp_path / "calls.jsonl"
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).peek(recorder(calls)).to("out")
    out = run_batch(spark, b, ORDERS, "out")["out"]
    assert by_key(out) == by_key([R("a", X1, 10), R("b", Y2, 11), R("c", Z3, 12)])
    assert Counter(recorded_calls(calls)) == Counter([call("a", X1), call("b", Y2), call("c", Z3)])


# -------------------------------------------------------------------- KStream: merge
def test_merge_keeps_every_record_of_both_streams(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).merge(b.stream("in2", value_schema=ORDER)).to("out")
    records = [*ORDERS, ("in2", "d", W5, 5), ("in2", "a", Y2, 20)]
    out = run_batch(spark, b, records, "out")["out"]
    assert by_key(out) == by_key(
        [R("d", W5, 5), R("a", X1, 10), R("b", Y2, 11), R("c", Z3, 12), R("a", Y2, 20)]
    )


def test_merge_of_a_callable_mapped_stream_and_a_schema_stream(spark):
    b = StreamsBuilder()
    mapped = b.stream("in", value_schema=ORDER).map_values(
        lambda v: {"name": v["name"].upper(), "qty": v["qty"]}
    )
    mapped.merge(b.stream("in2", value_schema=ORDER)).to("out")
    out = run_batch(spark, b, [("in", "a", X1, 10), ("in2", "d", W5, 5)], "out")["out"]
    assert by_key(out) == by_key([R("a", {"name": "X", "qty": 1}, 10), R("d", W5, 5)])


# -------------------------------------------------------------------- KStream: split
def test_split_sends_each_record_to_the_first_matching_branch_or_the_default(spark):
    b = StreamsBuilder()
    branches = (
        b.stream("in", value_schema=ORDER)
        .split(name="size-")
        .branch("qty >= 3", name="big")
        .branch(lambda k, v: v is not None and v["qty"] >= 2, name="mid")
        .default_branch(name="small")
    )
    assert list(branches) == ["size-big", "size-mid", "size-small"]
    for name, stream in branches.items():
        stream.to(name)
    records = [*ORDERS, ("in", "d", W5, 13), ("in", "e", None, 14)]
    out = run_batch(spark, b, records, "size-big", "size-mid", "size-small")
    assert by_key(out["size-big"]) == by_key([R("c", Z3, 12), R("d", W5, 13)])  # d matches mid too
    assert by_key(out["size-mid"]) == by_key([R("b", Y2, 11)])
    assert by_key(out["size-small"]) == by_key([R("a", X1, 10), R("e", None, 14)])


def test_split_without_default_branch_drops_unmatched_records(spark):
    b = StreamsBuilder()
    branches = (
        b.stream("in", value_schema=ORDER)
        .split()
        .branch("qty >= 3")
        .branch(F.col("value.qty") >= 2)
        .no_default_branch()
    )
    assert list(branches) == ["KSTREAM-BRANCH-00000000011", "KSTREAM-BRANCH-00000000012"]
    first, second = branches.values()
    first.to("first")
    second.to("second")
    records = [*ORDERS, ("in", "d", W5, 13), ("in", "e", None, 14)]
    out = run_batch(spark, b, records, "first", "second")
    assert by_key(out["first"]) == by_key([R("c", Z3, 12), R("d", W5, 13)])
    assert by_key(out["second"]) == by_key([R("b", Y2, 11)])


# -------------------------------------------------------------- KStream: repartition
def test_repartition_passes_records_on_unchanged(spark):
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.select_key("name").repartition(name="by-name", partitions=3).map_values("qty").to("rekeyed")
    s.repartition().to("same")
    out = run_batch(
        spark, b, [*ORDERS, ("in", "d", {"name": "x", "qty": 4}, 13)], "rekeyed", "same"
    )
    assert by_key(out["rekeyed"]) == by_key(
        [R("x", 1, 10), R("y", 2, 11), R("z", 3, 12), R("x", 4, 13)]
    )
    assert by_key(out["same"]) == by_key(
        [*(R(k, v, ts) for _, k, v, ts in ORDERS), R("d", {"name": "x", "qty": 4}, 13)]
    )


# ----------------------------------------------------------------- KStream: to_table
def test_to_table_upserts_deletes_and_drops_null_keys(spark):
    """Each batch emits one record per key whose value changed (the last one in the
    batch); a tombstone for an absent key and a repeat of the current value emit
    nothing; a record with a null key is dropped."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).to_table(materialized_as="orders").to("out")
    batches = [
        [("in", "a", X1, 10), ("in", "b", Y2, 11), ("in", None, W5, 12), ("in", "c", None, 13)],
        [("in", "a", Z3, 20), ("in", "b", None, 21), ("in", "d", X1, 22), ("in", "d", W5, 23)],
        [("in", "b", None, 30), ("in", "a", Z3, 31), ("in", "d", None, 32)],
    ]
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        runs = _drive(driver, batches[:1], ["out"])
        assert driver.table("orders") == {"a": X1, "b": Y2}
        runs += _drive(driver, batches[1:2], ["out"])
        assert driver.table("orders") == {"a": Z3, "d": W5}
        runs += _drive(driver, batches[2:], ["out"])
        assert driver.table("orders") == {"a": Z3}
    assert [by_key(r["out"]) for r in runs] == [
        by_key([R("a", X1, 10), R("b", Y2, 11)]),
        by_key([R("a", Z3, 20), R("b", None, 21), R("d", W5, 23)]),
        by_key([R("d", None, 32)]),
    ]


def test_to_table_changelog_record_by_record(spark):
    """One record per batch (the driver's default): every change is emitted."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).to_table().to("out")
    with TestDriver(b.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        topic.pipe_input("a", X1, 10)
        topic.pipe_input("a", Y2, 11)
        topic.pipe_input("a", Y2, 12)  # a repeat: nothing
        topic.pipe_input("a", None, 13)
        assert driver.create_output_topic("out").read_records() == [
            R("a", X1, 10),
            R("a", Y2, 11),
            R("a", None, 13),
        ]


def test_to_table_later_offset_wins_within_a_batch_even_with_an_older_timestamp(spark):
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).to_table(materialized_as="orders").to("out")
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        out = _drive(driver, [[("in", "a", X1, 20), ("in", "a", Y2, 5)]], ["out"])[0]["out"]
        assert out == [R("a", Y2, 5)]
        assert driver.table("orders") == {"a": Y2}


def test_to_table_of_a_stream_rekeyed_with_sql(spark):
    """A marked stream is repartitioned before the table: rows are keyed by the new key."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).select_key("name").map_values("qty").to_table(
        materialized_as="by-name"
    ).to("out")
    records = [("in", "a", X1, 10), ("in", "b", Y2, 11), ("in", "c", {"name": "x", "qty": 3}, 12)]
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        out = _drive(driver, [records], ["out"])[0]["out"]
        assert driver.table("by-name") == {"x": 3, "y": 2}
    assert by_key(out) == by_key([R("x", 3, 12), R("y", 2, 11)])


@pytest.mark.parametrize(
    "rekey",
    [
        pytest.param(lambda s: s.map(lambda k, v: (v["name"], v["qty"])), id="map"),
        pytest.param(
            lambda s: s.select_key(lambda k, v: v["name"]).map_values("qty"), id="select_key"
        ),
        pytest.param(lambda s: s.flat_map(lambda k, v: [(v["name"], v["qty"])]), id="flat_map"),
    ],
)
def test_to_table_of_a_stream_rekeyed_by_a_callable(spark, rekey):
    b = StreamsBuilder()
    rekey(b.stream("in", value_schema=ORDER)).to_table().to("out")
    records = [("in", "a", X1, 10), ("in", "b", Y2, 11), ("in", "c", {"name": "x", "qty": 3}, 12)]
    out = run_batch(spark, b, records, "out")["out"]
    assert by_key(out) == by_key([R("x", 3, 12), R("y", 2, 11)])


# ----------------------------------------------------------------------- KStream: to
def test_to_writes_in_the_formats_asked(spark):
    b = StreamsBuilder()
    s = b.stream("in", value_schema=ORDER)
    s.to("as-avro", value_format="avro", value_schema=ORDER)
    s.to("as-delimited", value_format="delimited", value_schema=ORDER)
    s.to("as-json")
    records = [*ORDERS, ("in", "d", None, 13)]
    out = run_batch(spark, b, records, "as-avro", "as-delimited", "as-json")
    expected = by_key([*(R(k, v, ts) for _, k, v, ts in ORDERS), R("d", None, 13)])
    assert by_key(out["as-avro"]) == expected
    assert by_key(out["as-delimited"]) == expected
    assert by_key(out["as-json"]) == expected


# --------------------------------------------------------- KTable: filter, filter_not
TABLE_BATCHES: list[list[Input]] = [
    [("t", "a", X1, 10), ("t", "b", Y2, 11), ("t", "c", {"name": "z", "qty": 5}, 12)],
    [
        ("t", "a", None, 20),
        ("t", "b", {"name": "y", "qty": 0}, 21),
        ("t", "c", {"name": "z", "qty": 6}, 22),
        ("t", "d", None, 23),
    ],
    [("t", "c", None, 30)],
]


def test_table_filter_and_filter_not(spark):
    """A row that stops passing becomes a tombstone; a key that never passed gets none."""
    b = StreamsBuilder()
    t = b.table("t", value_schema=ORDER)
    t.filter("qty > 1", materialized_as="big").to("passing")
    t.filter_not("qty > 1").to("failing")
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        runs, tables = [], []
        for batch in TABLE_BATCHES:
            runs += _drive(driver, [batch], ["passing", "failing"])
            tables.append(driver.table("big"))
    assert [by_key(r["passing"]) for r in runs] == [
        by_key([R("b", Y2, 11), R("c", {"name": "z", "qty": 5}, 12)]),
        by_key([R("b", None, 21), R("c", {"name": "z", "qty": 6}, 22)]),
        by_key([R("c", None, 30)]),
    ]
    assert [by_key(r["failing"]) for r in runs] == [
        by_key([R("a", X1, 10)]),
        by_key([R("a", None, 20), R("b", {"name": "y", "qty": 0}, 21)]),
        {},
    ]
    assert tables == [
        {"b": Y2, "c": {"name": "z", "qty": 5}},
        {"c": {"name": "z", "qty": 6}},
        {},
    ]


def test_table_filter_with_a_callable(spark):
    b = StreamsBuilder()
    t = b.table("t", value_schema=ORDER)
    t.filter(lambda k, v: v["qty"] > 1).to("passing")
    t.filter_not(lambda k, v: v["qty"] > 1).to("failing")
    runs = run_batches(spark, b, TABLE_BATCHES, "passing", "failing")
    assert [by_key(r["passing"]) for r in runs] == [
        by_key([R("b", Y2, 11), R("c", {"name": "z", "qty": 5}, 12)]),
        by_key([R("b", None, 21), R("c", {"name": "z", "qty": 6}, 22)]),
        by_key([R("c", None, 30)]),
    ]
    assert [by_key(r["failing"]) for r in runs] == [
        by_key([R("a", X1, 10)]),
        by_key([R("a", None, 20), R("b", {"name": "y", "qty": 0}, 21)]),
        {},
    ]


# ------------------------------------------------------------------ KTable: map_values
MAP_BATCHES: list[list[Input]] = [
    [("t", "a", X1, 10), ("t", "b", Y2, 11)],
    [("t", "a", {"name": "x", "qty": -1}, 20), ("t", "b", {"name": "Y", "qty": -2}, 21)],
    [("t", "a", None, 30), ("t", "b", {"name": "y", "qty": 1}, 31)],
]


def test_table_map_values_maps_old_and_new_and_emits_only_changes(spark):
    """abs(qty) is unchanged in batch 2, so nothing is emitted; the filter downstream sees
    the mapped old value, so b's row that stops passing becomes a tombstone."""
    b = StreamsBuilder()
    mapped = b.table("t", value_schema=ORDER).map_values("abs(qty)", materialized_as="abs-qty")
    mapped.to("mapped")
    mapped.filter("value >= 2").to("big")
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        runs, tables = [], []
        for batch in MAP_BATCHES:
            runs += _drive(driver, [batch], ["mapped", "big"])
            tables.append(driver.table("abs-qty"))
    assert [by_key(r["mapped"]) for r in runs] == [
        by_key([R("a", 1, 10), R("b", 2, 11)]),
        {},
        by_key([R("a", None, 30), R("b", 1, 31)]),
    ]
    assert [by_key(r["big"]) for r in runs] == [
        by_key([R("b", 2, 11)]),
        {},
        by_key([R("b", None, 31)]),
    ]
    assert tables == [{"a": 1, "b": 2}, {"a": 1, "b": 2}, {"b": 1}]


def test_table_map_values_with_callables(spark):
    b = StreamsBuilder()
    t = b.table("t", value_schema=ORDER)
    t.map_values(lambda v: abs(v["qty"])).to("value-only")
    t.map_values(lambda k, v: f"{k}:{abs(v['qty'])}").to("key-and-value")
    runs = run_batches(spark, b, MAP_BATCHES, "value-only", "key-and-value")
    assert [by_key(r["value-only"]) for r in runs] == [
        by_key([R("a", 1, 10), R("b", 2, 11)]),
        {},
        by_key([R("a", None, 30), R("b", 1, 31)]),
    ]
    assert [by_key(r["key-and-value"]) for r in runs] == [
        by_key([R("a", "a:1", 10), R("b", "b:2", 11)]),
        {},
        by_key([R("a", None, 30), R("b", "b:1", 31)]),
    ]


@pytest.mark.parametrize("operation", ["map_values", "filter"])
def test_table_operations_with_a_spark_column(spark, operation):
    b = StreamsBuilder()
    t = b.table("t", value_schema=ORDER)
    if operation == "map_values":
        t.map_values(F.abs(F.col("value.qty"))).to("out")
        expected = [
            by_key([R("a", 1, 10), R("b", 2, 11)]),
            {},
            by_key([R("a", None, 30), R("b", 1, 31)]),
        ]
    else:
        t.filter(F.abs(F.col("value.qty")) >= 2).to("out")
        expected = [
            by_key([R("b", Y2, 11)]),
            by_key([R("b", {"name": "Y", "qty": -2}, 21)]),
            by_key([R("b", None, 31)]),
        ]
    runs = run_batches(spark, b, MAP_BATCHES, "out")
    assert [by_key(r["out"]) for r in runs] == expected


# ------------------------------------------------------------- KTable: to_stream, to
def test_table_to_stream_and_to_write_the_changelog(spark):
    """Updates as records, deletions as tombstones; a repeat, a tombstone for an absent
    key and a null key emit nothing."""
    b = StreamsBuilder()
    t = b.table("t", value_schema=ORDER)
    t.to_stream().map_values("qty * 10 + rowtime").to("changes")
    t.to("copy")
    batches = [
        [("t", "a", X1, 10), ("t", None, Y2, 11), ("t", "z", None, 12)],
        [("t", "a", X1, 20), ("t", "b", Y2, 21)],
        [("t", "a", None, 30), ("t", "b", Z3, 31)],
    ]
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        runs = _drive(driver, batches, ["changes", "copy"])
        assert [(e["offset"], e["key"]) for e in driver.processing_log] == [(1, None)]
    assert [by_key(r["copy"]) for r in runs] == [
        by_key([R("a", X1, 10)]),
        by_key([R("b", Y2, 21)]),
        by_key([R("a", None, 30), R("b", Z3, 31)]),
    ]
    assert [by_key(r["changes"]) for r in runs] == [
        by_key([R("a", 20, 10)]),
        by_key([R("b", 41, 21)]),
        by_key([R("a", None, 30), R("b", 61, 31)]),
    ]


# ---------------------------------------------------- values as callables and SQL see them
def test_callables_get_plain_python_values(spark):
    """A struct is a dict (nested structs too, arrays are lists), a schemaless JSON value
    is parsed, a tombstone is None."""
    b = StreamsBuilder()

    def describe(value):
        return [type(value).__name__, value]

    b.stream(
        "typed", value_schema="id BIGINT, addr STRUCT<city STRING, zip INT>, tags ARRAY<STRING>"
    ).map_values(describe).to("typed-out")
    b.stream("raw").map_values(describe).to("raw-out")
    typed = {"id": 1, "addr": {"city": "Paris", "zip": 75001}, "tags": ["u", "v"]}
    records = [
        ("typed", "t1", typed, 10),
        ("typed", "t2", None, 11),
        ("raw", "r1", {"a": [1, {"b": None}]}, 12),
        ("raw", "r2", [1, "two"], 13),
        ("raw", "r3", "text", 14),
        ("raw", "r4", 7.5, 15),
        ("raw", "r5", None, 16),
    ]
    out = run_batch(spark, b, records, "typed-out", "raw-out")
    assert by_key(out["typed-out"]) == by_key(
        [R("t1", ["dict", typed], 10), R("t2", ["NoneType", None], 11)]
    )
    assert by_key(out["raw-out"]) == by_key(
        [
            R("r1", ["dict", {"a": [1, {"b": None}]}], 12),
            R("r2", ["list", [1, "two"]], 13),
            R("r3", ["str", "text"], 14),
            R("r4", ["float", 7.5], 15),
            R("r5", ["NoneType", None], 16),
        ]
    )


def test_sql_sees_value_fields_key_value_and_rowtime(spark):
    """Fields by name (case-insensitive), and key, value, rowtime; a tombstone's fields
    are null."""
    b = StreamsBuilder()
    b.stream("in", value_schema=ORDER).filter("QTY > 1 OR key = 'a' OR value IS NULL").map_values(
        "struct(key AS k, Name AS n, value.qty AS q, qty > 1 AS big, rowtime AS at, value AS v)"
    ).to("out")
    out = run_batch(spark, b, [*ORDERS, ("in", "d", None, 13)], "out")["out"]
    assert by_key(out) == by_key(
        [
            R("a", {"k": "a", "n": "x", "q": 1, "big": False, "at": 10, "v": X1}, 10),
            R("b", {"k": "b", "n": "y", "q": 2, "big": True, "at": 11, "v": Y2}, 11),
            R("c", {"k": "c", "n": "z", "q": 3, "big": True, "at": 12, "v": Z3}, 12),
            R("d", {"k": "d", "n": None, "q": None, "big": None, "at": 13, "v": None}, 13),
        ]
    )


@pytest.mark.parametrize(
    ("program", "message"),
    [
        pytest.param(
            lambda b: b.stream("in", value_schema=ORDER).filter("qtty > 1").to("out"),
            "KSTREAM-FILTER-0000000001: expression 'qtty > 1': unknown column 'qtty' "
            "(columns: key, value, rowtime, name, qty)",
            id="stream-with-schema",
        ),
        pytest.param(
            lambda b: b.stream("in").map_values("qty * 2").to("out"),
            "KSTREAM-MAPVALUES-0000000001: expression 'qty * 2': unknown column 'qty' "
            "(columns: key, value, rowtime)",
            id="schemaless-stream",
        ),
        pytest.param(
            lambda b: b.table("in", value_schema=ORDER).map_values("upper(nam)").to("out"),
            "KTABLE-MAPVALUES-0000000003: expression 'upper(nam)': unknown column 'nam' "
            "(columns: key, value, rowtime, name, qty)",
            id="table",
        ),
    ],
)
def test_an_unknown_column_is_a_clear_error(spark, program, message):
    """Found when the test driver is created, before any record."""
    from tablestream.runtime.expressions import ExpressionError

    b = StreamsBuilder()
    program(b)
    with pytest.raises(ExpressionError) as error:
        TestDriver(b.build(), spark=spark)
    assert str(error.value) == message


def test_sql_identity_on_a_schemaless_value_keeps_the_value(spark):
    b = StreamsBuilder()
    b.stream("in").map_values("value").to("out")
    records = [("in", "a", {"n": 1}, 10), ("in", "b", [1, 2], 11), ("in", "c", None, 12)]
    out = run_batch(spark, b, records, "out")["out"]
    assert by_key(out) == by_key([R("a", {"n": 1}, 10), R("b", [1, 2], 11), R("c", None, 12)])


# ------------------------------------------------- marked streams: repartition, records
CUSTOMERS = "customer STRING, amount BIGINT"


def _counts_after_map(b: StreamsBuilder) -> None:
    b.stream("orders", value_schema=CUSTOMERS).map(
        ("customer", "amount")
    ).group_by_key().count().to_stream().to("counts")


def _counts_after_flat_map(b: StreamsBuilder) -> None:
    b.stream("orders", value_schema="customer STRING, items ARRAY<STRING>").flat_map(
        "transform(items, i -> struct(customer AS key, i AS value))"
    ).group_by_key().count().to_stream().to("counts")


def _counts_after_select_key(b: StreamsBuilder) -> None:
    b.stream("orders", value_schema=CUSTOMERS).select_key("customer").map_values(
        "amount"
    ).group_by_key(name="by-customer").count().to_stream().to("counts")


_MARKED_DESCRIBE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
    "      --> KSTREAM-{op}-0000000001\n"
    "    Processor: KSTREAM-{op}-0000000001 (stores: [])\n"
    "      --> KSTREAM-FILTER-0000000005\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-FILTER-0000000005 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000004\n"
    "      <-- KSTREAM-{op}-0000000001\n"
    "    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)\n"
    "      <-- KSTREAM-FILTER-0000000005\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])\n"
    "      --> KSTREAM-AGGREGATE-0000000003\n"
    "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
    "      --> KTABLE-TOSTREAM-0000000007\n"
    "      <-- KSTREAM-SOURCE-0000000006\n"
    "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000008\n"
    "      <-- KSTREAM-AGGREGATE-0000000003\n"
    "    Sink: KSTREAM-SINK-0000000008 (topic: counts)\n"
    "      <-- KTABLE-TOSTREAM-0000000007\n"
    "\n"
)

_SELECT_KEY_DESCRIBE = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
    "      --> KSTREAM-KEY-SELECT-0000000001\n"
    "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n"
    "      --> KSTREAM-MAPVALUES-0000000002\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n"
    "      --> by-customer-repartition-filter\n"
    "      <-- KSTREAM-KEY-SELECT-0000000001\n"
    "    Processor: by-customer-repartition-filter (stores: [])\n"
    "      --> by-customer-repartition-sink\n"
    "      <-- KSTREAM-MAPVALUES-0000000002\n"
    "    Sink: by-customer-repartition-sink (topic: by-customer-repartition)\n"
    "      <-- by-customer-repartition-filter\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: by-customer-repartition-source (topics: [by-customer-repartition])\n"
    "      --> KSTREAM-AGGREGATE-0000000004\n"
    "    Processor: KSTREAM-AGGREGATE-0000000004 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000003])\n"
    "      --> KTABLE-TOSTREAM-0000000008\n"
    "      <-- by-customer-repartition-source\n"
    "    Processor: KTABLE-TOSTREAM-0000000008 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000009\n"
    "      <-- KSTREAM-AGGREGATE-0000000004\n"
    "    Sink: KSTREAM-SINK-0000000009 (topic: counts)\n"
    "      <-- KTABLE-TOSTREAM-0000000008\n"
    "\n"
)

_CUSTOMER_BATCHES: list[list[Input]] = [
    [
        ("orders", "o1", {"customer": "c1", "amount": 5}, 10),
        ("orders", "o2", {"customer": "c2", "amount": 7}, 11),
        ("orders", "o3", {"customer": "c1", "amount": 3}, 12),
    ],
    [("orders", "o4", {"customer": "c2", "amount": 1}, 20)],
]

_BASKET_BATCHES: list[list[Input]] = [
    [
        ("orders", "o1", {"customer": "c1", "items": ["pen"]}, 10),
        ("orders", "o2", {"customer": "c2", "items": ["pen"]}, 11),
        ("orders", "o3", {"customer": "c1", "items": ["ink"]}, 12),
        ("orders", "o4", {"customer": "c3", "items": []}, 13),
    ],
    [("orders", "o5", {"customer": "c2", "items": ["cap", "hat"]}, 20)],
]

_CUSTOMER_COUNTS = [by_key([R("c1", 2, 12), R("c2", 1, 11)]), by_key([R("c2", 2, 20)])]
_BASKET_COUNTS = [by_key([R("c1", 2, 12), R("c2", 1, 11)]), by_key([R("c2", 3, 20)])]


@pytest.mark.parametrize(
    ("program", "describe", "batches", "counts"),
    [
        pytest.param(
            _counts_after_map,
            _MARKED_DESCRIBE.format(op="MAP"),
            _CUSTOMER_BATCHES,
            _CUSTOMER_COUNTS,
            id="map",
        ),
        pytest.param(
            _counts_after_flat_map,
            _MARKED_DESCRIBE.format(op="FLATMAP"),
            _BASKET_BATCHES,
            _BASKET_COUNTS,
            id="flat_map",
        ),
        pytest.param(
            _counts_after_select_key,
            _SELECT_KEY_DESCRIBE,
            _CUSTOMER_BATCHES,
            _CUSTOMER_COUNTS,
            id="select_key",
        ),
    ],
)
def test_a_marked_stream_is_repartitioned_before_group_by_key(
    spark, program, describe, batches, counts
):
    """The key-changing operation marks the stream; group_by_key reads it back through a
    repartition topic (a new sub-topology), and the counts are by the new key."""
    b = StreamsBuilder()
    program(b)
    assert str(b.build().describe()) == describe
    runs = run_batches(spark, b, batches, "counts")
    assert [by_key(r["counts"]) for r in runs] == counts


def test_word_count_with_a_callable_flat_map(spark):
    b = StreamsBuilder()
    b.stream("lines").flat_map(
        lambda k, line: [(word, 1) for word in line.split()]
    ).group_by_key().count().to_stream().to("counts")
    out = run_batch(
        spark, b, [("lines", "l1", "the cat", 10), ("lines", "l2", "a cat", 11)], "counts"
    )["counts"]
    assert by_key(out) == by_key([R("the", 1, 10), R("cat", 2, 11), R("a", 1, 11)])

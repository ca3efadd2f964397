"""Kafka Streams' own table-aggregation tests, ported as exact-record scenarios.

Sources (apache/kafka, read at trunk 1eb7644 of 2024-10-25):

- ``streams/src/test/java/org/apache/kafka/streams/kstream/internals/KTableAggregateTest.java``
- ``streams/src/test/java/org/apache/kafka/streams/kstream/internals/KGroupedTableImplTest.java``
- ``docs/streams/developer-guide/dsl-api.html``, "Example of semantics for table
  aggregations" (users by region)

Each scenario pipes the original's input records (keys, values, timestamps), one record
per batch (the driver's default), and checks the exact records ``(key, value,
timestamp)`` that each input record emitted. The expected records are Kafka Streams'
(read from the test's assertions, or derived from ``KTableRepartitionMap``,
``KTableAggregate`` and ``KTableReduce`` where the original asserts less), normalized by
DESIGN.md's semantics contract:

- no redundant record: no repeat of the value last emitted for a key, no tombstone for a
  key without a current result;
- built-in ``count`` deletes a group with no rows left (a tombstone) where Kafka emits
  ``0``; a user ``aggregate``/``reduce`` keeps Kafka's rule and deletes a group only when
  its subtractor returns ``None``;
- an aggregate's timestamp is Kafka's: the largest timestamp that reached the group
  (``Math.max(record.timestamp(), oldAggAndTimestamp.timestamp())``).

Each docstring names the ported Kafka test and every record where our output differs.

One input record can change two groups (a row moving from one group to another). Kafka
emits the subtraction from the old group first; our contract fixes the order per key
only, so the records of one input record are compared sorted by key (stably, keeping
each key's own order).

Kafka's serdes are String (values ``KAFKA`` ``STRING`` here) or Double (``KAFKA``
``DOUBLE``). Grouping mappers are written as SQL key-value pairs, the DSL's declarative
form of the same function; where the original mapper is a lambda of its own (not a
``MockMapper``), a second test runs that lambda as a Python callable.

Every scenario also runs once more as a single batch (``batched=True``): the batch must
emit at most one record per changed key, and the final tables (output changelog and
materialized store) must equal the relational result over the input table's final
contents. A batch sees each source key's latest row only, so a user aggregate whose
value spells its history (``"0+1-1+3"``) ends as if that row had been inserted once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

IN = "input"
OUT = "output"
STRING_VALUES: dict[str, Any] = {"value_format": "KAFKA", "value_schema": "STRING"}
DOUBLE_VALUES: dict[str, Any] = {"value_format": "KAFKA", "value_schema": "DOUBLE"}

Step = tuple[Any, Any, int, list[TestRecord]]
R = TestRecord


# ----------------------------------------------------------------------------- helpers
def _by_key(records: Sequence[TestRecord]) -> list[TestRecord]:
    return sorted(records, key=lambda r: repr(r.key))


def run_per_record(
    spark, builder: StreamsBuilder, steps: Sequence[Step], *, store: str | None = None, **options
):
    """Pipe each step's input as its own batch; assert every step's emitted records.
    Returns the store's final contents when ``store`` is given."""
    with TestDriver(builder.build(), spark=spark, **options) as driver:
        source = driver.create_input_topic(IN)
        out = driver.create_output_topic(OUT)
        actual, expected = [], []
        for key, value, timestamp, records in steps:
            source.pipe_input(key, value, timestamp)
            actual.append(((key, value, timestamp), _by_key(out.read_records())))
            expected.append(((key, value, timestamp), _by_key(records)))
        assert actual == expected
        return driver.table(store) if store is not None else None


def run_batched(
    spark, builder: StreamsBuilder, steps: Sequence[Step], final: dict, *, store: str, **options
):
    """Pipe all steps' inputs as one batch; assert at most one record per changed key and
    that the output changelog and the store both hold ``final``."""
    with TestDriver(builder.build(), spark=spark, batched=True, **options) as driver:
        source = driver.create_input_topic(IN)
        out = driver.create_output_topic(OUT)
        for key, value, timestamp, _ in steps:
            source.pipe_input(key, value, timestamp)
        driver.advance()
        records = out.read_records()
        keys = [r.key for r in records]
        assert len(keys) == len(set(keys)), (
            f"more than one record for a key in one batch: {records}"
        )
        # From empty tables every key of the result changed, and no other key did (a
        # tombstone for a group that never existed before the batch is redundant).
        assert {r.key: r.value for r in records} == final
        assert driver.table(store) == final


def _string_aggregate(grouped, store: str | None = "topic1-Canonized"):
    """MockInitializer.STRING_INIT, MockAggregator.TOSTRING_ADDER / TOSTRING_REMOVER."""
    return grouped.aggregate(
        lambda: "0",
        lambda key, value, aggregate: aggregate + "+" + value,
        lambda key, value, aggregate: aggregate + "-" + value,
        materialized_as=store,
    )


# ---------------------------------------------------- KTableAggregateTest.testAggBasic
AGG_BASIC: list[Step] = [
    ("A", "1", 10, [R("A", "0+1", 10)]),
    ("B", "2", 15, [R("B", "0+2", 15)]),
    ("A", "3", 20, [R("A", "0+1-1+3", 20)]),
    ("B", "4", 18, [R("B", "0+2-2+4", 18)]),
    ("C", "5", 5, [R("C", "0+5", 5)]),
    ("D", "6", 25, [R("D", "0+6", 25)]),
    ("B", "7", 15, [R("B", "0+2-2+4-4+7", 18)]),
    ("C", "8", 10, [R("C", "0+5-5+8", 10)]),
]


def _agg_basic() -> StreamsBuilder:
    b = StreamsBuilder()
    # MockMapper.noOpKeyValueMapper
    grouped = b.table(IN, **STRING_VALUES).group_by(("key", "value"))
    _string_aggregate(grouped).to_stream().to(OUT)
    return b


def test_agg_basic(spark):
    """KTableAggregateTest.testAggBasic: an identity grouping aggregated with
    TOSTRING_ADDER/TOSTRING_REMOVER. An update keeps its group, so subtraction and
    addition are one change ("0+1-1+3" at once, not "0+1-1" first: Kafka does the same
    since KTableRepartitionMap forwards old and new together when the group key is
    unchanged); timestamps are the group's running maximum ("B" stays at 18 after an
    update at 15). Identical to Kafka's output."""
    run_per_record(spark, _agg_basic(), AGG_BASIC)


def test_agg_basic_batched(spark):
    """KTableAggregateTest.testAggBasic as one batch: each key's last value only."""
    final = {"A": "0+3", "B": "0+7", "C": "0+8", "D": "0+6"}
    run_batched(spark, _agg_basic(), AGG_BASIC, final, store="topic1-Canonized")


# ----------------------------------------------- KTableAggregateTest.testAggRepartition
AGG_REPARTITION: list[Step] = [
    ("A", "1", 10, [R("1", "0+1", 10)]),
    ("A", None, 15, [R("1", "0+1-1", 15)]),
    ("A", "1", 12, [R("1", "0+1-1+1", 15)]),
    ("B", "2", 20, [R("2", "0+2", 20)]),
    ("null", "3", 25, []),  # mapper gives a null group key: dropped
    ("B", "4", 23, [R("2", "0+2-2", 23), R("4", "0+4", 23)]),
    ("NULL", "5", 24, []),  # mapper gives no pair at all: dropped
    ("B", "7", 22, [R("4", "0+4-4", 23), R("7", "0+7", 22)]),
]
AGG_REPARTITION_FINAL = {"1": "0+1", "7": "0+7"}


# The same as SQL: both a null key and a null value make Kafka skip the pair.
_REPARTITION_SQL = (
    "CASE WHEN key IN ('null', 'NULL') THEN NULL ELSE value END",
    "CASE WHEN key = 'NULL' THEN NULL ELSE value END",
)


def _repartition_mapper() -> Callable[[str, str | None], Any]:
    # Made here, not at module level: Spark's workers unpickle a module-level function by
    # reference, and this test module is not importable there.
    def mapper(key: str, value: str | None):
        # The original's lambda: "null" -> KeyValue.pair(null, value); "NULL" -> null.
        if key == "null":
            return (None, value)
        if key == "NULL":
            return None
        return (value, value)

    return mapper


def _agg_repartition(mapper: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    _string_aggregate(b.table(IN, **STRING_VALUES).group_by(mapper)).to_stream().to(OUT)
    return b


_AGG_REPARTITION_DOC = """KTableAggregateTest.testAggRepartition: grouping by value, so
    updates move rows between groups (subtract from "2" at 23, add to "4" at 23); a
    deleted source row is subtracted, and since TOSTRING_REMOVER never returns null the
    group "1" stays as "0+1-1" (Kafka's rule for user aggregates); the group's timestamp
    stays the running maximum (15, then "0+1-1+1" at 15 for an input at 12); a mapper
    result with a null key ("null") or no pair at all ("NULL") is dropped. Identical to
    Kafka's output."""


@pytest.mark.parametrize("partitions", [1, 4])
def test_agg_repartition(spark, partitions):
    run_per_record(
        spark, _agg_repartition(_REPARTITION_SQL), AGG_REPARTITION, partitions=partitions
    )


test_agg_repartition.__doc__ = (
    _AGG_REPARTITION_DOC
    + "\n\n    Mapper as SQL; with 1 and with 4 state partitions (groups spread"
    " over several stores)."
)


def test_agg_repartition_callable_mapper(spark):
    run_per_record(spark, _agg_repartition(_repartition_mapper()), AGG_REPARTITION)


test_agg_repartition_callable_mapper.__doc__ = (
    _AGG_REPARTITION_DOC
    + "\n\n    The original lambda as a Python callable (returns None / (None, v))."
)


def test_agg_repartition_batched(spark):
    """KTableAggregateTest.testAggRepartition as one batch: "A" ends as "1" (its delete
    and re-insert collapse), "B" as "7"; groups "2" and "4" never exist at a batch
    boundary, so nothing is emitted for them."""
    run_batched(
        spark,
        _agg_repartition(_REPARTITION_SQL),
        AGG_REPARTITION,
        AGG_REPARTITION_FINAL,
        store="topic1-Canonized",
    )


# ------------------------------------------ KTableAggregateTest.testCount (+ internal store)
COUNT: list[Step] = [
    ("A", "green", 10, [R("green", 1, 10)]),
    ("B", "green", 9, [R("green", 2, 10)]),
    ("A", "blue", 12, [R("green", 1, 12), R("blue", 1, 12)]),
    ("C", "yellow", 15, [R("yellow", 1, 15)]),
    ("D", "green", 11, [R("green", 2, 12)]),
]
COUNT_FINAL = {"green": 2, "blue": 1, "yellow": 1}


def _count(store: str | None) -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(("value", "value")).count(  # selectValueKeyValueMapper
        materialized_as=store
    ).to_stream().to(OUT)
    return b


@pytest.mark.parametrize(
    "store",
    [pytest.param("count", id="testCount"), pytest.param(None, id="testCountWithInternalStore")],
)
def test_count(spark, store):
    """KTableAggregateTest.testCount and testCountWithInternalStore (testCountHelper):
    count per value; "A" moving from green to blue subtracts before it adds; timestamps
    are the group's running maximum ("green" 2 at 10 for an input at 9, 2 at 12 for an
    input at 11). No group empties, so identical to Kafka's output."""
    final = run_per_record(spark, _count(store), COUNT, store=store)
    if store is not None:
        assert final == COUNT_FINAL


def test_count_batched(spark):
    """KTableAggregateTest.testCount as one batch."""
    run_batched(spark, _count("count"), COUNT, COUNT_FINAL, store="count")


# ------------------------------------------- KTableAggregateTest.testRemoveOldBeforeAddNew
REMOVE_OLD_BEFORE_ADD_NEW: list[Step] = [
    ("11", "A", 10, [R("1", "1", 10)]),
    ("12", "B", 8, [R("1", "12", 10)]),
    ("11", None, 12, [R("1", "2", 12)]),
    # Kafka emits R("1", "2", 12) again: a repeat of the value last emitted for "1".
    ("12", "C", 6, []),
]


def _remove_old_before_add_new(mapper: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(mapper).aggregate(
        lambda: "",
        lambda key, value, aggregate: aggregate + value,
        # Java's aggregate.replaceAll(value, ""); the values are digits, not regex syntax.
        lambda key, value, aggregate: aggregate.replace(value, ""),
        materialized_as="someStore",
    ).to_stream().to(OUT)
    return b


_REMOVE_OLD_DOC = """KTableAggregateTest.testRemoveOldBeforeAddNew: rows grouped by the
    first character of their key, the value being the key's second character. An update
    that keeps the group subtracts the old value before adding the new one ("" + "2",
    not "22" - "2"). Differs from Kafka in one record: for the last input ("12" -> "C"
    at 6) Kafka emits ("1", "2", 12) again, a repeat of the value last emitted for "1"
    (the mapped pair ("1", "2") did not change), which we do not emit."""


def test_remove_old_before_add_new(spark):
    run_per_record(
        spark,
        _remove_old_before_add_new(("substring(key, 1, 1)", "substring(key, 2, 1)")),
        REMOVE_OLD_BEFORE_ADD_NEW,
    )


test_remove_old_before_add_new.__doc__ = _REMOVE_OLD_DOC + "\n\n    Mapper as SQL."


def test_remove_old_before_add_new_callable_mapper(spark):
    run_per_record(
        spark,
        _remove_old_before_add_new(lambda key, value: (key[0], key[1])),
        REMOVE_OLD_BEFORE_ADD_NEW,
    )


test_remove_old_before_add_new_callable_mapper.__doc__ = (
    _REMOVE_OLD_DOC + "\n\n    The original lambda as a Python callable."
)


def test_remove_old_before_add_new_batched(spark):
    """KTableAggregateTest.testRemoveOldBeforeAddNew as one batch: "11" is inserted and
    deleted within the batch (no change), "12" ends as "C", so group "1" is "" + "2"."""
    run_batched(
        spark,
        _remove_old_before_add_new(("substring(key, 1, 1)", "substring(key, 2, 1)")),
        REMOVE_OLD_BEFORE_ADD_NEW,
        {"1": "2"},
        store="someStore",
    )


# ------------------------- KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading
# and testNoEqualsAndSameObject / testNoEqualsAndNotSameObject (count of an unchanged row).
def _count_repeated_row(mapper: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(mapper).count(materialized_as="count").to_stream().to(OUT)
    return b


REPEATED_ROW_CASES = [
    pytest.param(
        ("key", "value"),
        [("1", "", 8, [R("1", 1, 8)]), ("1", "", 9, [])],
        id="testShouldNotSendTransientStateIfNotUpgrading",
    ),
    pytest.param(
        ("value", "value"),
        [("1", "1", 8, [R("1", 1, 8)]), ("1", "1", 9, [])],
        id="testNoEqualsAndNotSameObject",
    ),
]


@pytest.mark.parametrize(("mapper", "steps"), REPEATED_ROW_CASES)
def test_count_of_repeated_row(spark, mapper, steps):
    """KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading (mapper
    KeyValue::pair, input ("1", "") at 8 and at 9; testNoEqualsAndSameObject is the same
    scenario with a key type lacking equals()) and testNoEqualsAndNotSameObject (mapper
    (k, v) -> (v, v), input ("1", "1") at 8 and at 9).

    Differs from Kafka: Kafka emits ("1", 1, 9) for the second input, a repeat of the
    value last emitted for "1" (the table source forwards the unchanged row and the count
    subtracts and re-adds it), which we do not emit. In testNoEqualsAndNotSameObject Kafka
    also emits a transient ("1", 0, 9) before it: the group keys there are Java objects
    without equals(), so KTableRepartitionMap sees the old and new key as different and
    forwards the subtraction and the addition separately. Our group keys compare by
    value (their serialized bytes), so the row never leaves its group."""
    final = run_per_record(spark, _count_repeated_row(mapper), steps, store="count")
    assert final == {"1": 1}


def test_count_of_repeated_row_batched(spark):
    """KTableAggregateTest.testShouldNotSendTransientStateIfNotUpgrading as one batch."""
    steps = [("1", "", 8, []), ("1", "", 9, [])]
    run_batched(spark, _count_repeated_row(("key", "value")), steps, {"1": 1}, store="count")


# ------------------------------------------------ KGroupedTableImplTest.shouldReduce*
REDUCE: list[Step] = [
    ("A", 1.1, 10, [R("A", 1, 10)]),
    ("B", 2.2, 11, [R("B", 2, 11)]),
    ("A", 2.6, 30, [R("A", 2, 30)]),
    ("B", 1.3, 30, [R("B", 1, 30)]),
    ("A", 5.7, 50, [R("A", 5, 50)]),
    ("B", 6.2, 20, [R("B", 6, 30)]),
]
REDUCE_FINAL = {"A": 5, "B": 6}
# intProjection: (key, value) -> KeyValue.pair(key, value.intValue()); Java's intValue()
# truncates toward zero, as Spark's cast does.
_INT_PROJECTION_SQL = ("key", "CAST(value AS INT)")


def _reduce(mapper: Any, store: str | None) -> tuple[StreamsBuilder, Any]:
    b = StreamsBuilder()
    reduced = (
        b.table(IN, **DOUBLE_VALUES)
        .group_by(mapper)
        .reduce(
            lambda aggregate, value: aggregate + value,  # MockReducer.INTEGER_ADDER
            lambda aggregate, value: aggregate - value,  # MockReducer.INTEGER_SUBTRACTOR
            materialized_as=store,
        )
    )
    reduced.to_stream().to(OUT)
    return b, reduced


_REDUCE_DOC = """KGroupedTableImplTest.shouldReduce, shouldReduceWithInternalStoreName and
    shouldReduceAndMaterializeResults (assertReduced): Double values projected to their
    int part and reduced with INTEGER_ADDER/INTEGER_SUBTRACTOR per source key. The
    originals assert the last (value, timestamp) per key after the 2nd input (A 1@10,
    B 2@11) and after the 6th (A 5@50, B 6@30) and, materialized, the store
    ({A: 5, B: 6}); the full changelog here is derived from KTableReduce: an update
    subtracts to 0 (not null, so the row stays) and adds, at the running maximum
    timestamp (B 6 at 30 for an input at 20). Identical to Kafka's output."""


@pytest.mark.parametrize(
    "store",
    [
        pytest.param(
            "reduced",
            id="shouldReduce+shouldReduceAndMaterializeResults",
        ),
        pytest.param(None, id="shouldReduceWithInternalStoreName"),
    ],
)
def test_reduce(spark, store):
    builder, reduced = _reduce(_INT_PROJECTION_SQL, store)
    assert reduced.queryable_store_name == store
    final = run_per_record(spark, builder, REDUCE, store=store)
    if store is not None:
        assert final == REDUCE_FINAL


test_reduce.__doc__ = _REDUCE_DOC + "\n\n    Mapper as SQL."


def test_reduce_callable_mapper(spark):
    builder, _ = _reduce(lambda key, value: (key, int(value)), None)
    run_per_record(spark, builder, REDUCE)


test_reduce_callable_mapper.__doc__ = (
    _REDUCE_DOC + "\n\n    The original intProjection as a Python callable, store not named."
)


def test_reduce_batched(spark):
    """KGroupedTableImplTest.shouldReduce as one batch."""
    builder, _ = _reduce(_INT_PROJECTION_SQL, "reduced")
    run_batched(spark, builder, REDUCE, REDUCE_FINAL, store="reduced")


# ------------- KGroupedTableImplTest.shouldCountAndMaterializeResults / shouldAggregate...
PROCESS_DATA = [("A", "1", 10), ("B", "1", 50), ("C", "1", 30), ("D", "2", 40), ("E", "2", 60)]


def _with_outputs(outputs: list[list[TestRecord]]) -> list[Step]:
    return [(*record, out) for record, out in zip(PROCESS_DATA, outputs, strict=True)]


COUNT_AND_MATERIALIZE = _with_outputs(
    [[R("1", 1, 10)], [R("1", 2, 50)], [R("1", 3, 50)], [R("2", 1, 40)], [R("2", 2, 60)]]
)
AGGREGATE_AND_MATERIALIZE = _with_outputs(
    [
        [R("1", "0+1", 10)],
        [R("1", "0+1+1", 50)],
        [R("1", "0+1+1+1", 50)],
        [R("2", "0+2", 40)],
        [R("2", "0+2+2", 60)],
    ]
)


def _count_by_value() -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(("value", "value")).count(
        materialized_as="count"
    ).to_stream().to(OUT)
    return b


def _aggregate_by_value() -> StreamsBuilder:
    b = StreamsBuilder()
    _string_aggregate(
        b.table(IN, **STRING_VALUES).group_by(("value", "value")), "aggregate"
    ).to_stream().to(OUT)
    return b


def test_count_and_materialize_results(spark):
    """KGroupedTableImplTest.shouldCountAndMaterializeResults (processData): the original
    asserts only the store, {"1": 3@50, "2": 2@60}; the changelog is derived from
    KTableAggregate ("1" 3 at 50 for an input at 30: running maximum). Identical to
    Kafka's output."""
    final = run_per_record(spark, _count_by_value(), COUNT_AND_MATERIALIZE, store="count")
    assert final == {"1": 3, "2": 2}


def test_count_and_materialize_results_batched(spark):
    """KGroupedTableImplTest.shouldCountAndMaterializeResults as one batch."""
    run_batched(spark, _count_by_value(), COUNT_AND_MATERIALIZE, {"1": 3, "2": 2}, store="count")


def test_aggregate_and_materialize_results(spark):
    """KGroupedTableImplTest.shouldAggregateAndMaterializeResults (processData): the
    original asserts only the store, {"1": "0+1+1+1"@50, "2": "0+2+2"@60}; the changelog
    is derived from KTableAggregate. Identical to Kafka's output."""
    final = run_per_record(
        spark, _aggregate_by_value(), AGGREGATE_AND_MATERIALIZE, store="aggregate"
    )
    assert final == {"1": "0+1+1+1", "2": "0+2+2"}


def test_aggregate_and_materialize_results_batched(spark):
    """KGroupedTableImplTest.shouldAggregateAndMaterializeResults as one batch (the three
    rows of group "1" carry the same value, so the order of additions does not matter)."""
    final = {"1": "0+1+1+1", "2": "0+2+2"}
    run_batched(spark, _aggregate_by_value(), AGGREGATE_AND_MATERIALIZE, final, store="aggregate")


# ------------------------- dsl-api.html: "Example of semantics for table aggregations"
# userProfiles: key user name, value region ("E" Europe, "A" Asia); one record per
# timestamp 1..7, as in the documentation's table.
USERS = [
    ("alice", "E", 1),
    ("bob", "A", 2),
    ("charlie", "A", 3),
    ("alice", "A", 4),
    ("charlie", None, 5),
    (None, "E", 6),  # null key: ignored
    ("bob", "E", 7),
]
USER_NAME_LENGTHS = [
    (*USERS[0], [R("E", 5, 1)]),
    (*USERS[1], [R("A", 3, 2)]),
    (*USERS[2], [R("A", 10, 3)]),
    (*USERS[3], [R("E", 0, 4), R("A", 15, 4)]),
    (*USERS[4], [R("A", 8, 5)]),
    (*USERS[5], []),
    (*USERS[6], [R("A", 5, 7), R("E", 3, 7)]),
]
REGION_COUNTS = [
    (*USERS[0], [R("E", 1, 1)]),
    (*USERS[1], [R("A", 1, 2)]),
    (*USERS[2], [R("A", 2, 3)]),
    (*USERS[3], [R("E", None, 4), R("A", 3, 4)]),  # Kafka: R("E", 0, 4)
    (*USERS[4], [R("A", 2, 5)]),
    (*USERS[5], []),
    (*USERS[6], [R("A", 1, 7), R("E", 1, 7)]),
]


def _user_name_lengths(mapper: Any) -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(mapper).aggregate(
        lambda: 0,
        lambda region, length, total: total + length,
        lambda region, length, total: total - length,
        materialized_as="aggregated-table-store",
    ).to_stream().to(OUT)
    return b


def _region_counts() -> StreamsBuilder:
    b = StreamsBuilder()
    b.table(IN, **STRING_VALUES).group_by(("value", "key")).count(
        materialized_as="region-counts"
    ).to_stream().to(OUT)
    return b


_DOCS_DOC = """Kafka Streams developer guide (dsl-api.html), "Example of semantics for
    table aggregations": userProfiles (user -> region) grouped by region with
    (user, region) -> (region, user.length()), summed by aggregate(() -> 0, adder,
    subtractor). The documentation lists each state; the records are its changed
    rows, in Kafka's order (subtraction from the old group first; compared per key).
    "E" falls to 0 at 4 and stays (a user aggregate whose subtractor returned 0, not
    null); the record with a null key at 6 is ignored. Identical to Kafka's output."""


def test_docs_user_name_lengths_by_region(spark):
    run_per_record(spark, _user_name_lengths(("value", "length(key)")), USER_NAME_LENGTHS)


test_docs_user_name_lengths_by_region.__doc__ = _DOCS_DOC + "\n\n    Mapper as SQL."


def test_docs_user_name_lengths_by_region_callable_mapper(spark):
    run_per_record(
        spark, _user_name_lengths(lambda user, region: (region, len(user))), USER_NAME_LENGTHS
    )


test_docs_user_name_lengths_by_region_callable_mapper.__doc__ = (
    _DOCS_DOC + "\n\n    The documented lambda as a Python callable."
)


def test_docs_user_name_lengths_by_region_batched(spark):
    """dsl-api.html table-aggregation example as one batch: alice (5) in A, bob (3) in E."""
    run_batched(
        spark,
        _user_name_lengths(("value", "length(key)")),
        USER_NAME_LENGTHS,
        {"A": 5, "E": 3},
        store="aggregated-table-store",
    )


def test_docs_region_counts(spark):
    """dsl-api.html table-aggregation example with count() in place of the documented
    aggregate (users per region), same input. Differs from Kafka in one record: when
    alice leaves "E" at 4, Kafka's count emits ("E", 0, 4); the built-in count deletes
    the emptied group instead, so we emit a tombstone ("E", None, 4) (same timestamp).
    When bob joins "E" at 7 the group is created again with count 1 at 7, as in Kafka."""
    final = run_per_record(spark, _region_counts(), REGION_COUNTS, store="region-counts")
    assert final == {"A": 1, "E": 1}


def test_docs_region_counts_batched(spark):
    """dsl-api.html example with count() as one batch: alice in A, bob in E."""
    run_batched(spark, _region_counts(), REGION_COUNTS, {"A": 1, "E": 1}, store="region-counts")


# ------------------------------------------------ several numeric aggregates, one store
def _stats(value: tuple | None) -> dict | None:
    """A ``agg(users=count(), aged=count("age"), total=sum("age"), mean=avg("age"))``
    value from (users, aged, total, mean)."""
    return None if value is None else dict(zip(("users", "aged", "total", "mean"), value, strict=True))


# users -> (region, age); one change per record.
REGION_STATS: list[Step] = [
    ("alice", {"region": "E", "age": 30}, 1, [R("E", _stats((1, 1, 30, 30.0)), 1)]),
    ("bob", {"region": "E", "age": None}, 2, [R("E", _stats((2, 1, 30, 30.0)), 2)]),
    # A group of nulls: count 1, counted ages 0, sum 0, avg null.
    ("carol", {"region": "A", "age": None}, 3, [R("A", _stats((1, 0, 0, None)), 3)]),
    # alice moves: subtracted from E, added to A.
    ("alice", {"region": "A", "age": 40}, 5, [R("A", _stats((2, 1, 40, 40.0)), 5), R("E", _stats((1, 0, 0, None)), 5)]),
    # bob deleted: E has no member left and is deleted, at the group's latest timestamp.
    ("bob", None, 4, [R("E", None, 5)]),
    # An older timestamp: the result changes, the group's timestamp stays its maximum.
    ("alice", {"region": "A", "age": 50}, 4, [R("A", _stats((2, 1, 50, 50.0)), 5)]),
    ("dave", {"region": "E", "age": 20}, 6, [R("E", _stats((1, 1, 20, 20.0)), 6)]),
]
REGION_STATS_FINAL = {"A": _stats((2, 1, 50, 50.0)), "E": _stats((1, 1, 20, 20.0))}


def _region_stats() -> StreamsBuilder:
    from tablestream.dsl import aggregates as agg

    b = StreamsBuilder()
    b.table(IN, value_schema="region STRING, age BIGINT").group_by(("region", "value")).agg(
        users=agg.count(), aged=agg.count("age"), total=agg.sum("age"), mean=agg.avg("age"),
        materialized_as="region-stats",
    ).to_stream().to(OUT)
    return b


def test_several_aggregates_in_one_store(spark):
    """``agg`` computes count, count of a column, sum and avg of one grouping in one
    store: each result is what its own aggregate gives (a group of nulls sums to 0 and
    averages to null), an update retracts the old row from its old group, a group with
    no rows left is deleted, and the timestamp is the largest that reached the group."""
    final = run_per_record(spark, _region_stats(), REGION_STATS, store="region-stats")
    assert final == REGION_STATS_FINAL


def test_several_aggregates_in_one_store_batched(spark):
    """The same as one batch: alice (50) and carol (null) in A, dave (20) in E."""
    run_batched(spark, _region_stats(), REGION_STATS, REGION_STATS_FINAL, store="region-stats")


def test_several_aggregates_of_a_grouped_stream(spark):
    """``agg`` on a grouped stream: every record adds; a double column sums to a double;
    a record with a null value is skipped (logged); one with a null field is a member
    without a value, which changes no result here (nothing is emitted), and a group of
    such members sums to 0 and averages to null."""
    from tablestream.dsl import aggregates as agg

    b = StreamsBuilder()
    b.stream(IN, value_schema="amount DOUBLE").group_by_key().agg(
        total=agg.sum("amount"), mean=agg.avg("amount")
    ).to_stream().to(OUT)
    steps = [
        ("a", {"amount": 1.5}, 10, [R("a", {"total": 1.5, "mean": 1.5}, 10)]),
        ("a", {"amount": None}, 8, []),
        ("b", None, 11, []),
        ("c", {"amount": None}, 13, [R("c", {"total": 0.0, "mean": None}, 13)]),
        ("a", {"amount": 2.5}, 12, [R("a", {"total": 4.0, "mean": 2.0}, 12)]),
    ]
    run_per_record(spark, b, steps)

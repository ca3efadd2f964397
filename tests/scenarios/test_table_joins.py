"""Kafka Streams' own KTable-KTable (primary-key) join tests, ported as exact-record
scenarios.

Sources (apache/kafka, read at trunk 1eb7644 of 2024-10-25), all in
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/``:

- ``KTableKTableInnerJoinTest.java`` (testJoin, testQueryableJoin, testNotSendingOldValues,
  testQueryableNotSendingOldValues, testSendingOldValues)
- ``KTableKTableLeftJoinTest.java`` (testJoin, testNotSendingOldValue, testSendingOldValue)
- ``KTableKTableOuterJoinTest.java`` (testJoin, testNotSendingOldValue, testSendingOldValue)
- for the records Kafka emits redundantly: ``KTableSource``, ``KTableKTableInnerJoin``,
  ``KTableKTableLeftJoin``, ``KTableKTableRightJoin`` and ``KTableKTableOuterJoin`` in
  ``streams/src/main/java/org/apache/kafka/streams/kstream/internals/``.

The three originals pipe the same 28 records (two String tables ``topic1`` and
``topic2``, Integer keys 0..3 written here as the STRING keys "0".."3", two records with a
null key that the join drops) and assert the joined records after each group of inputs.
Each scenario here pipes those records one per batch (the driver's default) and checks the
exact records ``(key, value, timestamp)`` each input emitted. The joiner is
MockValueJoiner.TOSTRING_JOINER, ``v1 + "+" + v2``, a missing side printed as "null"; a
result's timestamp is the larger of the two sides' current timestamps (a deleted side
counts with its tombstone's timestamp, as in Kafka: key 3 of the outer join becomes
"null+YY3" at 20, the time of the left delete, not 15).

The ``*SendingOldValue*`` variants watch the join's ``Change(new, old)`` pairs at a
processor instead of the output topic: their new values and timestamps are testJoin's
records, and their old value is the previous record of the same key in that changelog, so
they collapse into the testJoin scenario. The ``testQueryable*`` variants materialize the
join (``materialized_as``) and its store is checked after every record. Not ported:
``shouldLogAndMeterSkippedRecordsDueToNullLeftKey`` (a log line; the null-key records in
the data cover the behaviour) and KTableKTableLeftJoinTest's
``shouldNotThrowIllegalStateExceptionWhenMultiCacheEvictions`` (7,000 random records
against a record-cache bug that has no counterpart here).

The anchors' data happen to contain no redundant record, so Kafka's output and ours are
identical there. DESIGN.md's semantics contract removes two kinds of redundant records:
a tombstone for a key without a current result, and a repeat of the value last emitted for
a key. ``test_redundant_records_are_not_emitted`` drives Kafka's processors into both
(a table source forwards a delete of an absent key and an unchanged update; the joins
forward them) and names the records Kafka emits that we do not.

Every scenario also runs batched (``batched=True``): all inputs as one batch, and the
testJoin scenarios once more with one batch per group of inputs of the original. Each
batch must emit exactly one record for every key whose result changed over the batch
(a tombstone when it no longer has one) and none for other keys, so the output changelog
and the store equal the join of the tables' contents after every batch. Timestamps are
exact only per record; batched outputs are compared by key and value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

LEFT = "topic1"
RIGHT = "topic2"
OUT = "output"
STORE = "joined"
STRING_VALUES: dict[str, Any] = {"value_format": "KAFKA", "value_schema": "STRING"}

R = TestRecord
# (input topic, key, value, timestamp, records that input emits)
Step = tuple[str, Any, Any, int, list[TestRecord]]
Phase = list[Step]

# MockValueJoiner.TOSTRING_JOINER as SQL; ``left`` and ``right`` are the two values.
SQL_TOSTRING_JOINER = "concat(coalesce(left, 'null'), '+', coalesce(right, 'null'))"


# ----------------------------------------------------------------------------- helpers
def left_in(key: Any, value: Any, timestamp: int, *records: TestRecord) -> Step:
    return (LEFT, key, value, timestamp, list(records))


def right_in(key: Any, value: Any, timestamp: int, *records: TestRecord) -> Step:
    return (RIGHT, key, value, timestamp, list(records))


def tostring_joiner() -> Callable[[Any, Any], str]:
    """MockValueJoiner.TOSTRING_JOINER: ``v1 + "+" + v2``, Java printing null as "null".

    Made here, not at module level: Spark's workers unpickle a module-level function by
    reference, and this test module is not importable there."""

    def joiner(left: Any, right: Any) -> str:
        return ("null" if left is None else left) + "+" + ("null" if right is None else right)

    return joiner


def _join(kind: str, joiner: Any = None, store: str | None = None) -> StreamsBuilder:
    """topic1 ``kind`` topic2 (``join``, ``left_join`` or ``outer_join``) to ``output``."""
    b = StreamsBuilder()
    table1 = b.table(LEFT, **STRING_VALUES)
    table2 = b.table(RIGHT, **STRING_VALUES)
    joined = getattr(table1, kind)(
        table2, tostring_joiner() if joiner is None else joiner, materialized_as=store
    )
    joined.to_stream().to(OUT)
    return b


def _apply(table: dict[Any, Any], records: Sequence[TestRecord]) -> dict[Any, Any]:
    """``table`` after a changelog's records (a tombstone removes its key)."""
    result = dict(table)
    for record in records:
        if record.value is None:
            result.pop(record.key, None)
        else:
            result[record.key] = record.value
    return result


def _flat(phases: Sequence[Phase]) -> list[Step]:
    return [step for phase in phases for step in phase]


def run_per_record(
    spark, builder: StreamsBuilder, steps: Sequence[Step], *, store: str | None = None
) -> None:
    """Pipe each step's input as its own batch; assert the records every step emitted and,
    with ``store``, the store's contents after every step (the changelog so far)."""
    with TestDriver(builder.build(), spark=spark) as driver:
        inputs = {topic: driver.create_input_topic(topic) for topic in (LEFT, RIGHT)}
        out = driver.create_output_topic(OUT)
        actual, expected = [], []
        table: dict[Any, Any] = {}
        for topic, key, value, timestamp, records in steps:
            inputs[topic].pipe_input(key, value, timestamp)
            step = (topic, key, value, timestamp)
            table = _apply(table, records)
            if store is None:
                actual.append((step, out.read_records()))
                expected.append((step, records))
            else:
                actual.append((step, out.read_records(), driver.table(store)))
                expected.append((step, records, table))
        assert actual == expected


def run_batched(
    spark,
    builder: StreamsBuilder,
    batches: Sequence[Sequence[Step]],
    final: dict[Any, Any],
    *,
    store: str | None = None,
    partitions: int = 1,
) -> None:
    """Pipe each of ``batches`` as one batch. After every batch the output holds exactly
    one record per key whose result changed (by the per-record expectations folded over
    the batch) and the store equals the result; after the last, both equal ``final``."""
    with TestDriver(builder.build(), spark=spark, batched=True, partitions=partitions) as driver:
        inputs = {topic: driver.create_input_topic(topic) for topic in (LEFT, RIGHT)}
        out = driver.create_output_topic(OUT)
        before: dict[Any, Any] = {}
        emitted: dict[Any, Any] = {}
        for number, batch in enumerate(batches):
            after = before
            for topic, key, value, timestamp, records in batch:
                inputs[topic].pipe_input(key, value, timestamp)
                after = _apply(after, records)
            driver.advance()
            records = out.read_records()
            keys = [r.key for r in records]
            assert len(keys) == len(set(keys)), (
                f"batch {number}: more than one record for a key: {records}"
            )
            changed = {
                key: after.get(key)
                for key in before.keys() | after.keys()
                if before.get(key) != after.get(key)
            }
            assert {r.key: r.value for r in records} == changed, f"batch {number}"
            if store is not None:
                assert driver.table(store) == after, f"batch {number}"
            emitted = _apply(emitted, records)
            before = after
        assert after == final  # the expectations agree with themselves
        assert emitted == final


# ------------------------------------------------------------------------- the anchors
# Inputs of testJoin in all three classes, grouped as the originals assert them, with the
# records each input emits in the inner, left and outer join.
INNER_JOIN: list[Phase] = [
    [  # push two items to the primary stream; the other table is empty
        left_in("0", "X0", 5),
        left_in("1", "X1", 6),
        left_in(None, "SomeVal", 42),  # null key: dropped
    ],
    [  # push two items to the other stream
        right_in("0", "Y0", 0, R("0", "X0+Y0", 5)),
        right_in("1", "Y1", 10, R("1", "X1+Y1", 10)),
        right_in(None, "AnotherVal", 73),  # null key: dropped
    ],
    [  # all four keys to the primary stream
        left_in("0", "XX0", 7, R("0", "XX0+Y0", 7)),
        left_in("1", "XX1", 7, R("1", "XX1+Y1", 10)),
        left_in("2", "XX2", 7),
        left_in("3", "XX3", 7),
    ],
    [  # all four keys to the other stream
        right_in("0", "YY0", 0, R("0", "XX0+YY0", 7)),
        right_in("1", "YY1", 5, R("1", "XX1+YY1", 7)),
        right_in("2", "YY2", 10, R("2", "XX2+YY2", 10)),
        right_in("3", "YY3", 15, R("3", "XX3+YY3", 15)),
    ],
    [  # all four keys to the primary stream, earlier timestamps
        left_in("0", "XXX0", 6, R("0", "XXX0+YY0", 6)),
        left_in("1", "XXX1", 6, R("1", "XXX1+YY1", 6)),
        left_in("2", "XXX2", 6, R("2", "XXX2+YY2", 10)),
        left_in("3", "XXX3", 6, R("3", "XXX3+YY3", 15)),
    ],
    [  # two deletes on the other stream
        right_in("0", None, 5, R("0", None, 6)),
        right_in("1", None, 7, R("1", None, 7)),
    ],
    [  # all four keys to the primary stream
        left_in("0", "XXXX0", 13),
        left_in("1", "XXXX1", 13),
        left_in("2", "XXXX2", 13, R("2", "XXXX2+YY2", 13)),
        left_in("3", "XXXX3", 13, R("3", "XXXX3+YY3", 15)),
    ],
    [  # four deletes on the primary stream
        left_in("0", None, 0),
        left_in("1", None, 42),
        left_in("2", None, 5, R("2", None, 10)),
        left_in("3", None, 20, R("3", None, 20)),
    ],
]
INNER_FINAL: dict[str, str] = {}

LEFT_JOIN: list[Phase] = [
    [
        left_in("0", "X0", 5, R("0", "X0+null", 5)),
        left_in("1", "X1", 6, R("1", "X1+null", 6)),
        left_in(None, "SomeVal", 42),
    ],
    [
        right_in("0", "Y0", 0, R("0", "X0+Y0", 5)),
        right_in("1", "Y1", 10, R("1", "X1+Y1", 10)),
        right_in(None, "AnotherVal", 73),
    ],
    [
        left_in("0", "XX0", 7, R("0", "XX0+Y0", 7)),
        left_in("1", "XX1", 7, R("1", "XX1+Y1", 10)),
        left_in("2", "XX2", 7, R("2", "XX2+null", 7)),
        left_in("3", "XX3", 7, R("3", "XX3+null", 7)),
    ],
    [
        right_in("0", "YY0", 0, R("0", "XX0+YY0", 7)),
        right_in("1", "YY1", 5, R("1", "XX1+YY1", 7)),
        right_in("2", "YY2", 10, R("2", "XX2+YY2", 10)),
        right_in("3", "YY3", 15, R("3", "XX3+YY3", 15)),
    ],
    [
        left_in("0", "XXX0", 6, R("0", "XXX0+YY0", 6)),
        left_in("1", "XXX1", 6, R("1", "XXX1+YY1", 6)),
        left_in("2", "XXX2", 6, R("2", "XXX2+YY2", 10)),
        left_in("3", "XXX3", 6, R("3", "XXX3+YY3", 15)),
    ],
    [
        right_in("0", None, 5, R("0", "XXX0+null", 6)),
        right_in("1", None, 7, R("1", "XXX1+null", 7)),
    ],
    [
        left_in("0", "XXXX0", 13, R("0", "XXXX0+null", 13)),
        left_in("1", "XXXX1", 13, R("1", "XXXX1+null", 13)),
        left_in("2", "XXXX2", 13, R("2", "XXXX2+YY2", 13)),
        left_in("3", "XXXX3", 13, R("3", "XXXX3+YY3", 15)),
    ],
    [
        left_in("0", None, 0, R("0", None, 0)),
        left_in("1", None, 42, R("1", None, 42)),
        left_in("2", None, 5, R("2", None, 10)),
        left_in("3", None, 20, R("3", None, 20)),
    ],
]
LEFT_FINAL: dict[str, str] = {}

OUTER_JOIN: list[Phase] = [
    *LEFT_JOIN[:-1],  # the outer join emits what the left join does, up to the last group
    [
        left_in("0", None, 0, R("0", None, 0)),
        left_in("1", None, 42, R("1", None, 42)),
        left_in("2", None, 5, R("2", "null+YY2", 10)),
        left_in("3", None, 20, R("3", "null+YY3", 20)),
    ],
]
OUTER_FINAL = {"2": "null+YY2", "3": "null+YY3"}

SCENARIOS = {
    "join": (INNER_JOIN, INNER_FINAL),
    "left_join": (LEFT_JOIN, LEFT_FINAL),
    "outer_join": (OUTER_JOIN, OUTER_FINAL),
}


def test_inner_join(spark):
    """KTableKTableInnerJoinTest.testJoin (and testNotSendingOldValues,
    testSendingOldValues): a result exists only while both sides have the key; a left
    update without a right row emits nothing (keys 2 and 3 at 7); a right delete turns the
    result into a tombstone at the later of the delete and the left row (key 0: 6); deletes
    of left rows without a right row emit nothing (keys 0, 1 at the end). Null keys are
    dropped. Identical to Kafka's output."""
    run_per_record(spark, _join("join"), _flat(INNER_JOIN))


def test_inner_queryable_join(spark):
    """KTableKTableInnerJoinTest.testQueryableJoin (and testQueryableNotSendingOldValues):
    testJoin with the join materialized (``materialized_as``); the store is read after
    every record and equals the changelog so far, ending empty. Identical to Kafka's
    output."""
    run_per_record(spark, _join("join", store=STORE), _flat(INNER_JOIN), store=STORE)


def test_left_join(spark):
    """KTableKTableLeftJoinTest.testJoin (and testNotSendingOldValue, testSendingOldValue):
    every left row has a result, "X+null" without a right row; a right delete turns the
    result back into "XXX0+null" at the later timestamp (6); a left delete is a tombstone
    at the later of the delete and the right row (key 2: 10), or at its own timestamp
    without one (key 0: 0, key 1: 42). Identical to Kafka's output."""
    run_per_record(spark, _join("left_join"), _flat(LEFT_JOIN))


def test_outer_join(spark):
    """KTableKTableOuterJoinTest.testJoin (and testNotSendingOldValue,
    testSendingOldValue): as the left join, except that deleting a left row whose key has
    a right row leaves "null+YY2" (at 10) and "null+YY3" (at 20, the delete's timestamp
    being the later). Identical to Kafka's output."""
    run_per_record(spark, _join("outer_join"), _flat(OUTER_JOIN))


def test_outer_join_with_sql_joiner(spark):
    """KTableKTableOuterJoinTest.testJoin with TOSTRING_JOINER written as a SQL expression
    over ``left`` and ``right`` (``coalesce`` prints a missing side as "null"), the join
    materialized and its store checked after every record. Identical to Kafka's output."""
    run_per_record(
        spark,
        _join("outer_join", SQL_TOSTRING_JOINER, store=STORE),
        _flat(OUTER_JOIN),
        store=STORE,
    )


@pytest.mark.parametrize("kind", list(SCENARIOS))
@pytest.mark.parametrize("batching", ["one-batch", "per-group"])
def test_join_batched(spark, kind, batching):
    """KTableKTable{Inner,Left,Outer}JoinTest.testJoin batched, the join materialized, over
    2 state partitions. As one batch, the inner and left joins end with no result (every
    left row is deleted by the end), so the batch emits nothing at all: no tombstone for
    the keys whose results came and went within it; the outer join emits its two final
    rows. With one batch per group of inputs of the original, each batch emits the net
    change of each key (e.g. the left join's last group: four tombstones)."""
    phases, final = SCENARIOS[kind]
    batches = [_flat(phases)] if batching == "one-batch" else phases
    run_batched(spark, _join(kind, store=STORE), batches, final, store=STORE, partitions=2)


def test_outer_join_with_sql_joiner_batched(spark):
    """KTableKTableOuterJoinTest.testJoin, SQL joiner, as one batch."""
    run_batched(
        spark,
        _join("outer_join", SQL_TOSTRING_JOINER, store=STORE),
        [_flat(OUTER_JOIN)],
        OUTER_FINAL,
        store=STORE,
    )


# ------------------------------------------------------------ records Kafka emits twice
# One scenario on the three joins. Kafka's table source forwards a delete of a key it
# does not hold as Change(null, null), and an update to the same value as
# Change(v, v); the join processors forward both whenever the other side has the key.
REDUNDANT: dict[str, list[Step]] = {
    "join": [
        right_in("a", "Ya", 1),
        left_in("a", None, 2),  # Kafka: R("a", None, 2), no result for "a" existed
        left_in("a", "Xa", 3, R("a", "Xa+Ya", 3)),
        left_in("a", "Xa", 4),  # Kafka: R("a", "Xa+Ya", 4)
        right_in("a", "Ya", 5),  # Kafka: R("a", "Xa+Ya", 5)
        left_in("c", "Xc", 6),
        right_in("c", None, 7),  # Kafka: R("c", None, 7), no result for "c" existed
    ],
    "left_join": [
        right_in("a", "Ya", 1),
        left_in("a", None, 2),  # Kafka: R("a", None, 2), no result for "a" existed
        left_in("a", "Xa", 3, R("a", "Xa+Ya", 3)),
        left_in("a", "Xa", 4),  # Kafka: R("a", "Xa+Ya", 4)
        right_in("a", "Ya", 5),  # Kafka: R("a", "Xa+Ya", 5)
        left_in("c", "Xc", 6, R("c", "Xc+null", 6)),
        right_in("c", None, 7),  # Kafka: R("c", "Xc+null", 7)
    ],
    "outer_join": [
        right_in("a", "Ya", 1, R("a", "null+Ya", 1)),
        left_in("a", None, 2),  # Kafka: R("a", "null+Ya", 2)
        left_in("a", "Xa", 3, R("a", "Xa+Ya", 3)),
        left_in("a", "Xa", 4),  # Kafka: R("a", "Xa+Ya", 4)
        right_in("a", "Ya", 5),  # Kafka: R("a", "Xa+Ya", 5)
        left_in("c", "Xc", 6, R("c", "Xc+null", 6)),
        right_in("c", None, 7),  # Kafka: R("c", "Xc+null", 7)
    ],
}
REDUNDANT_FINAL = {
    "join": {"a": "Xa+Ya"},
    "left_join": {"a": "Xa+Ya", "c": "Xc+null"},
    "outer_join": {"a": "Xa+Ya", "c": "Xc+null"},
}


@pytest.mark.parametrize("kind", list(REDUNDANT))
def test_redundant_records_are_not_emitted(spark, kind):
    """Not a ported test: the records Kafka's join processors emit for the inputs above
    (KTableSource forwarding Change(null, null) and Change(v, v); KTableKTableInnerJoin,
    KTableKTableLeftJoin, KTableKTableRightJoin and KTableKTableOuterJoin forwarding the
    join of it), normalized by the semantics contract. Differs from Kafka in four records
    per join, each marked "Kafka:" in REDUNDANT:

    - deleting the absent left row "a" while the right has "a": the inner and left joins
      emit a tombstone for "a", which has no result; the outer join repeats "null+Ya";
    - re-sending the unchanged left row "Xa" (at 4) and right row "Ya" (at 5): all three
      repeat "Xa+Ya" with the new timestamp;
    - deleting the absent right row "c" while the left has "c": the inner join emits a
      tombstone for "c", which has no result; the left and outer joins repeat "Xc+null".
    """
    run_per_record(spark, _join(kind), REDUNDANT[kind])


@pytest.mark.parametrize("kind", list(REDUNDANT))
def test_redundant_records_are_not_emitted_batched(spark, kind):
    """The scenario above as one batch: one record per key of the final result."""
    run_batched(
        spark, _join(kind, store=STORE), [REDUNDANT[kind]], REDUNDANT_FINAL[kind], store=STORE
    )

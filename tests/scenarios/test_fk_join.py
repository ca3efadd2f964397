"""Foreign-key table-table joins (KIP-213), as exact-record scenarios.

Sources:

- KIP-213, "Support non-key joining in KTable" (Apache Kafka wiki), the table "The
  workflow of LHS-generated changes to outputs" (inner and left join). Its last two
  rows are read as: left ``(q, fk 10)`` gives nothing (inner) and ``(q, 10, null)``
  (left); then right ``(10, baz)`` gives ``(q, 10, baz)`` for both.
- apache/kafka, read at 0c8c96c:
  ``streams/integration-tests/src/test/java/org/apache/kafka/streams/integration/KTableKTableForeignKeyJoinIntegrationTest.java``
- apache/kafka, read at 0bce334:
  ``streams/src/test/java/org/apache/kafka/streams/kstream/internals/KTableKTableForeignKeyJoinScenarioTest.java``
- where the originals assert less than every record (often only the latest value per
  key, or a table's contents): Kafka's foreign-key join processors in
  ``streams/src/main/java/org/apache/kafka/streams/kstream/internals/foreignkeyjoin/``
  (``SubscriptionSendProcessorSupplier``: which subscription instruction a left change
  sends; ``SubscriptionJoinProcessorSupplier``: the response and its timestamp;
  ``ForeignTableJoinProcessorSupplier``: right changes to every subscriber).

Each scenario pipes its input records one per batch (the driver's default) and checks
the exact records ``(key, value, timestamp)`` that each input record emitted, on every
output topic, then the materialized tables (``materialized_as``). The expected records
are Kafka Streams', normalized by DESIGN.md's semantics contract:

- no tombstone for a key without a current result. Kafka's inner foreign-key join sends
  one whenever a left row moves to a foreign key without a right row, or a left row is
  deleted, since it cannot know whether the old foreign key had joined;
- no repeat of the value last emitted for a key. Kafka re-emits an unchanged result when
  a left update keeps the foreign key and the joined value, when a right row is written
  again with the same value, and, in a left join, when an unmatched left row changes in
  a way the joiner does not show;
- one record per changed key for one input record. Where Kafka passes through a
  transient state (a primary-key join downstream of the foreign-key join sees a left
  update before the foreign-key join's new result reaches it), we emit only the last.

Timestamps: a result's timestamp is the larger of the left row's and the matched right
row's timestamps; a change triggered by a right record (an update or a deletion) counts
that record's timestamp. This is Kafka's rule (``Math.max`` in
``SubscriptionJoinProcessorSupplier``) with one exception, checked in
:func:`test_result_timestamp_is_max_of_both_sides`: for a change triggered by a right
record Kafka keeps that record's timestamp even when the left row is newer. The
scenarios ported from Kafka have increasing timestamps, so there both rules agree.

Kafka's String serdes are ``KAFKA`` ``STRING`` values here (``INT`` keys where Kafka
uses Integer). Kafka's value joiner ``"(" + left + "," + right + ")"`` (Java prints a
null as ``null``) and its foreign-key extractors are Python callables; the KIP-213
workflow and the timestamp scenario use SQL (the field ``fk``, ``concat``), and a few
scenarios run with both forms. Callables are made inside factory functions: Spark's
workers unpickle a module-level function by reference, and this test module is not
importable there.

Every scenario runs with both ways of keeping the join's state (the ``strategy``
fixture): ``shuffled``, Kafka's (subscriptions and the right table partitioned by the
foreign key, results regrouped by the left key), and ``replicated`` (``replicate_right``:
each state partition keeps the whole right table beside its left rows). They must emit
the same records.

Every scenario also runs as a single batch (``batched=True``, :func:`test_batched`): the
batch must emit at most one record per changed key, and each output changelog and
materialized table must equal the join of the input tables' final contents (a key
inserted and deleted within the batch emits nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.storage.partitioner import partition_for_key
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark


@pytest.fixture(params=["shuffled", "replicated"], autouse=True)
def strategy(request, monkeypatch) -> str:
    """Every foreign-key join of a test's topologies built the given way."""
    if request.param == "replicated":
        from tablestream.dsl.ktable import KTable

        build = KTable._join

        def replicated(self, other, joiner, foreign_key, name, materialized_as, kind, method, replicate_right=None):
            return build(self, other, joiner, foreign_key, name, materialized_as, kind, method, foreign_key is not None)

        monkeypatch.setattr(KTable, "_join", replicated)
    return request.param

R = TestRecord

LEFT = "left_table"
RIGHT = "right_table"
OUT = "output-topic"
REJOIN_OUT = "rejoin-output-topic"
STORE = "store"
REJOIN_STORE = "store-rejoin"
KINDS = ("join", "left_join")

STRING_VALUES: dict[str, Any] = {"value_format": "KAFKA", "value_schema": "STRING"}
# KIP-213 workflow: left values carry the foreign key; the right table is keyed by it.
WORKFLOW_LEFT: dict[str, Any] = {"value_schema": "fk BIGINT, v STRING"}
WORKFLOW_RIGHT: dict[str, Any] = {"key_schema": "BIGINT", **STRING_VALUES}
WORKFLOW_SQL = ("fk", "concat('(', left.fk, ',', coalesce(right, 'null'), ')')")

Table = dict[Any, Any]


@dataclass(frozen=True)
class PerKind:
    """Expectations that differ between ``join`` and ``left_join``."""

    join: Any
    left_join: Any


# A row of a scenario: input topic, key, value, timestamp, and the records it emits (a
# list for the scenario's main output topic, or {topic: records}), or a PerKind of them.
Row = tuple[str, Any, Any, int, Any]
Step = tuple[str, Any, Any, int, dict[str, list[TestRecord]]]


@dataclass(frozen=True)
class Scenario:
    """One join kind's scenario: a topology factory (called inside the test: building
    it needs the join API), its steps, and the final tables."""

    build: Callable[[], StreamsBuilder]
    steps: list[Step]
    final: dict[str, Table]  # output topic -> table its changelog ends as
    stores: dict[str, Table]  # materialized store -> final contents
    partitions: Mapping[str, int] = field(default_factory=dict)  # input topic -> count
    state_partitions: int = 1


def _pick(value: Any, kind: str) -> Any:
    return getattr(value, kind) if isinstance(value, PerKind) else value


def scenario(
    build: Callable[[], StreamsBuilder],
    rows: Sequence[Row],
    kind: str,
    final: Any,
    *,
    out: str = OUT,
    more: Mapping[str, Any] | None = None,
    stores: Mapping[str, Any] | None = None,
    partitions: Mapping[str, int] | None = None,
    state_partitions: int = 1,
) -> Scenario:
    """``final``: the main output's final table (``out``); ``more``: other outputs'
    final tables; ``stores``: materialized tables (default: ``STORE`` holds ``final``).
    Each may be a PerKind."""
    steps: list[Step] = []
    for topic, key, value, timestamp, records in rows:
        records = _pick(records, kind)
        steps.append(
            (topic, key, value, timestamp, records if isinstance(records, dict) else {out: records})
        )
    finals = {out: _pick(final, kind)} | {t: _pick(v, kind) for t, v in (more or {}).items()}
    stored = {STORE: finals[out]} if stores is None else stores
    return Scenario(
        build,
        steps,
        finals,
        {s: _pick(v, kind) for s, v in stored.items()},
        dict(partitions or {}),
        state_partitions,
    )


# ----------------------------------------------------------------------------- helpers
def _by_key(records: Sequence[TestRecord]) -> list[TestRecord]:
    # One input record's records are compared sorted by key (stably: a key's own order
    # is kept); the contract fixes the order per key only.
    return sorted(records, key=lambda r: repr(r.key))


def _check_expectations(sc: Scenario) -> None:
    """The expected records themselves obey the contract and end as the final tables
    (a check of this module's data, before anything runs)."""
    for topic, final in sc.final.items():
        table: Table = {}
        for *step, records in sc.steps:
            keys = [r.key for r in records.get(topic, [])]
            assert len(keys) == len(set(keys)), f"two records for a key: {step} {topic}"
            for r in records.get(topic, []):
                assert r.value is not None or r.key in table, f"redundant tombstone: {step}"
                assert r.value is None or table.get(r.key) != r.value, f"repeat: {step}"
                if r.value is None:
                    del table[r.key]
                else:
                    table[r.key] = r.value
        assert table == final, f"{topic}: records end as {table}, not {final}"
    for *step, records in sc.steps:
        assert set(records) <= set(sc.final), f"records for an unchecked topic: {step}"


def _input_topics(driver: TestDriver, sc: Scenario) -> dict[str, Any]:
    topics = dict.fromkeys(step[0] for step in sc.steps)
    return {t: driver.create_input_topic(t, partitions=sc.partitions.get(t, 1)) for t in topics}


def run_per_record(spark, sc: Scenario) -> None:
    """Pipe each step's input as its own batch; assert the records every step emitted on
    every output topic, then the materialized tables."""
    _check_expectations(sc)
    with TestDriver(sc.build().build(), spark=spark, partitions=sc.state_partitions) as driver:
        inputs = _input_topics(driver, sc)
        outputs = {t: driver.create_output_topic(t) for t in sc.final}
        actual, expected = [], []
        for topic, key, value, timestamp, records in sc.steps:
            inputs[topic].pipe_input(key, value, timestamp)
            step = (topic, key, value, timestamp)
            actual.append((step, {t: _by_key(o.read_records()) for t, o in outputs.items()}))
            expected.append((step, {t: _by_key(records.get(t, [])) for t in outputs}))
        assert actual == expected
        assert {s: driver.table(s) for s in sc.stores} == sc.stores


def run_batched(spark, sc: Scenario) -> None:
    """Pipe all steps' inputs as one batch; assert at most one record per changed key,
    and that every output changelog and materialized table holds its final table."""
    with TestDriver(
        sc.build().build(), spark=spark, batched=True, partitions=sc.state_partitions
    ) as driver:
        inputs = _input_topics(driver, sc)
        outputs = {t: driver.create_output_topic(t) for t in sc.final}
        for topic, key, value, timestamp, _ in sc.steps:
            inputs[topic].pipe_input(key, value, timestamp)
        driver.advance()
        for topic, out in outputs.items():
            records = out.read_records()
            keys = [r.key for r in records]
            assert len(keys) == len(set(keys)), f"{topic}: two records for a key: {records}"
            # From empty tables: every key of the result changed and no other key did.
            assert {r.key: r.value for r in records} == sc.final[topic], topic
        assert {s: driver.table(s) for s in sc.stores} == sc.stores


# ---------------------------------------------------------------- joiners, extractors
def _kafka_joiner() -> Callable[[Any, Any], str]:
    """The originals' ValueJoiner: ``"(" + left + "," + right + ")"``."""

    def joiner(left, right):
        return f"({'null' if left is None else left},{'null' if right is None else right})"

    return joiner


def _kafka_rejoiner() -> Callable[[Any, Any], str]:
    """The integration test's rejoiner: ``"rejoin(" + left + "," + right + ")"``."""

    def rejoiner(left, right):
        return f"rejoin({'null' if left is None else left},{'null' if right is None else right})"

    return rejoiner


def _fk_after_bar() -> Callable[[str], str | None]:
    """The integration test's extractor: the second of two ``|``-separated tokens, else
    null."""

    def extract(value):
        tokens = value.split("|")
        return tokens[1] if len(tokens) == 2 else None

    return extract


def _fk_after_bar_or_null() -> Callable[[str], str | None]:
    """shouldEmitRecordWhenOldAndNewFkDiffer's extractor: ``returnNull`` gives null."""

    def extract(value):
        token = value.split("|")[1]
        return None if token == "returnNull" else token

    return extract


def _fk_null() -> Callable[[str], None]:
    """shouldEmitRecordOnNullForeignKeyForLeftJoins's extractor: always null."""

    def extract(value):
        return None

    return extract


def _integration(
    kind: str, *, rejoin: bool = False, extractor: Callable[[], Any] = _fk_after_bar
) -> Callable[[], StreamsBuilder]:
    """KTableKTableForeignKeyJoinIntegrationTest.getTopology: String tables, the FK join
    materialized as ``store``; with ``rejoin``, the result joined (same kind) on its
    primary key with the left table again, materialized as ``store-rejoin``."""

    def build() -> StreamsBuilder:
        b = StreamsBuilder()
        left = b.table(LEFT, **STRING_VALUES)
        right = b.table(RIGHT, **STRING_VALUES)
        joined = getattr(left, kind)(
            right, _kafka_joiner(), foreign_key=extractor(), materialized_as=STORE
        )
        joined.to_stream().to(OUT)
        if rejoin:
            getattr(joined, kind)(
                left, _kafka_rejoiner(), materialized_as=REJOIN_STORE
            ).to_stream().to(REJOIN_OUT)
        return b

    return build


def _workflow_topology(kind: str, form: str, right_store: str | None = None) -> Callable[[], StreamsBuilder]:
    """Left rows ``{"fk": n, "v": ...}`` (JSON), right rows keyed by BIGINT with String
    values; the joiner shows the pair ``(fk,right)``, not ``v``. ``right_store``
    materializes the right table under that name."""

    def build() -> StreamsBuilder:
        if form == "sql":
            foreign_key, joiner = WORKFLOW_SQL
        else:

            def foreign_key(value):
                return value["fk"]

            def joiner(left, right):
                return f"({left['fk']},{'null' if right is None else right})"

        b = StreamsBuilder()
        left = b.table(LEFT, **WORKFLOW_LEFT)
        right = b.table(RIGHT, **WORKFLOW_RIGHT, **({"materialized_as": right_store} if right_store else {}))
        getattr(left, kind)(
            right, joiner, foreign_key=foreign_key, materialized_as=STORE
        ).to_stream().to(OUT)
        return b

    return build


# ------------------------------------------------------- KIP-213: the workflow table
def fk(n: int, v: str | None = None) -> dict[str, Any]:
    return {"fk": n, "v": v}


WORKFLOW: list[Row] = [
    (RIGHT, 1, "foo", 1, []),
    # Normal join induced by a left event.
    (LEFT, "k", fk(1), 2, [R("k", "(1,foo)", 2)]),
    # The foreign key changes to one without a right row: the old result is wiped.
    (LEFT, "k", fk(2), 3, PerKind([R("k", None, 3)], [R("k", "(2,null)", 3)])),
    # Again: Kafka's inner join sends another tombstone (redundant, not emitted).
    (LEFT, "k", fk(3), 4, PerKind([], [R("k", "(3,null)", 4)])),
    # A right row arrives for the current foreign key (prefix scan of subscribers).
    (RIGHT, 3, "bar", 5, [R("k", "(3,bar)", 5)]),
    # The left row is deleted.
    (LEFT, "k", None, 6, [R("k", None, 6)]),
    # The original event again.
    (LEFT, "k", fk(1), 7, [R("k", "(1,foo)", 7)]),
    # A left row without a right row: the one difference between inner and left.
    (LEFT, "q", fk(10), 8, PerKind([], [R("q", "(10,null)", 8)])),
    (RIGHT, 10, "baz", 9, [R("q", "(10,baz)", 9)]),
]
WORKFLOW_FINAL = {"k": "(1,foo)", "q": "(10,baz)"}


def workflow(kind: str, form: str = "sql") -> Scenario:
    return scenario(_workflow_topology(kind, form), WORKFLOW, kind, WORKFLOW_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_kip213_workflow(spark, kind):
    """KIP-213, "The workflow of LHS-generated changes to outputs", row by row: right
    (1, foo); left k -> 1, k -> 2, k -> 3; right (3, bar); k deleted; k -> 1 again;
    q -> 10; right (10, baz). Inner: k (1,foo), k tombstone, k (3,bar), k tombstone,
    k (1,foo), q (10,baz); left: k (1,foo), k (2,null), k (3,null), k (3,bar),
    k tombstone, k (1,foo), q (10,null), q (10,baz).

    Differs from the table in one record: for k -> 3 the inner join "would ideally not
    publish a delete" but does (it keeps no state to know that k -> 2 already deleted
    the result); we do not emit it (no current result for k). Timestamps increase, so
    each record carries its input's timestamp (the larger of the two sides).

    Foreign key and joiner as SQL (the field ``fk``, ``concat``);
    :func:`test_unchanged_result_is_not_repeated` runs the same topology with Python
    callables over the left value's dict."""
    run_per_record(spark, workflow(kind))


RIGHT_STORE = "right-store"


@pytest.mark.parametrize("kind", KINDS)
def test_kip213_workflow_right_table_materialized(spark, kind):
    """The KIP-213 workflow with the right table materialized (queried, so it keeps a
    store of its own and hands the join its changes): the same records, and the right
    table's contents. Without ``materialized_as`` (:func:`test_kip213_workflow`) the
    join keeps the right table alone: see :func:`test_right_table_kept_by_the_join`."""
    sc = scenario(_workflow_topology(kind, "sql", RIGHT_STORE), WORKFLOW, kind, WORKFLOW_FINAL,
                  stores={STORE: WORKFLOW_FINAL, RIGHT_STORE: {1: "foo", 3: "bar", 10: "baz"}})
    run_per_record(spark, sc)


@pytest.mark.parametrize("right_store", [None, RIGHT_STORE])
def test_right_table_kept_by_the_join(spark, right_store, strategy):
    """A right table read only by a foreign-key join has no store of its own: the join's
    copy of it (``<subscription store>-RIGHT``) is the table. A materialized right table
    keeps its store. With the right table replicated the join keeps its left table too
    (``<subscription store>-LEFT``)."""
    built = _workflow_topology("join", "sql", right_store)().build()
    with TestDriver(built, spark=spark) as driver:
        driver.create_input_topic(RIGHT).pipe_input(1, "foo", 1)
        driver.create_input_topic(LEFT).pipe_input("k", fk(1), 2)
        stores = sorted(p.name for p in driver.layout.local_dir.iterdir())
    left_store = next(n.store for n in built.sources if n.topics == (LEFT,))
    subscriptions = next(n.subscriptions for n in built.nodes if hasattr(n, "subscriptions"))
    left_copy = f"{subscriptions}-LEFT" if strategy == "replicated" else left_store
    assert stores == sorted([left_copy, subscriptions, f"{subscriptions}-RIGHT", *([right_store] if right_store else [])])


# ------------------------- KTableKTableForeignKeyJoinIntegrationTest: left-side lifecycle
def _rejoined(fk_result: str, left_value: str) -> str:
    return f"rejoin({fk_result},{left_value})"


def _left_added(key: str, value: str, right_value: str, ts: int) -> dict[str, list[R]]:
    result = f"({value},{right_value})"
    return {OUT: [R(key, result, ts)], REJOIN_OUT: [R(key, _rejoined(result, value), ts)]}


LEFT_LIFECYCLE: list[Row] = [
    (RIGHT, "rhs1", "rhsValue1", 100, []),
    (RIGHT, "rhs2", "rhsValue2", 101, []),
    (RIGHT, "rhs3", "rhsValue3", 102, []),  # never referenced
    (LEFT, "lhs1", "lhsValue1|rhs1", 103, _left_added("lhs1", "lhsValue1|rhs1", "rhsValue1", 103)),
    (LEFT, "lhs2", "lhsValue2|rhs2", 104, _left_added("lhs2", "lhsValue2|rhs2", "rhsValue2", 104)),
    # Another reference to an existing foreign key.
    (LEFT, "lhs3", "lhsValue3|rhs1", 105, _left_added("lhs3", "lhsValue3|rhs1", "rhsValue1", 105)),
    (LEFT, "lhs1", None, 106, {OUT: [R("lhs1", None, 106)], REJOIN_OUT: [R("lhs1", None, 106)]}),
]
LEFT_LIFECYCLE_FINAL = {
    "lhs2": "(lhsValue2|rhs2,rhsValue2)",
    "lhs3": "(lhsValue3|rhs1,rhsValue1)",
}
LEFT_LIFECYCLE_REJOIN_FINAL = {
    "lhs2": "rejoin((lhsValue2|rhs2,rhsValue2),lhsValue2|rhs2)",
    "lhs3": "rejoin((lhsValue3|rhs1,rhsValue1),lhsValue3|rhs1)",
}


def left_lifecycle(kind: str) -> Scenario:
    return scenario(
        _integration(kind, rejoin=True),
        LEFT_LIFECYCLE,
        kind,
        LEFT_LIFECYCLE_FINAL,
        more={REJOIN_OUT: LEFT_LIFECYCLE_REJOIN_FINAL},
        stores={STORE: LEFT_LIFECYCLE_FINAL, REJOIN_STORE: LEFT_LIFECYCLE_REJOIN_FINAL},
    )


@pytest.mark.parametrize("kind", KINDS)
def test_left_side_lifecycle(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromLeftThenDeleteLeftEntity
    (leftJoin true/false, materialized, rejoin): right rows first, then left rows join
    as they arrive (two of them on the same foreign key), then a left row is deleted.
    The rejoin output is the result joined again with the left table on the primary key
    (inner for join, left for left_join), materialized too.

    Same records as Kafka on the main output. On the rejoin output, for the deletion of
    lhs1, Kafka's left-join variant first emits a transient
    ``rejoin((lhsValue1|rhs1,rhsValue1),null)`` (the primary-key join sees the left
    table's deletion before the foreign-key join's tombstone) and the original asserts
    only that the tombstone is among the records; we emit the tombstone alone."""
    run_per_record(spark, left_lifecycle(kind))


# ------------------------ KTableKTableForeignKeyJoinIntegrationTest: change, then revert
CHANGE_AND_REVERT: list[Row] = [
    (RIGHT, "rhs1", "rhsValue1", 100, []),
    (RIGHT, "rhs2", "rhsValue2", 101, []),
    (LEFT, "lhs1", "lhsValue1|rhs1", 103, [R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 103)]),
    (LEFT, "lhs1", "lhsValue1|rhs2", 105, [R("lhs1", "(lhsValue1|rhs2,rhsValue2)", 105)]),
    (LEFT, "lhs1", "lhsValue1|rhs1", 106, [R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 106)]),
]
CHANGE_AND_REVERT_FINAL = {"lhs1": "(lhsValue1|rhs1,rhsValue1)"}


def change_and_revert(kind: str) -> Scenario:
    return scenario(_integration(kind), CHANGE_AND_REVERT, kind, CHANGE_AND_REVERT_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_foreign_key_change_and_revert(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromLeftThenUpdateFkThenRevertBack
    (leftJoin true/false): a left row joins rhs1, moves to rhs2, then back to rhs1; each
    move re-joins at once with the other right row (timestamps 103, 105, 106 as in the
    original). Identical to Kafka's output."""
    run_per_record(spark, change_and_revert(kind))


# ------------------------ KTableKTableForeignKeyJoinIntegrationTest: right-side lifecycle
RIGHT_LIFECYCLE: list[Row] = [
    (LEFT, "lhs1", "lhsValue1|rhs1", 100, PerKind([], [R("lhs1", "(lhsValue1|rhs1,null)", 100)])),
    (LEFT, "lhs2", "lhsValue2|rhs2", 101, PerKind([], [R("lhs2", "(lhsValue2|rhs2,null)", 101)])),
    (LEFT, "lhs3", "lhsValue3|rhs1", 102, PerKind([], [R("lhs3", "(lhsValue3|rhs1,null)", 102)])),
    (
        RIGHT,
        "rhs1",
        "rhsValue1",
        103,
        [
            R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 103),
            R("lhs3", "(lhsValue3|rhs1,rhsValue1)", 103),
        ],
    ),
    (RIGHT, "rhs2", "rhsValue2", 104, [R("lhs2", "(lhsValue2|rhs2,rhsValue2)", 104)]),
    (RIGHT, "rhs3", "rhsValue3", 105, []),  # never referenced
    (
        RIGHT,
        "rhs1",
        None,
        106,
        PerKind(
            [R("lhs1", None, 106), R("lhs3", None, 106)],
            [R("lhs1", "(lhsValue1|rhs1,null)", 106), R("lhs3", "(lhsValue3|rhs1,null)", 106)],
        ),
    ),
]
RIGHT_LIFECYCLE_FINAL = PerKind(
    {"lhs2": "(lhsValue2|rhs2,rhsValue2)"},
    {
        "lhs1": "(lhsValue1|rhs1,null)",
        "lhs2": "(lhsValue2|rhs2,rhsValue2)",
        "lhs3": "(lhsValue3|rhs1,null)",
    },
)


def right_lifecycle(
    kind: str, partitions: Mapping[str, int] | None = None, state_partitions: int = 1
) -> Scenario:
    return scenario(
        _integration(kind),
        RIGHT_LIFECYCLE,
        kind,
        RIGHT_LIFECYCLE_FINAL,
        partitions=partitions,
        state_partitions=state_partitions,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_right_side_lifecycle(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromRightThenDeleteRightEntity
    (leftJoin true/false): left rows first (the left join emits them unmatched), then
    right rows arrive (rhs1 reaches both of its subscribers), an unreferenced right row
    changes nothing, and deleting rhs1 deletes (inner) or un-matches (left) both
    results, at the deletion's timestamp. The original reads the latest value per key
    after each step; every record here is one of those. Identical to Kafka's output."""
    run_per_record(spark, right_lifecycle(kind))


# ---------------- KTableKTableForeignKeyJoinIntegrationTest: tombstones for non-joining rows
NON_JOINING_DELETED: list[Row] = [
    (LEFT, "lhs1", "lhsValue1|rhs1", 100, PerKind([], [R("lhs1", "(lhsValue1|rhs1,null)", 100)])),
    # Kafka's inner join: ("lhs1", null), a tombstone for a result that never existed.
    (LEFT, "lhs1", None, 101, PerKind([], [R("lhs1", None, 101)])),
    (LEFT, "lhs1", None, 102, []),  # deleting a deleted row
]
NEVER_EXISTED_DELETED: list[Row] = [(LEFT, "lhs1", None, 100, [])]


def tombstones(kind: str, case: str) -> Scenario:
    rows = NON_JOINING_DELETED if case == "non-joining" else NEVER_EXISTED_DELETED
    return scenario(_integration(kind), rows, kind, {})


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "case",
    [
        pytest.param("non-joining", id="shouldEmitTombstoneWhenDeletingNonJoiningRecords"),
        pytest.param("never-existed", id="shouldNotEmitTombstonesWhenDeletingNonExistingRecords"),
    ],
)
def test_tombstones_for_non_joining_rows(spark, kind, case):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitTombstoneWhenDeletingNonJoiningRecords
    (a left row without a right row is inserted, deleted, deleted again) and
    shouldNotEmitTombstonesWhenDeletingNonExistingRecords (a row that never existed is
    deleted), leftJoin true/false.

    Differs from Kafka in one record: when the non-joining row is deleted, Kafka's inner
    join emits ``("lhs1", null)`` ("unnecessary ... because it's not possible to know
    whether a result was previously emitted", says the original); the inner join has no
    result for lhs1, so we emit nothing. The left join's tombstone deletes its
    ``(lhsValue1|rhs1,null)`` and is kept. Deleting a missing row emits nothing, as in
    Kafka."""
    run_per_record(spark, tombstones(kind, case))


# ----------------- KTableKTableForeignKeyJoinIntegrationTest: non-matching foreign key
NON_MATCHING: list[Row] = [
    (LEFT, "lhs1", "lhsValue1|rhs1", 100, PerKind([], [R("lhs1", "(lhsValue1|rhs1,null)", 100)])),
    # Kafka's inner join: ("lhs1", null) for each move between missing foreign keys.
    (LEFT, "lhs1", "lhsValue1|rhs2", 101, PerKind([], [R("lhs1", "(lhsValue1|rhs2,null)", 101)])),
    (LEFT, "lhs1", "lhsValue1|rhs3", 102, PerKind([], [R("lhs1", "(lhsValue1|rhs3,null)", 102)])),
    # rhs1 was referenced before, not now: nothing changes.
    (RIGHT, "rhs1", "rhsValue1", 103, []),
    (LEFT, "lhs1", "lhsValue1|rhs1", 104, [R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 104)]),
    (
        LEFT,
        "lhs1",
        "lhsValue1|rhs2",
        105,
        PerKind([R("lhs1", None, 105)], [R("lhs1", "(lhsValue1|rhs2,null)", 105)]),
    ),
]
NON_MATCHING_FINAL = PerKind({}, {"lhs1": "(lhsValue1|rhs2,null)"})


def non_matching(kind: str) -> Scenario:
    return scenario(_integration(kind), NON_MATCHING, kind, NON_MATCHING_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_non_matching_foreign_key(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.joinShouldProduceNullsWhenValueHasNonMatchingForeignKey
    (leftJoin true/false): a left row moves between foreign keys without right rows,
    a right row appears for a key it no longer references (no change), the row moves to
    it (joins), then away again (inner: tombstone; left: unmatched).

    Differs from Kafka in two records: for the moves rhs1 -> rhs2 and rhs2 -> rhs3
    Kafka's inner join emits ``("lhs1", null)`` each time ("an unnecessary tombstone",
    says the original); the inner join has no result for lhs1 then, so we emit nothing.
    The left join's records are Kafka's."""
    run_per_record(spark, non_matching(kind))


# ------------------ KTableKTableForeignKeyJoinIntegrationTest: unsubscribe the old key
UNSUBSCRIBE: list[Row] = [
    (RIGHT, "rhs1", "rhsValue1", 100, []),
    (RIGHT, "rhs2", "rhsValue2", 101, []),
    (LEFT, "lhs1", "lhsValue1|rhs1", 102, [R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 102)]),
    (LEFT, "lhs1", "lhsValue1|rhs2", 103, [R("lhs1", "(lhsValue1|rhs2,rhsValue2)", 103)]),
    (RIGHT, "rhs1", "rhsValue1Delta", 104, []),  # the old foreign key: no subscriber left
]
UNSUBSCRIBE_FINAL = {"lhs1": "(lhsValue1|rhs2,rhsValue2)"}


def unsubscribe(kind: str) -> Scenario:
    return scenario(_integration(kind), UNSUBSCRIBE, kind, UNSUBSCRIBE_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_unsubscribe_old_foreign_key(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldUnsubscribeOldForeignKeyIfLeftSideIsUpdated
    (leftJoin true/false): after lhs1 moves from rhs1 to rhs2, an update of rhs1 must
    not reach it. Identical to Kafka's output."""
    run_per_record(spark, unsubscribe(kind))


# -------------------- KTableKTableForeignKeyJoinIntegrationTest: null foreign keys (KIP-962)
NULL_FK: list[Row] = [
    (LEFT, "lhs1", "lhsValue1|rhs1", 100, [R("lhs1", "(lhsValue1|rhs1,null)", 100)]),
    # Added here: no right row matches a null foreign key, whatever its key.
    (RIGHT, "null", "rhsValueNull", 101, []),
    (RIGHT, "rhs1", "rhsValue1", 102, []),
]
NULL_FK_FINAL = {"lhs1": "(lhsValue1|rhs1,null)"}


def null_fk(form: str) -> Scenario:
    def build() -> StreamsBuilder:
        b = StreamsBuilder()
        left = b.table(LEFT, **STRING_VALUES)
        right = b.table(RIGHT, **STRING_VALUES)
        extractor = _fk_null() if form == "callable" else "CAST(NULL AS STRING)"
        left.left_join(
            right, _kafka_joiner(), foreign_key=extractor, materialized_as=STORE
        ).to_stream().to(OUT)
        return b

    return scenario(build, NULL_FK, "left_join", NULL_FK_FINAL)


@pytest.mark.parametrize("form", ["callable", "sql"])
def test_null_foreign_key_in_left_join(spark, form):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordOnNullForeignKeyForLeftJoins:
    a left join whose extractor returns null emits the left row unmatched (KIP-962).
    The original pipes the left row only; the two right rows after it are added here
    (derived from KIP-962: a null foreign key matches nothing, not a right row keyed
    ``"null"`` either). Extractor as a callable (``value -> null``) and as SQL.
    Identical to Kafka's output."""
    run_per_record(spark, null_fk(form))


NULL_FK_CHANGE: list[Row] = [
    (LEFT, "lhs1", "lhsValue1|rhs1", 100, PerKind([], [R("lhs1", "(lhsValue1|rhs1,null)", 100)])),
    # Kafka's inner join: ("lhs1", null), unsubscribing rhs1 with DELETE_KEY_AND_PROPAGATE.
    (
        LEFT,
        "lhs1",
        "lhsValue1|returnNull",
        100,
        PerKind([], [R("lhs1", "(lhsValue1|returnNull,null)", 100)]),
    ),
    # Added here (the original checks instead that the rhs1 subscription is gone):
    (RIGHT, "rhs1", "rhsValue1", 101, []),
    (LEFT, "lhs1", "lhsValue1|rhs1", 102, [R("lhs1", "(lhsValue1|rhs1,rhsValue1)", 102)]),
    (
        LEFT,
        "lhs1",
        "lhsValue1|returnNull",
        103,
        PerKind([R("lhs1", None, 103)], [R("lhs1", "(lhsValue1|returnNull,null)", 103)]),
    ),
]
NULL_FK_CHANGE_FINAL = PerKind({}, {"lhs1": "(lhsValue1|returnNull,null)"})


def null_fk_change(kind: str) -> Scenario:
    return scenario(
        _integration(kind, extractor=_fk_after_bar_or_null),
        NULL_FK_CHANGE,
        kind,
        NULL_FK_CHANGE_FINAL,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_foreign_key_changes_to_null(spark, kind):
    """KTableKTableForeignKeyJoinIntegrationTest.shouldEmitRecordWhenOldAndNewFkDiffer
    (a left join; ``returnNull`` extracts as null): lhs1 refers to a missing rhs1, then
    to a null foreign key; both are emitted unmatched (same timestamp 100, as in the
    original). The original then checks that the rhs1 subscription is gone; here the
    scenario goes on instead (derived from KIP-962 and Kafka's
    SubscriptionSendProcessorSupplier): rhs1 arriving reaches nobody; lhs1 back on
    rhs1 joins; lhs1 to a null foreign key again un-matches (left) or deletes the
    result (inner: Kafka sends DELETE_KEY_AND_PROPAGATE to the old foreign key). The
    inner join runs the same steps.

    Differs from Kafka in one record of the inner join: when lhs1's foreign key first
    becomes null, Kafka unsubscribes rhs1 with DELETE_KEY_AND_PROPAGATE and emits
    ``("lhs1", null)``, though lhs1 had no result (rhs1 had no row then); we emit
    nothing. The left join's records are Kafka's."""
    run_per_record(spark, null_fk_change(kind))


# ----------------------- KTableKTableForeignKeyJoinScenarioTest: FK join, then PK join
FK_OUT = "fk-output"
CHAIN_OUT = "output"
# Kafka's Integer keys and String values; the sinks declare them (Produced.with).
INT_KEYS: dict[str, Any] = {"key_schema": "INT", **STRING_VALUES}
INT_STRING_SINK: dict[str, Any] = {
    "key_format": "KAFKA",
    "key_schema": "INT",
    "value_format": "KAFKA",
    "value_schema": "STRING",
}


def _fk_before_dash() -> Callable[[str], int]:
    """shouldWorkWithDefaultSerdes's extractor: ``Integer.parseInt(value.split("-")[0])``."""

    def extract(value):
        return int(value.split("-")[0])

    return extract


CHAIN: list[Row] = [
    ("A", 1, "999-alpha", 10, {}),
    (
        "B",
        999,
        "beta",
        20,
        {
            FK_OUT: [R(1, "(999-alpha,beta)", 20)],
            CHAIN_OUT: [R(1, "(999-alpha,(999-alpha,beta))", 20)],
        },
    ),
    # The original ends here; the steps below are derived.
    (
        "A",
        2,
        "999-delta",
        30,
        {
            FK_OUT: [R(2, "(999-delta,beta)", 30)],
            CHAIN_OUT: [R(2, "(999-delta,(999-delta,beta))", 30)],
        },
    ),
    # Kafka's CHAIN_OUT: (1, "(998-alpha,(999-alpha,beta))", 40) first, then the tombstone.
    ("A", 1, "998-alpha", 40, {FK_OUT: [R(1, None, 40)], CHAIN_OUT: [R(1, None, 40)]}),
    (
        "B",
        999,
        "gamma",
        50,
        {
            FK_OUT: [R(2, "(999-delta,gamma)", 50)],
            CHAIN_OUT: [R(2, "(999-delta,(999-delta,gamma))", 50)],
        },
    ),
    (
        "B",
        998,
        "omega",
        60,
        {
            FK_OUT: [R(1, "(998-alpha,omega)", 60)],
            CHAIN_OUT: [R(1, "(998-alpha,(998-alpha,omega))", 60)],
        },
    ),
    ("A", 2, None, 70, {FK_OUT: [R(2, None, 70)], CHAIN_OUT: [R(2, None, 70)]}),
]
CHAIN_FK_FINAL = {1: "(998-alpha,omega)"}
CHAIN_FINAL = {1: "(998-alpha,(998-alpha,omega))"}


def chain(form: str) -> Scenario:
    def build() -> StreamsBuilder:
        b = StreamsBuilder()
        a_table = b.table("A", **INT_KEYS)
        b_table = b.table("B", **INT_KEYS)
        extractor = _fk_before_dash() if form == "callable" else "CAST(split(value, '-')[0] AS INT)"
        fk_result = a_table.join(
            b_table, _kafka_joiner(), foreign_key=extractor, materialized_as="asdf"
        )
        a_table.join(fk_result, _kafka_joiner()).to(CHAIN_OUT, **INT_STRING_SINK)
        fk_result.to(FK_OUT, **INT_STRING_SINK)
        return b

    return scenario(
        build,
        CHAIN,
        "join",
        CHAIN_FINAL,
        out=CHAIN_OUT,
        more={FK_OUT: CHAIN_FK_FINAL},
        stores={"asdf": CHAIN_FK_FINAL},
    )


@pytest.mark.parametrize("form", ["callable", "sql"])
def test_fk_join_then_pk_join(spark, form):
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithDefaultSerdes (and its serde
    variants shouldWorkWithDefaultAndConsumedSerdes / ...JoinResultSerdes /
    ...EquiJoinResultSerdes / ...ProducedSerdes, the same scenario): A joins B on the
    foreign key before ``-`` (materialized as ``asdf``), and A joins that result on its
    primary key. The original pipes A (1, "999-alpha") and B (999, "beta") and asserts
    the output map {1: "(999-alpha,(999-alpha,beta))"}; the records and the steps
    after it are derived (a second subscriber, a move to another foreign key, right
    updates, a left deletion). The foreign-key result also goes to its own topic.

    Differs from Kafka in one record: when A's row 1 moves to the missing foreign key
    998, Kafka's primary-key join first sees A's new value with the old foreign-key
    result and emits ``(1, "(998-alpha,(999-alpha,beta))", 40)``, then the tombstone;
    we emit the tombstone alone. Extractor as a callable (``int(...)``, an INT foreign
    key for INT right keys) and as SQL (``CAST(... AS INT)``)."""
    run_per_record(spark, chain(form))


# -------------- KTableKTableForeignKeyJoinScenarioTest: composite left keys (producer id)
def composite(variant: str) -> Scenario:
    if variant == "value":
        values = ["producer1|product1-data", "producer1|product2-data", "producer2|product1-data"]
    else:
        values = ["product1-data", "product2-data", "product1-data"]

    def build() -> StreamsBuilder:
        if variant == "value":
            extractor: Any = "split(value, '[|]')[0]"
        else:

            def extractor(key, value):
                return key.split(":")[0]

        b = StreamsBuilder()
        left = b.table(LEFT, **STRING_VALUES)
        right = b.table(RIGHT, **STRING_VALUES)
        left.join(right, _kafka_joiner(), foreign_key=extractor, materialized_as=STORE).to(OUT)
        return b

    keys = ["producer1:product1", "producer1:product2", "producer2:product1"]
    results = [f"({v},{k.split(':')[0]}-data)" for k, v in zip(keys, values, strict=True)]
    rows: list[Row] = [
        (LEFT, keys[0], values[0], 1, []),
        (LEFT, keys[1], values[1], 2, []),
        (LEFT, keys[2], values[2], 3, []),
        (
            RIGHT,
            "producer1",
            "producer1-data",
            4,
            [R(keys[0], results[0], 4), R(keys[1], results[1], 4)],
        ),
        (RIGHT, "producer2", "producer2-data", 5, [R(keys[2], results[2], 5)]),
    ]
    return scenario(build, rows, "join", dict(zip(keys, results, strict=True)))


@pytest.mark.parametrize(
    "variant",
    [
        pytest.param("value", id="shouldWorkWithCompositeKeyAndProducerIdInValue"),
        pytest.param("key", id="shouldWorkWithCompositeKeyAndBiFunctionExtractor"),
    ],
)
def test_composite_left_key(spark, variant):
    """KTableKTableForeignKeyJoinScenarioTest.shouldWorkWithCompositeKeyAndProducerIdInValue
    (foreign key from the value, ``value.split("|")[0]``, here as SQL) and
    shouldWorkWithCompositeKeyAndBiFunctionExtractor (from the key, a ``(key, value)``
    extractor, ``key.split(":")[0]``): three left rows keyed "producer:product", then
    the two producers. The originals pipe without timestamps and assert the final
    output map; timestamps 1..5 and the per-step records are derived (each right row
    reaches all of its subscribers). Identical to Kafka's output."""
    run_per_record(spark, composite(variant))


# ------------------------------------------------------------- timestamps out of order
RESULT_TIMESTAMP: list[Row] = [
    (RIGHT, 1, "foo", 50, []),
    # Left-triggered: the matched right row is newer (Kafka: the same).
    (LEFT, "k", fk(1), 10, [R("k", "(1,foo)", 50)]),
    # Right-triggered, the right record newer than the left row (Kafka: the same).
    (RIGHT, 1, "bar", 30, [R("k", "(1,bar)", 30)]),
    (LEFT, "m", fk(2), 70, PerKind([], [R("m", "(2,null)", 70)])),
    # Right-triggered, the left row newer: Kafka keeps the right record's 60.
    (RIGHT, 2, "baz", 60, [R("m", "(2,baz)", 70)]),
    # A right deletion: its timestamp counts (Kafka: the same).
    (RIGHT, 1, None, 40, PerKind([R("k", None, 40)], [R("k", "(1,null)", 40)])),
]
RESULT_TIMESTAMP_FINAL = PerKind({"m": "(2,baz)"}, {"k": "(1,null)", "m": "(2,baz)"})


def result_timestamp(kind: str) -> Scenario:
    return scenario(_workflow_topology(kind, "sql"), RESULT_TIMESTAMP, kind, RESULT_TIMESTAMP_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_result_timestamp_is_max_of_both_sides(spark, kind):
    """Result timestamps with inputs out of timestamp order (derived, no Kafka test
    asserts them): a result carries the larger of the left row's and the matched right
    row's timestamps; a right record that triggers a change counts with its own
    timestamp, a deletion included (the left join's unmatched k at 40).

    Differs from Kafka in one record: Kafka's result for a change triggered by a right
    record keeps that record's timestamp (ForeignTableJoinProcessorSupplier forwards
    it unchanged), so (2, baz) at 60 gives ``("m", "(2,baz)", 60)``; our joins use the
    larger timestamp, 70, as the primary-key join does (KTableKTableInnerJoin).
    Deletions of left rows are not in this scenario: Kafka times them differently for
    the inner and the left join when the right row is newer."""
    run_per_record(spark, result_timestamp(kind))


# ------------------------------------------------- no repeat of an unchanged result
NO_REPEAT: list[Row] = [
    (RIGHT, 1, "foo", 1, []),
    (LEFT, "k", fk(1, "a"), 2, [R("k", "(1,foo)", 2)]),
    # Same foreign key, a change the joiner does not show: Kafka re-emits (1,foo).
    (LEFT, "k", fk(1, "b"), 3, []),
    # The same right value again: Kafka re-emits (1,foo) to every subscriber.
    (RIGHT, 1, "foo", 4, []),
    (LEFT, "k", fk(2, "b"), 5, PerKind([R("k", None, 5)], [R("k", "(2,null)", 5)])),
    # Unmatched and unchanged as shown: Kafka's left join re-emits (2,null).
    (LEFT, "k", fk(2, "c"), 6, []),
    # Kafka's inner join: a tombstone for a result that no longer exists.
    (LEFT, "k", None, 7, PerKind([], [R("k", None, 7)])),
    (LEFT, "q", fk(1, "z"), 8, [R("q", "(1,foo)", 8)]),
]
NO_REPEAT_FINAL = {"q": "(1,foo)"}


def no_repeat(kind: str) -> Scenario:
    return scenario(_workflow_topology(kind, "callable"), NO_REPEAT, kind, NO_REPEAT_FINAL)


@pytest.mark.parametrize("kind", KINDS)
def test_unchanged_result_is_not_repeated(spark, kind):
    """Emit-on-change (derived from Kafka's subscription instructions, no Kafka test):
    the joiner shows the foreign key and the right value, not the left row's ``v``.

    Differs from Kafka in three records for each join: both re-emit ``("k", "(1,foo)")``
    when k's ``v`` changes (the subscription still gets the right value back) and when
    right row 1 is written again with the same value at a later timestamp; the left
    join re-emits ``("k", "(2,null)")`` when ``v`` changes again
    (PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE answers even without a right row), and the
    inner join sends a tombstone when k is deleted though k had no result then. None of
    these changes a result, so we emit none.
    Joiner and foreign key as callables over the left value's dict."""
    run_per_record(spark, no_repeat(kind))


# ------------------------------------------------------------- partition counts differ
LEFT_PARTITIONS = {LEFT: 3, RIGHT: 1}


def test_right_side_lifecycle_keys_spread_over_three_partitions():
    """The left keys of :func:`test_left_topic_with_three_partitions` land in three
    different partitions of a 3-partition topic (Kafka's default partitioner)."""
    partitions = {k: partition_for_key(k.encode(), 3) for k in ("lhs1", "lhs2", "lhs3")}
    assert sorted(partitions.values()) == [0, 1, 2]


@pytest.mark.parametrize(("kind", "state_partitions"), [("join", 1), ("left_join", 3)])
def test_left_topic_with_three_partitions(spark, kind, state_partitions):
    """KTableKTableForeignKeyJoinIntegrationTest.doJoinFromRightThenDeleteRightEntity
    again (see :func:`test_right_side_lifecycle`), with the left topic in 3 partitions
    and the right topic in 1: a foreign-key join needs no co-partitioning. lhs1, lhs2
    and lhs3 are in partitions 0, 2 and 1, so a right row reaches subscribers in
    several partitions. The inner join with 1 state partition, the left join with 3.
    Identical to Kafka's output."""
    run_per_record(spark, right_lifecycle(kind, LEFT_PARTITIONS, state_partitions))


# ------------------------------------------------------------------ as one batch each
BATCHED = [
    *(pytest.param(lambda k=k: workflow(k), id=f"kip213-workflow-{k}") for k in KINDS),
    *(pytest.param(lambda k=k: left_lifecycle(k), id=f"left-side-lifecycle-{k}") for k in KINDS),
    *(pytest.param(lambda k=k: change_and_revert(k), id=f"fk-change-revert-{k}") for k in KINDS),
    *(pytest.param(lambda k=k: right_lifecycle(k), id=f"right-side-lifecycle-{k}") for k in KINDS),
    *(
        pytest.param(lambda k=k, c=c: tombstones(k, c), id=f"tombstones-{c}-{k}")
        for k in KINDS
        for c in ("non-joining", "never-existed")
    ),
    *(pytest.param(lambda k=k: non_matching(k), id=f"non-matching-fk-{k}") for k in KINDS),
    *(pytest.param(lambda k=k: unsubscribe(k), id=f"unsubscribe-old-fk-{k}") for k in KINDS),
    pytest.param(lambda: null_fk("sql"), id="null-fk-left_join"),
    *(pytest.param(lambda k=k: null_fk_change(k), id=f"fk-changes-to-null-{k}") for k in KINDS),
    pytest.param(lambda: chain("sql"), id="fk-join-then-pk-join"),
    *(
        pytest.param(lambda v=v: composite(v), id=f"composite-left-key-{v}")
        for v in ("value", "key")
    ),
    *(pytest.param(lambda k=k: result_timestamp(k), id=f"result-timestamp-{k}") for k in KINDS),
    *(pytest.param(lambda k=k: no_repeat(k), id=f"no-repeat-{k}") for k in KINDS),
    pytest.param(
        lambda: right_lifecycle("left_join", LEFT_PARTITIONS, 3), id="left-topic-3-partitions"
    ),
]


@pytest.mark.parametrize("make", BATCHED)
def test_batched(spark, make):
    """Every scenario above as one batch (its anchor as in the per-record test named by
    the id): at most one record per changed key on every output, and every output
    changelog and materialized table equal to the final table, the join of the input
    tables' last rows. A key whose result exists only in the middle of the batch emits
    nothing (the chain's key 2, the non-joining row inserted and deleted), and a key's
    intermediate results are not emitted (the KIP-213 workflow's k)."""
    run_batched(spark, make())

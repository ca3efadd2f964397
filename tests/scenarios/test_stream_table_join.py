"""Kafka Streams' own KStream-KTable and KStream-GlobalKTable join tests, ported as
exact-record scenarios.

Sources (apache/kafka, read at trunk 1eb7644 of 2024-10-25), all in
``streams/src/test/java/org/apache/kafka/streams/kstream/internals/``:

- ``KStreamKTableJoinTest.java`` and ``KStreamKTableLeftJoinTest.java``
- ``KStreamGlobalKTableJoinTest.java`` and ``KStreamGlobalKTableLeftJoinTest.java``
- the null-key rules of ``streams/src/main/java/org/apache/kafka/streams/kstream/internals/
  KStreamKTableJoinProcessor.java`` (KIP-962), and KAFKA-19208 (apache/kafka#19580, 2025),
  which makes a left join with a GlobalKTable call the joiner with null when the key
  selector returns null instead of dropping the record.

Only stream records produce output: each joins the table as it is when the record is
processed, and the output keeps the stream record's key and timestamp. The join and the
left join of each original pipe the same inputs (except where a docstring says), so every
scenario here runs both joins in one topology, with outputs ``inner`` and ``left``, and
checks after every piped record (one record per batch, the driver's default) the exact
records ``(key, value, timestamp)`` each of them got. The joiner is
MockValueJoiner.TOSTRING_JOINER, ``v1 + "+" + v2`` with a missing table row printed as
"null". Kafka's Integer keys 0..3 are the STRING keys "0".."3" here.

Stream outputs carry no redundant records to normalize: every record here is Kafka's.

The originals give the KTable's records random timestamps
(``Random.nextInt(Integer.MAX_VALUE)``); fixed ones are used here, all later than every
stream record: a table update from an earlier batch counts whatever its timestamp, as
Kafka's non-versioned table counts every update already processed. Within one batch a
stream record meets the table as of its own timestamp
(``test_batched_stream_records_meet_the_table_as_of_their_timestamps``).

Not ported: the grace-period tests (they need versioned tables), the log-and-meter
assertions (the records they pipe are covered), and the co-partitioning-group
assertions, which become the partition-count tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

STREAM = "streamTopic"
TABLE = "tableTopic"
GLOBAL = "globalTableTopic"
INNER = "inner"
LEFT = "left"
STRING_VALUES: dict[str, Any] = {"value_format": "KAFKA", "value_schema": "STRING"}

R = TestRecord
# (input topic, key, value, timestamp, records of the first output, of the second output)
Step = tuple[str, Any, Any, int, list[TestRecord], list[TestRecord]]

# Stand-ins for the originals' random KTable timestamps.
TABLE_TS = (1_481_765_933, 1_085_377_743, 1_270_216_262, 1_191_391_529)

# The originals' key mapper as SQL: the second comma-separated token, or null without one.
SQL_FKEY_SELECTOR = "try_element_at(split(value, ','), 2)"


# ----------------------------------------------------------------------------- helpers
def tostring_joiner() -> Callable[[Any, Any], str]:
    """MockValueJoiner.TOSTRING_JOINER: ``v1 + "+" + v2``, Java printing null as "null".

    Made here, not at module level: Spark's workers unpickle a module-level function by
    reference, and this test module is not importable there."""

    def joiner(left: Any, right: Any) -> str:
        return ("null" if left is None else left) + "+" + ("null" if right is None else right)

    return joiner


def fkey_selector() -> Callable[[Any, str], str | None]:
    """The originals' key mapper: a stream value is comma-delimited and its second token,
    if any, is the GlobalKTable key; without one, null (no match)."""

    def selector(key: Any, value: str) -> str | None:
        tokens = value.split(",")
        return tokens[1] if len(tokens) > 1 else None

    return selector


def run_per_record(
    spark,
    builder: StreamsBuilder,
    steps: Sequence[Step],
    *,
    topics: dict[str, int],
    outputs: tuple[str, str] = (INNER, LEFT),
    **options,
) -> None:
    """Pipe each step's input as its own batch; assert the records each of the two
    ``outputs`` got from every step. ``topics``: input topic -> partition count."""
    with TestDriver(builder.build(), spark=spark, **options) as driver:
        inputs = {
            topic: driver.create_input_topic(topic, partitions=count)
            for topic, count in topics.items()
        }
        first, second = (driver.create_output_topic(topic) for topic in outputs)
        actual, expected = [], []
        for topic, key, value, timestamp, first_records, second_records in steps:
            inputs[topic].pipe_input(key, value, timestamp)
            step = (topic, key, value, timestamp)
            actual.append((step, first.read_records(), second.read_records()))
            expected.append((step, first_records, second_records))
        assert actual == expected


def by_key(records: Iterable[TestRecord]) -> dict[Any, list[tuple[Any, int]]]:
    """``key -> [(value, timestamp), ...]`` in output order: within a batch the order is
    fixed per key and free across keys."""
    result: dict[Any, list[tuple[Any, int]]] = {}
    for record in records:
        result.setdefault(record.key, []).append((record.value, record.timestamp))
    return result


def _stream_table(*, stream_topic: str = STREAM, table_topic: str = TABLE) -> StreamsBuilder:
    """The stream joined (to ``inner``) and left-joined (to ``left``) with the table."""
    b = StreamsBuilder()
    stream = b.stream(stream_topic, **STRING_VALUES)
    table = b.table(table_topic, **STRING_VALUES)
    stream.join(table, tostring_joiner()).to(INNER)
    stream.left_join(table, tostring_joiner()).to(LEFT)
    return b


def _stream_global(selector: Any) -> StreamsBuilder:
    """The stream joined (to ``inner``) and left-joined (to ``left``) with the global
    table, looked up by ``selector``."""
    b = StreamsBuilder()
    stream = b.stream(STREAM, **STRING_VALUES)
    table = b.global_table(GLOBAL, **STRING_VALUES)
    stream.join(table, tostring_joiner(), key_selector=selector).to(INNER)
    stream.left_join(table, tostring_joiner(), key_selector=selector).to(LEFT)
    return b


def s(
    key: Any, value: Any, timestamp: int, inner: list[TestRecord], left: list[TestRecord]
) -> Step:
    return (STREAM, key, value, timestamp, inner, left)


def t(key: Any, value: Any, timestamp: int) -> Step:
    """A KTable record: no output."""
    return (TABLE, key, value, timestamp, [], [])


def g(key: Any, value: Any, timestamp: int = 0) -> Step:
    """A GlobalKTable record: no output. (The inner originals pipe them all at 0.)"""
    return (GLOBAL, key, value, timestamp, [], [])


STREAM_AND_TABLE = {STREAM: 1, TABLE: 1}
STREAM_AND_GLOBAL = {STREAM: 1, GLOBAL: 1}


# ------------------------------------------------------------------------ KStream-KTable
NOT_JOIN_ON_TABLE_UPDATES: list[Step] = [
    # push two items to the primary stream; the table is empty
    s("0", "X0", 0, [], [R("0", "X0+null", 0)]),
    s("1", "X1", 1, [], [R("1", "X1+null", 1)]),
    # push two items to the table: no output
    t("0", "Y0", TABLE_TS[0]),
    t("1", "Y1", TABLE_TS[1]),
    # push all four items to the primary stream
    s("0", "X0", 0, [R("0", "X0+Y0", 0)], [R("0", "X0+Y0", 0)]),
    s("1", "X1", 1, [R("1", "X1+Y1", 1)], [R("1", "X1+Y1", 1)]),
    s("2", "X2", 2, [], [R("2", "X2+null", 2)]),
    s("3", "X3", 3, [], [R("3", "X3+null", 3)]),
    # push all items to the table: no output
    t("0", "YY0", TABLE_TS[0]),
    t("1", "YY1", TABLE_TS[1]),
    t("2", "YY2", TABLE_TS[2]),
    t("3", "YY3", TABLE_TS[3]),
    # push all four items to the primary stream
    s("0", "X0", 0, [R("0", "X0+YY0", 0)], [R("0", "X0+YY0", 0)]),
    s("1", "X1", 1, [R("1", "X1+YY1", 1)], [R("1", "X1+YY1", 1)]),
    s("2", "X2", 2, [R("2", "X2+YY2", 2)], [R("2", "X2+YY2", 2)]),
    s("3", "X3", 3, [R("3", "X3+YY3", 3)], [R("3", "X3+YY3", 3)]),
    # push all items to the table: no output
    t("0", "YYY0", TABLE_TS[0]),
    t("1", "YYY1", TABLE_TS[1]),
    t("2", "YYY2", TABLE_TS[2]),
    t("3", "YYY3", TABLE_TS[3]),
]


def test_stream_table_join_not_on_table_updates(spark):
    """KStreamKTableJoinTest.shouldNotJoinOnTableUpdates and
    shouldNotJoinWithEmptyTableOnStreamUpdates (its first two inputs);
    KStreamKTableLeftJoinTest.shouldNotJoinOnTableUpdates and
    shouldJoinWithEmptyTableOnStreamUpdates. Table updates emit nothing; a stream record
    meets the table's current row (the inner join drops it without one, the left join
    emits "X+null"); outputs keep the stream record's key and timestamp, whatever the
    table row's timestamp. Identical to Kafka's output."""
    run_per_record(spark, _stream_table(), NOT_JOIN_ON_TABLE_UPDATES, topics=STREAM_AND_TABLE)


JOIN_IF_MATCH_FOUND: list[Step] = [
    t("0", "Y0", TABLE_TS[0]),
    t("1", "Y1", TABLE_TS[1]),
    s("0", "X0", 0, [R("0", "X0+Y0", 0)], [R("0", "X0+Y0", 0)]),
    s("1", "X1", 1, [R("1", "X1+Y1", 1)], [R("1", "X1+Y1", 1)]),
    s("2", "X2", 2, [], [R("2", "X2+null", 2)]),
    s("3", "X3", 3, [], [R("3", "X3+null", 3)]),
]


def test_stream_table_join_only_if_match_found(spark):
    """KStreamKTableJoinTest.shouldJoinOnlyIfMatchFoundOnStreamUpdates and
    KStreamKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates: two table
    rows, then four stream records. Identical to Kafka's output."""
    run_per_record(spark, _stream_table(), JOIN_IF_MATCH_FOUND, topics=STREAM_AND_TABLE)


CLEAR_TABLE_ENTRY: list[Step] = [
    t("0", "Y0", TABLE_TS[0]),
    t("1", "Y1", TABLE_TS[1]),
    t("2", "Y2", TABLE_TS[2]),
    t("3", "Y3", TABLE_TS[3]),
    s("0", "X0", 0, [R("0", "X0+Y0", 0)], [R("0", "X0+Y0", 0)]),
    s("1", "X1", 1, [R("1", "X1+Y1", 1)], [R("1", "X1+Y1", 1)]),
    s("2", "X2", 2, [R("2", "X2+Y2", 2)], [R("2", "X2+Y2", 2)]),
    s("3", "X3", 3, [R("3", "X3+Y3", 3)], [R("3", "X3+Y3", 3)]),
    # two deletes on the table (piped at 0 in the originals): no output
    t("0", None, 0),
    t("1", None, 0),
    s("0", "XX0", 0, [], [R("0", "XX0+null", 0)]),
    s("1", "XX1", 1, [], [R("1", "XX1+null", 1)]),
    s("2", "XX2", 2, [R("2", "XX2+Y2", 2)], [R("2", "XX2+Y2", 2)]),
    s("3", "XX3", 3, [R("3", "XX3+Y3", 3)], [R("3", "XX3+Y3", 3)]),
]


def test_stream_table_join_after_table_deletes(spark):
    """KStreamKTableJoinTest.shouldClearTableEntryOnNullValueUpdates and
    KStreamKTableLeftJoinTest.shouldClearTableEntryOnNullValueUpdates: a deleted table row
    no longer matches (inner: nothing for keys 0 and 1; left: "XX0+null"). Identical to
    Kafka's output."""
    run_per_record(spark, _stream_table(), CLEAR_TABLE_ENTRY, topics=STREAM_AND_TABLE)


NULL_KEY_AND_VALUE: list[Step] = [
    t("0", "Y0", 0),
    s(None, "X", 4, [], [R(None, "X+null", 4)]),
    s("0", None, 5, [], []),
    s("0", "X0", 6, [R("0", "X0+Y0", 6)], [R("0", "X0+Y0", 6)]),
]


def test_stream_table_join_null_key_and_null_value(spark):
    """KStreamKTableJoinTest.shouldLogAndMeterWhenSkippingNullLeftKey and
    shouldLogAndMeterWhenSkippingNullLeftValue, with the left join's KIP-962 rule
    (KStreamKTableJoinProcessor.maybeDropRecord): a stream record with a null key matches
    no table row; the inner join drops it, the left join emits joiner(value, null) with
    the null key kept. A stream record with a null value is dropped by both joins. The
    last record checks that the table row was there all along. Identical to Kafka's
    output."""
    run_per_record(spark, _stream_table(), NULL_KEY_AND_VALUE, topics=STREAM_AND_TABLE)


# ----------------------------------------------------- KStream-KTable after a key change
REKEYED: list[Step] = [
    ("topic2", "c1", "Alice", 1, [], []),
    ("topic2", "c2", "Bob", 2, [], []),
    ("topic3", "c1", "Paris", 3, [], []),
    ("topic", "o1", "c1,pen", 10, [R("c1", "c1,pen+Alice", 10)], [R("c1", "c1,pen+Paris", 10)]),
    ("topic", "o2", "c2,ink", 11, [R("c2", "c2,ink+Bob", 11)], []),
    ("topic", "o3", "c3,cap", 12, [], []),
    ("topic2", "c1", "Alicia", 13, [], []),
    ("topic", "o4", "c1,mug", 14, [R("c1", "c1,mug+Alicia", 14)], [R("c1", "c1,mug+Paris", 14)]),
]


def _rekeyed_joins(*, names: tuple[str, str] | tuple[None, None]) -> tuple[StreamsBuilder, Any]:
    """shouldCreateRepartitionTopicsWithUserProvidedName's topology, re-keyed by
    ``select_key`` (the original maps ``(k, v) -> (v, k)``)."""
    b = StreamsBuilder()
    stream = b.stream("topic", **STRING_VALUES)
    table_b = b.table("topic2", **STRING_VALUES)
    table_c = b.table("topic3", **STRING_VALUES)
    rekeyed = stream.select_key("substring_index(value, ',', 1)")
    rekeyed.join(table_b, tostring_joiner(), name=names[0]).to("out-one")
    rekeyed.join(table_c, tostring_joiner(), name=names[1]).to("out-two")
    return b, rekeyed


def test_join_after_select_key_goes_through_repartition_topics(spark):
    """KStreamKTableJoinTest.shouldCreateRepartitionTopicsWithUserProvidedName: a stream
    re-keyed before two named joins ("first-join", "second-join") reaches each through its
    own repartition topic, ``<name>-repartition``, written by ``<topic>-sink`` and read by
    ``<topic>-source``, which feeds the join processor named ``<name>`` (Kafka's names).
    The original only describes the topology; here the re-keyed records also run through
    it, on 2 state partitions: an order "o1" with value "c1,pen" is re-keyed to its
    customer "c1" and joins the customers' names ("topic2") and cities ("topic3"); the
    output key is the new key."""
    builder, _ = _rekeyed_joins(names=("first-join", "second-join"))
    text = str(builder.build().describe())
    for name in ("first-join", "second-join"):
        topic = f"{name}-repartition"
        assert f"Sink: {topic}-sink (topic: {topic})" in text, text
        assert re.search(
            rf"Source: {topic}-source \(topics: \[{topic}\]\)\n\s+--> {name}\n", text
        ), text
        assert f"Processor: {name} (stores: [" in text, text
    run_per_record(
        spark,
        builder,
        REKEYED,
        topics={"topic": 1, "topic2": 1, "topic3": 1},
        outputs=("out-one", "out-two"),
        partitions=2,
    )


def test_join_after_select_key_reuses_generated_repartition_topic():
    """KStreamKTableJoinTest.shouldReuseRepartitionTopicWithGeneratedName: without names,
    the two joins of one re-keyed stream share a single repartition topic named after the
    key-changing node, ``<KSTREAM-KEY-SELECT-n>-repartition``, whose source feeds both
    join processors (``KSTREAM-JOIN-<n>``). Plan only."""
    builder, rekeyed = _rekeyed_joins(names=(None, None))
    text = str(builder.build().describe())
    topic = f"{rekeyed.name}-repartition"
    assert re.findall(r"\(topic: (\S+-repartition)\)", text) == [topic], text
    assert re.search(
        rf"\(topics: \[{re.escape(topic)}\]\)\n\s+--> KSTREAM-JOIN-\d+, KSTREAM-JOIN-\d+\n", text
    ), text


# --------------------------------------------------------------- partition counts differ
DIFFERENT_PARTITION_COUNTS: list[Step] = [
    t("0", "Y0", 0),
    t("1", "Y1", 0),
    # the stream topic's partition: "0" and "2" in 0, "1" and "3" in 1 (murmur2 of the key)
    s("0", "X0", 1, [R("0", "X0+Y0", 1)], [R("0", "X0+Y0", 1)]),
    s("1", "X1", 2, [R("1", "X1+Y1", 2)], [R("1", "X1+Y1", 2)]),
    s("2", "X2", 3, [], [R("2", "X2+null", 3)]),
    s("3", "X3", 4, [], [R("3", "X3+null", 4)]),
    t("1", None, 5),
    s("1", "XX1", 6, [], [R("1", "XX1+null", 6)]),
    s("0", "XX0", 7, [R("0", "XX0+Y0", 7)], [R("0", "XX0+Y0", 7)]),
]


def test_stream_table_join_with_different_partition_counts(spark):
    """No Kafka counterpart: Kafka Streams refuses to start a join of topics that are not
    co-partitioned (KStreamKTableJoinTest.shouldRequireCopartitionedStreams asserts the
    co-partition group). Without ``strict`` the join runs anyway and is exact: the stream
    topic has 2 partitions and the table topic 1, and every stream record finds its table
    row (the data of shouldJoinOnlyIfMatchFoundOnStreamUpdates plus a table delete)."""
    run_per_record(spark, _stream_table(), DIFFERENT_PARTITION_COUNTS, topics={STREAM: 2, TABLE: 1})


STRICT_CASES = [
    pytest.param("join", 1, 2, id="join-1-2"),
    pytest.param("left_join", 1, 2, id="left_join-1-2"),
    pytest.param("join", 2, 1, id="join-2-1"),
]


@pytest.mark.parametrize(("method", "stream_partitions", "table_partitions"), STRICT_CASES)
def test_strict_join_rejects_different_partition_counts(
    spark, method, stream_partitions, table_partitions
):
    """ksqlDB's co-partitioning error, raised by ``strict=True`` when the first batch runs
    (the stream topic is named S1 and the table topic T3, as in ksqlDB's message)."""
    from tablestream.errors import CoPartitioningError

    b = StreamsBuilder()
    stream = b.stream("S1", **STRING_VALUES)
    table = b.table("T3", **STRING_VALUES)
    getattr(stream, method)(table, tostring_joiner(), strict=True).to(INNER)
    message = (
        "Can't join `S1` with `T3` since the number of partitions don't match. "
        f"`S1` partitions = {stream_partitions}; `T3` partitions = {table_partitions}. "
        "Please repartition either one so that the number of partitions match."
    )
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        streams = driver.create_input_topic("S1", partitions=stream_partitions)
        tables = driver.create_input_topic("T3", partitions=table_partitions)
        tables.pipe_input("0", "Y0", 0)
        streams.pipe_input("0", "X0", 1)
        with pytest.raises(CoPartitioningError, match=re.escape(message)):
            driver.advance()


def test_strict_join_with_equal_partition_counts(spark):
    """``strict=True`` with both topics on 2 partitions: no error, exact results (one
    batch; stream records meet table rows with earlier timestamps)."""
    b = StreamsBuilder()
    stream = b.stream(STREAM, **STRING_VALUES)
    table = b.table(TABLE, **STRING_VALUES)
    stream.join(table, tostring_joiner(), strict=True).to(INNER)
    stream.left_join(table, tostring_joiner(), strict=True).to(LEFT)
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        streams = driver.create_input_topic(STREAM, partitions=2)
        tables = driver.create_input_topic(TABLE, partitions=2)
        inner, left = driver.create_output_topic(INNER), driver.create_output_topic(LEFT)
        tables.pipe_input("0", "Y0", 0)
        tables.pipe_input("1", "Y1", 0)
        for i in range(3):
            streams.pipe_input(str(i), f"X{i}", i + 1)
        driver.advance()
        assert by_key(inner.read_records()) == by_key([R("0", "X0+Y0", 1), R("1", "X1+Y1", 2)])
        assert by_key(left.read_records()) == by_key(
            [R("0", "X0+Y0", 1), R("1", "X1+Y1", 2), R("2", "X2+null", 3)]
        )


# ------------------------------------------------------------------ batched, by timestamp
def test_batched_stream_records_meet_the_table_as_of_their_timestamps(spark):
    """Batched: a stream record meets the table's updates from earlier batches (whatever
    their timestamps) and those of its own batch with an earlier timestamp, not the later
    ones. In the second batch every stream record is piped before every table record, so
    offsets alone would give the stream records no table at all.

    Key "k": Y1 at 10, Y2 at 20, deleted at 30; stream records at 5, 15, 25, 35 meet
    nothing, Y1, Y2, nothing. Key "m": M0 (at 100) came in the first batch, so F at 50
    meets it, not M1 (at 60, same batch as F); in the third batch G at 55 meets M1,
    which an earlier batch wrote. (Within a partition, offsets order the table's
    updates: a record after M1 at 60 would come after F at 50 whatever its own timestamp,
    as in Kafka Streams, so the deletion is piped before M1.)"""
    with TestDriver(_stream_table().build(), spark=spark, batched=True) as driver:
        streams = driver.create_input_topic(STREAM)
        tables = driver.create_input_topic(TABLE)
        inner, left = driver.create_output_topic(INNER), driver.create_output_topic(LEFT)

        tables.pipe_input("m", "M0", 100)
        driver.advance()
        assert inner.read_records() == [] and left.read_records() == []

        for key, value, timestamp in [
            ("k", "A", 5),
            ("k", "B", 15),
            ("j", "E", 12),
            ("k", "C", 25),
            ("m", "F", 50),
            ("k", "D", 35),
        ]:
            streams.pipe_input(key, value, timestamp)
        for key, value, timestamp in [
            ("k", "Y1", 10),
            ("j", "Z", 11),
            ("k", "Y2", 20),
            ("k", None, 30),
            ("m", "M1", 60),
        ]:
            tables.pipe_input(key, value, timestamp)
        driver.advance()
        assert by_key(inner.read_records()) == by_key(
            [R("k", "B+Y1", 15), R("k", "C+Y2", 25), R("j", "E+Z", 12), R("m", "F+M0", 50)]
        )
        assert by_key(left.read_records()) == by_key(
            [
                R("k", "A+null", 5),
                R("k", "B+Y1", 15),
                R("k", "C+Y2", 25),
                R("k", "D+null", 35),
                R("j", "E+Z", 12),
                R("m", "F+M0", 50),
            ]
        )

        streams.pipe_input("m", "G", 55)
        streams.pipe_input("k", "H", 40)
        driver.advance()
        assert by_key(inner.read_records()) == by_key([R("m", "G+M1", 55)])
        assert by_key(left.read_records()) == by_key([R("m", "G+M1", 55), R("k", "H+null", 40)])


@pytest.mark.parametrize(
    ("through", "second"),
    [("filter", "null"), ("map_values", "y2"), ("to_table", "Y2")],
)
def test_batched_stream_records_meet_a_derived_table_as_of_their_timestamps(spark, through, second):
    """As above, the table passed through a filter (which rejects Y2: the key is deleted
    from 20), a value mapper (lower-casing) or made from a stream: every version the
    batch gives the derived table reaches the join, so B at 15 meets Y1 though the
    table's last change in the batch comes later (at 30, a deletion)."""
    b = StreamsBuilder()
    stream = b.stream(STREAM, **STRING_VALUES)
    if through == "to_table":
        table = b.stream(TABLE, **STRING_VALUES).to_table()
    elif through == "filter":
        table = b.table(TABLE, **STRING_VALUES).filter("value != 'Y2'")
    else:
        table = b.table(TABLE, **STRING_VALUES).map_values("lower(value)")
    stream.left_join(table, tostring_joiner()).to(LEFT)
    first = "y1" if through == "map_values" else "Y1"
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        streams, tables = driver.create_input_topic(STREAM), driver.create_input_topic(TABLE)
        left = driver.create_output_topic(LEFT)
        for value, timestamp in [("A", 5), ("B", 15), ("C", 25), ("D", 35)]:
            streams.pipe_input("k", value, timestamp)
        for value, timestamp in [("Y1", 10), ("Y2", 20), (None, 30)]:
            tables.pipe_input("k", value, timestamp)
        driver.advance()
        assert left.read_records() == [
            R("k", "A+null", 5), R("k", f"B+{first}", 15), R("k", f"C+{second}", 25), R("k", "D+null", 35)
        ]


# ------------------------------------------------------------------ KStream-GlobalKTable
def fk(prefix: str, i: int) -> str:
    """A stream value with the GlobalKTable key: ``X0,FKey0``."""
    return f"{prefix}{i},FKey{i}"


NOT_JOIN_ON_GLOBAL_TABLE_UPDATES: list[Step] = [
    # push two items to the primary stream; the global table is empty
    s("0", fk("X", 0), 0, [], [R("0", "X0,FKey0+null", 0)]),
    s("1", fk("X", 1), 1, [], [R("1", "X1,FKey1+null", 1)]),
    # push two items to the global table: no output
    g("FKey0", "Y0"),
    g("FKey1", "Y1"),
    # push all four items to the primary stream
    s("0", fk("X", 0), 2, [R("0", "X0,FKey0+Y0", 2)], [R("0", "X0,FKey0+Y0", 2)]),
    s("1", fk("X", 1), 3, [R("1", "X1,FKey1+Y1", 3)], [R("1", "X1,FKey1+Y1", 3)]),
    s("2", fk("X", 2), 4, [], [R("2", "X2,FKey2+null", 4)]),
    s("3", fk("X", 3), 5, [], [R("3", "X3,FKey3+null", 5)]),
    # push all items to the global table: no output
    g("FKey0", "YY0"),
    g("FKey1", "YY1"),
    g("FKey2", "YY2"),
    g("FKey3", "YY3"),
    # push all four items to the primary stream
    s("0", fk("X", 0), 6, [R("0", "X0,FKey0+YY0", 6)], [R("0", "X0,FKey0+YY0", 6)]),
    s("1", fk("X", 1), 7, [R("1", "X1,FKey1+YY1", 7)], [R("1", "X1,FKey1+YY1", 7)]),
    s("2", fk("X", 2), 8, [R("2", "X2,FKey2+YY2", 8)], [R("2", "X2,FKey2+YY2", 8)]),
    s("3", fk("X", 3), 9, [R("3", "X3,FKey3+YY3", 9)], [R("3", "X3,FKey3+YY3", 9)]),
    # push all items to the global table: no output
    g("FKey0", "YYY0"),
    g("FKey1", "YYY1"),
    g("FKey2", "YYY2"),
    g("FKey3", "YYY3"),
]


def test_stream_global_table_join_not_on_table_updates(spark):
    """KStreamGlobalKTableJoinTest.shouldNotJoinOnGlobalTableUpdates and
    shouldNotJoinWithEmptyGlobalTableOnStreamUpdates (its first two inputs);
    KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnGlobalTableUpdates and
    shouldNotJoinWithEmptyGlobalTableOnStreamUpdates. The stream record's value names the
    table key ("X0,FKey0" -> "FKey0"); the output keeps the stream key; stream timestamps
    advance by 1 per stream record, as the originals' input topic does. Identical to
    Kafka's output."""
    run_per_record(
        spark,
        _stream_global(fkey_selector()),
        NOT_JOIN_ON_GLOBAL_TABLE_UPDATES,
        topics=STREAM_AND_GLOBAL,
    )


GLOBAL_JOIN_IF_MATCH_FOUND: list[Step] = [
    g("FKey0", "Y0"),
    g("FKey1", "Y1"),
    s("0", fk("X", 0), 0, [R("0", "X0,FKey0+Y0", 0)], [R("0", "X0,FKey0+Y0", 0)]),
    s("1", fk("X", 1), 1, [R("1", "X1,FKey1+Y1", 1)], [R("1", "X1,FKey1+Y1", 1)]),
    s("2", fk("X", 2), 2, [], [R("2", "X2,FKey2+null", 2)]),
    s("3", fk("X", 3), 3, [], [R("3", "X3,FKey3+null", 3)]),
]


def test_stream_global_table_join_only_if_match_found(spark):
    """KStreamGlobalKTableJoinTest.shouldJoinOnlyIfMatchFoundOnStreamUpdates and
    KStreamGlobalKTableLeftJoinTest.shouldJoinRegardlessIfMatchFoundOnStreamUpdates.
    Identical to Kafka's output."""
    run_per_record(
        spark, _stream_global(fkey_selector()), GLOBAL_JOIN_IF_MATCH_FOUND, topics=STREAM_AND_GLOBAL
    )


CLEAR_GLOBAL_TABLE_ENTRY: list[Step] = [
    g("FKey0", "Y0"),
    g("FKey1", "Y1"),
    g("FKey2", "Y2"),
    g("FKey3", "Y3"),
    s("0", fk("X", 0), 0, [R("0", "X0,FKey0+Y0", 0)], [R("0", "X0,FKey0+Y0", 0)]),
    s("1", fk("X", 1), 1, [R("1", "X1,FKey1+Y1", 1)], [R("1", "X1,FKey1+Y1", 1)]),
    s("2", fk("X", 2), 2, [R("2", "X2,FKey2+Y2", 2)], [R("2", "X2,FKey2+Y2", 2)]),
    s("3", fk("X", 3), 3, [R("3", "X3,FKey3+Y3", 3)], [R("3", "X3,FKey3+Y3", 3)]),
    g("FKey0", None),
    g("FKey1", None),
    s("0", fk("XX", 0), 4, [], [R("0", "XX0,FKey0+null", 4)]),
    s("1", fk("XX", 1), 5, [], [R("1", "XX1,FKey1+null", 5)]),
    s("2", fk("XX", 2), 6, [R("2", "XX2,FKey2+Y2", 6)], [R("2", "XX2,FKey2+Y2", 6)]),
    s("3", fk("XX", 3), 7, [R("3", "XX3,FKey3+Y3", 7)], [R("3", "XX3,FKey3+Y3", 7)]),
]


def test_stream_global_table_join_after_table_deletes(spark):
    """KStreamGlobalKTableJoinTest.shouldClearGlobalTableEntryOnNullValueUpdates and
    KStreamGlobalKTableLeftJoinTest.shouldClearGlobalTableEntryOnNullValueUpdates.
    Identical to Kafka's output."""
    run_per_record(
        spark, _stream_global(fkey_selector()), CLEAR_GLOBAL_TABLE_ENTRY, topics=STREAM_AND_GLOBAL
    )


NULL_KEY_MAPPER_VALUES: list[Step] = [
    g("FKey0", "Y0"),
    g("FKey1", "Y1"),
    g("FKey2", "Y2"),
    g("FKey3", "Y3"),
    # stream values without a table key: the key selector returns null
    s("0", "XXX0", 0, [], [R("0", "XXX0+null", 0)]),
    s("1", "XXX1", 1, [], [R("1", "XXX1+null", 1)]),
    s("2", "XXX2", 2, [], [R("2", "XXX2+null", 2)]),
    s("3", "XXX3", 3, [], [R("3", "XXX3+null", 3)]),
]


@pytest.mark.parametrize("selector", ["callable", "sql"])
def test_stream_global_table_join_null_key_selector_result(spark, selector):
    """KStreamGlobalKTableJoinTest.shouldNotJoinOnNullKeyMapperValues and
    KStreamGlobalKTableLeftJoinTest.shouldNotJoinOnNullKeyMapperValues: a key selector
    returning null matches nothing. The inner join emits nothing, as in Kafka. The left
    join emits joiner(value, null) ("XXX0+null" at 0, ...), Kafka's current rule
    (KAFKA-19208); the left original at 1eb7644 asserts no output, the rule of its time.
    The key selector once as the originals' callable, once as SQL
    (``try_element_at(split(value, ','), 2)``, null without a second token)."""
    chosen = fkey_selector() if selector == "callable" else SQL_FKEY_SELECTOR
    run_per_record(spark, _stream_global(chosen), NULL_KEY_MAPPER_VALUES, topics=STREAM_AND_GLOBAL)


NULL_STREAM_KEY: list[Step] = [
    g("FKey0", "Y0"),
    g("FKey1", "Y1"),
    s(None, fk("X", 0), 0, [R(None, "X0,FKey0+Y0", 0)], [R(None, "X0,FKey0+Y0", 0)]),
    s("1", fk("X", 1), 1, [R("1", "X1,FKey1+Y1", 1)], [R("1", "X1,FKey1+Y1", 1)]),
    s("2", fk("X", 2), 2, [], [R("2", "X2,FKey2+null", 2)]),
    s("3", fk("X", 3), 3, [], [R("3", "X3,FKey3+null", 3)]),
]


def test_stream_global_table_join_null_stream_key(spark):
    """KStreamGlobalKTableJoinTest.shouldJoinOnNullKeyWithNonNullKeyMapperValues and
    KStreamGlobalKTableLeftJoinTest.shouldJoinOnNullKeyWithNonNullKeyMapperValues: a
    stream record with a null key still looks up the table by its selected key, and the
    output keeps the null key. The inner original's inputs (two table rows; the left
    original pipes four, which would only turn keys 2 and 3 into matches). Identical to
    Kafka's output."""
    run_per_record(
        spark, _stream_global(fkey_selector()), NULL_STREAM_KEY, topics=STREAM_AND_GLOBAL
    )


def test_stream_rekeyed_by_a_callable_meets_the_table(spark):
    """A key chosen by a Python callable (kept as JSON text inside the runtime) meets the
    table's keys by value, and the output carries that key."""
    b = StreamsBuilder()
    stream = b.stream(STREAM, **STRING_VALUES)
    table = b.table(TABLE, **STRING_VALUES)
    stream.select_key(lambda key, value: value.split(",")[1]).join(
        table, lambda left, right: left + "+" + right
    ).to(INNER, key_format="KAFKA", key_schema="STRING")
    with TestDriver(b.build(), spark=spark, batched=True, partitions=2) as driver:
        driver.create_input_topic(TABLE).pipe_input("T1", "Y1", 1)
        driver.create_input_topic(STREAM).pipe_input("a", "X0,T1", 5)
        driver.create_input_topic(STREAM).pipe_input("b", "X1,T2", 6)
        driver.advance()
        assert driver.create_output_topic(INNER).read_records() == [R("T1", "X0,T1+Y1", 5)]


def test_stream_values_of_every_sql_type_reach_the_output_unchanged(spark):
    """The stream record's key and value cross the join's stage as they are, whatever
    their types (a timestamp, a decimal, a double, a map, an array, a date, bytes),
    and the table's value as the joiner reads it: exact, in both joins."""
    builder = StreamsBuilder()
    schema = "at TIMESTAMP, price DECIMAL(10,2), ratio DOUBLE, tags MAP<STRING, BIGINT>, seen ARRAY<DATE>, raw BYTES"
    stream = builder.stream(STREAM, key_schema="BIGINT", value_schema=schema)
    table = builder.table(TABLE, key_schema="BIGINT", value_schema="name STRING, n INT")
    joiner = ("struct(left.at AS at, left.price AS price, left.ratio AS ratio, left.tags AS tags, "
              "left.seen AS seen, left.raw AS raw, right.name AS name, right.n AS n)")
    stream.join(table, joiner).to(INNER)
    stream.left_join(table, joiner).to(LEFT)
    # ksqlDB's JSON: a TIMESTAMP in epoch milliseconds, a DATE in epoch days.
    value = {"at": 1_767_323_045_123, "price": Decimal("12.34"), "ratio": 0.1, "tags": {"a": 1, "b": None},
             "seen": [20_455, None], "raw": b"\x00\x01\xff"}
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        streams, tables = driver.create_input_topic(STREAM), driver.create_input_topic(TABLE)
        inner, left = driver.create_output_topic(INNER), driver.create_output_topic(LEFT)
        tables.pipe_input(7, {"name": "seven", "n": 70}, 1)
        driver.advance()
        other = {**value, "ratio": -2.5e-300, "tags": {}}
        streams.pipe_input(7, value, 10)
        streams.pipe_input(8, other, 11)
        driver.advance()
        # The output's JSON, as Spark writes each type (ISO-8601 times, base64 bytes).
        written = {"at": "2026-01-02T03:04:05.123Z", "price": 12.34, "ratio": 0.1, "tags": {"a": 1, "b": None},
                   "seen": ["2026-01-02", None], "raw": "AAH/"}
        assert inner.read_records() == [R(7, {**written, "name": "seven", "n": 70}, 10)]
        assert by_key(left.read_records()) == by_key([
            R(7, {**written, "name": "seven", "n": 70}, 10),
            R(8, {**written, "ratio": -2.5e-300, "tags": {}, "name": None, "n": None}, 11),
        ])

"""The ordering time of source records: each record's timestamp made monotone along its
partition's offsets, whichever Spark partitions hold the records."""

from __future__ import annotations

import pytest

from tablestream.runtime.positions import read_positions

SCHEMA = "topic string, partition int, offset bigint, timestamp bigint, value string, key string"


def records(spark, slices: list[list[tuple]]):
    """A DataFrame whose Spark partition i holds exactly ``slices[i]`` (rows of topic,
    partition, offset, timestamp, value and, when given, key)."""
    placed = [(i, row if len(row) == 6 else (*row, None)) for i, part in enumerate(slices) for row in part]
    sizes = [len(part) for part in slices]
    assert all(sizes), "every slice needs rows"
    rdd = spark.sparkContext.parallelize(placed, 1).partitionBy(len(slices), lambda i: i).values()
    frame = spark.createDataFrame(rdd, SCHEMA)
    assert frame.rdd.glom().map(len).collect() == sizes
    return frame


@pytest.fixture(params=[True, False], ids=["summed-up-in-tasks", "collected"])
def summarize(request):
    """Both ways positions reach the driver: summed up by the tasks, or every one."""
    return request.param


def order_times(frame, summarize: bool) -> list[tuple]:
    return sorted(
        (r.topic, r.partition, r.offset, r.timestamp, r.o_ts)
        for r in read_positions(frame, {}, summarize=summarize).records.collect()
    )


def test_records_in_time_keep_their_timestamps(spark, summarize):
    frame = records(
        spark,
        [
            [("a", 0, 0, 10, "x"), ("a", 0, 1, 10, "x"), ("a", 1, 0, 5, "x")],
            [("a", 0, 2, 11, "x"), ("b", 0, 7, 1, "x")],
        ],
    )
    assert order_times(frame, summarize) == [
        ("a", 0, 0, 10, 10),
        ("a", 0, 1, 10, 10),
        ("a", 0, 2, 11, 11),
        ("a", 1, 0, 5, 5),
        ("b", 0, 7, 1, 1),
    ]


def test_a_late_record_takes_the_largest_timestamp_before_it_in_its_partition(spark, summarize):
    # Rows arrive out of offset order in the task; partition 1 is independent.
    frame = records(
        spark,
        [[("a", 0, 2, 7, "x"), ("a", 0, 0, 10, "x"), ("a", 0, 1, 3, "x"), ("a", 1, 0, 4, "x"), ("a", 0, 3, 12, "x")]],
    )
    assert order_times(frame, summarize) == [
        ("a", 0, 0, 10, 10),
        ("a", 0, 1, 3, 10),
        ("a", 0, 2, 7, 10),
        ("a", 0, 3, 12, 12),
        ("a", 1, 0, 4, 4),
    ]


def test_records_behind_an_earlier_spark_partition_of_their_partition_are_corrected(spark, summarize):
    # Task 0 holds offsets 0-1 of a/0 (up to ts 50); task 1 offsets 2-4, whose first
    # records are older than 50; task 2 offsets 5-6, later than everything.
    frame = records(
        spark,
        [
            [("a", 0, 0, 20, "x"), ("a", 0, 1, 50, "x")],
            [("a", 0, 2, 30, "x"), ("a", 0, 3, 60, "x"), ("a", 0, 4, 40, "x"), ("a", 1, 9, 1, "x")],
            [("a", 0, 5, 70, "x"), ("a", 0, 6, 65, "x")],
        ],
    )
    assert order_times(frame, summarize) == [
        ("a", 0, 0, 20, 20),
        ("a", 0, 1, 50, 50),
        ("a", 0, 2, 30, 50),
        ("a", 0, 3, 60, 60),
        ("a", 0, 4, 40, 60),
        ("a", 0, 5, 70, 70),
        ("a", 0, 6, 65, 70),
        ("a", 1, 9, 1, 1),
    ]


def test_spark_partitions_interleaving_offsets_of_a_partition(spark, summarize):
    frame = records(
        spark,
        [
            [("a", 0, 0, 20, "x"), ("a", 0, 2, 5, "x")],
            [("a", 0, 1, 30, "x"), ("a", 0, 3, 25, "x")],
        ],
    )
    assert order_times(frame, summarize) == [
        ("a", 0, 0, 20, 20),
        ("a", 0, 1, 30, 30),
        ("a", 0, 2, 5, 30),
        ("a", 0, 3, 25, 30),
    ]


@pytest.mark.parametrize("slices", [1, 3])
def test_other_columns_pass_through_unchanged(spark, slices, summarize):
    rows = [("t", 0, i, 100 - i, f"v{i}") for i in range(6)]
    size = len(rows) // slices
    frame = records(spark, [rows[i * size : (i + 1) * size] for i in range(slices)])
    out = read_positions(frame, {}, summarize=summarize).records
    assert out.columns == ["topic", "partition", "offset", "timestamp", "value", "key", "o_ts"]
    assert sorted((r.offset, r.value, r.o_ts) for r in out.collect()) == [(i, f"v{i}", 100) for i in range(6)]


def test_a_batch_ends_after_its_last_record_of_each_partition(spark, summarize):
    # Runs of one partition in different Spark partitions, with a gap (a compacted offset).
    frame = records(
        spark,
        [[("a", 0, 5, 1, "x"), ("a", 0, 6, 1, "x"), ("b", 2, 40, 1, "x")], [("a", 0, 8, 1, "x"), ("a", 1, 0, 1, "x")]],
    )
    assert read_positions(frame, {}, summarize=summarize).ends == {("a", 0): 9, ("a", 1): 1, ("b", 2): 41}


def test_a_batch_knows_its_largest_records_key_and_value_bytes(spark, summarize):
    # UTF-8 bytes, not characters; a missing key or value counts nothing.
    frame = records(
        spark,
        [[("a", 0, 0, 1, "xyz", "k"), ("a", 0, 1, 1, None, "long key"), ("a", 1, 0, 1, "é" * 5, None)],
         [("b", 0, 0, 1, "v", "kk")]],
    )
    assert read_positions(frame, {}, summarize=summarize).largest == 10


def test_an_empty_batch_gets_the_column(spark, summarize):
    positions = read_positions(spark.createDataFrame([], SCHEMA), {}, summarize=summarize)
    assert positions.records.columns[-1] == "o_ts"
    assert positions.records.count() == 0
    assert positions.ends == {}
    assert positions.largest == 0


def test_checks_find_each_sources_invalid_records_in_the_same_job(spark, summarize):
    from pyspark.sql import functions as F

    frame = records(
        spark,
        [[("a", 0, 0, 1, "ok"), ("a", 0, 1, 2, "bad"), ("b", 0, 0, 3, "bad")], [("a", 1, 5, 4, "bad")]],
    )
    checks = {
        "only-a": (F.col("topic") == "a") & (F.col("value") == "bad"),
        "never": F.lit(None).cast("boolean"),
    }
    read = read_positions(frame, checks, summarize=summarize)
    assert sorted(read.invalid) == ["only-a"]
    assert sorted(read.invalid["only-a"].to_pylist(), key=lambda r: (r["partition"], r["offset"])) == [
        {"topic": "a", "partition": 0, "offset": 1},
        {"topic": "a", "partition": 1, "offset": 5},
    ]
    rows = read.records.where(F.col("topic") == "a")
    assert sorted((r.partition, r.offset) for r in read.valid("only-a", rows).collect()) == [(0, 0)]
    assert sorted((r.partition, r.offset) for r in read.invalid_rows("only-a", rows).collect()) == [(0, 1), (1, 5)]
    assert read.valid("never", rows) is rows
    assert read.invalid_rows("never", rows) is None
    assert read.count == 4
    assert sorted(r.o_ts for r in read.records.collect()) == [1, 2, 3, 4]


def chunks(*rows):
    """Task summaries: (topic, partition, first offset, last offset, first ts, max ts, in order)."""
    import pyarrow as pa

    names = ["topic", "partition", "offset", "last_offset", "first_ts", "max_ts", "in_order"]
    return pa.table({name: [r[i] for r in rows] for i, name in enumerate(names)})


@pytest.mark.parametrize(
    ("summaries", "expected"),
    [
        pytest.param(chunks(), True, id="no records"),
        pytest.param(chunks(("a", 0, 0, 9, 5, 20, True), ("a", 0, 10, 19, 20, 30, True)), True, id="one after another"),
        pytest.param(chunks(("a", 0, 10, 19, 20, 30, True), ("a", 0, 0, 9, 5, 20, True)), True, id="listed out of order"),
        pytest.param(chunks(("a", 0, 0, 9, 5, 20, True), ("a", 0, 10, 19, 19, 30, True)), False, id="older than before"),
        pytest.param(chunks(("a", 0, 0, 9, 5, 20, True), ("a", 0, 5, 19, 20, 30, True)), False, id="interleaved offsets"),
        pytest.param(chunks(("a", 0, 0, 9, 5, 20, False)), False, id="late within a task"),
        pytest.param(chunks(("a", 0, 0, 9, 50, 60, True), ("a", 1, 0, 9, 1, 2, True), ("b", 0, 0, 9, 3, 4, True)),
                     True, id="partitions are independent"),
    ],
)
def test_in_order_tells_whether_any_record_arrived_late_from_task_summaries(summaries, expected):
    from tablestream.runtime.positions import in_order

    assert in_order(summaries) is expected


def test_a_task_sums_up_each_run_of_consecutive_offsets_and_lists_its_invalid_records():
    import pyarrow as pa

    from tablestream.runtime.positions import _summarize

    rows = pa.RecordBatch.from_pydict({
        "topic": ["a", "a", "a", "a", "a", "b"],
        "partition": pa.array([0, 0, 0, 0, 0, 0], pa.int32()),
        "offset": [5, 1, 0, 2, 4, 0],  # a/0: offsets 0-2 and 4-5 (3 is elsewhere or gone)
        "timestamp": [3, 6, 5, 6, 7, 1],
        "_size": [30, 99, 10, 20, 40, 5],
        "_invalid0": [False, True, False, False, False, False],
    })
    summary, invalid = (b.to_pylist() for b in _summarize(iter([rows])))
    assert summary == [
        {"topic": "a", "partition": 0, "source": -1, "offset": 0, "last_offset": 2, "first_ts": 5, "max_ts": 6,
         "count": 3, "in_order": True, "largest": 99},
        {"topic": "a", "partition": 0, "source": -1, "offset": 4, "last_offset": 5, "first_ts": 7, "max_ts": 7,
         "count": 2, "in_order": False, "largest": 40},
        {"topic": "b", "partition": 0, "source": -1, "offset": 0, "last_offset": 0, "first_ts": 1, "max_ts": 1,
         "count": 1, "in_order": True, "largest": 5},
    ]
    assert invalid == [{"topic": "a", "partition": 0, "source": 0, "offset": 1, "last_offset": None,
                        "first_ts": None, "max_ts": None, "count": None, "in_order": None, "largest": None}]

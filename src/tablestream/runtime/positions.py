"""What a batch's first job learns about its source records: their ordering time and
which of them cannot be read.

One Spark job reads the batch's positions (topic, partition, offset, timestamp, the
bytes of the record's key and value), with one flag per source: the record is among
that source's topics and its key or value does not decode in the source's formats (or,
for a table, it has no key). Each task sums up its records per run of consecutive
offsets of a topic partition (offset range, first and largest timestamp, whether the
timestamps never go back along the run, its largest record's bytes) and lists its
invalid records, so only those summaries reach the driver (after a small batch,
the next one brings its positions to the driver instead and sums them up there: a
Python stage's fixed cost is repaid only by a large batch). From them:

* ``o_ts``, the ordering time: a record's timestamp made monotone along its
  partition's offsets (the largest timestamp of the batch's records of that topic
  partition up to its offset). Ordering by ``o_ts`` first keeps every partition in
  offset order (a later record with an older timestamp still comes later, as in Kafka
  Streams) while different partitions interleave by time. When the summaries show that
  no record arrived late in its partition (the usual case), ``o_ts`` is the timestamp;
  otherwise a second job brings every position to the driver, and only the late
  records get a correction, joined by broadcast.
* the positions of each source's invalid records. The rules then decode only valid
  records (no checks, and a table's values not at all: its store keeps the bytes), and
  only a batch that has invalid records pays a job for their processing-log entries.
  So each record is checked once, in this job, and the batch is not read again for
  its errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ..spark import arrow_batches_cut_by_rows
from .frames import Columns, named, select

_POSITIONS = ["topic", "partition", "offset", "timestamp"]


@dataclass(frozen=True)
class BatchPositions:
    """A batch's records with ``o_ts``, how many there are, each checked source's
    invalid records (``topic, partition, offset``; absent when it has none), and where
    it ends: per topic partition it has records of, the offset after its last one.
    ``in_order``: no record's timestamp is below one at an earlier offset of its
    partition (``o_ts`` is then the timestamp). ``largest``: the bytes of its largest
    record's key and value (None: not read)."""

    records: DataFrame
    count: int
    invalid: dict[str, pa.Table]
    ends: dict[tuple[str, int], int]
    in_order: bool = True
    largest: int | None = None

    @property
    def as_assumed(self) -> bool:
        """Whether the positions are what :func:`assumed_positions` takes them to be."""
        return self.in_order and not self.invalid

    def valid(self, source: str, rows: DataFrame) -> DataFrame:
        """``rows`` (records of ``source``'s topics) without its invalid records."""
        bad = self.invalid.get(source)
        return rows if bad is None else rows.join(F.broadcast(_frame(rows, bad)), _match(), "left_anti")

    def invalid_rows(self, source: str, rows: DataFrame) -> DataFrame | None:
        """Only the invalid records of ``source`` among ``rows``; None when there are none."""
        bad = self.invalid.get(source)
        return None if bad is None else rows.join(F.broadcast(_frame(rows, bad)), _match(), "left_semi")


def position_columns(checks: dict[str, Column]) -> Columns:
    """The columns :func:`read_positions` reads for ``checks`` (kept by the caller)."""
    flags = [F.coalesce(check, F.lit(False)).alias(f"_invalid{i}") for i, check in enumerate(checks.values())]
    size = (F.coalesce(F.octet_length("key"), F.lit(0)) + F.coalesce(F.octet_length("value"), F.lit(0))).alias("_size")
    return named([*_POSITIONS, size, *flags])


def read_positions(
    records: DataFrame, checks: dict[str, Column], *, summarize: bool = True, columns: Columns | None = None
) -> BatchPositions:
    """One job over ``records``: ``o_ts`` added, and the positions where each boolean
    Column of ``checks`` (source name -> the record is invalid for it) is true.

    ``summarize``: the tasks sum up the positions (a Python stage, whose fixed cost a
    large batch repays); otherwise every position comes to the driver (cheaper for a
    small batch). ``columns``: :func:`position_columns` of ``checks``, kept from one
    batch to the next."""
    positions = select(records, columns if columns is not None else position_columns(checks))
    if not summarize:
        return positions_found(records, positions.toArrow(), checks)
    # The summing tasks' rows are a position, its size and flags: small whatever the records.
    with arrow_batches_cut_by_rows(records.sparkSession):
        summaries = positions.mapInArrow(_summarize, from_arrow_schema(_SUMMARY_ARROW)).toArrow()
    return _from_summaries(records, summaries, checks, lambda: positions.select(*_POSITIONS).toArrow())


def assumed_positions(records: DataFrame, count: int) -> BatchPositions:
    """A batch's positions as they almost always are, before they are read: no invalid
    record, none late in its partition (``o_ts`` is the timestamp); ``count``: the
    records the batch holds at most. A batch computed on them collects its positions
    with its outputs (:func:`positions_found`), which must confirm them."""
    return BatchPositions(records.withColumn("o_ts", F.col("timestamp")), count, {}, {})


def positions_found(records: DataFrame, found: pa.Table, checks: dict[str, Column]) -> BatchPositions:
    """A batch's positions from every one of its records' (the columns of
    :func:`position_columns`, brought to the driver)."""
    return _from_summaries(records, _summaries(found), checks, lambda: found.select(_POSITIONS))


def _from_summaries(records: DataFrame, summaries: pa.Table, checks: dict[str, Column], every_position) -> BatchPositions:
    """The positions from their summaries (see :func:`_summarize`); ``every_position()``
    gives every record's position when some record is late in its partition."""
    chunks = summaries.filter(pc.equal(summaries.column("source"), -1))
    invalid = {}
    for i, name in enumerate(checks):
        bad = summaries.filter(pc.equal(summaries.column("source"), i))
        if bad.num_rows:
            invalid[name] = bad.select(["topic", "partition", "offset"])
    count = pc.sum(chunks.column("count")).as_py() or 0
    largest = pc.max(chunks.column("largest")).as_py() or 0
    ends: dict[tuple[str, int], int] = {}
    for topic, part, last in zip(*(chunks.column(c).to_pylist() for c in ("topic", "partition", "last_offset")), strict=True):
        ends[topic, part] = max(ends.get((topic, part), 0), last + 1)
    if in_order(chunks):
        return BatchPositions(records.withColumn("o_ts", F.col("timestamp")), count, invalid, ends, largest=largest)
    return BatchPositions(
        _with_order_time(records, every_position()), count, invalid, ends, in_order=False, largest=largest
    )


def _summaries(positions: pa.Table) -> pa.Table:
    """:func:`_summarize` over positions on the driver (their one task)."""
    batches = list(_summarize(iter(positions.to_batches())))
    return pa.Table.from_batches(batches) if batches else _SUMMARY_ARROW.empty_table()


# One row per run of offsets with ``source`` -1, and one per invalid record with the
# index of the source whose check it fails.
_SUMMARY_ARROW = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("source", pa.int32()), ("offset", pa.int64()),
    ("last_offset", pa.int64()), ("first_ts", pa.int64()), ("max_ts", pa.int64()), ("count", pa.int64()),
    ("in_order", pa.bool_()), ("largest", pa.int64()),
])


def _summarize(batches):
    """A task's records summed up per run of consecutive offsets of a topic partition
    (the first and last offset, the timestamp at the first, the largest timestamp, the
    count, whether the timestamps never go down along the run, and the largest record's
    bytes), then its invalid records. Runs of a partition held by different tasks never
    overlap."""
    gathered = [b for b in batches if b.num_rows]
    if not gathered:
        return
    table = pa.Table.from_batches(gathered)
    topics = pc.dictionary_encode(table.column("topic")).combine_chunks()
    codes = topics.indices.to_numpy(zero_copy_only=False)
    part = table.column("partition").to_numpy()
    offset = table.column("offset").to_numpy()
    ts = table.column("timestamp").to_numpy()
    size = table.column("_size").to_numpy()
    order = np.lexsort((offset, part, codes))
    codes, part, offset, ts, size = codes[order], part[order], offset[order], ts[order], size[order]
    starts = np.r_[True, (codes[1:] != codes[:-1]) | (part[1:] != part[:-1]) | (np.diff(offset) != 1)]
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(ts)] - 1
    down = np.r_[False, np.diff(ts) < 0] & ~starts
    n = len(first)
    yield pa.RecordBatch.from_pydict({
        "topic": topics.dictionary.take(pa.array(codes[first])), "partition": pa.array(part[first], pa.int32()),
        "source": pa.array(np.full(n, -1, np.int32)), "offset": pa.array(offset[first]),
        "last_offset": pa.array(offset[last]), "first_ts": pa.array(ts[first]),
        "max_ts": pa.array(np.maximum.reduceat(ts, first)), "count": pa.array(last - first + 1),
        "in_order": pa.array(~np.logical_or.reduceat(down, first)),
        "largest": pa.array(np.maximum.reduceat(size, first).astype(np.int64)),
    })
    for i, flag in enumerate(c for c in table.column_names if c.startswith("_invalid")):
        bad = table.filter(table.column(flag))
        if bad.num_rows:
            m = bad.num_rows
            yield pa.RecordBatch.from_pydict({
                "topic": bad.column("topic").combine_chunks(), "partition": bad.column("partition").combine_chunks(),
                "source": pa.array(np.full(m, i, np.int32)), "offset": bad.column("offset").combine_chunks(),
                "last_offset": pa.nulls(m, pa.int64()), "first_ts": pa.nulls(m, pa.int64()),
                "max_ts": pa.nulls(m, pa.int64()), "count": pa.nulls(m, pa.int64()),
                "in_order": pa.nulls(m, pa.bool_()), "largest": pa.nulls(m, pa.int64()),
            })


def in_order(chunks: pa.Table) -> bool:
    """Whether no record of the summed-up ``chunks`` (runs of offsets of a topic
    partition) has a timestamp below one at an earlier offset of its partition: each
    run in order, and the runs of a partition, in offset order, each starting no earlier
    than every timestamp before it."""
    if chunks.num_rows == 0:
        return True
    if not pc.all(chunks.column("in_order")).as_py():
        return False
    ordered = chunks.sort_by([("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")])
    topic = ordered.column("topic").to_numpy(zero_copy_only=False)
    part = ordered.column("partition").to_numpy()
    first, last = ordered.column("offset").to_numpy(), ordered.column("last_offset").to_numpy()
    first_ts, max_ts = ordered.column("first_ts").to_numpy(), ordered.column("max_ts").to_numpy()
    for begin, end in _runs(np.r_[True, (topic[1:] != topic[:-1]) | (part[1:] != part[:-1])]):
        if (first[begin + 1 : end] <= last[begin : end - 1]).any():
            return False  # an offset twice
        if (first_ts[begin + 1 : end] < np.maximum.accumulate(max_ts[begin : end - 1])).any():
            return False
    return True


def _with_order_time(records: DataFrame, positions: pa.Table) -> DataFrame:
    if positions.num_rows == 0:
        return records.withColumn("o_ts", F.col("timestamp"))
    ordered = positions.select(_POSITIONS).sort_by(
        [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
    )
    ts = ordered.column("timestamp").to_numpy()
    topic = ordered.column("topic").to_numpy(zero_copy_only=False)
    part = ordered.column("partition").to_numpy()
    running = np.empty_like(ts)
    for begin, end in _runs(np.r_[True, (topic[1:] != topic[:-1]) | (part[1:] != part[:-1])]):
        running[begin:end] = np.maximum.accumulate(ts[begin:end])
    late = np.flatnonzero(running > ts)
    if len(late) == 0:
        return records.withColumn("o_ts", F.col("timestamp"))
    corrections = _frame(
        records,
        pa.table({
            "topic": ordered.column("topic").take(late),
            "partition": ordered.column("partition").take(late),
            "offset": ordered.column("offset").take(late),
            "_ts": pa.array(running[late], pa.int64()),
        }),
    )
    joined = records.join(F.broadcast(corrections), _match(), "left")
    return joined.withColumn("o_ts", F.coalesce(F.col("_ts"), F.col("timestamp"))).drop("_t", "_p", "_o", "_ts")


def _frame(rows: DataFrame, table: pa.Table) -> DataFrame:
    """A small Spark DataFrame of positions (``_t, _p, _o`` and any other columns)."""
    renamed = table.rename_columns(
        [{"topic": "_t", "partition": "_p", "offset": "_o"}.get(c, c) for c in table.column_names]
    )
    return rows.sparkSession.createDataFrame(renamed.cast(_position_schema(renamed)))


def _position_schema(table: pa.Table) -> pa.Schema:
    types = {"_t": pa.string(), "_p": pa.int32(), "_o": pa.int64()}
    return pa.schema([(f.name, types.get(f.name, f.type)) for f in table.schema])


def _match() -> Column:
    return (F.col("topic") == F.col("_t")) & (F.col("partition") == F.col("_p")) & (F.col("offset") == F.col("_o"))


def _runs(starts: np.ndarray):
    """(begin, end) of each run of rows that ``starts`` marks the first row of."""
    begins = np.flatnonzero(starts)
    return zip(begins, np.r_[begins[1:], len(starts)], strict=True)


"""What a batch's first job learns about its source records: their ordering time and
which of them cannot be read.

One Spark job brings the batch's positions (topic, partition, offset, timestamp) to the
driver as Arrow, with one flag per source: the record is among that source's topics
and its key or value does not decode in the source's formats (or, for a table, it has
no key). From them:

* ``o_ts``, the ordering time: a record's timestamp made monotone along its
  partition's offsets (the largest timestamp of the batch's records of that topic
  partition up to its offset). Ordering by ``o_ts`` first keeps every partition in
  offset order (a later record with an older timestamp still comes later, as in Kafka
  Streams) while different partitions interleave by time. Only the records that
  arrived late in their partition get a correction, joined by broadcast (usually none).
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
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

_POSITIONS = ["topic", "partition", "offset", "timestamp"]


@dataclass(frozen=True)
class BatchPositions:
    """A batch's records with ``o_ts``, how many there are, and each checked source's
    invalid records (``topic, partition, offset``; absent when it has none)."""

    records: DataFrame
    count: int
    invalid: dict[str, pa.Table]

    def valid(self, source: str, rows: DataFrame) -> DataFrame:
        """``rows`` (records of ``source``'s topics) without its invalid records."""
        bad = self.invalid.get(source)
        return rows if bad is None else rows.join(F.broadcast(_frame(rows, bad)), _match(), "left_anti")

    def invalid_rows(self, source: str, rows: DataFrame) -> DataFrame | None:
        """Only the invalid records of ``source`` among ``rows``; None when there are none."""
        bad = self.invalid.get(source)
        return None if bad is None else rows.join(F.broadcast(_frame(rows, bad)), _match(), "left_semi")


def read_positions(records: DataFrame, checks: dict[str, Column]) -> BatchPositions:
    """One job over ``records``: ``o_ts`` added, and the positions where each boolean
    Column of ``checks`` (source name -> the record is invalid for it) is true."""
    flags = {name: f"_invalid{i}" for i, name in enumerate(checks)}
    positions = records.select(
        *_POSITIONS, *[F.coalesce(check, F.lit(False)).alias(flags[name]) for name, check in checks.items()]
    ).toArrow()
    invalid = {}
    for name, flag in flags.items():
        bad = positions.filter(positions.column(flag))
        if bad.num_rows:
            invalid[name] = bad.select(["topic", "partition", "offset"])
    return BatchPositions(_with_order_time(records, positions), positions.num_rows, invalid)


def with_order_time(records: DataFrame) -> DataFrame:
    """``records`` with ``o_ts`` added (no checks)."""
    return read_positions(records, {}).records


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


"""The embedded store's topics as a Spark streaming source, with Kafka's offsets and
Kafka's bound on a batch.

A query's position is Kafka's: per topic and partition, the next offset to read, as
JSON (``{"orders": {"0": 120, "1": 97}}``). Each micro-batch reads the records between
two such positions, so a batch can end inside an appended file and a bound in records
is exact (:class:`EmbeddedTopicReader`, ``maxRecordsPerBatch``), as Spark's Kafka
source's ``maxOffsetsPerTrigger`` is. Registered with Spark under the name
:data:`SOURCE_NAME`; :meth:`tablestream.storage.embedded.EmbeddedStore.read_stream`
uses it.

Planning runs in the driver's Python: the end offsets come from the topic's newest
commit (its ``userMetadata``), and a batch is cut into input partitions, one per topic
partition and run of its data files (at most :data:`SPLIT_RECORDS` records each, unless
one file holds more), each naming the files it reads. Each Spark task reads only those
files with pyarrow and keeps the records in its offset range: records that compaction or
retention removed are simply absent, as they are from a Kafka partition.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from .location import Location

SOURCE_NAME = "tablestream_embedded"

#: The source's rows: the columns of ``KafkaStore.read_stream`` (timestamp in epoch ms).
SCHEMA = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)
ARROW_SCHEMA = to_arrow_schema(SCHEMA)

#: Records an input partition covers at most, unless a single data file holds more (a
#: file is never read by two tasks of a batch).
SPLIT_RECORDS = 500_000

_ROWS_PER_ARROW_BATCH = 65_536  # handed to Spark in slices of this many rows

Offsets = dict[str, dict[int, int]]


class EmbeddedTopicSource(DataSource):
    """Options: ``home`` (the store's home), ``topics`` (a JSON list of topic names),
    ``maxRecordsPerBatch`` (a positive integer; absent: unbounded).

    >>> spark.dataSource.register(EmbeddedTopicSource)                    # doctest: +SKIP
    >>> (spark.readStream.format("tablestream_embedded")                 # doctest: +SKIP
    ...      .option("home", "/data/ts").option("topics", '["orders"]')
    ...      .option("maxRecordsPerBatch", "1000000").load())
    """

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> EmbeddedTopicReader:
        bound = self.options.get("maxRecordsPerBatch")
        return EmbeddedTopicReader(
            self.options["home"], json.loads(self.options["topics"]), int(bound) if bound else None
        )


class TopicRange(InputPartition):
    """Records ``start`` to ``end`` (exclusive) of one topic partition, read from ``files``
    (absolute paths of the data files that may hold them)."""

    def __init__(self, topic: str, partition: int, start: int, end: int, files: list[str]):
        super().__init__((topic, partition, start, end))
        self.topic, self.partition, self.start, self.end, self.files = topic, partition, start, end, files


class EmbeddedTopicReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches over embedded topics by Kafka-like offsets.

    With ``max_records`` a batch ends at most that many offsets after its start,
    shared among the topic partitions that have records to read in proportion to how
    many each has (as Spark's Kafka source shares ``maxOffsetsPerTrigger``), the
    remainder going to the largest shares so the batch has exactly ``max_records``
    when the backlog holds more. Under ``Trigger.AvailableNow`` the query stops at the
    end offsets it found when it started, in as many bounded batches as that takes.
    """

    def __init__(self, home: str, topics: Sequence[str], max_records: int | None):
        from .embedded import EmbeddedStore

        self.store = EmbeddedStore(home)
        self.topics = list(topics)
        self.max_records = max_records
        self._target: Offsets | None = None

    # ---------------------------------------------------------------- offsets
    def initialOffset(self) -> dict:
        """Each partition's start: its first record still held (a new Kafka consumer's
        ``earliest``), its end offset when it holds none."""
        return _json(
            {t: self.store.describe_topic(t).start_offsets for t in self.topics}
        )

    def _ends(self) -> Offsets:
        return self.store.end_offsets_of(self.topics)

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable() if self.max_records is None else ReadMaxRows(self.max_records)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._ends()

    def reportLatestOffset(self) -> dict:
        return _json(self._ends())

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        ends = self._target if self._target is not None else self._ends()
        begin = self._begin(start)
        ends = {t: {p: max(o, begin[t][p]) for p, o in parts.items()} for t, parts in ends.items()}
        if isinstance(limit, ReadMaxRows):
            ends = bounded_ends(begin, ends, limit.max_rows)
        return _json(ends)

    def _begin(self, start: Mapping) -> Offsets:
        """``start`` read back; a topic or partition it lacks (a topic added to the
        topology) begins at its start offset."""
        begin = _parse(start)
        for topic in self.topics:
            known = begin.setdefault(topic, {})
            partitions = self.store.topic_config(topic).partitions
            if any(p not in known for p in range(partitions)):
                first = self.store.describe_topic(topic).start_offsets
                for p in range(partitions):
                    known.setdefault(p, first[p])
        return {t: begin[t] for t in self.topics}

    # ---------------------------------------------------------------- planning
    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, until = self._begin(start), _parse(end)
        ranges: list[InputPartition] = []
        for topic in self.topics:
            wanted = {
                p: (begin[topic][p], o) for p, o in until.get(topic, {}).items() if o > begin[topic].get(p, o)
            }
            if not wanted:
                continue
            ranges += topic_ranges(topic, self.store.log_path(topic), self.store.data_files(topic), wanted)
        return ranges

    # ---------------------------------------------------------------- reading
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, TopicRange)
        return read_range(partition)


def bounded_ends(begin: Offsets, ends: Offsets, max_records: int) -> Offsets:
    """Ends that take at most ``max_records`` offsets after ``begin``, shared among the
    partitions with offsets to read in proportion to their backlog (largest remainders
    first), so that the batch takes exactly ``max_records`` when there are more.

    >>> bounded_ends({"t": {0: 0, 1: 0}}, {"t": {0: 2000, 1: 500}}, 1000)
    {'t': {0: 800, 1: 200}}
    """
    backlog = {(t, p): o - begin[t][p] for t, parts in ends.items() for p, o in parts.items() if o > begin[t][p]}
    total = sum(backlog.values())
    if total <= max_records:
        return ends
    share = {tp: n * max_records // total for tp, n in backlog.items()}
    left = max_records - sum(share.values())
    by_remainder = sorted(backlog, key=lambda tp: (-(backlog[tp] * max_records % total), tp))
    for tp in by_remainder[:left]:
        share[tp] += 1
    return {
        t: {p: begin[t][p] + share[t, p] if (t, p) in share else o for p, o in parts.items()}
        for t, parts in ends.items()
    }


@dataclass(frozen=True)
class DataFile:
    """One data file of a topic partition: its path (relative to the log), its first and
    last offset (infinite when the file has no statistics), its record count."""

    partition: int
    low: float
    high: float
    records: int
    path: str

    def within(self, start: int, end: int) -> bool:
        """Every record of the file is in [start, end)."""
        return self.low >= start and self.high < end


def overlapping_files(files: pa.Table, wanted: Mapping[int, tuple[int, int]]) -> dict[int, list[DataFile]]:
    """Per partition of ``wanted`` (partition -> [start, end)), the data files of
    ``files`` (Delta's add actions, flattened) that may hold records in its range, by
    first offset. A file without offset statistics may hold any offset.

    Plain Python over the file list: converting Arrow columns to NumPy imports pandas,
    a third of a second in the fresh process that plans a query's batches."""
    chosen: dict[int, list[DataFile]] = {p: [] for p in wanted}
    for part, low, high, count, path in zip(
        *(files.column(c).to_pylist() for c in ("partition.partition", "min.offset", "max.offset", "num_records", "path")),
        strict=True,
    ):
        if int(part) not in wanted:
            continue
        file = DataFile(
            int(part), -math.inf if low is None else low, math.inf if high is None else high, count or 0, path
        )
        start, end = wanted[file.partition]
        if file.high >= start and file.low < end:
            chosen[file.partition].append(file)
    for listed in chosen.values():
        listed.sort(key=lambda f: f.low)
    return chosen


def topic_ranges(
    topic: str, root: Path, files: pa.Table, wanted: Mapping[int, tuple[int, int]]
) -> list[TopicRange]:
    """Input partitions for offsets ``wanted`` (partition -> [start, end)) of a topic whose
    data files ``files`` lists: per partition, runs of the files that overlap the
    offsets (:func:`overlapping_files`), at most :data:`SPLIT_RECORDS` records each (a
    larger file alone)."""
    ranges = []
    chosen = overlapping_files(files, wanted)
    for partition, (start, end) in sorted(wanted.items()):
        run: list[str] = []
        size = 0
        for file in chosen[partition]:
            if run and size + file.records > SPLIT_RECORDS:
                ranges.append(TopicRange(topic, partition, start, end, run))
                run, size = [], 0
            run.append(str(root / file.path))
            size += file.records
        if run:
            ranges.append(TopicRange(topic, partition, start, end, run))
    return ranges


#: A data file's columns as Spark reads them (``partition`` from its directory).
_FILE_SCHEMA = StructType(
    [StructField(f.name, f.dataType) for f in SCHEMA.fields if f.name in ("offset", "timestamp", "key", "value", "headers")]
    + [StructField("partition", IntegerType())]
)


def read_between(spark, store, start: Mapping[str, Mapping[int, int]], end: Mapping[str, Mapping[int, int]]):
    """The records of ``store``'s topics from positions ``start`` to ``end`` (per topic
    and partition, the first offset to read and the one after the last; a partition
    ``start`` lacks begins at its first record) as a Spark DataFrame in :data:`SCHEMA`,
    read by Spark's Parquet reader from the data files that hold them: the same records
    as a micro-batch of this source between those positions, with the JVM's columnar
    reader and column pruning rather than a Python worker. Only files that hold
    offsets outside the range are filtered by offset."""
    from pyspark.sql import functions as F

    from .embedded import normalized_columns

    frames = []
    for topic, parts in end.items():
        begun = start.get(topic, {})
        wanted = {int(p): (int(begun.get(p, -1)), int(o)) for p, o in parts.items() if int(o) > int(begun.get(p, -1))}
        if not wanted:
            continue
        root = store.log_path(topic)
        chosen = overlapping_files(store.data_files(topic), wanted)
        whole = [f for p, listed in chosen.items() for f in listed if f.within(*wanted[p])]
        partial = [f for p, listed in chosen.items() for f in listed if not f.within(*wanted[p])]

        def scan(files: list[DataFile], root=root):
            return spark.read.schema(_FILE_SCHEMA).option("basePath", str(root)).parquet(*(str(root / f.path) for f in files))

        if whole:
            frames.append(normalized_columns(scan(whole), topic))
        if partial:
            bounds = None
            for p in sorted({f.partition for f in partial}):
                first, after = wanted[p]
                bound = (F.col("partition") == p) & (F.col("offset") >= first) & (F.col("offset") < after)
                bounds = bound if bounds is None else bounds | bound
            frames.append(normalized_columns(scan(partial).where(bounds), topic))
    if not frames:
        return spark.createDataFrame([], SCHEMA)
    return reduce(lambda a, b: a.unionByName(b), frames)


def read_range(part: TopicRange) -> Iterator[pa.RecordBatch]:
    """The records of ``part`` in offset order, in :data:`ARROW_SCHEMA`."""
    columns = ["offset", "timestamp", "key", "value", "headers"]
    for path in part.files:
        if "://" in path:  # a durable URI (credentials from the environment, as Location reads them)
            where = Location(path)
            table = pq.read_table(where.fs_path, columns=columns, filesystem=where.filesystem)
        else:
            table = pq.read_table(path, columns=columns)
        offsets = table.column("offset")
        table = table.filter(pc.and_(pc.greater_equal(offsets, part.start), pc.less(offsets, part.end)))
        n = table.num_rows
        if n == 0:
            continue
        headers = table.column("headers").cast(ARROW_SCHEMA.field("headers").type)
        rows = pa.Table.from_arrays(
            [
                table.column("key"),
                table.column("value"),
                pa.repeat(pa.scalar(part.topic, pa.string()), n),
                pa.repeat(pa.scalar(part.partition, pa.int32()), n),
                table.column("offset"),
                table.column("timestamp"),
                pc.if_else(pc.is_null(headers), pa.scalar([], headers.type), headers),
            ],
            schema=ARROW_SCHEMA,
        )
        yield from rows.to_batches(max_chunksize=_ROWS_PER_ARROW_BATCH)


def _parse(offsets: Mapping) -> Offsets:
    return {t: {int(p): int(o) for p, o in parts.items()} for t, parts in offsets.items()}


def _json(offsets: Mapping[str, Mapping[int, int]]) -> dict:
    return {t: {str(p): int(o) for p, o in sorted(parts.items())} for t, parts in offsets.items()}

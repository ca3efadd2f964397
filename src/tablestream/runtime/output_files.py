"""A batch's outputs written by the Spark tasks that hold them: embedded topics' records
and materialized tables' changes become data files, and the driver receives summaries
(:class:`~tablestream.storage.delta_files.DataFile`), never the rows.

One Spark job per batch, as for outputs collected on the driver
(:func:`tablestream.runtime.output.collect_batch`): the union of the outputs executors
write is shuffled so that each destination — a topic partition, or one of a table's
buckets (by the key, so every change of a key is in one) — is one task's rows; the task
orders them as the driver would (sinks in plan order, then the ordering key), numbers a
topic partition's records from its end offset, which the driver read under the topic's
lock before the job, writes one file per destination and returns its summary. Outputs
that go to the driver (records for Kafka, processing-log entries) are rows of the same
job. A replayed batch (already committed) writes no file; files of task attempts that
failed are in no commit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructType

from ..storage.delta_files import DataFile, write_data_file
from ..storage.embedded import FileAppend, default_partitions, log_rows
from ..storage.formats import Format
from ..storage.tables import TableFiles, table_rows
from .output import RecordFinish, finish_records, ordered, part_types, serialize_texts

__all__ = ["ExecutorWrites", "murmur3_int", "spark_partition_values", "summaries", "write_outputs"]


@dataclass(frozen=True)
class ExecutorWrites:
    """The outputs of a batch the executors write (the sink's choice, see
    :class:`~tablestream.runtime.commit.BatchSink`): embedded topics and materialized
    tables, each spread over tasks (a topic by its partitions, a table over
    ``table_tasks`` tasks by key)."""

    topics: Mapping[str, FileAppend] = field(default_factory=dict)
    tables: Mapping[str, TableFiles] = field(default_factory=dict)
    table_tasks: int = 1


@dataclass(frozen=True)
class _TopicPart:
    part: int
    target: FileAppend
    finish: RecordFinish


@dataclass(frozen=True)
class _TablePart:
    part: int
    target: TableFiles
    schema: pa.Schema


def murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``hash`` of an INT (Murmur3 x86 32-bit, seed 42), a signed 32-bit int.

    >>> murmur3_int(0), murmur3_int(1)
    (933211791, -559580957)
    """
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    k1 = (value & mask) * 0xCC9E2D51 & mask
    k1 = rotl(k1, 15) * 0x1B873593 & mask
    h1 = seed ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & mask
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & mask
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & mask
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def spark_partition_values(count: int) -> list[int]:
    """For each Spark partition ``d`` of ``count``, an INT that ``repartition(count, c)``
    places there (``pmod(hash(v), count) == d``): rows shuffled by it reach exactly the
    task chosen for them, one destination per task."""
    values: list[int] = []
    taken = 0
    for wanted in range(count):
        while murmur3_int(taken) % count != wanted:
            taken += 1
        values.append(taken)
        taken = 0
    return values


def write_outputs(out, parts, sinks, writes: ExecutorWrites, driver_ids: list[int], driver_columns):
    """The batch's one job: the outputs ``writes`` names written by the tasks, the rest
    (``driver_ids``: their columns ``driver_columns``, as the collected union has them)
    collected. Returns the collected Arrow table (``_part``, ``_summary``, ``_p<i>``) and
    the Arrow schema of each table's rows."""
    executor = [i for i, (kind, name, *_) in enumerate(parts) if _written_by_executors(kind, name, writes)]
    destinations, plan, schemas = _destinations(out, parts, sinks, writes, executor)
    count = len(destinations)
    branches = _executor_branches(out, parts, writes, executor, destinations, plan)
    union = None
    for i, columns in zip(executor, branches, strict=True):
        branch = parts[i][2].select(*columns)
        union = branch if union is None else union.union(branch)
    task = _task(plan, destinations)
    written = union.repartition(count, F.col("_dest_v")).mapInArrow(task, "_part int, _summary string")
    collected = written.select(
        "_part", "_summary", *[F.lit(None).cast(t).alias(f"_p{j}") for j, t in enumerate(part_types(out, parts))]
    )
    for i, columns in zip(driver_ids, driver_columns, strict=True):
        collected = collected.union(
            parts[i][2].select(columns[0], F.lit(None).cast(StringType()).alias("_summary"), *columns[1:])
        )
    return collected.toArrow(), schemas


def _written_by_executors(kind: str, name: str, writes: ExecutorWrites) -> bool:
    return (kind == "records" and name in writes.topics) or (kind == "tables" and name in writes.tables)


def _destinations(out, parts, sinks, writes: ExecutorWrites, executor: list[int]):
    """Every destination (``("topic", name, partition)`` or ``("table", name, bucket)``)
    in task order, each written part's plan, and the Arrow schema of each table's rows."""
    destinations: list[tuple[str, str, int]] = []
    plan: dict[int, _TopicPart | _TablePart] = {}
    schemas: dict[str, pa.Schema] = {}
    for topic, target in writes.topics.items():
        destinations += [("topic", topic, p) for p in range(target.partitions)]
        for i, frame, spec in sinks.get(topic, []):
            plan[i] = _TopicPart(i, target, RecordFinish.of(frame, spec))
    for store in writes.tables:
        destinations += [("table", store, b) for b in range(writes.table_tasks)]
    for i in executor:
        kind, name, _, _ = parts[i]
        if kind == "tables":
            schema = _memo(out, ("table schema", name), lambda i=i: _table_schema(part_types(out, parts)[i]))
            schemas[name] = schema
            plan[i] = _TablePart(i, writes.tables[name], schema)
    return destinations, plan, schemas


def _memo(out, key, make):
    if key not in out.memo:
        out.memo[key] = make()
    return out.memo[key]


def _table_schema(part_type: StructType) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema

    fields = {f.name: f for f in part_type.fields}
    arrow = to_arrow_schema(StructType([fields["key"], fields["new"], fields["ts"]]))
    return pa.schema(
        [
            pa.field("key", arrow.field("key").type),
            pa.field("value", arrow.field("new").type),
            pa.field("ts", arrow.field("ts").type),
            pa.field("batch", pa.int64()),
            pa.field("seq", pa.int64()),
        ]
    )


def _executor_branches(out, parts, writes: ExecutorWrites, executor: list[int], destinations, plan) -> list[list[Column]]:
    """Each written part's columns: its part id, its destination (``_dest``, and
    ``_dest_v``, which the shuffle places in that destination's task) and its rows as a
    struct ``_p<i>`` (null in the other parts' rows)."""
    first = {}
    for d, (kind, name, _) in enumerate(destinations):
        first.setdefault((kind, name), d)
    signature = (
        "|".join(f"{parts[i][0]}:{parts[i][1]}" for i in executor),
        tuple(destinations),
    )

    # A key a Python callable chose is JSON text: serialized before it is hashed.
    plan_formats = {
        i: spec.finish.key_format if spec.finish.key_json else None
        for i, spec in plan.items()
        if isinstance(spec, _TopicPart)
    }

    def build() -> list[list[Column]]:
        types = part_types(out, parts)
        places = F.array(*[F.lit(v) for v in spark_partition_values(len(destinations))])
        branches = []
        for i in executor:
            kind, name, _, columns = parts[i]
            payload = F.struct(*columns).cast(types[i])
            if kind == "records":
                serialize = plan_formats[i]
                partition = _kafka_partition(writes.topics[name].partitions, serialize)
                dest = F.lit(first["topic", name]) + partition(payload.getField("key"))
            else:
                dest = F.lit(first["table", name]) + F.pmod(
                    F.hash(payload.getField("_key_order")), F.lit(writes.table_tasks)
                )
            branches.append(
                [
                    F.lit(i).alias("_part"),
                    dest.alias("_dest"),
                    F.element_at(places, dest + 1).alias("_dest_v"),
                    *[(payload if j == i else F.lit(None).cast(types[j])).alias(f"_p{j}") for j in executor],
                ]
            )
        return branches

    return _memo(out, ("executor branches", signature), build)


def _kafka_partition(partitions: int, serialize: Format | None):
    """An Arrow UDF: the partition Kafka's default partitioner gives each serialized key
    (murmur2; keyless records spread as the sticky partitioner spreads them); with
    ``serialize``, keys are JSON text serialized with that format first."""
    from pyspark.sql.functions import arrow_udf

    def partition(keys: pa.Array) -> pa.Array:
        if serialize is not None:
            keys = serialize_texts(keys, serialize)
        return pa.array(default_partitions(keys, partitions), pa.int32())

    return arrow_udf(partition, "int")


def _task(plan: dict[int, _TopicPart | _TablePart], destinations: list[tuple[str, str, int]]):
    """The function each writing task runs: its rows grouped by destination, each
    destination's file written, its summary returned."""

    def task(batches):
        gathered = list(batches)
        if not gathered:
            return
        table = pa.Table.from_batches(gathered)
        if not table.num_rows:
            return
        dests = table.column("_dest")
        for dest in pc.unique(dests).to_pylist():
            rows = table.filter(pc.equal(dests, dest))
            kind, _, where = destinations[dest]
            summaries = _write_topic(rows, plan, where) if kind == "topic" else _write_table(rows, plan)
            for part, file in summaries:
                yield pa.RecordBatch.from_pydict(
                    {"_part": pa.array([part], pa.int32()), "_summary": pa.array([file.to_json()], pa.string())}
                )

    return task


def _rows_of(rows: pa.Table, part: int) -> pa.Table:
    chosen = rows.column(f"_p{part}").filter(pc.equal(rows.column("_part"), part))
    return pa.table(chosen.flatten(), names=[f.name for f in chosen.type])


def _write_topic(rows: pa.Table, plan, partition: int) -> list[tuple[int, DataFile]]:
    """One topic partition's records: each sink's in the ordering key's order, sinks in
    plan order, numbered from the partition's end offset."""
    parts = sorted(p for p in pc.unique(rows.column("_part")).to_pylist())
    target = plan[parts[0]].target
    if target.done:
        return []
    records = pa.concat_tables(
        [finish_records(ordered(_rows_of(rows, p)), plan[p].finish) for p in parts]
    )
    file = write_data_file(
        target.path,
        log_rows(records, partition, target.end[partition], target.now),
        {"partition": str(partition)},
        target.storage_options,
    )
    return [(parts[0], file)]


def _write_table(rows: pa.Table, plan) -> list[tuple[int, DataFile]]:
    part = pc.unique(rows.column("_part")).to_pylist()[0]
    spec = plan[part]
    if spec.target.done:
        return []
    changes = ordered(_rows_of(rows, part)).select(["key", "new", "ts"])
    data = table_rows(changes, spec.target.batch_id).cast(spec.schema)
    return [(part, write_data_file(spec.target.path, data, None, spec.target.storage_options))]


def summaries(table: pa.Table) -> list[tuple[int, DataFile]]:
    """The files the tasks wrote, from the collected rows (``_part``, ``_summary``)."""
    chosen = table.filter(pc.is_valid(table.column("_summary")))
    return [
        (int(part), DataFile.from_json(text))
        for part, text in zip(chosen.column("_part").to_pylist(), chosen.column("_summary").to_pylist(), strict=True)
    ]



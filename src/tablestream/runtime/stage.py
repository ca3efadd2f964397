"""A store stage: shuffle a DataFrame by key bytes into the store's state partitions and
run a task kernel (:mod:`tablestream.runtime.kernels`) over each partition's rows.

Each task opens its stores as of the versions the batch before left
(:class:`~tablestream.runtime.state.VersionRecord`), under a commit id of its own, and
reports the versions it wrote through ``written`` (a Spark accumulator: the reports of
the tasks that succeeded reach the driver), from which the runner records the batch's.

The shuffle is an explicit ``repartition(P, key)``: Spark places a row in partition
``pmod(hash(key), P)``, computed beside each row as ``_sp``; a task serves the state
partition its rows name and checks that they all name the same one, so a store partition
always sees the same keys (nothing may coalesce the shuffle's partitions).

A small batch runs in fewer tasks than state partitions, as many as Spark runs at once
(``spread``): a task then serves every state partition ``p`` with ``p mod T`` its own,
one after another, each with its own sessions. A Python task costs tens of
milliseconds whatever its rows (a 10,000-change batch through four store stages on two
cores: four tasks a stage ran in two waves). Large batches keep one task per state
partition, so that a task gathers one partition's rows only.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from .state import NEWEST, StoreLayout, StoreSession, Version

Kernel = Callable[..., pa.Table]  # (table, *sessions) -> table


class PartitioningError(RuntimeError):
    """A row reached a state partition other than the one its key hashes to."""


@dataclass(frozen=True)
class StoreStage:
    """The keyed stores one stage of one batch uses (every store partitioned alike)."""

    layout: StoreLayout
    store: str | tuple[str, ...]
    partitions: int
    batch_id: int
    # The versions before this batch (store -> partition -> version; None: each store
    # as of its newest durable files) and where tasks report the versions they wrote.
    versions: Mapping[str, Mapping[int, Version]] | None = field(default=None, compare=False)
    written: Any = field(default=None, compare=False)
    # Schemas and partitioning columns from one batch to the next (building them costs
    # calls into the JVM); shared by the stages of an application.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)
    # Run in as many tasks as Spark runs at once, when fewer than the state partitions.
    spread: bool = False

    def run(
        self, frame, key: str, kernel: Kernel, schema, *, key_places_only: bool = False, skipped: str | None = None
    ):
        """``kernel(table, *sessions)`` on each state partition's rows of ``frame``, with
        a session of each store; returns a DataFrame of the kernels' outputs with the
        given Spark ``schema``. ``key_places_only``: the key column only places rows (the
        kernel does not get it). ``skipped``: a column of ``frame`` holding, for a row
        the rule must drop (a null key), the reason (empty: drop it unreported); such rows are reported as skipped
        records of the operator being applied (:mod:`tablestream.runtime.failures`) and
        never reach the kernel."""
        from pyspark.sql import functions as F

        from .failures import current_reporter

        reporter = current_reporter() if skipped is not None else None
        layout, batch_id, versions, written = self.layout, self.batch_id, self.versions, self.written
        stores = (self.store,) if isinstance(self.store, str) else self.store
        memo = self.memo
        if ("schema", str(schema)) not in memo:
            memo["schema", str(schema)] = _schemas(schema)
        spark_schema, arrow_schema = memo["schema", str(schema)]
        if ("placed", key) not in memo:
            memo["placed", key] = (F.pmod(F.hash(F.col(key)), F.lit(self.partitions)).alias("_sp"), F.col(key))
        placed, by = memo["placed", key]
        tasks = self._tasks(frame.sparkSession) if self.spread else self.partitions
        if tasks < self.partitions:
            shuffled = frame.select("*", placed).repartition(tasks, self._spread_by(frame.sparkSession, tasks))
        else:
            shuffled = frame.select("*", placed).repartition(self.partitions, by)
        if key_places_only:
            shuffled = shuffled.drop(key)

        def task(batches):
            gathered = list(batches)
            rows = sum(b.num_rows for b in gathered)
            if rows == 0:
                return
            table = pa.Table.from_batches(gathered)
            if skipped is not None:
                table = _drop_skipped(table, skipped, reporter)
                if table.num_rows == 0:
                    return
            placed = table.column("_sp").to_numpy()
            # The task's own partition id is its stage's (a union after the stage
            # renumbers them); the rows say which state partitions it serves, and
            # those must all be one task's (p mod T alike).
            first = int(placed[0])
            if (placed % tasks != first % tasks).any():
                other = int(placed[placed % tasks != first % tasks][0])
                raise PartitioningError(
                    f"store {stores[0]}: one task received rows of state partitions {first} and {other}"
                )
            served = [first] if (placed == first).all() else [int(p) for p in np.unique(placed)]
            for partition in served:
                rows = table if len(served) == 1 else table.filter(pa.array(placed == partition))
                yield from serve(partition, rows.drop_columns(["_sp"]))

        def serve(partition: int, rows: pa.Table):
            commit = "" if versions is None else uuid.uuid4().hex[:12]
            with ExitStack() as stack:
                sessions = [
                    stack.enter_context(
                        StoreSession(
                            layout, s, partition, batch_id,
                            expected=NEWEST if versions is None else versions.get(s, {}).get(partition),
                            commit=commit,
                        )
                    )
                    for s in stores
                ]
                out = kernel(rows, *sessions)
                # The rows leave before the stores commit, so Spark consumes them while
                # the stores write; the task ends only after the commit (a failed commit
                # fails the task, and its retry replays the batch).
                yield from out.cast(arrow_schema).to_batches()
            if written is not None:
                written.add([(s.store, partition, s.written) for s in sessions if s.written is not None])

        return shuffled.mapInArrow(task, spark_schema)

    def _tasks(self, spark) -> int:
        """The tasks of a spread stage: the state partitions, at most as many as Spark
        runs at once (its default parallelism, asked once per application)."""
        if "parallelism" not in self.memo:
            self.memo["parallelism"] = spark.sparkContext.defaultParallelism
        return max(1, min(self.partitions, self.memo["parallelism"]))

    def _spread_by(self, spark, tasks: int):
        """The column a spread stage's shuffle places rows by: for state partition ``p``
        a value Spark's hash places in task ``p mod tasks``."""
        from pyspark.sql import functions as F

        if ("spread", tasks) not in self.memo:
            values = placing_values(spark, tasks, "CAST(c AS INT)")
            by_task = F.array(*[F.lit(v).cast("int") for v in values])
            self.memo["spread", tasks] = F.element_at(by_task, F.pmod(F.col("_sp"), F.lit(tasks)) + 1)
        return self.memo["spread", tasks]


def placing_values(spark, partitions: int, candidate_sql: str) -> list[int]:
    """For each of ``partitions`` shuffle partitions, the least integer ``c`` whose
    ``candidate_sql`` (an expression of ``c``) Spark's hash places there, found by hashing
    candidates in a local relation (Spark evaluates it while planning: no job)."""
    candidates = ", ".join(f"({i})" for i in range(64 * partitions))
    found = spark.sql(
        f"SELECT c, pmod(hash({candidate_sql}), {partitions}) AS p FROM VALUES {candidates} AS t(c)"
    ).collect()
    values: dict[int, int] = {}
    for row in sorted(found, key=lambda row: row.c):
        values.setdefault(row.p, row.c)
    if len(values) < partitions:
        raise RuntimeError(f"no placing value found for some of {partitions} partitions")
    return [values[p] for p in range(partitions)]


def _drop_skipped(table: pa.Table, column: str, reporter) -> pa.Table:
    """``table`` without the rows ``column`` gives a reason for, each reported."""
    import pyarrow.compute as pc

    from .failures import SKIPPED

    reasons = table.column(column)
    if reasons.null_count < table.num_rows:
        dropped = table.filter(pc.is_valid(reasons))
        positions = [dropped.column(c).to_pylist() for c in ("o_src", "o_part", "o_off", "o_idx", "ts")]
        # An empty reason drops the row without a report (it was reported before).
        reporter.report([
            reporter.entry(SKIPPED, reason, None, None, tuple(p[i] for p in positions))
            for i, reason in enumerate(dropped.column(column).to_pylist())
            if reason
        ])
        table = table.filter(pc.is_null(reasons))
    return table.drop_columns([column])


def _schemas(schema):
    """The Spark and Arrow forms of a kernel's output schema (an Arrow schema, as the
    kernels define them, or DDL text)."""
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
    from pyspark.sql.types import _parse_datatype_string

    if isinstance(schema, pa.Schema):
        schema = from_arrow_schema(schema)
    elif isinstance(schema, str):
        schema = _parse_datatype_string(schema)
    return schema, to_arrow_schema(schema)

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
each with its own sessions, side by side in threads when the task has cores to itself
(:func:`side_by_side`). A Python task costs tens of milliseconds whatever its rows (a
10,000-change batch through four store stages on two cores: four tasks a stage ran in
two waves). A batch of fewer records still runs each
stage in one task (``one_task``): its stages run side by side, so one task a stage
keeps the cores busy without the fixed cost of the others. Large batches keep one task
per state partition, so that a task gathers one partition's rows only.
"""

from __future__ import annotations

import contextvars
import json
import os
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from . import jvm
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
    # The stages' functions and shuffle columns from one batch to the next (building
    # them costs calls into the JVM); shared by the stages of an application.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False)
    # Run in as many tasks as Spark runs at once, when fewer than the state partitions;
    # with ``one_task``, in one.
    spread: bool = False
    one_task: bool = False
    # The running query's token: its tasks keep their stores open from one batch to the
    # next under it (see :mod:`tablestream.runtime.state.keeper`); None closes them.
    keep: str | None = None
    # Where the stage notes the local property it sets and its stores, so that a batch
    # run on the same plan sets its own (see ``BatchRunner``).
    properties: list | None = field(default=None, compare=False)

    def run(
        self, frame, key: str, kernel: Kernel, schema, *, key_places_only: bool = False, skipped: str | None = None
    ):
        """``kernel(table, *sessions)`` on each state partition's rows of ``frame``, with
        a session of each store; returns a DataFrame of the kernels' outputs with the
        given Spark ``schema``. ``key_places_only``: the key column only places rows (the
        kernel does not get it). ``skipped``: a column of ``frame`` holding, for a row
        the rule must drop (a null key), the reason (empty: drop it unreported); such rows are reported as skipped
        records of the operator being applied (:mod:`tablestream.runtime.failures`) and
        never reach the kernel.

        The returned DataFrame must be computed before the same stores' stage of
        another batch is built: the tasks read the batch's id and versions from a Spark
        local property of the building thread (see :class:`_StageFunction`)."""
        from .failures import current_reporter

        reporter = current_reporter() if skipped is not None else None
        stores = (self.store,) if isinstance(self.store, str) else self.store
        tasks = self._tasks(frame.sparkSession) if self.spread or self.one_task else self.partitions
        columns = tuple(frame.columns)
        function = self._function(stores, key, kernel, schema, key_places_only, skipped, reporter, tasks, columns)
        frame.sparkSession.sparkContext.setLocalProperty(function.property, self._parameters(stores))
        if self.properties is not None:
            self.properties.append((function.property, stores))
        shuffled = jvm.repartition(jvm.select(frame, function.placed), *function.by(self, frame.sparkSession, tasks))
        return jvm.map_in_arrow(shuffled, function.udf)

    def _parameters(self, stores: tuple[str, ...]) -> str:
        return stage_parameters(self.batch_id, self.versions, self.keep, stores)

    def _function(self, stores, key, kernel, schema, key_places_only, skipped, reporter, tasks, columns) -> _StageFunction:
        """The stage's Python function and the columns that shuffle its rows, built at
        its first batch and kept in the memo while its kernel, layout and reporter stay
        the same (building them again costs calls into the JVM per column)."""
        shape = ("function", stores, key, str(schema), key_places_only, skipped, tasks, self.partitions, columns)
        function = self.memo.get(shape)
        if function is None or not function.serves(kernel, self.layout, reporter, self.written):
            function = _StageFunction(
                self, stores, key, kernel, _schemas(schema), key_places_only, skipped, reporter, tasks, columns
            )
            self.memo[shape] = function
        return function

    def _tasks(self, spark) -> int:
        """The tasks of a spread stage: one with ``one_task``, else the state partitions,
        at most as many as Spark runs at once (its default parallelism, asked once per
        application)."""
        if self.one_task:
            return 1
        if "parallelism" not in self.memo:
            self.memo["parallelism"] = spark.sparkContext.defaultParallelism
        return max(1, min(self.partitions, self.memo["parallelism"]))

    def spread_by(self, spark, tasks: int):
        """The column a spread stage's shuffle places rows by: for state partition ``p``
        a value Spark's hash places in task ``p mod tasks``."""
        from pyspark.sql import functions as F

        if ("spread", tasks) not in self.memo:
            values = placing_values(spark, tasks, "CAST(c AS INT)")
            by_task = F.array(*[F.lit(v).cast("int") for v in values])
            self.memo["spread", tasks] = F.element_at(by_task, F.pmod(F.col("_sp"), F.lit(tasks)) + 1)
        return self.memo["spread", tasks]


def stage_parameters(
    batch_id: int, versions: Mapping[str, Mapping[int, Version]] | None, keep: str | None, stores: tuple[str, ...]
) -> str:
    """A batch's id and the versions its tasks open each of ``stores`` as of (absent:
    each store's newest durable files), and the query's token, as a stage's tasks read
    them from its local property."""
    chosen = None
    if versions is not None:
        chosen = {s: {str(p): v.name for p, v in versions.get(s, {}).items() if v is not None} for s in stores}
    return json.dumps({"batch": batch_id, "versions": chosen, "keep": keep})


class _StageFunction:
    """A store stage's Python function, the same for every batch with the same input
    columns: its tasks read the batch's id and the versions to open from the Spark local
    property ``property``, which :meth:`StoreStage.run` sets in the building thread
    (Spark hands a job's tasks the local properties of the thread that runs it).
    Building it once keeps the cost of a stage's driver side to a few calls into the
    JVM."""

    def __init__(
        self, stage: StoreStage, stores, key, kernel, schemas, key_places_only, skipped, reporter, tasks, columns
    ):
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.functions import pandas_udf
        from pyspark.util import PythonEvalType

        self.kernel, self.layout, self.reporter, self.written = kernel, stage.layout, reporter, stage.written
        self.property = "tablestream.stage." + ",".join(stores)
        self.key, self.partitions = key, stage.partitions
        spark_schema, arrow_schema = schemas
        # A task gets its rows' every column and their state partition (``_sp``).
        placed = F.pmod(F.hash(F.col(key)), F.lit(stage.partitions)).alias("_sp")
        self.placed = jvm.columns_seq([F.col("*"), placed])
        task = _task(
            stores, tasks, self.property, kernel, arrow_schema, stage.layout, skipped, reporter, stage.written,
            key if key_places_only else None,
        )
        udf = pandas_udf(task, returnType=spark_schema, functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
        # The function names every column it reads: Spark prunes the columns a plan's
        # nodes do not name, and a map function's input is its child's whole rows.
        self.udf = udf(*[F.col("`" + c.replace("`", "``") + "`") for c in (*columns, "_sp")])
        self._by: dict[int, tuple] = {}

    def serves(self, kernel, layout, reporter, written) -> bool:
        return kernel is self.kernel and layout == self.layout and reporter == self.reporter and written is self.written

    def by(self, stage: StoreStage, spark, tasks: int) -> tuple:
        """The arguments of the shuffle's ``repartition``."""
        from pyspark.sql import functions as F

        if tasks not in self._by:
            column = stage.spread_by(spark, tasks) if tasks < self.partitions else F.col(self.key)
            self._by[tasks] = (tasks, jvm.columns_seq([column]))
        return self._by[tasks]


def _task(stores, tasks, parameters, kernel, arrow_schema, layout, skipped, reporter, written, placing_key):
    """The function each task of a stage runs over its rows (see :meth:`StoreStage.run`);
    ``placing_key``: a column that only placed the rows (the kernel does not get it)."""

    def task(batches):
        gathered = list(batches)
        rows = sum(b.num_rows for b in gathered)
        if rows == 0:
            return
        table = pa.Table.from_batches(gathered)
        if placing_key is not None:
            table = table.drop_columns([placing_key])
        if skipped is not None:
            table = _drop_skipped(table, skipped, reporter)
            if table.num_rows == 0:
                return
        batch_id, versions, keep = _batch_parameters(parameters)
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
        reports: list = []
        if (placed == first).all():
            yield from serve(batch_id, versions, keep, first, table.drop_columns(["_sp"]), reports)
        else:
            served = [
                (int(p), table.filter(pa.array(placed == p)).drop_columns(["_sp"])) for p in np.unique(placed)
            ]
            threads = max(1, min(len(served), (os.cpu_count() or 1) // tasks))
            yield from side_by_side(
                lambda partition, rows: list(serve(batch_id, versions, keep, partition, rows, reports)),
                served,
                threads,
            )
        if written is not None and reports:
            written.add(reports)

    def serve(batch_id: int, versions, keep: str | None, partition: int, rows: pa.Table, reports: list):
        commit = "" if versions is None else uuid.uuid4().hex[:12]
        with ExitStack() as stack:
            sessions = [
                stack.enter_context(
                    StoreSession(
                        layout, s, partition, batch_id,
                        expected=NEWEST if versions is None else versions.get(s, {}).get(partition),
                        commit=commit,
                        keep=keep,
                    )
                )
                for s in stores
            ]
            out = kernel(rows, *sessions)
            # The rows leave before the stores commit, so Spark consumes them while
            # the stores write; the task ends only after the commit (a failed commit
            # fails the task, and its retry replays the batch).
            yield from out.cast(arrow_schema).to_batches()
        reports.extend((s.store, partition, s.written) for s in sessions if s.written is not None)

    return task


def side_by_side(serve: Callable[[int, pa.Table], list], served: list[tuple[int, pa.Table]], threads: int):
    """The batches ``serve(partition, rows)`` returns for each of ``served``, in their
    order, the partitions served side by side in ``threads`` threads. RocksDB's reads,
    writes and commits and Arrow's kernels run without Python's lock, and a task that
    serves several partitions is a small batch's, its stage's only one or one of fewer
    than the cores. A failure of any is raised once every partition is done."""
    if threads == 1:
        for partition, rows in served:
            yield from serve(partition, rows)
        return
    with ThreadPoolExecutor(threads) as pool:
        done = [pool.submit(contextvars.copy_context().run, serve, p, rows) for p, rows in served]
    for future in done:
        yield from future.result()


def _batch_parameters(name: str) -> tuple[int, dict[str, dict[int, Version]] | None, str | None]:
    """In a task: the batch id, versions and keeping token its stage's local property
    ``name`` holds."""
    from pyspark import TaskContext

    text = TaskContext.get().getLocalProperty(name)
    if text is None:
        raise RuntimeError(
            f"a store stage's task found no batch in the local property {name}: its DataFrame was computed "
            "in another thread than the one that built it"
        )
    found = json.loads(text)
    versions = found["versions"]
    if versions is not None:
        versions = {
            store: {int(p): Version.parse(name) for p, name in by_partition.items()}
            for store, by_partition in versions.items()
        }
    return found["batch"], versions, found["keep"]


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
    # A timestamp's Arrow type names a zone; its values (microseconds since the epoch)
    # read the same in any, and Spark reads them so.
    return schema, to_arrow_schema(schema, timezone="UTC")

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
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Any

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
            # renumbers them); the rows say which state partition this is.
            partition = int(placed[0])
            if (placed != partition).any():
                raise PartitioningError(
                    f"store {stores[0]}: one task received rows of state partitions {partition} and "
                    f"{int(placed[placed != partition][0])}"
                )
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
                out = kernel(table.drop_columns(["_sp"]), *sessions)
                # The rows leave before the stores commit, so Spark consumes them while
                # the stores write; the task ends only after the commit (a failed commit
                # fails the task, and its retry replays the batch).
                yield from out.cast(arrow_schema).to_batches()
            if written is not None:
                written.add([(s.store, partition, s.written) for s in sessions if s.written is not None])

        return shuffled.mapInArrow(task, spark_schema)


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

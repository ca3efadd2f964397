"""A store stage: shuffle a DataFrame by key bytes into the store's state partitions and
run a task kernel (:mod:`tablestream.runtime.tasks`) over each partition's rows.

The shuffle is an explicit ``repartition(P, key)``: Spark places a row in partition
``pmod(hash(key), P)``, and the task checks every row against its own partition id, so
a store partition always sees the same keys (nothing may coalesce or split it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa

from .state import StoreLayout, StoreSession

Kernel = Callable[[pa.Table, StoreSession], pa.Table]


class PartitioningError(RuntimeError):
    """A row reached a state partition other than the one its key hashes to."""


@dataclass(frozen=True)
class StoreStage:
    """One keyed store used by one stage of one batch."""

    layout: StoreLayout
    store: str
    partitions: int
    batch_id: int

    def run(self, frame, key: str, kernel: Kernel, schema):
        """``kernel(table, session)`` on each state partition's rows of ``frame``;
        returns a DataFrame of the kernels' outputs with the given Spark ``schema``."""
        from pyspark.sql import functions as F

        layout, store, batch_id = self.layout, self.store, self.batch_id
        arrow_schema = _arrow_schema(schema)
        shuffled = frame.withColumn("_sp", F.pmod(F.hash(F.col(key)), F.lit(self.partitions))).repartition(
            self.partitions, F.col(key)
        )

        def task(batches):
            from pyspark import TaskContext

            gathered = list(batches)
            rows = sum(b.num_rows for b in gathered)
            if rows == 0:
                return
            partition = TaskContext.get().partitionId()
            table = pa.Table.from_batches(gathered)
            placed = table.column("_sp").to_numpy()
            if (placed != partition).any():
                raise PartitioningError(
                    f"store {store}: task of partition {partition} received rows of partition "
                    f"{int(placed[placed != partition][0])}"
                )
            with StoreSession(layout, store, partition, batch_id) as session:
                out = kernel(table.drop_columns(["_sp"]), session)
            yield from out.cast(arrow_schema).to_batches()

        return shuffled.mapInArrow(task, schema)


def _arrow_schema(schema) -> pa.Schema:
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import StructType, _parse_datatype_string

    if not isinstance(schema, StructType):
        schema = _parse_datatype_string(schema)
    return to_arrow_schema(schema)

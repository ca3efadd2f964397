"""One micro-batch as the rules see it: its context (id, positions, the stages it runs)
and what it writes (records per output topic, table changes, processing-log entries)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from ..storage.formats import Format
from .frames import Frame
from .positions import BatchPositions
from .stage import StoreStage

if TYPE_CHECKING:
    from .physical import PhysicalPlan


@dataclass(frozen=True)
class ToTopicSpec:
    """A sink's topic and its formats (None: the defaults for the frame's types)."""

    topic: str
    key_format: Format | None
    value_format: Format | None


@dataclass
class BatchOutput:
    """What one batch writes: records per output topic (a frame and its sink, in sink
    order), the changes of each materialized table, and processing-log entries.
    ``memo`` keeps the collection's columns from one batch to the next (they depend on
    the plan only)."""

    records: dict[str, list[tuple[Frame, ToTopicSpec]]] = field(default_factory=dict)
    tables: dict[str, Frame] = field(default_factory=dict)
    errors: list[DataFrame] = field(default_factory=list)
    # The positions of every record of a batch computed before they were read (see
    # BatchRunner.process), collected with the outputs.
    positions: DataFrame | None = None
    persisted: list[DataFrame] = field(default_factory=list)
    # The local property each store stage set, and its stores (see StoreStage.properties).
    stage_properties: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict)
    batch_id: int = -1
    committed: int | None = None  # the last batch the checkpoint says is done

    def release(self) -> None:
        for df in self.persisted:
            df.unpersist()
        self.persisted.clear()


@dataclass
class BatchContext:
    """What a rule gets besides its inputs: the batch id, its positions (ordering time,
    invalid records), the physical facts of the plan and the batch's outputs.
    ``large``: the batch holds many records (see ``runner._LARGE``): each store stage
    runs in a task per state partition, and integer aggregates reach theirs summed by
    Spark. ``one_task``: the batch is small enough that
    each store stage runs in one task (see :class:`~tablestream.runtime.stage.StoreStage`).
    ``analysis``: the batch is the empty one the runner analyzes the topology with
    (nothing is cached or computed)."""

    batch_id: int
    positions: BatchPositions
    physical: PhysicalPlan
    output: BatchOutput
    large: bool
    one_task: bool = False
    analysis: bool = False
    # The stores' versions before this batch, and the accumulator its tasks report the
    # versions they write to (see :mod:`tablestream.runtime.stage`).
    versions: Any = None
    written: Any = None

    @property
    def records(self) -> DataFrame:
        """The batch's raw records with their ordering time ``o_ts``."""
        return self.positions.records

    def stage(self, stores: str | tuple[str, ...]) -> StoreStage:
        """A store stage of this batch over the given stores."""
        physical = self.physical
        return StoreStage(
            physical.layout, stores, physical.partitions, self.batch_id,
            versions=self.versions, written=self.written, memo=physical.stage_memo, spread=not self.large,
            one_task=self.one_task, keep=physical.keep, properties=self.output.stage_properties,
        )

    def persist(self, df: DataFrame, node: str | None = None) -> DataFrame:
        """Run a store stage once for this batch. Rows that reach more than one consumer
        (children, sinks, the materialized table) are cached and reused (a recomputation
        after an eviction is a replay, which the stores make exact); rows with one
        consumer flow straight into it. The consumers are stages of the batch's one
        output job that start at the same time: the first to reach a partition of the
        rows computes and caches it while the others wait on Spark's lock of that block,
        so the stage runs once without a job of its own (one first, for a large batch,
        cost W1's bootstrap 0.4-0.8 s and W3's 0.3-0.9 s more)."""
        if self.analysis or (node is not None and self.physical.uses(node) <= 1):
            return df
        df = df.persist()
        self.output.persisted.append(df)
        return df

    def materialize(self, store: str, frame: Frame) -> None:
        """Write ``frame``'s changes to the materialized table ``store``."""
        self.output.tables[store] = frame

"""Plan -> per-batch Spark computation: each plan node's rule applied in plan order.

:class:`BatchRunner` builds every node's rule once (a node without one fails here, with
its name) and applies them to one micro-batch of raw topic records (the normalized
topic columns), returning what the batch writes: records per output topic, the changes
of every materialized table and the processing-log entries. Rules are DataFrame
operations; per-key state is read and written by store stages
(:mod:`tablestream.runtime.stage`) running the task kernels
(:mod:`tablestream.runtime.kernels`), each once per batch.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame

from ..errors import SchemaError
from ..plan.topology import Topology
from .analysis import analyze
from .batch import BatchContext, BatchOutput
from .failures import FailureLog, ProcessingSettings, operating
from .frames import Frame
from .output import CollectedBatch, collect_batch
from .physical import PhysicalPlan
from .positions import BatchPositions, read_positions
from .rules import rule_for
from .rules.sources import SourceRule
from .state import StoreLayout

# Records in a batch from which rows read by several consumers are computed by a job of
# their own first (see BatchContext.persist), and after which the next batch's tasks
# sum up its positions.
_COMPUTE_FIRST = 50_000


class BatchRunner:
    """Applies a topology to micro-batches.

    ``partitions``: the number of state partitions of every store (fixed for the life of
    the application). ``topic_partitions``: partition counts of the source topics, for
    joins that require co-partitioned inputs (``strict``). ``settings``: what happens
    to records an operator cannot process (:mod:`tablestream.runtime.failures`).

    Building a runner analyzes the topology on ``spark`` (default: the active session):
    every rule is applied to an empty batch (:mod:`tablestream.runtime.analysis`), so an
    expression Spark cannot analyze, a predicate that is not BOOLEAN or inputs that are
    not co-partitioned fail here, before any batch runs.
    """

    def __init__(
        self,
        topology: Topology,
        layout: StoreLayout,
        partitions: int,
        topic_partitions: dict[str, int] | None = None,
        settings: ProcessingSettings | None = None,
        *,
        spark=None,
    ):
        from ..spark import get_spark

        spark = spark or get_spark()
        self.topology = topology
        self.physical = PhysicalPlan(topology, layout, partitions, topic_partitions, rule_for)
        self.rules = [(node, _rule(node, self.physical)) for node in topology.nodes]
        self.failures = FailureLog(spark, self.physical.topics, settings or ProcessingSettings())
        self._reporters = {}
        self._checks: dict[str, Column] | None = None
        self._output_memo: dict = {}
        # The last batch's positions: its record count, where it ends in each partition.
        self.last_positions: BatchPositions | None = None
        analyze(self.rules, self.physical, spark, self._output_memo, self._operating)

    @property
    def topics(self) -> tuple[str, ...]:
        """Every source topic, in a fixed order (a topic's position is ``o_src``)."""
        return self.physical.topics

    def source_checks(self) -> dict[str, Column]:
        """Per source node: its records that cannot be read (see :meth:`SourceRule.check`)."""
        if self._checks is None:
            self._checks = {node.name: rule.check() for node, rule in self.rules if isinstance(rule, SourceRule)}
        return self._checks

    def run(self, records: DataFrame, batch_id: int) -> BatchOutput:
        """Compute one batch. ``records`` has the normalized topic columns."""
        # A batch's tasks sum up its positions when the batch before was large (or this
        # is the first): catch-up batches repay that Python stage, small ones not.
        last = self.last_positions
        summarize = last is None or last.count >= _COMPUTE_FIRST
        positions = read_positions(records, self.source_checks(), summarize=summarize)
        self.last_positions = positions
        batch = BatchContext(
            batch_id, positions, self.physical, BatchOutput(memo=self._output_memo),
            compute_first=positions.count >= _COMPUTE_FIRST,
        )
        self.failures.reset()
        frames: dict[str, Frame] = {}
        for node, rule in self.rules:
            inputs = [frames[p] for p in node.parents]
            with self._operating(rule, inputs):
                result = rule.apply(batch, *inputs)
            if result is not None:
                frames[node.name] = result
        return batch.output

    def _reporter(self, rule, inputs: list[Frame]):
        """The reporter of a rule's user functions: its operator name, and whether its
        rows each come from one source record (their positions are then logged)."""
        positioned = all(f.positioned for f in inputs)
        key = (rule.operator, positioned)
        if key not in self._reporters:
            self._reporters[key] = self.failures.reporter(rule.operator, positioned)
        return self._reporters[key]

    def collect(self, out: BatchOutput) -> CollectedBatch:
        """Everything a computed batch writes, collected on the driver (one Spark job),
        with the records its operators could not process in its processing-log entries;
        raises :class:`~tablestream.runtime.failures.ProcessingError` instead when a user
        function failed and ``processing_errors="fail"``."""
        collected = collect_batch(out)
        collected.errors = self.failures.settle(collected.errors)
        return collected

    def _operating(self, rule, inputs: list[Frame]):
        """The context a rule is applied in: its operator's reporter (see
        :func:`~tablestream.runtime.failures.operating`)."""
        return operating(self._reporter(rule, inputs))


def _rule(node, physical: PhysicalPlan):
    """The node's rule; a format it cannot have (a sink's) is reported with its name."""
    try:
        return rule_for(node)(node, physical)
    except SchemaError as error:
        raise SchemaError(f"{node.name}: {error}") from None

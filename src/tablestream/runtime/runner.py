"""Plan -> per-batch Spark computation: each plan node's rule applied in plan order.

:class:`BatchRunner` builds every node's rule once (a node without one fails here, with
its name) and applies them to one micro-batch of raw topic records (the normalized
topic columns), returning what the batch writes: records per output topic, the changes
of every materialized table and the processing-log entries. Rules are DataFrame
operations; per-key state is read and written by store stages
(:mod:`tablestream.runtime.stage`) running the task kernels
(:mod:`tablestream.runtime.kernels`), each once per batch.

SQL runs strict (Spark's ANSI mode). A batch whose job fails on a value (a cast of bad
text, a division by zero: a Spark error of SQLSTATE class 22) is run again carefully:
the same batch id through a second set of the rules, built on first use, in which each
SQL expression that can raise reports the records it fails on instead
(:mod:`tablestream.runtime.careful`). The stores read a replayed batch as they were
before it, so the careful run sees what the failed one saw.

Each batch opens the stores as of the versions the batch before left; when its job has
run (:meth:`BatchRunner.collect`), the versions its tasks wrote are recorded
(:class:`~tablestream.runtime.state.VersionRecord`), before its outputs commit.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from py4j.protocol import Py4JError
from pyspark.accumulators import AccumulatorParam
from pyspark.sql import Column, DataFrame

from ..errors import SchemaError
from ..plan.topology import Topology
from ..spark import arrow_batches_cut_by_rows
from .analysis import analyze, empty_records
from .batch import BatchContext, BatchOutput
from .failures import FailureLog, ProcessingSettings, carefully, operating
from .frames import Frame, select
from .jvm import PlanSwap, schema_json
from .output import CollectedBatch, batch_union, collect_batch
from .output_files import ExecutorWrites
from .physical import PhysicalPlan
from .positions import (
    BatchPositions,
    assumed_positions,
    position_columns,
    positions_found,
    read_positions,
)
from .rules import rule_for
from .rules.sources import SourceRule
from .stage import stage_parameters
from .state import StoreLayout
from .timestamps import TimestampExtraction

# Records from which a batch is large: its store stages run in a task per state
# partition, its integer aggregates are summed by Spark before their stage, and the next
# batch's tasks sum up its positions (a small batch is computed in one job instead, on
# its assumed positions).
_LARGE = 50_000
# Records in a batch below which each store stage runs in one task: a Python task costs
# tens of milliseconds whatever its rows, and a batch's stages run side by side (W3 at
# 100,000 orders, side by side: one-change batches 0.06-0.15 s faster, 1,000-change
# ones 0.03-0.12 s, 10,000-change ones 0.17-0.29 s; W2's 10,000-change batches alike;
# at 1,000,000 orders, no slower: one change 0.12 s faster, 10,000 changes 0.2-0.3 s).
_ONE_TASK = 20_000

# The largest record (key and value bytes) of a large batch whose Python stages get
# their rows in Arrow batches cut by rows only (10,000 rows of such records: 160 MiB at
# most; see arrow_batches_cut_by_rows).
_SMALL_RECORD = 16 * 1024

_LOG = logging.getLogger(__name__)

#: Given a batch's record count, the outputs its executors write (None: the driver
#: writes every output).
WritesChoice = Callable[[int], ExecutorWrites | None]


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
        self.versions = layout.version_record()
        self._written = spark.sparkContext.accumulator([], _Reports())
        self.rules = self._build_rules()
        self._careful_rules: list | None = None  # built at the first careful run
        self.failures = FailureLog(spark, self.physical.topics, settings or ProcessingSettings())
        self._reporters = {}
        self._checks: dict[str, Column] | None = None
        self._position_columns = None
        self._output_memo: dict = {}
        self._careful_memo: dict = {}
        # Small batches' plans, built once per shape and made again on each batch's
        # records (see _process_assumed); None for a shape that cannot be.
        self._plans: dict[tuple, _BatchPlan | None] = {}
        #: Batches run carefully (see :meth:`process`) since the runner was built.
        self.careful_runs = 0
        # The last batch's positions: its record count, where it ends in each partition.
        self.last_positions: BatchPositions | None = None
        # The sources' timestamp extractors, checked on an empty batch (as the rules are).
        empty = empty_records(spark)
        self.extraction = TimestampExtraction([r for _, r in self.rules if isinstance(r, SourceRule)], empty)
        analyze(self.rules, self.physical, self.extraction.apply(empty), self._output_memo, self._operating)

    def use_layout(self, layout: StoreLayout) -> None:
        """Run the next batches on the stores under ``layout`` (the application's new
        run, after a reset)."""
        self.physical.layout = layout
        self.versions = layout.version_record()
        self._plans.clear()  # their stages' functions serve the stores of the run before

    @property
    def topics(self) -> tuple[str, ...]:
        """Every source topic, in a fixed order (a topic's position is ``o_src``)."""
        return self.physical.topics

    def source_checks(self) -> dict[str, Column]:
        """Per source node: its records that cannot be read (see :meth:`SourceRule.check`)."""
        if self._checks is None:
            self._checks = {node.name: rule.check() for node, rule in self.rules if isinstance(rule, SourceRule)}
        return self._checks

    def _build_rules(self) -> list:
        return [(node, _rule(node, self.physical)) for node in self.topology.nodes]

    def process(
        self, records: DataFrame, batch_id: int, committed: int | None = None, writes: WritesChoice | None = None,
        *, at_most: int | None = None,
    ) -> CollectedBatch:
        """Compute one batch and collect everything it writes (see :meth:`run` and
        :meth:`collect`). When a Spark job of the batch fails on a value (SQLSTATE class
        22: a SQL expression raised on a record), the batch is run again carefully: the
        records the SQL fails on go to the processing log (or, with
        ``processing_errors="fail"``, fail the batch with one line naming one); a
        failure a careful run cannot catch is raised as it is. ``committed``: the last
        batch the application's checkpoint says is done (its record of the stores'
        versions must be there; see :meth:`VersionRecord.before`). ``writes``: the
        outputs the executors write (see :meth:`collect`).

        ``at_most``: how many records the batch holds at most, when known before it is
        read (its offset ranges). A batch known to be small is computed in one job: on
        the positions it almost always has (:func:`assumed_positions`: no invalid record,
        none late in its partition), with every record's position collected beside its
        outputs. When they show otherwise, the batch is computed again on them (the
        stores read a batch run again as they were before it), as it would have been."""
        found = None
        if at_most is not None and at_most < _LARGE and (writes is None or writes(at_most) is None):
            collected, found = self._process_assumed(records, batch_id, committed, at_most)
            if collected is not None:
                return collected
        try:
            return self._process(records, batch_id, careful=False, committed=committed, writes=writes, found=found)
        except Exception as error:
            if not is_data_error(error):
                raise
            _LOG.warning(
                "Batch %d failed on a value (%s); running it again carefully to find the records",
                batch_id, str(error).splitlines()[0],
            )
        self.careful_runs += 1
        return self._process(records, batch_id, careful=True, committed=committed, writes=writes, found=found)

    def _process(
        self, records: DataFrame, batch_id: int, *, careful: bool, committed: int | None, writes: WritesChoice | None,
        found: BatchPositions | None,
    ) -> CollectedBatch:
        out = self.run(records, batch_id, careful=careful, committed=committed, positions=found)
        positions = self.last_positions
        with arrow_batches_cut_by_rows(records.sparkSession, _small_records(positions)):
            return self._collect_run(out, None if writes is None else writes(positions.count))

    def _collect_run(self, out: BatchOutput, writes: ExecutorWrites | None) -> CollectedBatch:
        try:
            return self.collect(out, writes)
        finally:
            out.release()

    def _process_assumed(
        self, records: DataFrame, batch_id: int, committed: int | None, at_most: int
    ) -> tuple[CollectedBatch | None, BatchPositions | None]:
        """The batch computed on its assumed positions, and the positions it has: the
        batch collected when they are as assumed; else None and the positions found (None
        too when its job failed: the batch then runs as any other).

        A small batch's plan is the same from one batch to the next but for its records:
        it is built once per shape (one task a stage or not, the records' columns), and
        each later batch's is that plan made again on its records
        (:class:`~tablestream.runtime.jvm.PlanSwap`), its stages' local properties set to
        the batch's. Building the DataFrames of a plan costs Spark's analysis of each
        (W2: about 25 of them, 0.1 s a batch; W3 twice that)."""
        shape = (at_most < _ONE_TASK, schema_json(records))
        plan = self._plans.get(shape)
        made = None
        if plan is not None:
            try:
                made = self._made_again(plan, records, batch_id, committed)
            except Py4JError as error:
                _LOG.warning("A batch plan could not be made again (%s); each batch builds its own", error)
                self._plans[shape] = None
        if made is not None:
            out, union = made
            extracted = None
        else:
            extracted = self.extraction.apply(records)
            out = self._apply(assumed_positions(extracted, at_most), batch_id, careful=False, committed=committed)
            out.positions = select(extracted, self._positions_read())
            union = batch_union(out)
        persisted = list(out.persisted)
        try:
            collected = collect_batch(out, None, union)
        except Exception as error:
            if query_stopped(error):
                raise
            # Perhaps a record the assumed positions took for valid: the batch runs
            # again as any other, which raises the failure if it is not that.
            _LOG.info("Batch %d failed before its positions were read (%s)", batch_id, str(error).splitlines()[0])
            return None, None
        finally:
            out.release()
        if extracted is None:
            extracted = self.extraction.apply(records)
        found = positions_found(extracted, collected.positions, self.source_checks())
        self.last_positions = found
        if not found.as_assumed:
            return None, found
        if shape not in self._plans and union is not None:
            self._plans[shape] = _BatchPlan.of(union, records, persisted, out)
        return self._settled(out, collected), found

    def _made_again(
        self, plan: _BatchPlan, records: DataFrame, batch_id: int, committed: int | None
    ) -> tuple[BatchOutput, DataFrame]:
        """A batch's outputs and the union collecting them, from ``plan`` made again on
        its ``records``: the rows each stage caches cached again, each stage's local
        property set to this batch's id and versions."""
        union, *persisted = plan.swap.on(records)
        out = BatchOutput(
            records=plan.out.records, tables=plan.out.tables, errors=plan.out.errors, positions=plan.out.positions,
            persisted=[df.persist() for df in persisted], stage_properties=plan.out.stage_properties,
            memo=plan.out.memo, batch_id=batch_id, committed=committed,
        )
        versions = self.versions.before(batch_id, committed)
        context = union.sparkSession.sparkContext
        for name, stores in out.stage_properties:
            context.setLocalProperty(name, stage_parameters(batch_id, versions, self.physical.keep, stores))
        self._written.value = []
        self.failures.reset()
        return out, union

    def _positions_read(self):
        if self._position_columns is None:
            self._position_columns = position_columns(self.source_checks())
        return self._position_columns

    def run(
        self, records: DataFrame, batch_id: int, *, careful: bool = False, committed: int | None = None,
        positions: BatchPositions | None = None,
    ) -> BatchOutput:
        """Compute one batch. ``records`` has the normalized topic columns. ``careful``:
        with the careful rules (see the module's docstring). ``positions``: the batch's,
        already read (its records then hold ``o_ts``)."""
        if positions is None:
            # A batch's tasks sum up its positions when the batch before was large (or
            # this is the first): catch-up batches repay that Python stage, small ones not.
            last = self.last_positions
            summarize = last is None or last.count >= _LARGE
            records = self.extraction.apply(records)
            positions = read_positions(records, self.source_checks(), summarize=summarize, columns=self._positions_read())
        self.last_positions = positions
        return self._apply(positions, batch_id, careful=careful, committed=committed)

    def _apply(self, positions: BatchPositions, batch_id: int, *, careful: bool, committed: int | None) -> BatchOutput:
        """Every rule applied to the batch with ``positions``."""
        if careful and self._careful_rules is None:
            with carefully():
                self._careful_rules = self._build_rules()
        rules = self._careful_rules if careful else self.rules
        self._written.value = []  # the reports of this run only
        batch = BatchContext(
            batch_id, positions, self.physical,
            BatchOutput(
                memo=self._careful_memo if careful else self._output_memo, batch_id=batch_id, committed=committed
            ),
            large=positions.count >= _LARGE,
            one_task=positions.count < _ONE_TASK,
            versions=self.versions.before(batch_id, committed),
            written=self._written,
        )
        self.failures.reset()
        frames: dict[str, Frame] = {}
        try:
            with carefully(careful):
                for node, rule in rules:
                    inputs = [frames[p] for p in node.parents]
                    with self._operating(rule, inputs):
                        result = rule.apply(batch, *inputs)
                    if result is not None:
                        frames[node.name] = result
        except BaseException:
            batch.output.release()
            raise
        return batch.output

    def _reporter(self, rule, inputs: list[Frame]):
        """The reporter of a rule's user functions: its operator name, and whether its
        rows each come from one source record (their positions are then logged)."""
        positioned = all(f.positioned for f in inputs)
        key = (rule.operator, positioned)
        if key not in self._reporters:
            self._reporters[key] = self.failures.reporter(rule.operator, positioned)
        return self._reporters[key]

    def collect(self, out: BatchOutput, writes: ExecutorWrites | None = None) -> CollectedBatch:
        """Everything a computed batch writes, collected on the driver (one Spark job;
        the outputs ``writes`` names are written by its tasks, and only their files'
        summaries are collected), with the records its operators could not process in its processing-log entries;
        raises :class:`~tablestream.runtime.failures.ProcessingError` instead when a user
        function failed and ``processing_errors="fail"``. Records the versions of the
        stores the batch wrote."""
        return self._settled(out, collect_batch(out, writes))

    def _settled(self, out: BatchOutput, collected: CollectedBatch) -> CollectedBatch:
        """A collected batch with its processing-log entries settled, and the versions
        of the stores it wrote recorded."""
        collected.errors = self.failures.settle(collected.errors)
        self.versions.record(out.batch_id, self._written.value, out.committed)
        return collected

    def _operating(self, rule, inputs: list[Frame]):
        """The context a rule is applied in: its operator's reporter (see
        :func:`~tablestream.runtime.failures.operating`)."""
        return operating(self._reporter(rule, inputs))


class _BatchPlan:
    """A small batch's plan kept to be made again on later batches' records: the swap
    of its union and cached rows, and its outputs (their frames, sinks and columns)."""

    def __init__(self, swap: PlanSwap, out: BatchOutput):
        self.swap, self.out = swap, out

    @classmethod
    def of(cls, union: DataFrame, records: DataFrame, persisted: list[DataFrame], out: BatchOutput) -> _BatchPlan | None:
        """The plan of a batch computed on ``records``; None when it cannot be made again
        (see :class:`~tablestream.runtime.jvm.PlanSwap`): its shape's batches are then
        each built as the first."""
        try:
            return cls(PlanSwap(union, records, persisted), out)
        except (ValueError, Py4JError) as error:
            _LOG.debug("A batch plan is built for each batch: %s", error)
            return None


class _Reports(AccumulatorParam):
    """The versions the tasks of a run wrote, in the order the tasks finished."""

    def zero(self, value):
        return []

    def addInPlace(self, value1, value2):  # noqa: N802 - Spark's name
        value1.extend(value2)
        return value1


def _rule(node, physical: PhysicalPlan):
    """The node's rule; a format it cannot have (a sink's) is reported with its name."""
    try:
        return rule_for(node)(node, physical)
    except SchemaError as error:
        raise SchemaError(f"{node.name}: {error}") from None


_STOPPED = re.compile(
    r"java\.lang\.InterruptedException|java\.io\.InterruptedIOException|"
    r"java\.nio\.channels\.ClosedByInterruptException|SPARK_JOB_CANCELLED"
)


def _small_records(positions: BatchPositions) -> bool:
    """Whether ``positions`` are a large batch's, its records all known to be small: Spark's
    measure of each row's bytes costs a bulk batch's Python stages more than the rows'
    sizes need (see :func:`~tablestream.spark.arrow_batches_cut_by_rows`)."""
    return positions.count >= _LARGE and positions.largest is not None and positions.largest <= _SMALL_RECORD


def query_stopped(error: BaseException) -> bool:
    """Whether a batch failed because its query was stopped (Spark tells it by the
    text of the failure)."""
    return bool(_STOPPED.search(str(error)))


def is_data_error(error: BaseException) -> bool:
    """Whether a Spark error was raised by a value a job computed on (SQLSTATE class 22,
    data exception: ``CAST_INVALID_INPUT``, ``DIVIDE_BY_ZERO``, ``ARITHMETIC_OVERFLOW``,
    ...)."""
    from pyspark.errors import PySparkException

    state = error.getSqlState() if isinstance(error, PySparkException) else None
    return bool(state) and state.startswith("22")

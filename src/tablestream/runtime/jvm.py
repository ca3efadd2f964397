"""DataFrame operations handed to the JVM with Scala Seqs a rule built once.

Each Column, name or list that PySpark passes from Python costs calls into the JVM (a
list of N Columns: N + 3), and a small batch's DataFrames are built from hundreds of
them: at 0.2-0.4 ms a call, a large share of a small batch's time on the driver. The
rules keep their Columns from one batch to the next
(:class:`~tablestream.runtime.frames.Columns`), so the Seqs are built at the first batch
and each operation here is one call. This is the one module that reaches into PySpark's
JVM objects (``_jdf``, ``_jc``).
"""

from __future__ import annotations

from pyspark import SparkContext
from pyspark.sql import Column, DataFrame


def seq(items: list):
    """A Scala Seq of ``items`` (strings, or Columns' JVM objects)."""
    return SparkContext._active_spark_context._jvm.PythonUtils.toSeq(items)


def names_seq(names: tuple[str, ...]):
    """A Scala Seq of fixed ``names`` (those rules drop), built once per SparkContext."""
    sc = SparkContext._active_spark_context
    if _NAMES.get(names, (None,))[0] is not sc:
        _NAMES[names] = (sc, seq(list(names)))
    return _NAMES[names][1]


_NAMES: dict[tuple[str, ...], tuple] = {}


def columns_seq(columns: list[Column]):
    """A Scala Seq of ``columns``."""
    return seq([c._jc for c in columns])


def select(df: DataFrame, columns) -> DataFrame:
    """``df.select`` of a Seq of Columns."""
    return DataFrame(df._jdf.select(columns), df.sparkSession)


def with_columns(df: DataFrame, names, columns) -> DataFrame:
    """``df.withColumns`` of a Seq of names and a Seq of Columns."""
    return DataFrame(df._jdf.withColumns(names, columns), df.sparkSession)


def drop(df: DataFrame, names) -> DataFrame:
    """``df.drop`` of a Seq of names."""
    return DataFrame(df._jdf.drop(names), df.sparkSession)


def repartition(df: DataFrame, partitions: int, columns) -> DataFrame:
    """``df.repartition(partitions, *columns)`` with a Seq of Columns."""
    return DataFrame(df._jdf.repartition(partitions, columns), df.sparkSession)


def map_in_arrow(df: DataFrame, udf: Column) -> DataFrame:
    """``df.mapInArrow`` of an Arrow map function made once (see
    :class:`~tablestream.runtime.stage.StoreStage`), without PySpark's per-call work
    (the function pickled again, one Column per input column)."""
    return DataFrame(df._jdf.mapInArrow(udf._jc, False, None), df.sparkSession)


def schema_json(df: DataFrame) -> str:
    """``df``'s Spark schema as JSON (one call)."""
    return df._jdf.schema().json()


class PlanSwap:
    """A DataFrame built on another, ``base``, made again on a DataFrame of the same
    columns without building or analysing it again: Spark's analysed plan of ``whole``
    with each copy of ``base``'s plan in it replaced by the new one, its columns renamed
    to the copy's (Spark's attribute ids), then marked analysed. Also for the DataFrames
    ``also`` (the ones a batch caches), each swapped alike.

    Spark copies a plan's relation when a plan reads it twice (a union of two branches
    of it: ``DeduplicateRelations``), so ``base`` may appear under new ids: every
    subtree with the same result as ``base`` is a copy, found once here. Building fails
    (:class:`ValueError`) when some relation of ``base`` appears outside them, or when
    there is none: such a plan cannot be made again this way.
    """

    def __init__(self, whole: DataFrame, base: DataFrame, also: list[DataFrame]):
        self._session = whole.sparkSession
        jvm = SparkContext._active_spark_context._jvm
        # The JVM classes and constants each batch's swap uses, looked up once.
        self._alias = jvm.org.apache.spark.sql.catalyst.expressions.Alias
        self._project = jvm.org.apache.spark.sql.catalyst.plans.logical.Project
        self._datasets = jvm.org.apache.spark.sql.classic.Dataset
        self._to_map = jvm.PythonUtils.toScalaMap
        self._new_map = jvm.java.util.HashMap
        self._none = getattr(getattr(jvm.scala, "None$"), "MODULE$")
        self._nothing = seq([])
        base_plan = base._jdf.queryExecution().analyzed()
        self._width = base_plan.output().size()
        self._base = base_plan.canonicalized()
        base_leaves = _leaves(base_plan)
        self.plans = []
        for df in (whole, *also):
            plan = df._jdf.queryExecution().analyzed()
            copies = self._copies(plan)
            leaves = [leaf for leaf in _leaves(plan) if any(leaf.sameResult(b) for b in base_leaves)]
            if not copies or len(leaves) != len(copies) * len(base_leaves):
                raise ValueError(f"{len(copies)} copies of the base plan hold {len(leaves)} of its relations")
            targets = []
            for copy in copies:
                output = copy.output()
                targets.append((copy, [(a.name(), a.exprId()) for a in (output.apply(i) for i in range(self._width))]))
            self.plans.append((plan, targets))

    def _copies(self, plan) -> list:
        """The subtrees of ``plan`` with the same result as the base plan."""
        if plan.output().size() == self._width and plan.canonicalized().equals(self._base):
            return [plan]
        children = plan.children()
        return [copy for i in range(children.size()) for copy in self._copies(children.apply(i))]

    def on(self, base: DataFrame) -> list[DataFrame]:
        """``whole`` and each of ``also`` with ``base`` in place of the one they were
        built on (same columns, same types)."""
        new = base._jdf.queryExecution().analyzed()
        output = new.output()
        attributes = [output.apply(i) for i in range(self._width)]
        swapped = []
        for plan, targets in self.plans:
            replacements = self._new_map()
            for copy, names in targets:
                aliases = [
                    self._alias(attribute, name, expr_id, self._nothing, self._none, self._nothing)
                    for attribute, (name, expr_id) in zip(attributes, names, strict=True)
                ]
                replacements.put(copy, self._project(seq(aliases), new))
            # A Scala Map is a partial function: transformUp replaces the nodes it holds.
            result = plan.transformUp(self._to_map(replacements))
            result.setAnalyzed()
            jdf = self._datasets.ofRows(self._session._jsparkSession, result)
            swapped.append(DataFrame(jdf, self._session))
        return swapped


def _leaves(plan) -> list:
    leaves = plan.collectLeaves()
    return [leaves.apply(i) for i in range(leaves.size())]

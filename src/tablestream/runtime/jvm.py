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

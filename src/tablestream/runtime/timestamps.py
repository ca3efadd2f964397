"""Timestamps extracted from the records' contents: a source's ``timestamp_extractor``
(Kafka Streams' ``TimestampExtractor``, ksqlDB's ``WITH (TIMESTAMP=...)``).

The extraction is applied where a batch's records are read, before its first job
(:mod:`tablestream.runtime.positions`): the ``timestamp`` column of the records of a
source with an extractor becomes the extracted timestamp, so the ordering time, the
rules, joins, aggregates and outputs all see it as the record's timestamp, and nothing
downstream changes. A batch of a plan without extractors is not touched.

A record whose extracted timestamp is null, negative or cannot be computed (the SQL
raises on it: a cast of bad text) is invalid for its source, as a record that does not
decode is: ``_ts_error`` gives the reason, the source's check
(:meth:`~tablestream.runtime.rules.sources.SourceRule.check`) flags it and it goes to
the processing log with the timestamp it was written with (``_written_ts``). Kafka
Streams skips a negative extracted timestamp with a warning (``RecordQueue``); ksqlDB
logs a failed extraction to its processing log (``LoggingTimestampExtractor``). Such a
record's ``timestamp`` becomes 0, so that it never delays the ordering time of the
records after it in its partition.
"""

from __future__ import annotations

from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegralType, TimestampNTZType, TimestampType

from ..storage.formats.spark_types import ksql_type_name
from .expressions import ExpressionError, recording_spark_texts, sql_never_raising

#: The reason a record's timestamp could not be extracted (null when it could).
ERROR = "_ts_error"
#: The timestamp a record of a source with an extractor was written with.
WRITTEN = "_written_ts"
#: Whether a record of a source with an extractor is invalid for it: its key or value
#: does not decode (found by the extraction's own decoding, so the check does not decode
#: it again), or its timestamp cannot be extracted.
INVALID = "_x_invalid"


class TimestampExtraction:
    """The extraction of every source rule whose node has a ``timestamp_extractor``,
    built once (its types checked against ``records``, an empty batch) and applied to
    each batch's records (:meth:`apply`)."""

    def __init__(self, source_rules, records: DataFrame):
        from .analysis import explain  # analysis imports the rules; this module is imported by them

        self.sources = [r for r in source_rules if r.node.timestamp_extractor is not None]
        self._decoded: dict[str, Column] = {}
        if not self.sources:
            return
        millis: list[tuple[Column, Column, Column]] = []  # (inside, timestamp, problem)
        invalid: list[Column] = []
        for i, rule in enumerate(self.sources):
            node, inside = rule.node, rule.topic_filter
            # Only the source's records are decoded: the others' bytes read as null. The
            # decoding is not inside a condition, so Spark parses each value once for
            # the value and its check together (a common subexpression).
            key = rule.key_format.decode_checked(F.when(inside, F.col("key")))
            value = rule.value_format.decode_checked(F.when(inside, F.col("value")))
            names = (f"_xk{i}", f"_xv{i}", f"_xf{i}")
            self._decoded.update({names[0]: key.value, names[1]: value.value, names[2]: key.failed | value.failed})
            decoded = records.withColumns({n: self._decoded[n] for n in names})
            with recording_spark_texts() as texts:
                try:
                    result, reason = sql_never_raising(
                        node.timestamp_extractor, rule.shape, key=names[0], value=names[1], ts="timestamp"
                    )
                    dtype = decoded.select(result.alias("_x")).schema["_x"].dataType
                except ExpressionError as error:
                    raise ExpressionError(f"{node.name}: timestamp extractor: {error}") from None
                except AnalysisException as error:
                    raise ExpressionError(f"{node.name}: timestamp extractor: {explain(error, node, texts)}") from error
            label = f"timestamp extractor '{node.timestamp_extractor.text}'"
            try:
                ms, problem = to_millis(result, dtype, reason, label, "extracted timestamp")
            except ExpressionError as error:
                raise ExpressionError(f"{node.name}: {error}") from None
            # A record that does not decode is logged for that, by its source.
            failed = F.coalesce(F.col(names[2]), F.lit(False))
            millis.append((inside, ms, F.when(inside & ~failed, problem)))
            invalid.append(F.when(inside, failed | problem.isNotNull()))
        self._error = F.coalesce(*[problem for _, _, problem in millis])  # one source's topics each
        self._invalid = F.coalesce(*invalid)
        timestamp = F.col("timestamp")
        for inside, ms, problem in reversed(millis):
            timestamp = F.when(inside, F.coalesce(F.when(problem.isNull(), ms), F.lit(0).cast("bigint"))).otherwise(
                timestamp
            )
        self._timestamp = timestamp

    def __bool__(self) -> bool:
        return bool(self.sources)

    def apply(self, records: DataFrame) -> DataFrame:
        """``records`` with the extracted timestamps (unchanged without extractors)."""
        if not self.sources:
            return records
        decoded = records.withColumns(self._decoded)
        extracted = decoded.withColumns({
            WRITTEN: F.col("timestamp"), ERROR: self._error, INVALID: self._invalid, "timestamp": self._timestamp,
        })
        return extracted.drop(*self._decoded)


def to_millis(result: Column, dtype, reason: Column | None, label: str, noun: str) -> tuple[Column, Column]:
    """A timestamp expression's epoch milliseconds (``result`` of Spark type ``dtype``,
    integral or a timestamp: any other is refused, naming ``label``) and why a row has
    none: ``reason`` (why the expression raises), or the ``noun`` is null or negative."""
    if isinstance(dtype, (TimestampType, TimestampNTZType)):
        ms = F.unix_millis(result.cast("timestamp"))
    elif isinstance(dtype, IntegralType):
        ms = result.cast("bigint")
    else:
        raise ExpressionError(f"{label} is {ksql_type_name(dtype)}, not BIGINT or TIMESTAMP")
    problem = F.coalesce(
        *([reason] if reason is not None else []),
        F.when(ms.isNull(), F.lit(f"the {noun} is null ({label})")),
        F.when(ms < 0, F.concat(F.lit(f"the {noun} is negative: "), ms.cast("string"), F.lit(f" ({label})"))),
    )
    return ms, problem

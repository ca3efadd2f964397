"""Records an operator cannot process, kept instead of failing the batch or vanishing.

Two kinds, as in Kafka Streams (``processing.exception.handler``, KIP-1033) and
ksqlDB's processing log:

- a **processing error**: a user function (predicate, mapper, joiner, key selector,
  extractor, action) raised on a record, or returned what the operator cannot use (a
  predicate's ``"no"``), or a SQL expression raised on it (found by a careful run of
  the batch, :mod:`tablestream.runtime.careful`). A stream record leaves the operator's output; a table row is
  absent from the operator's result table, as a row a filter leaves out (a change
  whose new row fails deletes the key's earlier result; one whose old row failed
  inserts it), and a foreign-key extractor or a global table's key selector that fails
  gives no key to look up; with
  ``processing_errors="log_and_continue"`` (the default) it is written to the
  processing log with the operator's name, the exception and the record's position,
  and the batch goes on; with ``"fail"`` the batch fails with one line naming the
  operator and the record (and fails the same way when the application restarts);
- a **skipped record**: a rule drops a record it cannot place (a null group-by key, a
  null key into a table, a null join key or value), as Kafka Streams does; it is
  counted and, with ``log_skipped_records=True`` (the default), logged with the reason.

The Python code that finds these runs inside Spark tasks (a user function's Arrow UDF,
a store stage); it reports each record to one accumulator per application
(:class:`FailureLog`), read on the driver after the batch's output job. A task run
twice (a retry, a recomputed partition) reports its records twice; entries are
deduplicated by operator and record. Each operator's user functions are built while
the runner applies that operator's rule (:func:`operating`), which names it.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from ..errors import TablestreamError

#: What a processing error does: log the record and go on, or fail the batch.
PROCESSING_ERROR_MODES = ("log_and_continue", "fail")

ERROR, SKIPPED = "error", "skipped"


class ProcessingError(TablestreamError):
    """A user function failed on a record and ``processing_errors="fail"``."""


@dataclass(frozen=True)
class ProcessingSettings:
    """How an application treats records its operators cannot process.

    >>> ProcessingSettings(processing_errors="fail").processing_errors
    'fail'
    >>> ProcessingSettings(processing_errors="ignore")
    Traceback (most recent call last):
    ...
    tablestream.errors.TablestreamError: processing_errors must be one of log_and_continue, fail (got 'ignore')
    """

    processing_errors: str = "log_and_continue"
    log_skipped_records: bool = True

    def __post_init__(self) -> None:
        if self.processing_errors not in PROCESSING_ERROR_MODES:
            raise TablestreamError(
                f"processing_errors must be one of {', '.join(PROCESSING_ERROR_MODES)} "
                f"(got {self.processing_errors!r})"
            )
        if not isinstance(self.log_skipped_records, bool):
            raise TablestreamError(
                f"log_skipped_records must be True or False (got {self.log_skipped_records!r})"
            )


@dataclass(frozen=True)
class Reporter:
    """What a task needs to report a record of one operator (pickled into the task)."""

    accumulator: Any
    operator: str
    positioned: bool
    # A table change's old row: its failure was reported when it was the new row.
    quiet: bool = False

    def report(self, entries: list[tuple]) -> None:
        if entries and not self.quiet:
            self.accumulator.add(entries)

    def entry(self, kind: str, reason: str, key: Any, value: Any, position: tuple) -> tuple:
        """One record's entry: ``position`` is ``(o_src, o_part, o_off, o_idx, ts)``."""
        if not self.positioned:
            position = (None, None, None, 0, position[4])
        return (kind, self.operator, reason, *position, _text(key), _text(value))


def failure_reason(error: BaseException) -> str:
    """An exception as the processing log states it: its type and message.

    >>> failure_reason(ZeroDivisionError("division by zero"))
    'ZeroDivisionError: division by zero'
    """
    message = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _text(value: Any) -> str | None:
    """A record's key or value as the processing log shows it: JSON text (bytes as
    they are: bytes that are not UTF-8 come back unchanged from :func:`_bytes`)."""
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="surrogateescape")
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def _bytes(text: str | None) -> bytes | None:
    """The bytes of an entry's key or value (:func:`_text`)."""
    return None if text is None else text.encode("utf-8", errors="surrogateescape")


_current: contextvars.ContextVar[Reporter | None] = contextvars.ContextVar("tablestream_operator", default=None)


@contextlib.contextmanager
def operating(reporter: Reporter) -> Iterator[None]:
    """While a rule is applied: the operator its user functions report for."""
    token = _current.set(reporter)
    try:
        yield
    finally:
        _current.reset(token)


@contextlib.contextmanager
def quietly() -> Iterator[None]:
    """While the user functions of a table change's old row are built: they do not
    report (the row's failure was reported when it was the change's new row)."""
    reporter = current_reporter()
    with operating(dataclasses.replace(reporter, quiet=True)):
        yield


_careful: contextvars.ContextVar[bool] = contextvars.ContextVar("tablestream_careful", default=False)


@contextlib.contextmanager
def carefully(careful: bool = True) -> Iterator[None]:
    """While the rules of a careful run are applied (``careful``): every SQL expression
    that can raise at run time is built as a user function column (see
    :mod:`tablestream.runtime.careful`)."""
    token = _careful.set(careful)
    try:
        yield
    finally:
        _careful.reset(token)


def is_careful() -> bool:
    """Whether the rules being applied are a careful run's (see :func:`carefully`)."""
    return _careful.get()


def current_reporter() -> Reporter:
    """The operator whose rule is being applied (see :func:`operating`)."""
    reporter = _current.get()
    if reporter is None:
        raise RuntimeError("a user function column was built outside of a rule's apply")
    return reporter


#: A processing-log entry's columns and types (see ``storage/processing_log.py``).
ENTRY_SCHEMA = pa.schema([
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.int64()),
    ("error", pa.string()),
    ("key", pa.binary()),
    ("value", pa.binary()),
])


class FailureLog:
    """The records one application's operators could not process in the current batch:
    one Spark accumulator the tasks add to, read on the driver."""

    def __init__(self, spark, topics: tuple[str, ...], settings: ProcessingSettings):
        from pyspark.accumulators import AccumulatorParam

        class _Entries(AccumulatorParam):
            def zero(self, value):
                return []

            def addInPlace(self, first, second):
                first.extend(second)
                return first

        self.accumulator = spark.sparkContext.accumulator([], _Entries())
        self.topics = topics
        self.settings = settings
        self.skipped_total = 0

    def reporter(self, operator: str, positioned: bool) -> Reporter:
        return Reporter(self.accumulator, operator, positioned)

    def reset(self) -> None:
        self.accumulator.value = []

    def settle(self, errors: pa.Table | None) -> pa.Table | None:
        """The batch's processing-log entries: ``errors`` (records that do not decode)
        with the operators' failures and, when logged, their skipped records, in
        position order. Raises :class:`ProcessingError` for the first failure when
        ``processing_errors="fail"``."""
        entries = sorted(set(self.accumulator.value), key=_entry_order)
        failures = [e for e in entries if e[0] == ERROR]
        skipped = [e for e in entries if e[0] == SKIPPED]
        self.skipped_total += len(skipped)
        if failures and self.settings.processing_errors == "fail":
            raise ProcessingError(
                f"{failures[0][1]} failed on {self._where(failures[0])}: {failures[0][2]} "
                "(processing_errors='fail'; with 'log_and_continue' the record goes to the processing log)"
            )
        logged = failures + (skipped if self.settings.log_skipped_records else [])
        if not logged:
            return errors
        table = pa.table(
            {
                "topic": [self.topics[e[3]] if e[3] is not None else None for e in logged],
                "partition": [e[4] for e in logged],
                "offset": [e[5] for e in logged],
                "timestamp": [e[7] for e in logged],
                "error": [f"{e[1]}: {e[2]}" for e in logged],
                "key": [_bytes(e[8]) for e in logged],
                "value": [_bytes(e[9]) for e in logged],
            },
            schema=ENTRY_SCHEMA,
        )
        if errors is None or not errors.num_rows:
            return table
        return pa.concat_tables([errors.select(ENTRY_SCHEMA.names).cast(ENTRY_SCHEMA), table]).sort_by(
            [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
        )

    def _where(self, entry: tuple) -> str:
        if entry[3] is None:
            return f"a change at timestamp {entry[7]}"
        return f"record {self.topics[entry[3]]}/{entry[4]}@{entry[5]}"


def _entry_order(entry: tuple) -> tuple:
    kind, operator, reason, src, part, off, idx, ts, key, value = entry
    return (src is None, src or 0, part or 0, off or 0, idx or 0, ts or 0, operator, kind, reason, key or "", value or "")

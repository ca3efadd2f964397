"""Committing a batch's outputs: records to their topics, changes to the materialized
tables, then processing-log entries, each handed to a :class:`BatchSink` (the
application's topic store and tables, or the test driver's memory), and last the
sink's commit (on Kafka, the transaction of the batch's records).

The sink decides where each output goes: before the batch's output job, knowing its
record count, it names the outputs
the executors write as data files (:meth:`BatchSink.executor_writes`); those reach
the commit as the files' summaries, which the sink commits, and every other output as
rows."""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa

from ..storage.delta_files import DataFile
from .output import CollectedBatch, TableEncoding
from .output_files import ExecutorWrites

__all__ = ["BatchSink", "commit_batch"]


class BatchSink(Protocol):
    """Where a batch's outputs go. Each write of a replayed batch id must leave the
    outputs as the first one did (the application's writes are idempotent)."""

    def executor_writes(self, batch_id: int, records: int) -> ExecutorWrites | None:
        """Before the batch's output job (``records``: the batch's record count): the
        topics and tables the executors write as data files (with what they need:
        paths, end offsets), None when every output comes to the driver as rows. Whatever it holds (a topic's lock) it keeps until
        :meth:`commit` or :meth:`discard`."""
        ...

    def commit_topic_files(self, topic: str, files: list[DataFile], batch_id: int) -> None:
        """Commit the data files the executors wrote for ``topic``."""
        ...

    def commit_table_files(self, store: str, files: list[DataFile], schema: pa.Schema, batch_id: int) -> None:
        """Commit the data files the executors wrote for a materialized table (rows of
        ``schema``)."""
        ...

    def write_records(self, topic: str, records: pa.Table, batch_id: int) -> None:
        """Append records (``key``, ``value`` bytes, ``timestamp``) to ``topic``."""
        ...

    def write_changes(
        self, store: str, changes: pa.Table, encoding: TableEncoding, batch_id: int
    ) -> None:
        """Apply changes (``key, new, ts``; ``new`` null for a deletion) to a
        materialized table."""
        ...

    def write_processing_log(self, entries: pa.Table, batch_id: int) -> None:
        """Append processing-log entries (``topic, partition, offset, timestamp, error,
        key, value``)."""
        ...

    def commit(self, batch_id: int) -> None:
        """Make what the batch wrote visible, if the writes above only staged it (the
        Kafka sink's transaction); a sink whose writes are each final does nothing."""
        ...

    def discard(self) -> None:
        """The batch failed: drop what was staged and release what
        :meth:`executor_writes` holds."""
        ...


def commit_batch(collected: CollectedBatch, sink: BatchSink, batch_id: int) -> None:
    """Write everything one batch produced to ``sink``, in a fixed order: records per
    topic (as rows, or the executors' files), changes per table (likewise), then
    processing-log entries (if any); then commit.

    >>> commit_batch(collect_batch(out, sink.executor_writes(3, 10_000)), sink, batch_id=3)    # doctest: +SKIP
    """
    for topic, records in collected.records.items():
        sink.write_records(topic, records, batch_id)
    for topic, files in collected.topic_files.items():
        sink.commit_topic_files(topic, files, batch_id)
    for store, changes in collected.tables.items():
        sink.write_changes(store, changes, collected.encodings[store], batch_id)
    for store, files in collected.table_files.items():
        sink.commit_table_files(store, files, collected.table_schemas[store], batch_id)
    if collected.errors is not None and collected.errors.num_rows:
        sink.write_processing_log(collected.errors, batch_id)
    sink.commit(batch_id)

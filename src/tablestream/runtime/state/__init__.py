"""Keyed state stores (RocksDB per store and state partition) with changelogs and snapshots.

One concern per module, bottom up:

* :mod:`.entries`: the entry codec. Every entry carries the id of the batch that wrote
  it and the value before that batch (a delete is an entry without a value), so a
  replayed batch (task retry, recomputed stage, restart) reads the store as it was
  before that batch, and rewriting produces the same entries.
* :mod:`.rocks`: the RocksDB database of one (store, partition): reads, write batches
  without the write-ahead log, level-0 compaction, checkpoints.
* :mod:`.files`: :class:`StoreLayout` and the durable files: one changelog file per
  (store, partition, batch), snapshots every ``snapshot_every`` batches, and the restore
  of a database from the newest usable snapshot plus the changelogs after it.
* :mod:`.session`: :class:`StoreSession`, a task's locked use of one store for one
  batch (changelog first, then RocksDB, at commit).
"""

from .entries import StoreError
from .files import StoreLayout
from .session import StoreSession

__all__ = ["StoreError", "StoreLayout", "StoreSession"]

"""Keyed state stores (RocksDB per store and state partition) with changelogs and snapshots.

One concern per module, bottom up:

* :mod:`.entries`: the entry codec. Every entry carries the id of the batch that wrote
  it and the value before that batch (a delete is an entry without a value), so a
  replayed batch (task retry, recomputed stage, restart) reads the store as it was
  before that batch, and rewriting produces the same entries.
* :mod:`.rocks`: the RocksDB database of one (store, partition): reads, write batches
  without the write-ahead log, level-0 compaction, checkpoints.
* :mod:`.files`: :class:`StoreLayout` and the durable files: one changelog file per
  (store, partition, batch, attempt), snapshots every ``snapshot_every`` batches, and
  the restore of a database as of a version from the newest usable snapshot on its
  chain plus the changelogs after it.
* :mod:`.versioning`: store versions (batch, commit id of the attempt that wrote it) and
  the runner's record of the version each batch left of each store partition.
* :mod:`.session`: :class:`StoreSession`, a task's locked use of one store for one
  batch, opened as of a version (changelog first, then RocksDB, at commit).
* :mod:`.keeper`: the stores a running query's tasks keep open from one batch to the
  next in their process, handed over when another process's task asks for one.
"""

from .entries import StoreError
from .files import StoreLayout
from .keeper import process_keeper
from .session import NEWEST, StoreSession
from .versioning import Version, VersionRecord, Versions

__all__ = [
    "NEWEST", "StoreError", "StoreLayout", "StoreSession", "Version", "VersionRecord", "Versions", "process_keeper",
]

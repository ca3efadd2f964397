"""Where the stores live, and their durable files: changelogs and snapshots.

A batch's writes go to a changelog file of their own (one per store, partition and
batch); a snapshot (a RocksDB checkpoint) is taken every ``snapshot_every`` batches, and
older snapshots and the changelogs they cover are removed. A database that is missing or
behind is rebuilt from the newest usable snapshot plus the changelogs after it, as Kafka
Streams restores a task from its changelog.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from .rocks import RocksStore

_CHANGELOG_SCHEMA = pa.schema([("key", pa.binary()), ("entry", pa.binary())])


@dataclass(frozen=True)
class StoreLayout:
    """Where the stores of an application live.

    ``local_dir`` holds the live RocksDB databases (fast local disk); ``durable_dir``
    the changelogs and snapshots they are rebuilt from (the checkpoint location).
    """

    local_dir: Path
    durable_dir: Path
    snapshot_every: int = 10
    snapshots_kept: int = 2

    def db_dir(self, store: str, partition: int) -> Path:
        return self.local_dir / store / str(partition) / "db"

    def lock_file(self, store: str, partition: int) -> Path:
        return self.local_dir / store / str(partition) / ".lock"

    def changelog_dir(self, store: str, partition: int) -> Path:
        return self.durable_dir / store / str(partition) / "changelog"

    def snapshot_dir(self, store: str, partition: int) -> Path:
        return self.durable_dir / store / str(partition) / "snapshots"


def _batch_files(directory: Path, suffix: str = "") -> dict[int, Path]:
    if not directory.exists():
        return {}
    found = {}
    for path in directory.iterdir():
        name = path.name
        if suffix and not name.endswith(suffix):
            continue
        stem = name[: -len(suffix)] if suffix else name
        if stem.isdigit():
            found[int(stem)] = path
    return found


@dataclass(frozen=True)
class StoreFiles:
    """The changelogs and snapshots of one (store, partition), by batch id."""

    layout: StoreLayout
    store: str
    partition: int

    def changelogs(self) -> dict[int, Path]:
        return _batch_files(self.layout.changelog_dir(self.store, self.partition), ".arrow")

    def snapshots(self) -> dict[int, Path]:
        return _batch_files(self.layout.snapshot_dir(self.store, self.partition))

    def write_changelog(self, batch_id: int, keys: pa.Array, entries: pa.Array) -> None:
        """Write a batch's changelog file (key, entry; a null entry deletes), atomically."""
        table = pa.table({"key": keys, "entry": entries}, schema=_CHANGELOG_SCHEMA)
        changelog_dir = self.layout.changelog_dir(self.store, self.partition)
        changelog_dir.mkdir(parents=True, exist_ok=True)
        target = changelog_dir / f"{batch_id}.arrow"
        tmp = target.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, _CHANGELOG_SCHEMA) as writer:
            writer.write_table(table)
        os.replace(tmp, target)

    def replay(self, db: RocksStore, changelogs: dict[int, Path], after: int, before: int) -> None:
        """Write the changelogs of the batches after ``after`` and before ``before`` to
        ``db``, one write batch each."""
        for batch in sorted(b for b in changelogs if after < b < before):
            table = pa.ipc.open_file(str(changelogs[batch])).read_all()
            db.write(table.column("key"), table.column("entry"), batch)

    def restore(self, changelogs: dict[int, Path], batch_id: int) -> RocksStore:
        """The database rebuilt, in place of what was there, from the newest snapshot
        before ``batch_id`` and the changelogs after it."""
        db_dir = self.layout.db_dir(self.store, self.partition)
        if db_dir.exists():
            shutil.rmtree(db_dir)
        db_dir.parent.mkdir(parents=True, exist_ok=True)
        usable = {b: p for b, p in self.snapshots().items() if b < batch_id}
        after = -1
        if usable:
            after = max(usable)
            shutil.copytree(usable[after], db_dir)
        db = RocksStore(db_dir)
        self.replay(db, changelogs, after=after, before=batch_id)
        return db

    def snapshot_if_due(self, db: RocksStore, batch_id: int) -> None:
        """Snapshot ``db`` as of ``batch_id`` when one is due; then remove the snapshots
        beyond ``snapshots_kept`` and the changelogs the oldest kept one covers."""
        snapshots = self.snapshots()
        if snapshots and batch_id - max(snapshots) < self.layout.snapshot_every:
            return
        if not snapshots and batch_id + 1 < self.layout.snapshot_every:
            return
        target = self.layout.snapshot_dir(self.store, self.partition) / str(batch_id)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{batch_id}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        db.checkpoint(tmp)
        os.replace(tmp, target)
        snapshots[batch_id] = target
        kept = sorted(snapshots)[-self.layout.snapshots_kept :]
        for batch, path in snapshots.items():
            if batch not in kept:
                shutil.rmtree(path, ignore_errors=True)
        oldest = kept[0]
        for batch, path in self.changelogs().items():
            if batch <= oldest:
                path.unlink(missing_ok=True)

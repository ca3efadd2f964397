"""Where the stores live, and their durable files: changelogs and snapshots.

A batch's writes go to a changelog file of their own (one per store, partition and
batch); a snapshot (a RocksDB checkpoint) is taken every ``snapshot_every`` batches, and
older snapshots and the changelogs they cover are removed. A database that is missing or
behind is rebuilt from the newest usable snapshot plus the changelogs after it, as Kafka
Streams restores a task from its changelog.

Each changelog names the batch that wrote the store before it (``previous`` in the Arrow
schema's metadata), so a restore notices a changelog or snapshot that is missing, not
only one that is damaged: both raise :class:`~tablestream.errors.DamagedStateError`
naming the file and how to start over.

The live database (the working copy) is a cache of these files: one that is damaged is
discarded, with one warning line naming it, and rebuilt from them
(:meth:`StoreFiles.discard_working_copy`).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ...errors import DamagedStateError, first_line, reset_hint
from .rocks import DamagedDatabase, RocksStore

_LOG = logging.getLogger(__name__)
_CHANGELOG_SCHEMA = pa.schema([("key", pa.binary()), ("entry", pa.binary())])
_PREVIOUS = b"previous"  # changelog metadata: the batch that wrote the store before this one


@dataclass(frozen=True)
class StoreLayout:
    """Where the stores of an application live.

    ``local_dir`` holds the live RocksDB databases (fast local disk); ``durable_dir``
    the changelogs and snapshots they are rebuilt from (the checkpoint location).
    ``application_id`` names the application in errors about damaged files.
    """

    local_dir: Path
    durable_dir: Path
    snapshot_every: int = 10
    snapshots_kept: int = 2
    application_id: str | None = None

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

    def damaged(self, path: Path, problem: str) -> DamagedStateError:
        """The error for a damaged or missing file of this store: one self-contained line."""
        return DamagedStateError(
            f"State store '{self.store}' partition {self.partition} is damaged: {path}: {problem} "
            f"({reset_hint(self.layout.application_id)})"
        )

    def discard_working_copy(self, path: Path, problem: str) -> None:
        """Remove a damaged working copy (``path``: the database's directory, or one it
        lives under, or what is in its place), with one warning line naming it. Nothing
        is lost: the next open rebuilds the database from the changelogs and snapshots."""
        _LOG.warning(
            "State store '%s' partition %d: discarding its damaged working copy %s (%s); "
            "rebuilding it from its changelogs and snapshots",
            self.store, self.partition, path, problem,
        )
        _remove(path)

    def write_changelog(
        self, batch_id: int, keys: pa.Array, entries: pa.Array, previous: int | None = None
    ) -> None:
        """Write a batch's changelog file (key, entry; a null entry deletes), atomically.
        ``previous``: the batch that wrote the store before this one (-1: none), kept in
        the file so that a restore can tell a missing changelog."""
        schema = _CHANGELOG_SCHEMA
        if previous is not None:
            schema = schema.with_metadata({_PREVIOUS: str(previous).encode()})
        table = pa.table({"key": keys, "entry": entries}, schema=schema)
        changelog_dir = self.layout.changelog_dir(self.store, self.partition)
        changelog_dir.mkdir(parents=True, exist_ok=True)
        target = changelog_dir / f"{batch_id}.arrow"
        tmp = target.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
            writer.write_table(table)
        os.replace(tmp, target)

    def read_changelog(self, path: Path) -> tuple[pa.Table, int | None]:
        """A changelog file's keys and entries, and the batch that wrote the store before
        it (None when the file does not say)."""
        try:
            table = pa.ipc.open_file(str(path)).read_all()
        except (OSError, pa.ArrowException) as err:
            raise self.damaged(path, f"unreadable changelog: {first_line(err)}") from None
        if table.schema.remove_metadata() != _CHANGELOG_SCHEMA:
            raise self.damaged(path, f"not a changelog (columns {', '.join(table.column_names) or 'none'})")
        previous = (table.schema.metadata or {}).get(_PREVIOUS)
        return table, None if previous is None else int(previous)

    def replay(self, db: RocksStore, changelogs: dict[int, Path], after: int, before: int) -> None:
        """Write the changelogs of the batches after ``after`` (the last batch ``db``
        holds) and before ``before`` to ``db``, one write batch each, checking that each
        follows the one before."""
        changelog_dir = self.layout.changelog_dir(self.store, self.partition)
        for batch in sorted(b for b in changelogs if after < b < before):
            table, previous = self.read_changelog(changelogs[batch])
            if previous is not None and previous > after:
                raise self.damaged(
                    changelog_dir / f"{previous}.arrow",
                    f"missing, and no snapshot holds batch {previous} (the changelog of batch {batch} follows it)",
                )
            if previous is not None and previous < after:
                raise self.damaged(
                    changelogs[batch], f"follows batch {previous}, but the store holds batch {after}"
                )
            db.write(table.column("key"), table.column("entry"), batch)
            after = batch

    def restore(
        self, changelogs: dict[int, Path], batch_id: int, unusable: Mapping[Path, str] | None = None
    ) -> RocksStore:
        """The database rebuilt, in place of what was there, from the newest snapshot
        before ``batch_id`` and the changelogs after it. A snapshot that RocksDB finds
        damaged (or one of ``unusable``: snapshot -> problem, found so before) is passed
        over, with one warning line, for the one before it (kept with the changelogs
        after it); when none is left, the newest one's error is raised."""
        snapshots = self.snapshots()
        passed_over: list[tuple[Path, str]] = []
        for batch in sorted((b for b in snapshots if b < batch_id), reverse=True):
            snapshot = snapshots[batch]
            if unusable and snapshot in unusable:
                passed_over.append((snapshot, unusable[snapshot]))
                continue
            try:
                return self._restore_from(snapshot, batch, changelogs, batch_id)
            except _UnusableSnapshot as err:
                passed_over.append((snapshot, err.problem))
                self.pass_over(snapshot, err.problem)
        if passed_over:
            raise self.damaged(*passed_over[0])
        db_dir = self._empty_db_dir()
        try:
            db = RocksStore(db_dir)
        except DamagedDatabase as err:
            raise self.unreadable(err) from None
        self._replay_into(db, changelogs, -1, batch_id)
        return db

    def unreadable(self, err: DamagedDatabase) -> DamagedStateError:
        """The error for a database built from changelogs alone and found damaged: the
        disk under it is failing."""
        return self.damaged(err.path, err.problem)

    @staticmethod
    def snapshot_problem(err: DamagedDatabase, snapshot: Path) -> str:
        """What is wrong with ``snapshot``, from RocksDB's report on a copy of it (which
        names the copy's files: the snapshot's are named instead)."""
        return f"unreadable snapshot: {err.problem.replace(str(err.path), str(snapshot))}"

    def pass_over(self, snapshot: Path, problem: str) -> None:
        """Tell, in one warning line, that a damaged snapshot is passed over."""
        _LOG.warning(
            "State store '%s' partition %d: its snapshot %s is damaged (%s); restoring from an older one",
            self.store, self.partition, snapshot, problem,
        )

    def _empty_db_dir(self) -> Path:
        db_dir = self.layout.db_dir(self.store, self.partition)
        _remove(db_dir)
        db_dir.parent.mkdir(parents=True, exist_ok=True)
        return db_dir

    def _restore_from(self, snapshot: Path, batch: int, changelogs: dict[int, Path], batch_id: int) -> RocksStore:
        """The snapshot of ``batch`` copied to the database's directory, opened, and
        caught up with the changelogs after it to cover the batches before ``batch_id``."""
        db_dir = self._empty_db_dir()
        db = None
        try:
            shutil.copytree(snapshot, db_dir)
            db = RocksStore(db_dir)
            held = db.last_batch()
        except (OSError, DamagedDatabase) as err:
            if db is not None:
                db.abandon()
            shutil.rmtree(db_dir, ignore_errors=True)
            if isinstance(err, DamagedDatabase):
                raise _UnusableSnapshot(snapshot, self.snapshot_problem(err, snapshot)) from None
            raise _UnusableSnapshot(snapshot, f"unreadable snapshot: {first_line(err)}") from None
        if held != batch:
            db.close()
            shutil.rmtree(db_dir, ignore_errors=True)
            holds = "no batch" if held < 0 else f"batch {held}"
            raise _UnusableSnapshot(snapshot, f"not a snapshot of batch {batch} (it holds {holds})")
        db.copied_from = snapshot
        self._replay_into(db, changelogs, batch, batch_id)
        return db

    def _replay_into(self, db: RocksStore, changelogs: dict[int, Path], after: int, before: int) -> None:
        """:meth:`replay`, closing ``db`` when it fails; RocksDB's report of a damaged
        block in a copied snapshot makes that snapshot unusable."""
        try:
            self.replay(db, changelogs, after=after, before=before)
        except DamagedDatabase as err:
            db.abandon()
            if db.copied_from is None:
                raise self.unreadable(err) from None
            shutil.rmtree(db.path, ignore_errors=True)
            raise _UnusableSnapshot(db.copied_from, self.snapshot_problem(err, db.copied_from)) from None
        except BaseException:
            db.close()
            raise

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


def _remove(path: Path) -> None:
    """Remove a directory tree, or a file in its place."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


class _UnusableSnapshot(Exception):  # noqa: N818 - the snapshot's state, not an action
    """A snapshot that cannot be restored from (``problem`` says why)."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

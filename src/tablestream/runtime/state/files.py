"""Where the stores live, and their durable files: changelogs and snapshots.

A store's contents after a batch that wrote it are a *version*: the batch id and the
commit id of the task attempt that wrote it (:class:`Version`). A batch's writes go to a
changelog file of their own, named by its version (one per store, partition and task
attempt: two attempts of one task, on two hosts, never write the same file, and the
runner records which one counts: :mod:`.versions`); a snapshot (a RocksDB checkpoint) is
taken every ``snapshot_every`` batches, and older snapshots and the changelogs they
cover are removed.

Each changelog names the version it was written on (``previous`` in the Arrow schema's
metadata), so the versions form a chain: a store is opened *as of a version* by walking
the chain back from it to a base (the working copy when it is exactly a version on the
chain, else the newest snapshot on it, else the empty store) and replaying the
changelogs after the base, as Kafka Streams restores a task from its changelog. A
changelog or snapshot the chain needs that is missing or damaged raises
:class:`~tablestream.errors.DamagedStateError` naming the file and how to start over:
a store that should hold earlier batches never opens empty.

The live database (the working copy) is a cache of these files: one that is damaged is
discarded, with one warning line naming it, and rebuilt from them
(:meth:`StoreFiles.discard_working_copy`).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ...errors import DamagedStateError, first_line, reset_hint
from ...storage.location import (
    COMPLETE_MARKER,
    Durable,
    Location,
    copy_down,
    copy_up,
    read_arrow_file,
    remove_tree,
    write_arrow_file,
    write_atomic,
)
from .rocks import DamagedDatabase, RocksStore
from .versioning import Version, VersionRecord, parse_version, version_name

_LOG = logging.getLogger(__name__)
_CHANGELOG_SCHEMA = pa.schema([("key", pa.binary()), ("entry", pa.binary())])
_PREVIOUS = b"previous"  # changelog metadata: the version it was written on (-1: none)
@dataclass(frozen=True)
class StoreLayout:
    """Where the stores of an application live.

    ``local_dir`` holds the live RocksDB databases, the working copies (fast local
    disk); None: each executor's own local directory (:func:`executor_local_dir`), as on
    a cluster, where a store partition may run on another host than the batch before.
    ``durable_dir`` holds the changelogs and snapshots they are rebuilt from (under
    the application's durable location, which every executor sees: a local path or a
    :class:`~tablestream.storage.location.Location`). ``application_id`` names the
    application in errors about damaged files; with ``run``, it names its working
    copies' directory on an executor.
    """

    local_dir: Path | None
    durable_dir: Durable
    snapshot_every: int = 10
    snapshots_kept: int = 2
    application_id: str | None = None
    run: str | None = None

    @property
    def working_dir(self) -> Path:
        """The directory of the working copies on this host (on an executor's local
        disk, one per application and run: a reset leaves the copies of the run
        before behind)."""
        if self.local_dir is not None:
            return self.local_dir
        return executor_local_dir() / "tablestream" / (self.application_id or "stores") / (self.run or "run")

    def db_dir(self, store: str, partition: int) -> Path:
        return self.working_dir / store / str(partition) / "db"

    def lock_file(self, store: str, partition: int) -> Path:
        return self.working_dir / store / str(partition) / ".lock"

    def changelog_dir(self, store: str, partition: int) -> Durable:
        return self.durable_dir / store / str(partition) / "changelog"

    def snapshot_dir(self, store: str, partition: int) -> Durable:
        return self.durable_dir / store / str(partition) / "snapshots"

    @property
    def versions_dir(self) -> Durable:
        """Where the runner records the version of each store partition after each
        batch (:class:`~.versioning.VersionRecord`)."""
        return self.durable_dir / ".versions"

    def version_record(self) -> VersionRecord:
        """The record of the stores' versions after each batch."""
        return VersionRecord(self.versions_dir, self._damaged_record)

    def _damaged_record(self, path: Durable, problem: str) -> DamagedStateError:
        return DamagedStateError(
            f"The record of the stores' versions is damaged: {path}: {problem} ({reset_hint(self.application_id)})"
        )


def executor_local_dir() -> Path:
    """This host's local directory for Spark's scratch files: the first of
    ``SPARK_LOCAL_DIRS`` (standalone, Kubernetes), ``LOCAL_DIRS`` (YARN) or
    ``SPARK_EXECUTOR_DIRS``, else the temporary directory."""
    for variable in ("SPARK_LOCAL_DIRS", "LOCAL_DIRS", "SPARK_EXECUTOR_DIRS"):
        value = os.environ.get(variable, "")
        first = value.replace(os.pathsep, ",").split(",")[0].strip()
        if first:
            return Path(first)
    return Path(tempfile.gettempdir())


def _version_files(directory: Durable, suffix: str = "") -> dict[Version, Durable]:
    if isinstance(directory, Path) and not directory.exists():
        return {}
    found = {}
    for path in directory.iterdir():  # a Location lists nothing when it is not there
        name = path.name
        if suffix and not name.endswith(suffix):
            continue
        version = Version.parse(name[: -len(suffix)] if suffix else name)
        if version is not None:
            found[version] = path
    return found


@dataclass(frozen=True)
class StoreFiles:
    """The changelogs and snapshots of one (store, partition), by version."""

    layout: StoreLayout
    store: str
    partition: int

    def changelogs(self) -> dict[Version, Durable]:
        return _version_files(self.layout.changelog_dir(self.store, self.partition), ".arrow")

    def snapshots(self) -> dict[Version, Durable]:
        """The snapshots by version; on a :class:`Location`, those whose upload was
        completed (its marker, written last, is there)."""
        found = _version_files(self.layout.snapshot_dir(self.store, self.partition))
        if isinstance(self.layout.durable_dir, Location):
            found = {v: p for v, p in found.items() if (p / COMPLETE_MARKER).exists()}
        return found

    def newest_before(self, batch_id: int) -> Version | None:
        """The newest version of a batch before ``batch_id`` among the durable files (by
        batch, then by the files' times): the version a store used directly, without a
        runner's record, is opened as of."""
        found = {**self.changelogs(), **self.snapshots()}
        candidates = [v for v in found if v.batch < batch_id]
        if not candidates:
            return None
        return max(candidates, key=lambda v: (v.batch, _mtime(found[v])))

    def damaged(self, path: Durable, problem: str) -> DamagedStateError:
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

    def write_changelog(self, version: Version, keys: pa.Array, entries: pa.Array, previous: Version | None) -> None:
        """Write the changelog of ``version`` (key, entry; a null entry deletes),
        atomically. ``previous``: the version it was written on (None: the empty store)."""
        schema = _CHANGELOG_SCHEMA.with_metadata({_PREVIOUS: version_name(previous).encode()})
        table = pa.table({"key": keys, "entry": entries}, schema=schema)
        changelog_dir = self.layout.changelog_dir(self.store, self.partition)
        changelog_dir.mkdir(parents=True, exist_ok=True)
        write_arrow_file(changelog_dir / f"{version.name}.arrow", table)

    def read_changelog(self, path: Durable) -> tuple[pa.Table, Version | None]:
        """A changelog file's keys and entries, and the version it was written on."""
        try:
            table = read_arrow_file(path)
        except (OSError, pa.ArrowException) as err:
            raise self.damaged(path, f"unreadable changelog: {first_line(err)}") from None
        if table.schema.remove_metadata() != _CHANGELOG_SCHEMA:
            raise self.damaged(path, f"not a changelog (columns {', '.join(table.column_names) or 'none'})")
        try:
            previous = parse_version((table.schema.metadata or {}).get(_PREVIOUS, b"").decode())
        except (UnicodeDecodeError, ValueError):
            raise self.damaged(path, "not a changelog (it does not name the version it follows)") from None
        return table, previous

    def chain(
        self, target: Version | None, copy: Version | None = None, unusable: Mapping[Durable, str] | None = None
    ) -> _Chain:
        """How to build the store as of ``target``: walking the changelogs back from it
        to the first base found, the working copy (when it holds ``copy``, a version on
        the chain), a snapshot (not one of ``unusable``) or the empty store; the
        changelogs after the base, oldest first."""
        changelogs, snapshots = self.changelogs(), self.snapshots()
        steps: list[tuple[Version, pa.Table]] = []
        version, follower = target, None
        while version is not None:
            if version == copy:
                return _Chain("copy", version, steps[::-1])
            snapshot = snapshots.get(version)
            if snapshot is not None and not (unusable and snapshot in unusable):
                return _Chain("snapshot", version, steps[::-1], snapshot)
            if version not in changelogs:
                then = (
                    "the store's last batch" if follower is None
                    else f"the changelog of batch {follower.batch} follows it"
                )
                raise self.damaged(
                    self.layout.changelog_dir(self.store, self.partition) / f"{version.name}.arrow",
                    f"missing, and no snapshot holds batch {version.batch} ({then})",
                )
            table, previous = self.read_changelog(changelogs[version])
            steps.append((version, table))
            version, follower = previous, version
        return _Chain("empty", None, steps[::-1])

    def replay(self, db: RocksStore, steps: list[tuple[Version, pa.Table]]) -> None:
        """Write the changelogs of a chain to ``db``, one write batch each."""
        for version, table in steps:
            db.write(table.column("key"), table.column("entry"), version, db.version())

    def restore(self, target: Version | None, unusable: Mapping[Durable, str] | None = None) -> RocksStore:
        """The database rebuilt, in place of what was there, as of ``target``: from the
        newest snapshot on its chain and the changelogs after it. A snapshot that
        RocksDB finds damaged (or one of ``unusable``: snapshot -> problem, found so
        before) is passed over, with one warning line, for the one before it on the
        chain (with the changelogs after that one); when the chain breaks beyond one
        passed over, the newest passed over is named."""
        unusable = dict(unusable or {})
        passed_over = [(path, problem) for path, problem in unusable.items()]
        while True:
            try:
                chain = self.chain(target, unusable=unusable)
            except DamagedStateError:
                if passed_over:
                    raise self.damaged(*max(passed_over, key=lambda p: _snapshot_batch(p[0]))) from None
                raise
            try:
                if chain.base == "snapshot":
                    assert chain.snapshot is not None and chain.version is not None
                    return self._restore_from(chain.snapshot, chain.version, chain.steps)
                db_dir = self._empty_db_dir()
                try:
                    db = RocksStore(db_dir)
                except DamagedDatabase as err:
                    raise self.unreadable(err) from None
                self._replay_into(db, chain.steps)
                return db
            except _UnusableSnapshot as err:
                unusable[err.path] = err.problem
                passed_over.append((err.path, err.problem))
                self.pass_over(err.path, err.problem)

    def unreadable(self, err: DamagedDatabase) -> DamagedStateError:
        """The error for a database built from changelogs alone and found damaged: the
        disk under it is failing."""
        return self.damaged(err.path, err.problem)

    @staticmethod
    def snapshot_problem(err: DamagedDatabase, snapshot: Durable) -> str:
        """What is wrong with ``snapshot``, from RocksDB's report on a copy of it (which
        names the copy's files: the snapshot's are named instead)."""
        return f"unreadable snapshot: {err.problem.replace(str(err.path), str(snapshot))}"

    def pass_over(self, snapshot: Durable, problem: str) -> None:
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

    def _restore_from(self, snapshot: Durable, version: Version, steps: list[tuple[Version, pa.Table]]) -> RocksStore:
        """The snapshot of ``version`` copied to the database's directory, opened, and
        caught up with the changelogs after it."""
        db_dir = self._empty_db_dir()
        db = None
        try:
            copy_down(snapshot, db_dir)
            (db_dir / COMPLETE_MARKER).unlink(missing_ok=True)
            db = RocksStore(db_dir)
            held = db.version()
        except (OSError, DamagedDatabase) as err:
            if db is not None:
                db.abandon()
            shutil.rmtree(db_dir, ignore_errors=True)
            if isinstance(err, DamagedDatabase):
                raise _UnusableSnapshot(snapshot, self.snapshot_problem(err, snapshot)) from None
            raise _UnusableSnapshot(snapshot, f"unreadable snapshot: {first_line(err)}") from None
        if held != version:
            db.close()
            shutil.rmtree(db_dir, ignore_errors=True)
            holds = "no batch" if held is None else f"batch {held.batch}"
            if held is not None and held.batch == version.batch:
                holds = f"version {held.name}"
            raise _UnusableSnapshot(snapshot, f"not a snapshot of batch {version.batch} (it holds {holds})")
        db.copied_from = snapshot
        self._replay_into(db, steps)
        return db

    def _replay_into(self, db: RocksStore, steps: list[tuple[Version, pa.Table]]) -> None:
        """:meth:`replay`, closing ``db`` when it fails; RocksDB's report of a damaged
        block in a copied snapshot makes that snapshot unusable."""
        try:
            self.replay(db, steps)
        except DamagedDatabase as err:
            db.abandon()
            if db.copied_from is None:
                raise self.unreadable(err) from None
            shutil.rmtree(db.path, ignore_errors=True)
            raise _UnusableSnapshot(db.copied_from, self.snapshot_problem(err, db.copied_from)) from None
        except BaseException:
            db.close()
            raise

    def snapshot_if_due(self, db: RocksStore, version: Version) -> None:
        """Snapshot ``db`` as of ``version`` when one is due; then remove the snapshots
        of batches beyond the newest ``snapshots_kept`` (at least two) and the
        changelogs the oldest kept one covers: the version before the newest snapshot
        (what a replay of its batch reads) can always be rebuilt."""
        snapshots = self.snapshots()
        newest = max((v.batch for v in snapshots), default=None)
        if newest is not None and version.batch - newest < self.layout.snapshot_every:
            return
        if newest is None and version.batch + 1 < self.layout.snapshot_every:
            return
        target = self.layout.snapshot_dir(self.store, self.partition) / version.name
        if isinstance(target, Location):
            self._upload_snapshot(db, target)
        else:
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.parent / f".{version.name}.tmp"
            if tmp.exists():
                shutil.rmtree(tmp)
            db.checkpoint(tmp)
            os.replace(tmp, target)
        snapshots[version] = target
        kept = sorted({v.batch for v in snapshots})[-max(self.layout.snapshots_kept, 2) :]
        for old, path in snapshots.items():
            if old.batch not in kept:
                remove_tree(path, ignore_errors=True)
        if len(kept) < 2:
            return  # the version this one was written on stays restorable (a replay of it)
        for old, path in self.changelogs().items():
            if old.batch <= kept[0]:
                path.unlink(missing_ok=True)


    def _upload_snapshot(self, db: RocksStore, target: Location) -> None:
        """A RocksDB checkpoint taken on the local disk beside the working copy, its
        files copied to ``target``, then the marker that makes it a snapshot (a durable
        store has no atomic rename of a directory: an upload cut short is never listed)."""
        remove_tree(target, ignore_errors=True)
        local = self.layout.db_dir(self.store, self.partition).parent / f".snapshot-{target.name}"
        shutil.rmtree(local, ignore_errors=True)
        db.checkpoint(local)
        try:
            copy_up(local, target)
            write_atomic(target / COMPLETE_MARKER, b"")
        finally:
            shutil.rmtree(local, ignore_errors=True)


@dataclass(frozen=True)
class _Chain:
    """How a store is built as of a version: its ``base`` (``copy``: the working copy,
    ``snapshot``, ``empty``) at ``version``, and the changelogs after it."""

    base: str
    version: Version | None
    steps: list[tuple[Version, pa.Table]]
    snapshot: Durable | None = None


def _mtime(path: Durable) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _snapshot_batch(path: Durable) -> int:
    version = Version.parse(path.name)
    return -1 if version is None else version.batch


def _remove(path: Path) -> None:
    """Remove a directory tree, or a file in its place."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


class _UnusableSnapshot(Exception):  # noqa: N818 - the snapshot's state, not an action
    """A snapshot that cannot be restored from (``problem`` says why)."""

    def __init__(self, path: Durable, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem

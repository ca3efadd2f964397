"""A task's session with the store of its partition for one batch (:class:`StoreSession`).

Opens the database as of the version it should hold before the batch (the runner's
record, :mod:`.versions`; for a store used directly, the newest durable one): the working
copy when it is exactly that version (or a run of this batch written on it), else
rebuilt from the durable files (:meth:`StoreFiles.chain`). It reads and writes with
vectorized calls and commits once: the changelog file of its own version (the batch and
this attempt's commit id) first, then RocksDB. A working copy is held by one process at
a time (an ``fcntl`` lock beside it), so two Python workers never open the same RocksDB.

The live database is a cache of the durable files. When RocksDB finds it damaged (it
does not open, or a block read during the batch does not check out), the session
discards it with one warning line and rebuilds it from the changelogs and snapshots,
then reads again; the batch's writes wait in the session until its commit, so nothing
is lost. Damage found again in a rebuilt database is in the snapshot it was copied
from: an older one is used (with the changelogs after it); with none left,
:class:`~tablestream.errors.DamagedStateError` names the newest and the reset.
"""

from __future__ import annotations

import bisect
import fcntl
import itertools
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .entries import (
    StoreError,
    decode_entry,
    encode_entries,
    encode_entry,
    value_before,
    values_before,
)
from .files import StoreFiles, StoreLayout
from .keeper import acquire, process_keeper
from .rocks import DamagedDatabase, RocksStore
from .versioning import Version

__all__ = ["NEWEST", "StoreError", "StoreSession"]

_T = TypeVar("_T")

#: Open a store as of the newest version among its durable files (a store used
#: directly; an application's runner says which version instead).
NEWEST = "newest"


class StoreSession:
    """One task's use of one (store, partition) during one batch.

    >>> with StoreSession(layout, "counts", 0, batch_id=7) as store:    # doctest: +SKIP
    ...     old = store.get_and_put([b"k"], [b"v"])

    ``expected``: the version the store holds before this batch (None: nothing written),
    or :data:`NEWEST`. ``commit``: this attempt's commit id, naming its changelog (empty:
    the batch id alone, for a store with one writer). ``keep``: the running query's
    token, under which the database stays open after a commit for the next batch's
    session in this process (:mod:`.keeper`); None closes it. After a commit that
    wrote, ``written`` is the new version.
    """

    def __init__(
        self,
        layout: StoreLayout,
        store: str,
        partition: int,
        batch_id: int,
        *,
        expected: Version | None | str = NEWEST,
        commit: str = "",
        keep: str | None = None,
    ) -> None:
        self.layout = layout
        self.store = store
        self.partition = partition
        self.batch_id = batch_id
        self.version = Version(batch_id, commit)
        self.written: Version | None = None
        self._files = StoreFiles(layout, store, partition)
        self._keep = keep
        self._newest = expected == NEWEST
        self._expected: Version | None = None if self._newest else expected  # type: ignore[assignment]
        self._db: RocksStore | None = None
        self._lock: IO[str] | None = None
        self._pending: dict[bytes, bytes] = {}  # user key -> entry written by this batch
        self._pending_sorted: list[bytes] | None = None  # its keys in order, for prefix reads
        self._fetched: dict[bytes, bytes | None] = {}  # user key -> entry as read from RocksDB
        # The batch's writes made by :meth:`get_and_put_all` (keys, entries; null drops).
        self._bulk: tuple[pa.Array, pa.Array] | None = None
        self._rebuilt = False  # the database was found damaged and rebuilt in this session
        self._unusable: dict[Path, str] = {}  # snapshots found damaged: path -> problem

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> StoreSession:
        db_dir = self.layout.db_dir(self.store, self.partition)
        lock_path = self.layout.lock_file(self.store, self.partition)
        kept = process_keeper().take(db_dir, lock_path, self._keep) if self._keep else None
        if kept is None:
            self._make_dir(lock_path.parent)
            self._lock = open(lock_path, "a+")  # noqa: SIM115 - held until __exit__
            acquire(self._lock, db_dir)
            if self._keep:
                process_keeper().hold(db_dir, self._lock, self._keep)
        else:
            self._lock = kept[0]
        try:
            self._db = self._open_current(None if kept is None else kept[1])
        except BaseException:
            if kept is not None:
                kept[1].abandon()  # closed already unless the failure came before its checks
            self._release()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        committed = False
        try:
            if exc_type is None:
                self.commit()
                committed = True
        finally:
            db, self._db = self._db, None
            db_dir = self.layout.db_dir(self.store, self.partition)
            if committed and self._keep and db is not None and process_keeper().put_back(db_dir, db):
                self._lock = None  # the keeper holds it, with the open database
            else:
                self._close(db, committed)

    def _close(self, db: RocksStore | None, committed: bool) -> None:
        try:
            if db is not None:
                db.close(compact=committed)
        except DamagedDatabase as err:
            # The batch is in its changelog; the next session rebuilds the database.
            self._files.discard_working_copy(err.path, err.problem)
        finally:
            self._release()

    def _release(self) -> None:
        if self._keep:
            process_keeper().forget(self.layout.db_dir(self.store, self.partition))
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _make_dir(self, directory: Path) -> None:
        """Make the directory of the working copy, discarding a file found in the place
        of it or of a directory above it, up to the stores' local directory."""
        try:
            directory.mkdir(parents=True, exist_ok=True)
            return
        except (FileExistsError, NotADirectoryError):
            pass
        for path in reversed([directory, *directory.parents]):
            if path.exists() and not path.is_dir() and path.is_relative_to(self.layout.working_dir):
                self._files.discard_working_copy(path, "a file, not a directory")
                break
        directory.mkdir(parents=True, exist_ok=True)

    def _open_current(self, kept: RocksStore | None = None) -> RocksStore:
        """Open the database as of the version before this batch (``kept``: the one a
        running query kept open since its last batch, checked as an opened one is)."""
        if self._newest:
            self._expected = self._files.newest_before(self.batch_id)
        db_dir = self.layout.db_dir(self.store, self.partition)
        if kept is None and db_dir.exists() and not db_dir.is_dir():
            self._files.discard_working_copy(db_dir, "a file, not a directory")
        elif kept is not None or db_dir.exists():
            try:
                db = self._working_copy(kept or RocksStore(db_dir))
            except DamagedDatabase as err:
                self._files.discard_working_copy(err.path, err.problem)
                self._rebuilt = True
            else:
                if db is not None:
                    return db
        return self._files.restore(self._expected)

    def _working_copy(self, db: RocksStore) -> RocksStore | None:
        """The working copy ``db``, when it holds the version before this batch (or a
        run of this batch written on it), or a version on that version's chain after the
        newest snapshot on it (then caught up with the changelogs after it); None (and
        ``db`` closed) when it must be rebuilt."""
        try:
            held = db.version()
            if held == self._expected:
                return db
            if held is not None and held.batch == self.batch_id and db.previous_version() == self._expected:
                return db  # a run of this batch: the entries give what it read
            if held is not None and held.batch > self.batch_id and self._newest:
                raise StoreError(
                    f"store {self.store}/{self.partition} holds batch {held.batch}, ahead of batch {self.batch_id}"
                )
            if held is not None and (self._expected is None or held.batch >= self._expected.batch):
                db.close()
                return None  # a version off the chain: written by a run that did not count
            chain = self._files.chain(self._expected, copy=held)
            if chain.base != "copy":
                db.close()
                return None
            self._files.replay(db, chain.steps)
        except DamagedDatabase:
            db.abandon()
            raise
        except BaseException:
            db.close()
            raise
        return db

    def _use(self, use: Callable[[RocksStore], _T]) -> _T:
        """``use(database)``; if RocksDB finds the database damaged, once more after
        :meth:`_rebuild`."""
        while True:
            assert self._db is not None, "store session is not open"
            try:
                return use(self._db)
            except DamagedDatabase as err:
                self._rebuild(err)

    def _rebuild(self, err: DamagedDatabase) -> None:
        """Discard the damaged database and rebuild it from the durable files, as of
        before this batch. Damage found in a copy of a snapshot is the snapshot's: an
        older one is used; in a database rebuilt from changelogs alone, the disk's."""
        assert self._db is not None
        damaged, self._db = self._db, None
        damaged.abandon()
        snapshot = damaged.copied_from
        if snapshot is not None:
            self._unusable[snapshot] = self._files.snapshot_problem(err, snapshot)
            self._files.pass_over(snapshot, self._unusable[snapshot])
        elif self._rebuilt:
            raise self._files.unreadable(err) from None
        else:
            self._files.discard_working_copy(err.path, err.problem)
        self._db = self._files.restore(self._expected, self._unusable)
        self._rebuilt = True

    def _stored_items(self, prefix: bytes, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """:meth:`RocksStore.items` under ``prefix``, going on from the last key read in
        a rebuilt database when RocksDB finds this one damaged on the way."""
        after = None
        while True:
            assert self._db is not None, "store session is not open"
            try:
                for key, entry in self._db.items(prefix, after=after, reverse=reverse):
                    yield key, entry
                    after = key
                return
            except DamagedDatabase as err:
                self._rebuild(err)

    # ---------------------------------------------------------------------- reads
    def _entries(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Current entries (this batch's writes first), with one multi-get for the keys
        not read before in this session."""
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        fetched = self._fetched
        missing = [k for k in keys if k not in fetched and k not in self._pending]
        if missing:
            fetched.update(zip(missing, self._use(lambda db: db.get(missing)), strict=True))
        pending = self._pending
        return [(pending[k] or None) if k in pending else fetched[k] for k in keys]

    def get_before(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Values as they were before this batch (what a replay must read)."""
        return [value_before(e, self.batch_id) for e in self._entries(keys)]

    def get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Current values, including what this batch has written so far."""
        out = []
        for entry in self._entries(keys):
            if entry is None:
                out.append(None)
                continue
            written, value, _ = decode_entry(entry)
            if written > self.batch_id:
                raise StoreError(f"store entry written by batch {written} is ahead of batch {self.batch_id}")
            out.append(value)
        return out

    def prefix_items(
        self, prefix: bytes, *, before: bool = False, reverse: bool = False
    ) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every live key starting with ``prefix``, in key order (with
        ``reverse``, descending, from the last one); with ``before=True`` as they were
        before this batch."""
        assert self._db is not None
        self._check_not_bulk()
        if self._pending_sorted is None:
            self._pending_sorted = sorted(self._pending)
        start = bisect.bisect_left(self._pending_sorted, prefix)
        pending = [
            (k, self._pending[k])
            for k in itertools.takewhile(lambda k: k.startswith(prefix), self._pending_sorted[start:])
        ]
        if reverse:
            pending.reverse()
        stored = self._stored_items(prefix, reverse)
        for key, entry in _merge_sorted(stored, pending, stop=lambda k: not k.startswith(prefix), descending=reverse):
            value = value_before(entry, self.batch_id) if before else decode_entry(entry)[1]
            if value is not None:
                yield key, value

    def prefix_scan_before(self, prefixes: Sequence[bytes]) -> tuple[np.ndarray, pa.Array, pa.Array]:
        """Every key under each of ``prefixes`` with its value before this batch, as
        arrays: the index of the key's prefix, the key without its prefix and the value
        (keys without a value before this batch are left out). The walk over RocksDB is
        the only per-key Python; entries are decoded with array operations. Reads what
        RocksDB holds, so it must come before this session's writes."""
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        if self._pending:
            raise StoreError("prefix_scan_before must come before the session's writes")
        owner, suffixes, entries = self._use(lambda db: db.scan(prefixes))
        if not len(entries):
            return owner, suffixes, entries
        values = values_before(entries, self.batch_id)
        live = pc.is_valid(values)
        return owner[live.to_numpy(zero_copy_only=False)], suffixes.filter(live), values.filter(live)

    # --------------------------------------------------------------------- writes
    def put(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> None:
        """Write values (``None`` deletes) as this batch's writes."""
        self._write(keys, self._entries(keys), values)

    def get_and_put(self, keys: Sequence[bytes], values: Sequence[bytes | None]) -> list[bytes | None]:
        """The vectorized primitive: values before this batch, then write the new ones,
        with one multi-get. Keys must be distinct (deduplicate by the ordering key first)."""
        return self._write(keys, self._entries(keys), values)

    def get_before_all(self, keys: pa.Array) -> pa.Array:
        """:meth:`get_before` over an Arrow array, decoded with array operations. Reads
        what RocksDB holds, so it must come before the session's writes; it may precede
        :meth:`get_and_put_all`."""
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        if self._pending:
            raise StoreError("get_before_all must come before the session's writes")
        if not len(keys):
            return pa.array([], pa.binary())
        # Read in key order (RocksDB reads sorted keys faster), answer in the keys' order.
        order = pc.sort_indices(keys)
        ordered = keys.cast(pa.binary()).take(order)
        found = values_before(self._use(lambda db: db.get_all(ordered)), self.batch_id)
        back = np.empty(len(order), np.int64)
        back[order.to_numpy()] = np.arange(len(order))
        return found.take(pa.array(back))

    def _check_not_bulk(self) -> None:
        if self._bulk is not None:
            raise StoreError("get_and_put_all must be the only access of a store session")

    def get_and_put_all(self, keys: pa.Array, values: pa.Array) -> pa.Array:
        """:meth:`get_and_put` over Arrow arrays, for a task that writes the store once
        per batch (no other call in the session but :meth:`get_before_all` and
        :meth:`prefix_scan_before` before it): entries are decoded and built with array
        operations, not per key in Python. Keys must be distinct."""
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        if self._pending or self._fetched:
            raise StoreError("get_and_put_all must be the only access of a store session")
        entries = self._use(lambda db: db.get_all(keys))
        before = values_before(entries, self.batch_id)
        self._put_bulk(keys, values, before, stored=pc.is_valid(entries))
        return before

    def put_all(self, keys: pa.Array, values: pa.Array, before: pa.Array) -> None:
        """The session's one write, when the caller already knows every key's value
        before this batch (read with :meth:`get_before_all`, or implied by another
        store's): :meth:`get_and_put_all` without reading the keys again. Keys must be
        distinct.

        >>> with StoreSession(layout, "left", 0, batch_id=7) as store:    # doctest: +SKIP
        ...     before = store.get_before_all(keys)
        ...     store.put_all(keys, values, before)
        """
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        if self._pending or self._fetched:
            raise StoreError("put_all must be the only write of a store session")
        self._put_bulk(keys, values, before, stored=None)

    def _put_bulk(self, keys: pa.Array, values: pa.Array, before: pa.Array, stored: pa.Array | None) -> None:
        """The entries :meth:`commit` writes: each new value with the value before it. A
        key with nothing before and nothing now has no entry: one stored by an earlier
        run of this batch is deleted (``stored``: which keys RocksDB holds an entry for;
        None when unknown, then every such key is deleted)."""
        written = encode_entries(self.batch_id, values, before)
        empty = pc.and_(pc.is_null(values), pc.is_null(before))
        entries = pc.if_else(empty, pa.scalar(None, pa.binary()), written)
        if stored is not None:
            keep = pc.invert(pc.and_(empty, pc.invert(stored)))
            keys, entries = keys.filter(keep), entries.filter(keep)
        self._bulk = (keys, entries)

    def _write(
        self, keys: Sequence[bytes], entries: Sequence[bytes | None], values: Sequence[bytes | None]
    ) -> list[bytes | None]:
        batch_id = self.batch_id
        pending = self._pending
        self._pending_sorted = None
        before: list[bytes | None] = []
        for key, entry, value in zip(keys, entries, values, strict=True):
            prev = value_before(entry, batch_id)
            before.append(prev)
            if value is None and prev is None:
                if entry is not None:
                    pending[key] = b""  # nothing before this batch: drop the entry
                continue
            pending[key] = encode_entry(batch_id, value, prev)
        return before

    def commit(self) -> None:
        """Changelog file first, then one RocksDB write batch; snapshot when due."""
        assert self._db is not None
        if self._bulk is not None:
            keys, entries = self._bulk
            self._bulk = None
            if len(keys):
                self._write_batch(keys.cast(pa.binary()), entries)
        elif self._pending:
            keys = list(self._pending)
            self._write_batch(
                pa.array(keys, pa.binary()), pa.array([self._pending[k] or None for k in keys], pa.binary())
            )
        self._pending.clear()
        self._fetched.clear()

    def _write_batch(self, keys: pa.Array, entries: pa.Array) -> None:
        """Write ``entries`` under ``keys`` (a null entry deletes) as this batch's
        changelog file, then to RocksDB in one write batch."""
        version, previous = self.version, self._expected
        self._files.write_changelog(version, keys, entries, previous)
        self._use(lambda db: db.write(keys, entries, version, previous))
        assert self._db is not None
        self._files.snapshot_if_due(self._db, version)
        self.written = version


def _merge_sorted(
    stored: Iterable[tuple[bytes, bytes]], pending: Iterable[tuple[bytes, bytes]], stop: Callable[[bytes], bool],
    *, descending: bool = False,
) -> Iterator[tuple[bytes, bytes]]:
    """Merge RocksDB's sorted (key, entry) stream with this batch's pending writes,
    both in ascending key order (``descending``: both descending); pending wins; an
    empty pending entry is a dropped key."""
    pending = list(pending)

    def ahead(a: bytes, b: bytes) -> bool:  # whether ``a`` comes before ``b`` in the walk
        return a > b if descending else a < b

    i = 0
    for key, entry in stored:
        if stop(key):
            break
        while i < len(pending) and ahead(pending[i][0], key):
            if pending[i][1]:
                yield pending[i]
            i += 1
        if i < len(pending) and pending[i][0] == key:
            if pending[i][1]:
                yield pending[i]
            i += 1
            continue
        yield key, entry
    for key, entry in pending[i:]:
        if entry:
            yield key, entry

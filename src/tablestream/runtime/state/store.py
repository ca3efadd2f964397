"""Keyed state stores: one RocksDB per (store, state partition), used inside Spark tasks.

A task opens the store of its partition for one batch (:class:`StoreSession`), reads
and writes it with vectorized calls, and commits once. What makes replays exact:

* every entry carries the id of the batch that wrote it and the value before that
  batch, so a replayed batch (task retry, recomputed stage, restart) reads the store
  as it was before that batch, and rewriting produces the same entries;
* a delete is an entry without a value (it keeps its batch id and value before);
* the writes of a batch go first to a changelog file of their own (one per store,
  partition and batch), then to RocksDB in one write batch with the batch id as
  metadata, so a store that is missing or behind is rebuilt from the latest snapshot
  plus the changelogs after it, as Kafka Streams restores a task from its changelog;
* a snapshot (a RocksDB checkpoint) is taken every ``snapshot_every`` batches; older
  snapshots and the changelogs they cover are removed.

A store directory is held by one process at a time (an ``fcntl`` lock beside it), so
two Python workers never open the same RocksDB.
"""

from __future__ import annotations

import bisect
import fcntl
import itertools
import os
import shutil
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rocksdict import Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from ..binary import buffers, slices, strip_prefix

_HEADER = struct.Struct(">qBI")  # batch id, flags, length of the value
_HEADER_FIELDS = np.dtype([("batch", ">i8"), ("flags", "u1"), ("length", ">u4")])  # the same, for arrays
_HAS_VALUE = 1
_HAS_PREV = 2
_DATA = b"\x01"  # user keys live under this prefix; metadata under _META
_META = b"\x00"
_LAST_BATCH = _META + b"last-batch"
_CHANGELOG_SCHEMA = pa.schema([("key", pa.binary()), ("entry", pa.binary())])
# A batch's writes skip RocksDB's write-ahead log: the changelog file written first is
# the store's log (closing a store flushes it; a store that lost its last write replays
# that changelog when it opens).
_NO_WAL = WriteOptions()
_NO_WAL.disable_wal = True
# A store is open for one batch, and closing it cancels RocksDB's background compactions,
# so files flushed at each close pile up in level 0 (every read then looks in each of
# them) unless the store compacts itself: it does when it closes with this many there.
_COMPACT_LEVEL0 = 16


def _options() -> Options:
    options = Options(raw_mode=True)
    options.set_keep_log_file_num(2)  # RocksDB starts an info log at every open
    return options


class StoreError(RuntimeError):
    """A state store that cannot serve a batch (ahead of it, or its files are damaged)."""


def encode_entry(batch_id: int, value: bytes | None, prev: bytes | None) -> bytes:
    flags = (_HAS_VALUE if value is not None else 0) | (_HAS_PREV if prev is not None else 0)
    return _HEADER.pack(batch_id, flags, len(value or b"")) + (value or b"") + (prev or b"")


def decode_entry(entry: bytes) -> tuple[int, bytes | None, bytes | None]:
    batch_id, flags, length = _HEADER.unpack_from(entry)
    start = _HEADER.size
    value = entry[start : start + length] if flags & _HAS_VALUE else None
    prev = entry[start + length :] if flags & _HAS_PREV else None
    return batch_id, value, prev


def _before(entry: bytes | None, batch_id: int) -> bytes | None:
    """The value an entry held before ``batch_id`` ran."""
    if entry is None:
        return None
    written, value, prev = decode_entry(entry)
    if written == batch_id:
        return prev
    if written > batch_id:
        raise StoreError(f"store entry written by batch {written} is ahead of batch {batch_id}")
    return value


def befores(entries: pa.Array, batch_id: int) -> pa.Array:
    """:func:`_before` over an Arrow array of entries: the values before ``batch_id``."""
    offsets, data, valid = buffers(entries)
    n = len(valid)
    if n == 0:
        return pa.array([], pa.binary())
    starts = offsets[:-1]
    header = data[np.where(valid, starts, 0)[:, None] + np.arange(_HEADER.size)] if data.size else np.zeros((n, _HEADER.size), np.uint8)
    fields = np.ascontiguousarray(header).view(_HEADER_FIELDS)[:, 0]
    written = np.where(valid, fields["batch"], -1)
    if (written > batch_id).any():
        ahead = int(written[written > batch_id][0])
        raise StoreError(f"store entry written by batch {ahead} is ahead of batch {batch_id}")
    flags = fields["flags"].astype(np.int64)
    length = fields["length"].astype(np.int64)
    replayed = written == batch_id  # written by this batch before: its value before is ``prev``
    value_start = starts + _HEADER.size
    start = np.where(replayed, value_start + length, value_start)
    size = np.where(replayed, offsets[1:] - value_start - length, length)
    present = valid & np.where(replayed, (flags & _HAS_PREV) != 0, (flags & _HAS_VALUE) != 0)
    return slices(entries, start, size, present)


def encode_entries(batch_id: int, values: pa.Array, prevs: pa.Array) -> pa.Array:
    """:func:`encode_entry` over Arrow arrays (one entry per row)."""
    n = len(values)
    has_value = pc.is_valid(values).to_numpy(zero_copy_only=False)
    has_prev = pc.is_valid(prevs).to_numpy(zero_copy_only=False)
    header = np.zeros(n, _HEADER_FIELDS)
    header["batch"] = batch_id
    header["flags"] = np.where(has_value, _HAS_VALUE, 0) | np.where(has_prev, _HAS_PREV, 0)
    header["length"] = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    headers = pa.FixedSizeBinaryArray.from_buffers(pa.binary(_HEADER.size), n, [None, pa.py_buffer(header.tobytes())])
    empty = pa.scalar(b"", pa.binary())
    return pc.binary_join_element_wise(
        headers.cast(pa.binary()), pc.fill_null(values.cast(pa.binary()), empty), pc.fill_null(prevs.cast(pa.binary()), empty), b""
    )


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


class StoreSession:
    """One task's use of one (store, partition) during one batch.

    >>> with StoreSession(layout, "counts", 0, batch_id=7) as store:    # doctest: +SKIP
    ...     old = store.get_and_put([b"k"], [b"v"])
    """

    def __init__(self, layout: StoreLayout, store: str, partition: int, batch_id: int):
        self.layout = layout
        self.store = store
        self.partition = partition
        self.batch_id = batch_id
        self._db: Rdict | None = None
        self._lock = None
        self._pending: dict[bytes, bytes] = {}  # user key -> entry written by this batch
        self._pending_sorted: list[bytes] | None = None  # its keys in order, for prefix reads
        self._fetched: dict[bytes, bytes | None] = {}  # user key -> entry as read from RocksDB
        # The batch's writes made by :meth:`get_and_put_all` (keys, entries; null drops).
        self._bulk: tuple[pa.Array, pa.Array] | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> StoreSession:
        lock_path = self.layout.lock_file(self.store, self.partition)
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = open(lock_path, "a+")  # noqa: SIM115 - held until __exit__
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        try:
            self._db = self._open_current()
        except BaseException:
            self._release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.commit()
                if (self._db.property_int_value("rocksdb.num-files-at-level0") or 0) >= _COMPACT_LEVEL0:
                    self._db.compact_range(None, None)
        finally:
            if self._db is not None:
                self._db.close()
                self._db = None
            self._release()

    def _release(self) -> None:
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def _open_current(self) -> Rdict:
        """Open the database, rebuilt to cover every batch before this one."""
        db_dir = self.layout.db_dir(self.store, self.partition)
        changelogs = _batch_files(self.layout.changelog_dir(self.store, self.partition), ".arrow")
        if db_dir.exists():
            db = Rdict(str(db_dir), _options())
            raw = db.get(_LAST_BATCH)
            last = -1 if raw is None else int(raw)
            if last > self.batch_id:
                db.close()
                raise StoreError(
                    f"store {self.store}/{self.partition} holds batch {last}, ahead of batch {self.batch_id}"
                )
            # Changelogs up to a snapshot are deleted; a store older than the newest
            # usable snapshot may miss some, so it is rebuilt from that snapshot.
            if not any(last < b < self.batch_id for b in self._snapshots()):
                self._replay_changelogs(db, changelogs, after=last)
                return db
            db.close()
        return self._restore(changelogs)

    def _snapshots(self) -> dict[int, Path]:
        return _batch_files(self.layout.snapshot_dir(self.store, self.partition))

    def _restore(self, changelogs: dict[int, Path]) -> Rdict:
        db_dir = self.layout.db_dir(self.store, self.partition)
        if db_dir.exists():
            shutil.rmtree(db_dir)
        db_dir.parent.mkdir(parents=True, exist_ok=True)
        usable = {b: p for b, p in self._snapshots().items() if b < self.batch_id}
        after = -1
        if usable:
            after = max(usable)
            shutil.copytree(usable[after], db_dir)
        db = Rdict(str(db_dir), _options())
        self._replay_changelogs(db, changelogs, after=after)
        return db

    def _replay_changelogs(self, db: Rdict, changelogs: dict[int, Path], after: int) -> None:
        for batch in sorted(b for b in changelogs if after < b < self.batch_id):
            table = pa.ipc.open_file(str(changelogs[batch])).read_all()
            wb = WriteBatch(raw_mode=True)
            for key, entry in zip(table.column("key").to_pylist(), table.column("entry").to_pylist(), strict=True):
                if entry is None:
                    wb.delete(_DATA + key)
                else:
                    wb.put(_DATA + key, entry)
            wb.put(_LAST_BATCH, str(batch).encode())
            db.write(wb, _NO_WAL)

    # ---------------------------------------------------------------------- reads
    def _entries(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Current entries (this batch's writes first), with one multi-get for the keys
        not read before in this session."""
        assert self._db is not None, "store session is not open"
        self._check_not_bulk()
        fetched = self._fetched
        missing = [k for k in keys if k not in fetched and k not in self._pending]
        if missing:
            fetched.update(zip(missing, self._db.get([_DATA + k for k in missing]), strict=True))
        pending = self._pending
        return [(pending[k] or None) if k in pending else fetched[k] for k in keys]

    def get_before(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """Values as they were before this batch (what a replay must read)."""
        return [_before(e, self.batch_id) for e in self._entries(keys)]

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

    def prefix_items(self, prefix: bytes, *, before: bool = False) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) of every live key starting with ``prefix``, in key order; with
        ``before=True`` as they were before this batch."""
        assert self._db is not None
        self._check_not_bulk()
        full = _DATA + prefix
        if self._pending_sorted is None:
            self._pending_sorted = sorted(self._pending)
        start = bisect.bisect_left(self._pending_sorted, prefix)
        pending = [
            (k, self._pending[k])
            for k in itertools.takewhile(lambda k: k.startswith(prefix), self._pending_sorted[start:])
        ]
        # RocksDB iterates in key order from the prefix: stop at the first key past it.
        stored = ((k[1:], e) for k, e in itertools.takewhile(
            lambda item: item[0].startswith(full), self._db.items(from_key=full)))
        for key, entry in _merge_sorted(stored, pending, stop=lambda k: not k.startswith(prefix)):
            value = _before(entry, self.batch_id) if before else decode_entry(entry)[1]
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
        owners: list[int] = []
        keys: list[bytes] = []
        entries: list[bytes] = []
        cursor = self._db.iter()
        try:
            for i, prefix in enumerate(prefixes):
                full = _DATA + prefix
                cursor.seek(full)
                while cursor.valid():
                    key = cursor.key()
                    if not key.startswith(full):
                        break
                    owners.append(i)
                    keys.append(key)
                    entries.append(cursor.value())
                    cursor.next()
        finally:
            del cursor
        owner = np.asarray(owners, np.int64)
        if not keys:
            return owner, pa.array([], pa.binary()), pa.array([], pa.binary())
        values = befores(pa.array(entries, pa.binary()), self.batch_id)
        sizes = np.fromiter((len(p) + len(_DATA) for p in prefixes), np.int64, len(prefixes))
        suffixes = strip_prefix(pa.array(keys, pa.binary()), sizes[owner])
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
        prefixed = pc.binary_join_element_wise(_DATA, keys.cast(pa.binary()).take(order), b"").to_pylist()
        found = befores(pa.array(self._db.get(prefixed), pa.binary()), self.batch_id)
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
        prefixed = pc.binary_join_element_wise(_DATA, keys.cast(pa.binary()), b"").to_pylist()
        entries = pa.array(self._db.get(prefixed), pa.binary())
        before = befores(entries, self.batch_id)
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
            prev = _before(entry, batch_id)
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
                table = pa.table({"key": keys.cast(pa.binary()), "entry": entries}, schema=_CHANGELOG_SCHEMA)
                self._write_batch(table, pc.binary_join_element_wise(_DATA, table.column("key"), b"").to_pylist())
        elif self._pending:
            keys = list(self._pending)
            table = pa.table(
                {
                    "key": pa.array(keys, pa.binary()),
                    "entry": pa.array([self._pending[k] or None for k in keys], pa.binary()),
                },
                schema=_CHANGELOG_SCHEMA,
            )
            self._write_batch(table, [_DATA + k for k in keys])
        self._pending.clear()
        self._fetched.clear()

    def _write_batch(self, table: pa.Table, stored_keys: list[bytes]) -> None:
        """Write ``table`` (key, entry; a null entry deletes) as this batch's changelog
        file, then to RocksDB (under ``stored_keys``) in one write batch."""
        assert self._db is not None
        changelog_dir = self.layout.changelog_dir(self.store, self.partition)
        changelog_dir.mkdir(parents=True, exist_ok=True)
        target = changelog_dir / f"{self.batch_id}.arrow"
        tmp = target.with_suffix(".tmp")
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, _CHANGELOG_SCHEMA) as writer:
            writer.write_table(table)
        os.replace(tmp, target)
        wb = WriteBatch(raw_mode=True)
        for key, entry in zip(stored_keys, table.column("entry").to_pylist(), strict=True):
            if entry is None:
                wb.delete(key)
            else:
                wb.put(key, entry)
        wb.put(_LAST_BATCH, str(self.batch_id).encode())
        self._db.write(wb, _NO_WAL)
        self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        snapshots = self._snapshots()
        if snapshots and self.batch_id - max(snapshots) < self.layout.snapshot_every:
            return
        if not snapshots and self.batch_id + 1 < self.layout.snapshot_every:
            return
        target = self.layout.snapshot_dir(self.store, self.partition) / str(self.batch_id)
        if target.exists():
            shutil.rmtree(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{self.batch_id}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        assert self._db is not None
        Checkpoint(self._db).create_checkpoint(str(tmp))
        os.replace(tmp, target)
        snapshots[self.batch_id] = target
        kept = sorted(snapshots)[-self.layout.snapshots_kept :]
        for batch, path in snapshots.items():
            if batch not in kept:
                shutil.rmtree(path, ignore_errors=True)
        oldest = kept[0]
        for batch, path in _batch_files(self.layout.changelog_dir(self.store, self.partition), ".arrow").items():
            if batch <= oldest:
                path.unlink(missing_ok=True)


def _merge_sorted(stored, pending, stop):
    """Merge RocksDB's sorted (key, entry) stream with this batch's pending writes;
    pending wins; an empty pending entry is a dropped key."""
    pending = list(pending)
    i = 0
    for key, entry in stored:
        if stop(key):
            break
        while i < len(pending) and pending[i][0] < key:
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

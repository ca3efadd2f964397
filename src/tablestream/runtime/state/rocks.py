"""The RocksDB database of one (store, state partition): open, read, write, compact,
checkpoint.

The only module that uses ``rocksdict``; the others see user keys and entries. User keys
live under a data prefix, beside metadata keys holding the version the database is at
(the last batch written and its commit id) and the version before it.

RocksDB's reports of damaged files (a database that does not open, a block whose
checksum does not match when it is read, an iterator that stops on one) are raised as
:class:`DamagedDatabase`, never taken for the end of the data.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rocksdict import BlockBasedOptions, Cache, Checkpoint, Options, Rdict, WriteBatch, WriteOptions

from ...errors import first_line
from ..binary import strip_prefix
from .versioning import Version, parse_version, version_name

_DATA = b"\x01"  # user keys live under this prefix; metadata under _META
_META = b"\x00"
_VERSION = _META + b"version"  # the version written last
_PREVIOUS = _META + b"previous-version"  # the version it was written on
# A batch's writes skip RocksDB's write-ahead log: the changelog file written first is
# the store's log (closing a store flushes it; a store that lost its last write replays
# that changelog when it opens).
_NO_WAL = WriteOptions()
_NO_WAL.disable_wal = True
# A store is open for one batch, and closing it cancels RocksDB's background compactions,
# so files flushed at each close pile up in level 0 (every read then looks in each of
# them) unless the store compacts itself: it does when it closes with this many there.
COMPACT_LEVEL0 = 16


# RocksDB's words for a database another handle holds open: not damage.
_HELD = re.compile(r"\block (hold|file)\b")
# The statuses RocksDB reports a damaged or unreadable file with.
_DAMAGE = ("Corruption", "IO error")


class DamagedDatabase(Exception):  # noqa: N818 - the state of the files, not an action
    """The files of a database are damaged: RocksDB cannot open them, or finds a file
    or block that does not check out when it reads it."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def _absent(n: int) -> pa.Array:
    """``n`` null entries with an empty data buffer (:func:`pyarrow.nulls` gives one of
    zeros as long as the offsets, which the readers of entries would take for bytes)."""
    validity, offsets = np.zeros((n + 7) // 8, np.uint8), np.zeros(n + 1, np.int32)
    return pa.Array.from_buffers(
        pa.binary(), n, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(b"")], null_count=n
    )


#: The block cache every store of a process shares. RocksDB gives a database 32 MB of
#: its own otherwise, and a running query's worker keeps many open (see :mod:`.keeper`).
BLOCK_CACHE_BYTES = 64 << 20
_block_cache: Cache | None = None


def _successor(prefix: bytes) -> bytes:
    """The first byte string past every one starting with ``prefix`` (which starts with
    :data:`_DATA`, so one exists)."""
    kept = prefix.rstrip(b"\xff")
    return kept[:-1] + bytes([kept[-1] + 1])


def _options() -> Options:
    global _block_cache
    options = Options(raw_mode=True)
    options.set_keep_log_file_num(2)  # RocksDB starts an info log at every open
    if _block_cache is None:
        _block_cache = Cache(BLOCK_CACHE_BYTES)
    table = BlockBasedOptions()
    table.set_block_cache(_block_cache)
    options.set_block_based_table_factory(table)
    return options


class RocksStore:
    """An open RocksDB database of user keys and their entries."""

    def __init__(self, path: Path) -> None:
        self.path = path
        # The snapshot the database was copied from (None: built where it is).
        self.copied_from: Path | None = None
        try:
            self._db = Rdict(str(path), _options())
        except Exception as err:  # noqa: BLE001 - rocksdict raises Exception for every status
            if _HELD.search(str(err)):
                raise
            raise DamagedDatabase(path, first_line(err)) from None

    @contextlib.contextmanager
    def _checked(self) -> Iterator[None]:
        """RocksDB's reports of damaged files as :class:`DamagedDatabase`."""
        try:
            yield
        except Exception as err:
            if str(err).startswith(_DAMAGE):
                raise DamagedDatabase(self.path, first_line(err)) from None
            raise

    def close(self, *, compact: bool = False) -> None:
        """Close; with ``compact``, first compact when :data:`COMPACT_LEVEL0` files are
        in level 0."""
        try:
            if compact and self.level0_files() >= COMPACT_LEVEL0:
                with self._checked():
                    self._db.compact_range(None, None)
        finally:
            self._db.close()

    def abandon(self) -> None:
        """Close a database that is being discarded, whatever RocksDB reports."""
        with contextlib.suppress(Exception):
            self._db.close()

    def memtable_bytes(self) -> int:
        """The bytes in the database's memtables (writes not yet flushed to files)."""
        return self._db.property_int_value("rocksdb.cur-size-all-mem-tables") or 0

    def flush(self) -> None:
        """Write the memtables to a level-0 file."""
        with self._checked():
            self._db.flush()

    def level0_files(self) -> int:
        return self._db.property_int_value("rocksdb.num-files-at-level0") or 0

    def version(self) -> Version | None:
        """The version the database holds (None: nothing written)."""
        return self._version_at(_VERSION)

    def previous_version(self) -> Version | None:
        """The version the last one was written on (None: the empty store)."""
        return self._version_at(_PREVIOUS)

    def _version_at(self, key: bytes) -> Version | None:
        with self._checked():
            raw = self._db.get(key)
        if raw is None:
            return None
        try:
            return parse_version(raw.decode())
        except (UnicodeDecodeError, ValueError):
            raise DamagedDatabase(self.path, f"unreadable version {raw[:40]!r}") from None

    # ---------------------------------------------------------------------- reads
    def get(self, keys: Sequence[bytes]) -> list[bytes | None]:
        """The entries of ``keys``, with one multi-get."""
        with self._checked():
            return self._db.get([_DATA + k for k in keys])

    def get_all(self, keys: pa.Array) -> pa.Array:
        """:meth:`get` over an Arrow array, the keys prefixed with array operations. A
        database that holds no user key answers without a lookup (a bootstrap's
        multi-get of 250,000 keys in an empty store took 0.2 s)."""
        if not self.holds_keys():
            return _absent(len(keys))
        prefixed = pc.binary_join_element_wise(_DATA, keys.cast(pa.binary()), b"").to_pylist()
        with self._checked():
            found = self._db.get(prefixed)
        return pa.array(found, pa.binary())

    def holds_keys(self) -> bool:
        """Whether the database holds any user key (one seek)."""
        cursor = self._db.iter()
        try:
            with self._checked():
                cursor.seek(_DATA)
                if cursor.valid():
                    return cursor.key().startswith(_DATA)
                cursor.status()  # an iterator stopped by a damaged block is not at the end
                return False
        finally:
            del cursor

    def items(
        self, prefix: bytes, after: bytes | None = None, *, reverse: bool = False
    ) -> Iterator[tuple[bytes, bytes]]:
        """(key, entry) of every key starting with ``prefix``, in key order (with
        ``after``: of those after that key); with ``reverse``, in descending key order
        (``after``: of those before that key), from the last one on."""
        full = _DATA + prefix
        cursor = self._db.iter()
        try:
            with self._checked():
                if reverse:
                    # RocksDB seeks the last key at or before the one given: the first key
                    # past every key under the prefix, or the key read last.
                    bound = _DATA + after if after is not None else _successor(full)
                    cursor.seek_for_prev(bound)
                    if cursor.valid() and cursor.key() >= bound:
                        cursor.prev()
                else:
                    # RocksDB iterates in key order from the prefix: stop at the first key past it.
                    cursor.seek(full if after is None else _DATA + after)
                    if after is not None and cursor.valid() and cursor.key() == _DATA + after:
                        cursor.next()
                while cursor.valid():
                    key = cursor.key()
                    if not key.startswith(full):
                        return
                    yield key[1:], cursor.value()
                    # (No bound method kept: the cursor must go with ``del`` below, or
                    # the database cannot close while a damaged one is rebuilt.)
                    if reverse:
                        cursor.prev()
                    else:
                        cursor.next()
                cursor.status()  # an iterator stopped by a damaged block is not at the end
        finally:
            del cursor

    def scan(self, prefixes: Sequence[bytes]) -> tuple[np.ndarray, pa.Array, pa.Array]:
        """Every key under each of ``prefixes`` with its entry, as arrays: the index of
        the key's prefix, the key without its prefix and the entry, grouped by prefix in
        the order of ``prefixes``. The walk over RocksDB is the only per-key Python. It
        seeks the prefixes in key order, so that each seek goes on from the blocks the
        one before read (86,000 prefixes of 284,000 subscriptions: 0.72 s in a random
        order, 0.34-0.44 s sorted)."""
        owners: list[int] = []
        keys: list[bytes] = []
        entries: list[bytes] = []
        order = sorted(range(len(prefixes)), key=prefixes.__getitem__)
        cursor = self._db.iter()
        try:
            with self._checked():
                for i in order:
                    full = _DATA + prefixes[i]
                    cursor.seek(full)
                    while cursor.valid():
                        key = cursor.key()
                        if not key.startswith(full):
                            break
                        owners.append(i)
                        keys.append(key)
                        entries.append(cursor.value())
                        cursor.next()
                    else:
                        cursor.status()  # stopped by a damaged block, or at the end
        finally:
            del cursor
        owner = np.asarray(owners, np.int64)
        if not keys:
            return owner, pa.array([], pa.binary()), pa.array([], pa.binary())
        sizes = np.fromiter((len(p) + len(_DATA) for p in prefixes), np.int64, len(prefixes))
        found, stored = strip_prefix(pa.array(keys, pa.binary()), sizes[owner]), pa.array(entries, pa.binary())
        grouped = np.argsort(owner, kind="stable")  # back to the order of ``prefixes``
        if (grouped == np.arange(len(grouped))).all():
            return owner, found, stored
        return owner[grouped], found.take(pa.array(grouped)), stored.take(pa.array(grouped))

    # --------------------------------------------------------------------- writes
    def write(
        self,
        keys: pa.Array | pa.ChunkedArray,
        entries: pa.Array | pa.ChunkedArray,
        version: Version,
        previous: Version | None,
    ) -> None:
        """Write ``entries`` under ``keys`` (a null entry deletes) as ``version``, written
        on ``previous``, in one write batch without the write-ahead log."""
        wb = WriteBatch(raw_mode=True)
        stored_keys = pc.binary_join_element_wise(_DATA, keys, b"").to_pylist()
        for key, entry in zip(stored_keys, entries.to_pylist(), strict=True):
            if entry is None:
                wb.delete(key)
            else:
                wb.put(key, entry)
        wb.put(_VERSION, version.name.encode())
        wb.put(_PREVIOUS, version_name(previous).encode())
        with self._checked():
            self._db.write(wb, _NO_WAL)

    def checkpoint(self, target: Path) -> None:
        """A RocksDB checkpoint of the database in ``target``."""
        Checkpoint(self._db).create_checkpoint(str(target))

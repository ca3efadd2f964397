"""Working copies kept open between the batches of a running query (:class:`Keeper`).

Opening a store's RocksDB database and closing it costs 5-40 ms each (file syncs RocksDB
cannot skip, the table files' indexes read again, a level-0 file flushed at every
close), and a steady batch of a foreign-key join with an aggregate beside it opens and
closes 18 store partitions. So a task of a running query leaves its stores open in its
Python worker, each with the ``fcntl`` lock of its working copy held, and a task of a
later batch that runs in the same worker finds them open (with their indexes and blocks
cached, and RocksDB's background compactions done in between).

Spark does not send a partition's next task to the worker that ran the last one. A
session that finds the lock held asks the holder, named by the process id in the lock
file, over a Unix socket to let go: a kept store that no task uses is closed at once,
one in use when its session ends. The asker polls the lock and asks again until it has
it, so a request that crosses the holder taking the store is never lost, and a holder
that died released its lock with it (its database then lacks the batches it had not
flushed, which the changelogs replay: the store's version says which).

A kept store no session used for :data:`IDLE_CLOSE` seconds closes. A store is kept
under the running query's token: a session of another run (a restart,
another ``run_until_caught_up()``) or one that finds the lock file or the database's
directory replaced closes the kept database and opens the working copy again, with
every check an open does. Within a run, a kept database's version is checked as an
opened one's is.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import socket
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from .rocks import RocksStore

__all__ = ["IDLE_CLOSE", "KEPT_AT_MOST", "Keeper", "acquire", "process_keeper"]

_LOG = logging.getLogger(__name__)

#: Stores one process keeps open at most: beyond it the least recently used idle ones
#: close (each holds its table files open and its memtable).
KEPT_AT_MOST = 64
#: A kept store whose memtable grew beyond this flushes it when its session ends, which
#: bounds a process's memtables to about ``KEPT_AT_MOST`` times this.
FLUSH_ABOVE = 8 << 20
#: Seconds after which a kept store no session used closes: a query whose batches come
#: further apart gains nothing from keeping it, and a session that cannot reach the
#: holder's socket (another network namespace) waits no longer than this for the lock.
IDLE_CLOSE = 30.0
_ASK_EVERY = 0.1  # seconds between two requests to a process that holds a lock
_ANSWER_WITHIN = 10.0  # seconds to wait for a holder's answer before polling on


@dataclass(eq=False)
class _Kept:
    lock: IO[str]
    token: str
    db: RocksStore | None = None
    identity: tuple[int, ...] | None = None  # of the lock file and the database's directory
    in_use: bool = True
    wanted: bool = False  # another session asked for it while it was in use
    used: float = 0.0


def _identity(lock_file: Path, db_dir: Path) -> tuple[int, ...] | None:
    try:
        lock, db = os.stat(lock_file), os.stat(db_dir)
    except OSError:
        return None
    return lock.st_dev, lock.st_ino, db.st_dev, db.st_ino


def _held_identity(lock: IO[str], db_dir: Path) -> tuple[int, ...] | None:
    """The identity of the lock file ``lock`` holds open (not the one at its path now)
    and of the database's directory."""
    try:
        held, db = os.fstat(lock.fileno()), os.stat(db_dir)
    except OSError:
        return None
    return held.st_dev, held.st_ino, db.st_dev, db.st_ino


class Keeper:
    """The stores this process keeps open, by the directory of their database."""

    def __init__(self) -> None:
        self._mutex = threading.Lock()
        self._kept: dict[Path, _Kept] = {}
        self._listening = False

    # ------------------------------------------------------------- a session's side
    def take(self, db_dir: Path, lock_file: Path, token: str) -> tuple[IO[str], RocksStore] | None:
        """The lock and database kept for ``db_dir`` under ``token``, now in use by the
        caller; None when none is kept here (one kept under another token, or whose
        files were replaced, is closed)."""
        with self._mutex:
            kept = self._kept.get(db_dir)
            if kept is None or kept.in_use:
                return None
            if kept.token == token and kept.db is not None and kept.identity == _identity(lock_file, db_dir):
                kept.in_use, kept.wanted = True, False
                return kept.lock, kept.db
            del self._kept[db_dir]
        _close(kept)
        return None

    def hold(self, db_dir: Path, lock: IO[str], token: str) -> None:
        """Record that the caller holds ``db_dir``'s lock under ``token`` (before it opens
        the database, so that a request from another session is seen from then on)."""
        with self._mutex:
            self._kept[db_dir] = _Kept(lock, token)
        self._listen()

    def put_back(self, db_dir: Path, db: RocksStore) -> bool:
        """Keep ``db`` open, its lock held, once its session ends; False when the session
        must close it and release its lock (another session asked for it meanwhile)."""
        with self._mutex:
            kept = self._kept.get(db_dir)
            if kept is None or kept.wanted:
                self._kept.pop(db_dir, None)
                return False
            identity = _held_identity(kept.lock, db_dir)
            if identity is None:
                del self._kept[db_dir]
                return False
        if db.memtable_bytes() > FLUSH_ABOVE:
            db.flush()
        with self._mutex:
            if kept.wanted:
                del self._kept[db_dir]
                return False
            kept.db, kept.identity, kept.in_use, kept.used = db, identity, False, time.monotonic()
            idle = sorted((d for d, k in self._kept.items() if not k.in_use), key=lambda d: self._kept[d].used)
            excess = [self._kept.pop(d) for d in idle[: max(0, len(self._kept) - KEPT_AT_MOST)]]
        for gone in excess:
            _close(gone)
        return True

    def forget(self, db_dir: Path) -> None:
        """The caller closes ``db_dir``'s database and releases its lock itself."""
        with self._mutex:
            self._kept.pop(db_dir, None)

    # ------------------------------------------------------------- the asker's side
    def let_go(self, db_dir: Path) -> None:
        """Another session asks for ``db_dir``: close it now if it is idle, else when its
        session ends."""
        with self._mutex:
            kept = self._kept.get(db_dir)
            if kept is None:
                return
            if kept.in_use:
                kept.wanted = True
                return
            del self._kept[db_dir]
        _close(kept)

    def close_all(self) -> None:
        """Close every idle kept store (those in use close when their sessions end)."""
        self.close_idle(0.0)

    def close_idle(self, seconds: float) -> None:
        """Close the kept stores no session has used for ``seconds``."""
        before = time.monotonic() - seconds
        with self._mutex:
            idle = [d for d, k in self._kept.items() if not k.in_use and k.used <= before]
            gone = [self._kept.pop(d) for d in idle]
        for kept in gone:
            _close(kept)

    def kept(self) -> list[Path]:
        """The directories of the databases kept open here, idle or in use."""
        with self._mutex:
            return sorted(self._kept)

    def _listen(self) -> None:
        with self._mutex:
            if self._listening:
                return
            self._listening = True
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        address = _address(os.getpid())
        if isinstance(address, str):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(address)
        server.bind(address)
        server.listen(16)
        threading.Thread(target=self._serve, args=(server,), name="tablestream-store-keeper", daemon=True).start()

    def _serve(self, server: socket.socket) -> None:
        while True:
            server.settimeout(IDLE_CLOSE / 4)
            try:
                conn, _ = server.accept()
            except TimeoutError:
                self.close_idle(IDLE_CLOSE)
                continue
            except OSError:  # out of file descriptors, say: the asker asks again
                time.sleep(_ASK_EVERY)
                continue
            self.close_idle(IDLE_CLOSE)
            try:
                with conn:
                    conn.settimeout(_ANSWER_WITHIN)
                    asked = b""
                    while not asked.endswith(b"\n"):
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        asked += chunk
                    if asked.endswith(b"\n"):
                        self.let_go(Path(os.fsdecode(asked[:-1])))
                        conn.sendall(b"ok\n")
            except Exception:  # noqa: BLE001 - one asker's failure must not stop the others'
                _LOG.debug("store keeper: a request failed", exc_info=True)


def _close(kept: _Kept) -> None:
    try:
        if kept.db is not None:
            kept.db.abandon()
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(kept.lock, fcntl.LOCK_UN)
        kept.lock.close()


def _address(pid: int) -> str | bytes:
    """Where the keeper of process ``pid`` listens: an abstract socket on Linux (nothing
    left behind on disk), else a socket file in the temporary directory."""
    if sys.platform == "linux":
        return f"\0tablestream-store-keeper-{pid}".encode()
    return os.path.join(tempfile.gettempdir(), f"tablestream-store-keeper-{pid}.sock")


def acquire(lock: IO[str], db_dir: Path) -> None:
    """Take the working copy's lock (``lock``, its lock file opened), asking the process
    that holds it, if any keeps it, to let go; then write this process's id in it."""
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        delay, asked_at = 0.001, -_ASK_EVERY
        while True:
            if time.monotonic() - asked_at >= _ASK_EVERY:
                _ask(_holder(lock), db_dir)
                asked_at = time.monotonic()
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
    lock.seek(0)
    lock.truncate()
    lock.write(f"{os.getpid()}\n")
    lock.flush()


def _holder(lock: IO[str]) -> int | None:
    """The process id the holder of ``lock`` wrote in it."""
    try:
        return int(os.pread(lock.fileno(), 32, 0).decode().strip())
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def _ask(pid: int | None, db_dir: Path) -> None:
    """Ask process ``pid`` to let go of ``db_dir`` (nothing when it keeps no stores or
    is gone: its lock is then released when its session ends, or already was)."""
    if pid is None:
        return
    if pid == os.getpid():
        process_keeper().let_go(db_dir)
        return
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(_ANSWER_WITHIN)
        conn.connect(_address(pid))
        conn.sendall(os.fsencode(str(db_dir)) + b"\n")
        conn.recv(16)


_KEEPER = Keeper()
# Stores a forked child inherited: never closed there (the parent's handles and locks).
_INHERITED: list[Keeper] = []


def process_keeper() -> Keeper:
    """This process's keeper."""
    return _KEEPER


def _after_fork() -> None:
    global _KEEPER
    _INHERITED.append(_KEEPER)
    _KEEPER = Keeper()


os.register_at_fork(after_in_child=_after_fork)

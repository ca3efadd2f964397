"""Where an application keeps what it runs on, under ``<home>/apps/<application id>/``;
what those files say about it (:func:`describe_application`); the lock that lets one
instance run at a time (:class:`InstanceLock`); and how to delete it all to start over
(:func:`reset_application`). Imports no Spark, so the command line can use it.

::

    app.json        the state partition count, the run id and the state format, fixed at
                    the first start
    app.lock        held by the running instance (its pid and start time inside); only
                    on a local home (a path or file://): elsewhere, running one instance
                    per application id is the deployment's job, as with Spark's checkpoints
    checkpoint/     Spark's streaming checkpoint (source offsets per batch id)
    state/          live RocksDB stores, one per (store, state partition), in local mode
                    on a local home (else each host's local directory: StoreLayout)
    changelog/      the stores' changelog files and snapshots (restore)
    tables/<store>  each materialized table's changelog, a Delta table users read
    positions.json  per source topic partition, the offset after the last record read
                    (what its lag is counted from)

The home may be a URI (:mod:`tablestream.storage.location`): every file above but the
lock and the working copies is then read and written through :mod:`pyarrow.fs`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, ClassVar

from .. import config as ts_config
from ..errors import DamagedStateError, TablestreamError, first_line, reset_hint
from ..storage.location import Durable, Location, local_path, remove_tree
from .state import StoreLayout
from .state.files import StoreFiles

STATE_FORMAT = 3
"""The format of the bytes the stores and tables keep, recorded in ``app.json`` at the
first start. An application whose files were written in another format is refused with a
reset hint, never read as if they were this one (keys in another form would not meet the
new records' keys: a silently wrong result). Format 2: keys without a key schema are kept
by the value they read as (8 bytes that read as a BIGINT are kept as that integer); the
stores' changelogs and snapshots are named by version, and the versions each batch left
are recorded (:mod:`tablestream.runtime.state.versioning`). Format 3: the checkpoint
holds one source over every embedded source topic, its offsets Kafka's (per topic
partition, the next offset: :mod:`tablestream.storage.embedded_source`) instead of one
Delta source per topic."""


class ApplicationError(TablestreamError):
    """An application that cannot start or run as configured."""


class ApplicationRunningError(ApplicationError):
    """An application already running, started again or reset."""

    def __init__(self, message: str, instance: Instance | None = None):
        super().__init__(message)
        self.instance = instance


@dataclass(frozen=True)
class AppPaths:
    """The directories of one application: under a local path or a URI
    (:class:`~tablestream.storage.location.Location`)."""

    root: Durable

    @classmethod
    def of(
        cls,
        application_id: str,
        home: str | os.PathLike[str] | Location | None = None,
        storage_options: dict[str, str] | None = None,
    ) -> AppPaths:
        """The directories of ``application_id`` under ``home`` (see :func:`tablestream.config.home`)."""
        if not application_id or application_id in (".", "..") or any(c in application_id for c in "/\\\0"):
            raise ApplicationError(f"Invalid application id {application_id!r} (a name without '/')")
        return cls(ts_config.home(home, storage_options) / "apps" / application_id)

    @property
    def application_id(self) -> str:
        return self.root.name

    @property
    def meta(self) -> Durable:
        return self.root / "app.json"

    @property
    def positions(self) -> Durable:
        return self.root / "positions.json"

    @property
    def local_root(self) -> Path | None:
        """The application's directory on this host's file system (a local home, or a
        ``file://`` one); None on any other."""
        return local_path(self.root)

    @property
    def lock(self) -> Path | None:
        """The instance lock's file (None on a home that is not local: no lock)."""
        local = self.local_root
        return None if local is None else local / "app.lock"

    @property
    def checkpoint(self) -> Durable:
        return self.root / "checkpoint"

    @property
    def layout(self) -> StoreLayout:
        """The stores' layout: working copies under ``state/`` on a local home (each
        host's local directory otherwise), changelogs and snapshots under ``changelog/``."""
        local = self.local_root
        working = None if local is None else local / "state"
        return StoreLayout(working, self.root / "changelog", application_id=self.application_id)

    @property
    def tables(self) -> Durable:
        return self.root / "tables"

    def table(self, store: str) -> Durable:
        return self.tables / store

    # ------------------------------------------------------------------ reading
    def damaged(self, path: Durable, problem: str) -> DamagedStateError:
        return DamagedStateError(
            f"Application '{self.application_id}' is damaged: {path}: {problem} "
            f"({reset_hint(self.application_id)})"
        )

    def read_meta(self) -> dict | None:
        """What ``app.json`` records (``partitions``, ``run``, ``state_format``, the foreign-key
        joins whose layout was chosen replicated: ``replicated``); None before the first start."""
        try:
            meta = json.loads(self.meta.read_text())
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise self.damaged(self.meta, f"unreadable: {first_line(err)}") from err
        if not isinstance(meta, dict) or not isinstance(meta.get("partitions"), int) or meta["partitions"] < 1:
            raise self.damaged(self.meta, "no state partition count in it")
        return meta

    def batches(self, log: str) -> list[int]:
        """The batch ids of one of the checkpoint's logs (``offsets``: planned,
        ``commits``: done), in order."""
        directory = self.checkpoint / log
        if not directory.is_dir():
            return []
        return sorted(int(p.name) for p in directory.iterdir() if p.name.isdigit())

    def check_checkpoint(self) -> None:
        """Raise :class:`~tablestream.errors.DamagedStateError` when a checkpoint file
        Spark reads at start is damaged: the query's ``metadata``, the last two offset
        files (the last batch and the one before it) and the last commit file."""
        metadata = self.checkpoint / "metadata"
        if metadata.exists():
            try:
                query = json.loads(metadata.read_text())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
                raise self.damaged(metadata, f"unreadable: {first_line(err)}") from err
            if not isinstance(query, dict) or "id" not in query:
                raise self.damaged(metadata, "no query id in it")
        for log, newest in (("offsets", 2), ("commits", 1)):
            for batch in self.batches(log)[-newest:]:
                self._check_log_file(self.checkpoint / log / str(batch))

    def remove_unfinished_checkpoint_writes(self) -> list[Durable]:
        """Remove what Spark leaves of a checkpoint file it did not finish writing, and
        return their paths. Spark writes each file of its checkpoint as a hidden
        temporary file (``.0.<uuid>.tmp``, beside its checksum ``..0.<uuid>.tmp.crc``)
        renamed when complete; a process killed or a query stopped while it writes one
        leaves it behind (Hadoop sets its permissions with a ``chmod`` process in that
        window, and a stop interrupts the wait for it). Left in ``offsets/`` before the
        first offset file, it makes Spark take the checkpoint for another query's and
        refuse to start (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``). Only the
        instance holding the application's lock may call this."""
        removed = []
        for directory in (self.checkpoint, self.checkpoint / "offsets", self.checkpoint / "commits"):
            if not directory.is_dir():
                continue
            for path in directory.iterdir():
                if _unfinished_write(path.name) and path.is_file():
                    path.unlink(missing_ok=True)
                    removed.append(path)
        return removed

    def _check_log_file(self, path: Durable) -> None:
        """A file of Spark's metadata logs: a version line (``v1``), then JSON lines (an
        offset file: metadata, then one offset per source, ``-`` for none)."""
        try:
            lines = path.read_text().split("\n")
        except (OSError, UnicodeDecodeError) as err:
            raise self.damaged(path, f"unreadable: {first_line(err)}") from err
        if not (lines[0].startswith("v") and lines[0][1:].isdigit()):
            raise self.damaged(path, f"not a checkpoint file (it starts with {lines[0][:20]!r}, not a version such as 'v1')")
        body = [line for line in lines[1:] if line.strip() and line.strip() != "-"]
        if not body:
            raise self.damaged(path, "incomplete: nothing after its version line")
        for number, line in enumerate(lines[1:], start=2):
            if not line.strip() or line.strip() == "-":
                continue
            try:
                json.loads(line)
            except json.JSONDecodeError as err:
                raise self.damaged(path, f"line {number} is not JSON ({err.msg} at column {err.colno})") from err


def _unfinished_write(name: str) -> bool:
    """A temporary file of Spark's checkpoint writes, or its checksum."""
    return name.startswith(".") and name.endswith((".tmp", ".tmp.crc"))


# ---------------------------------------------------------------------- one instance
@dataclass(frozen=True)
class Instance:
    """The instance of an application that holds its lock."""

    pid: int | None
    since: str | None

    def __str__(self) -> str:
        return f"pid {self.pid if self.pid is not None else 'unknown'}, since {self.since or 'unknown'}"


class InstanceLock:
    """One running instance per application: an ``fcntl`` lock on ``app.lock`` under the
    application's directory, held while its query runs, with the holder's pid and start
    time written in the file. The operating system releases it when the holder's process
    ends, so the lock of a dead process never blocks. In one process, a lock whose
    holder says it is no longer running (``alive``) is taken over. An ``fcntl`` lock
    fences processes of one host only: on a home that is not local (an object store,
    HDFS) there is none, and one instance per application id is the deployment's job
    (as for Spark's own checkpoints); the record of the stores' versions still keeps a
    zombie's writes from counting.

    >>> lock = InstanceLock(AppPaths.of("revenue"))                # doctest: +SKIP
    >>> lock.acquire()                                             # doctest: +SKIP
    >>> InstanceLock(AppPaths.of("revenue")).acquire()             # doctest: +SKIP
    Traceback (most recent call last):
    tablestream.runtime.layout.ApplicationRunningError: Application 'revenue' is already running (pid 4242, since 2026-11-24 16:20:00)
    """

    _held: ClassVar[dict[Path | None, InstanceLock]] = {}  # the locks this process holds

    def __init__(self, paths: AppPaths, alive: Callable[[], bool] = lambda: True):
        self.paths = paths
        self.alive = alive
        self._handle: IO[str] | None = None
        self._unlocked = False  # held on a home without a lock

    @property
    def held(self) -> bool:
        return self._handle is not None or self._unlocked

    def acquire(self) -> None:
        """Take the lock, or raise :class:`ApplicationRunningError` naming the holder."""
        if self.held:
            return
        lock_path = self.paths.lock
        if lock_path is None:
            self._unlocked = True
            return
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(lock_path, "a+")  # noqa: SIM115 - held until release()
        if not _try_lock(handle):
            holder = InstanceLock._held.get(lock_path)
            if holder is not None and holder is not self and not holder.alive():
                holder.release()
            if not _try_lock(handle):
                handle.close()
                instance = running_instance(self.paths) or Instance(None, None)
                raise ApplicationRunningError(
                    f"Application '{self.paths.application_id}' is already running ({instance})", instance
                )
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps({"pid": os.getpid(), "since": time.strftime("%Y-%m-%d %H:%M:%S")}))
        handle.flush()
        self._handle = handle
        InstanceLock._held[lock_path] = self

    def release(self) -> None:
        handle, self._handle = self._handle, None
        self._unlocked = False
        if handle is None:
            return
        if InstanceLock._held.get(self.paths.lock) is self:
            del InstanceLock._held[self.paths.lock]
        with contextlib.suppress(OSError):
            handle.seek(0)
            handle.truncate()
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _try_lock(handle: IO[str], attempts: int = 3) -> bool:
    """The lock, without waiting for a holder (tried a few times: a reader of the
    holder's pid holds a shared lock for a moment)."""
    for attempt in range(attempts):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if attempt + 1 < attempts:
                time.sleep(0.05)
            continue
        return True
    return False


def running_instance(paths: AppPaths) -> Instance | None:
    """The instance running the application (holding its lock), or None (always on a
    home without a lock)."""
    if paths.lock is None:
        return None
    try:
        handle = open(paths.lock)  # noqa: SIM115 - closed below
    except FileNotFoundError:
        return None
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = json.loads(handle.read() or "{}")
            except json.JSONDecodeError:
                holder = {}
            return Instance(holder.get("pid"), holder.get("since"))
        fcntl.flock(handle, fcntl.LOCK_UN)
        return None


# ---------------------------------------------------------------------- reset
def reset_application(application_id: str, home: str | os.PathLike[str] | Location | None = None) -> bool:
    """Delete everything ``application_id`` keeps (checkpoint, state stores, their
    changelogs and snapshots, materialized tables, its state partition count), so that
    it starts over from the beginning of its source topics, as Kafka's
    ``kafka-streams-application-reset`` resets an application. Output topics and the
    processing log are kept. False when there was nothing to delete; refused while an
    instance runs (:class:`ApplicationRunningError`).

    >>> reset_application("revenue", home="/tmp/ts")              # doctest: +SKIP
    True
    """
    paths = AppPaths.of(application_id, home)
    if not paths.root.exists():
        return False
    lock = InstanceLock(paths)
    try:
        lock.acquire()
    except ApplicationRunningError as err:
        raise ApplicationRunningError(
            f"Application '{application_id}' is running ({err.instance}); stop it before resetting it",
            err.instance,
        ) from None
    try:
        remove_tree(paths.root)
    finally:
        lock.release()
    return True


# ---------------------------------------------------------------------- describe
@dataclass(frozen=True)
class StorePartition:
    """The files of one (store, state partition): its changelogs (count and bytes), the
    batches it has snapshots of, and whether its live database is there."""

    store: str
    partition: int
    changelogs: int
    changelog_bytes: int
    snapshots: tuple[int, ...]
    local: bool


@dataclass(frozen=True)
class ApplicationDescription:
    """What an application's files say about it (read without Spark).

    ``last_batch``: the last batch the checkpoint records as done; ``planned_batch``:
    the last one planned (later than ``last_batch`` when a run stopped in the middle of
    a batch, which its next start finishes first). ``problems``: damaged files found
    (``app.json``, the checkpoint files read at start), one error message each.
    """

    application_id: str
    root: Durable
    partitions: int | None
    run: str | None
    last_batch: int | None
    planned_batch: int | None
    running: Instance | None
    stores: tuple[StorePartition, ...]
    tables: tuple[str, ...]
    problems: tuple[str, ...] = ()

    @property
    def store_names(self) -> list[str]:
        return sorted({s.store for s in self.stores})


def list_applications(home: str | os.PathLike[str] | Location | None = None) -> list[str]:
    """The ids of the applications under ``home``."""
    apps = ts_config.home(home) / "apps"
    if not apps.is_dir():
        return []
    return sorted(p.name for p in apps.iterdir() if p.is_dir())


def describe_application(
    application_id: str, home: str | os.PathLike[str] | Location | None = None
) -> ApplicationDescription:
    """What the files of ``application_id`` say about it: state partitions, run id,
    last batch, whether an instance runs, its stores' files and its materialized tables,
    and the damaged files Spark or the application would stop at.

    >>> describe_application("revenue", "/tmp/ts").last_batch     # doctest: +SKIP
    4
    """
    paths = AppPaths.of(application_id, home)
    if not paths.root.is_dir():
        raise ApplicationError(f"No application '{application_id}' in {ts_config.home(home)}")
    problems = []
    try:
        meta = paths.read_meta() or {}
    except DamagedStateError as err:
        meta = {}
        problems.append(str(err))
    try:
        paths.check_checkpoint()
    except DamagedStateError as err:
        problems.append(str(err))
    committed, planned = paths.batches("commits"), paths.batches("offsets")
    layout = paths.layout
    stores = []
    for store in _subdirs(layout.durable_dir) | _subdirs(layout.working_dir):
        partitions = _subdirs(layout.durable_dir / store) | _subdirs(layout.working_dir / store)
        for partition in sorted(int(p) for p in partitions if p.isdigit()):
            files = StoreFiles(layout, store, partition)
            changelogs = files.changelogs().values()
            stores.append(
                StorePartition(
                    store,
                    partition,
                    len(changelogs),
                    sum(p.stat().st_size for p in changelogs),
                    tuple(sorted(v.batch for v in files.snapshots())),
                    layout.db_dir(store, partition).is_dir(),
                )
            )
    return ApplicationDescription(
        application_id,
        paths.root,
        meta.get("partitions"),
        meta.get("run"),
        committed[-1] if committed else None,
        planned[-1] if planned else None,
        running_instance(paths),
        tuple(sorted(stores, key=lambda s: (s.store, s.partition))),
        tuple(sorted(_subdirs(paths.tables))),
        tuple(problems),
    )


def _subdirs(directory: Durable) -> set[str]:
    if isinstance(directory, Path) and not directory.is_dir():
        return set()
    return {p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith(".")}

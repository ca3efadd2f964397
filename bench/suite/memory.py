"""Peak memory of every process of a run: this Python driver, the JVMs and Python workers
under it, and the processes of peers run in their own interpreters. The kernel keeps each
process's peak resident set (``VmHWM`` in ``/proc/<pid>/status``) while it lives; a
sampler thread reads it for every descendant every half second, so a worker that exits
between two samples is missed only for its last half second.

The peaks of the whole run include what the harness does between the systems' phases in
this same Python process and JVM (data generated, results read back and checked against
DuckDB, the Spark peers). :meth:`PeakMemory.running` tells them apart: while a system runs,
its processes' peaks are kept for it, from the peaks the kernel was told to start again
from (``/proc/<pid>/clear_refs``) when the system began, once this process had given back
the memory it had freed. What the harness still holds (every record written, for the
checks) stays in our Python driver's figure."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

# The kinds of process each system runs (the harness's Python process is our driver).
SYSTEM_KINDS = {
    "tablestream": ("driver JVM", "Python driver", "Python workers"),
    "flink": ("flink JVM", "flink Python driver", "flink Python workers"),
}


def _status(pid: int) -> dict[str, str]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value.strip()
    return fields


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _kind(pid: int, parent_kind: str | None) -> str | None:
    try:
        exe = os.path.basename(os.readlink(f"/proc/{pid}/exe"))
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    if exe.startswith("java"):
        # Flink's JVM by its jars too: one its Python process left shutting down is
        # adopted by an ancestor of another kind.
        if (parent_kind is not None and parent_kind.startswith("flink")) or b".venv-flink" in cmdline:
            return "flink JVM"
        if b".venv-sdp" in cmdline:
            return "sdp JVM"
        return "driver JVM"
    if exe.startswith("python"):
        if parent_kind is not None and parent_kind.startswith("sdp"):
            return "sdp Python"
        if parent_kind in ("driver JVM", "Python workers"):
            return "Python workers"
        if parent_kind == "flink JVM":
            return "flink Python workers"
        if b".venv-flink" in cmdline:
            return "flink Python driver"
        return None  # a process of no kind measured (a tool the run starts)
    return None


def running(memory: PeakMemory | None, system: str):
    """``memory.running(system)``; nothing when no memory is measured."""
    return contextlib.nullcontext() if memory is None else memory.running(system)


def _release_freed_memory() -> None:
    """Give the memory this process has freed back to the system (Python's garbage,
    Arrow's pool, the C heap), so that a system's phase does not begin with what the
    harness freed still resident (0.05-0.3 GB at the start of W3's phases, measured)."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _command(pid: int) -> str:
    """The start of a process's command line."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:80].strip()
    except OSError:
        return "?"


class PeakMemory:
    """The highest ``VmHWM`` (MiB) per kind of process, and the sum of the peaks of a
    kind's processes alive at once (several Python workers)."""

    def __init__(self, interval: float = 0.5):
        self.interval = interval
        self.peaks: dict[str, float] = {}
        # The processes of each kind at its peak: (pid, command line, MiB), to tell a peak
        # of one process from several alive at once.
        self.peak_processes: dict[str, list[tuple[int, str, float]]] = {}
        # Per system of :data:`SYSTEM_KINDS`: each of its kinds' peak while it ran.
        self.while_running: dict[str, dict[str, float]] = {}
        self._system: str | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peak-memory", daemon=True)

    def __enter__(self) -> PeakMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    @contextlib.contextmanager
    def running(self, system: str) -> Iterator[None]:
        """While ``system`` (a key of :data:`SYSTEM_KINDS`) runs: every measured process's
        peak starts again from its resident set (after a last sample for the whole run's
        peaks), and the peaks of the system's kinds are kept for it."""
        _release_freed_memory()
        with self._lock:
            for pid in self._sample():
                with contextlib.suppress(OSError):
                    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS
            self._system = system
        try:
            yield
        finally:
            with self._lock:
                self._sample()
                self._system = None

    def sample(self) -> None:
        with self._lock:
            self._sample()

    def _sample(self) -> list[int]:
        """Takes a sample; returns the processes measured."""
        me = os.getpid()
        tree = _children()
        driver = int(_status(me)["VmHWM"].split()[0]) / 1024
        totals: dict[str, float] = {"Python driver": driver}
        members: dict[str, list[tuple[int, str, float]]] = {"Python driver": [(me, _command(me), driver)]}
        stack = [(child, "Python driver") for child in tree.get(me, [])]
        while stack:
            pid, parent_kind = stack.pop()
            kind = _kind(pid, parent_kind)
            if kind is not None:
                try:
                    mib = int(_status(pid)["VmHWM"].split()[0]) / 1024
                except (OSError, KeyError):
                    continue
                totals[kind] = totals.get(kind, 0.0) + mib
                members.setdefault(kind, []).append((pid, _command(pid), mib))
            stack += [(child, kind or parent_kind) for child in tree.get(pid, [])]
        for kind, mib in totals.items():
            if mib > self.peaks.get(kind, 0.0):
                self.peaks[kind] = mib
                self.peak_processes[kind] = members[kind]
        if self._system is not None:
            kept = self.while_running.setdefault(self._system, {})
            for kind in SYSTEM_KINDS[self._system]:
                if totals.get(kind, 0.0) > kept.get(kind, 0.0):
                    kept[kind] = totals[kind]
        return [pid for kind_members in members.values() for pid, _command, _mib in kind_members]

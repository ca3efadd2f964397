"""Peak memory of every process of a run: this Python driver, the JVMs and Python workers
under it, and the processes of peers run in their own interpreters. The kernel keeps each
process's peak resident set (``VmHWM`` in ``/proc/<pid>/status``) while it lives; a
sampler thread reads it for every descendant every half second, so a worker that exits
between two samples is missed only for its last half second."""

from __future__ import annotations

import os
import threading
from pathlib import Path


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

    def sample(self) -> None:
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

"""What a run prints: a JSON line per measurement as soon as it is made, then a table."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

SYSTEM = "tablestream"


@dataclass
class Timing:
    """``seconds`` to process ``records`` in one phase of a workload; ``validated``: the
    result was checked against DuckDB's (exactly), ``None`` when the phase leaves no
    result of its own (a steady batch, checked with the phase's last one)."""

    workload: str
    phase: str
    system: str
    records: int
    seconds: float
    validated: bool | None = None
    note: str = ""

    @property
    def per_record(self) -> float:
        return self.seconds / max(self.records, 1)


class Report:
    def __init__(self, out=sys.stdout):
        self.out = out
        self.ours: dict[tuple[str, str], Timing] = {}
        self.lines: list[dict] = []

    def _emit(self, line: dict) -> None:
        self.lines.append(line)
        print(json.dumps(line), file=self.out, flush=True)

    def measured(self, timing: Timing) -> None:
        """Our time in a phase: a line of its own (peer ``null``)."""
        self.ours[timing.workload, timing.phase] = timing
        self._emit(self._line(timing, None))

    def compared(self, peer: Timing) -> None:
        """A peer's time in a phase we measured: ``ratio`` = the peer's time over ours,
        per record (the same records but for a peer measured on a sample)."""
        self._emit(self._line(self.ours[peer.workload, peer.phase], peer))

    @staticmethod
    def _line(ours: Timing, peer: Timing | None) -> dict:
        line = {
            "workload": ours.workload,
            "phase": ours.phase,
            "system": SYSTEM,
            "peer": None if peer is None else peer.system,
            "records": ours.records,
            "seconds": round(ours.seconds, 3),
            "ratio": None if peer is None else round(peer.per_record / ours.per_record, 2),
            "validated": ours.validated,
        }
        if peer is not None:
            line.update(peer_records=peer.records, peer_seconds=round(peer.seconds, 3),
                        peer_validated=peer.validated)
            if peer.note:
                line["note"] = peer.note
        elif ours.note:
            line["note"] = ours.note
        return line

    def driver_memory(self, workload: str, batch: int, samples: dict[str, list]) -> None:
        """The driver's memory sampled along consecutive steady batches (see
        :func:`~suite.workloads.driver_memory`), with its growth from the first sample to
        the last."""
        growth = {k: round(v[-1] - v[0], 1) for k, v in samples.items() if k != "after"}
        if "harness_logs_mib" in growth:  # the Python driver's own growth
            growth["python_rss_less_logs_mib"] = round(growth["python_rss_mib"] - growth["harness_logs_mib"], 1)
        self._emit({"driver_memory": {"workload": workload, "batch": batch, **samples, "growth_mib": growth}})

    def memory(
        self, peaks: dict[str, float], processes: dict[str, list[tuple[int, str, float]]] | None = None,
        while_running: dict[str, dict[str, float]] | None = None,
    ) -> None:
        """Each kind's peak over the whole run, and (``peak_processes``) the processes that
        made it; with ``while_running`` (see :meth:`~suite.memory.PeakMemory.running`),
        a second line: each system's kinds' peaks while it ran, their sum, and Flink's sum
        over ours as ``ratio`` (1 or more: ours at most Flink's)."""
        line = {"peak_memory_mib": {kind: round(mib, 1) for kind, mib in sorted(peaks.items())}}
        if processes:
            line["peak_processes"] = {
                kind: [[pid, command, round(mib, 1)] for pid, command, mib in members]
                for kind, members in sorted(processes.items())
            }
        self._emit(line)
        if while_running:
            kept = {
                system: {kind: round(mib, 1) for kind, mib in sorted(kinds.items())}
                for system, kinds in sorted(while_running.items())
            }
            totals = {system: round(sum(kinds.values()), 1) for system, kinds in kept.items()}
            ours, flink = totals.get(SYSTEM), totals.get("flink")
            self._emit({
                "peak_memory_while_running_mib": kept,
                "total_mib": totals,
                "ratio": round(flink / ours, 2) if ours and flink else None,
            })

    def table(self, peaks: dict[str, float], while_running: dict[str, dict[str, float]] | None = None) -> None:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="tablestream against its peers (ratio = peer time / ours, per record)")
        for column in ("workload", "phase", "records", "seconds", "records/s", "peer", "peer s", "ratio"):
            table.add_column(column, justify="left" if column in ("workload", "phase", "peer") else "right")
        for line in self.lines:
            if "workload" not in line:
                continue
            rate = line["records"] / line["seconds"] if line["seconds"] else float("inf")
            table.add_row(
                line["workload"], line["phase"], f"{line['records']:,}", f"{line['seconds']:.3f}",
                f"{rate:,.0f}", line["peer"] or "", "" if line["peer"] is None else f"{line['peer_seconds']:.3f}",
                "" if line["ratio"] is None else f"{line['ratio']:.2f}",
            )
        memory = Table(title="peak memory (VmHWM, MiB; a kind's processes alive at once summed)")
        memory.add_column("process")
        memory.add_column("whole run", justify="right")
        systems = sorted(while_running or {})
        for system in systems:
            memory.add_column(f"while {system} ran", justify="right")
        for kind, mib in sorted(peaks.items()):
            during = [(while_running or {})[system].get(kind) for system in systems]
            memory.add_row(kind, f"{mib:,.0f}", *("" if m is None else f"{m:,.0f}" for m in during))
        if systems:
            memory.add_row("all", "", *(f"{sum(while_running[system].values()):,.0f}" for system in systems))
        console = Console(file=self.out, width=140)
        console.print(table)
        console.print(memory)
        for line in self.lines:
            if "driver_memory" in line:
                found = line["driver_memory"]
                drift = Table(title=f"driver memory along {found['after'][-1]} batches of {found['batch']:,} "
                                    f"changes ({found['workload']}, MiB)")
                drift.add_column("after batch", justify="right")
                columns = [c for c in ("jvm_heap_mib", "jvm_rss_mib", "python_rss_mib", "harness_logs_mib") if c in found]
                for column in columns:
                    drift.add_column(column.removesuffix("_mib").replace("_", " "), justify="right")
                for i, after in enumerate(found["after"]):
                    drift.add_row(str(after), *(f"{found[c][i]:,.1f}" for c in columns))
                console.print(drift)

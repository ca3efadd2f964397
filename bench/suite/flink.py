"""The ``flink`` peer: Flink SQL through PyFlink (PyPI's apache-flink), in a venv of its
own (``bench/.venv-flink``, made on first use), at parallelism 1 and 2. The records a
workload wrote are given to Flink as CSV files, one per topic (see ``flink_job.py``);
its results, Debezium-JSON changelogs, are folded into rows and checked against DuckDB
as ours are."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as csv

from .flink_job import MONITOR
from .memory import PeakMemory, running
from .oracle import Log, check, query
from .report import Report, Timing

VENV = Path(__file__).resolve().parent.parent / ".venv-flink"
FLINK = "apache-flink==2.3.0"  # runs on Java 17 and Python 3.11
JOB = Path(__file__).resolve().parent / "flink_job.py"
SETTLE_SECONDS = 600  # at most, for a steady job to reach a state
VALUES = {
    "w1": "json_extract_string(value, '$.grp'), CAST(json_extract(value, '$.amount') AS BIGINT)",
    "w2": "json_extract_string(value, '$.grp'), CAST(json_extract(value, '$.amount') AS BIGINT)",
    "orders": "json_extract_string(value, '$.product'), CAST(json_extract(value, '$.qty') AS BIGINT)",
    "products": "json_extract_string(value, '$.name'), CAST(json_extract(value, '$.price') AS BIGINT)",
    "customers": "json_extract_string(value, '$.name'), json_extract_string(value, '$.city')",
    "clicks": "CAST(json_extract(value, '$.amount') AS BIGINT)",
}


def python() -> Path:
    """The Flink venv's interpreter, the venv made first if it is not there."""
    interpreter = VENV / "bin" / "python"
    if not (VENV / ".installed").exists():
        print(f"installing {FLINK} into {VENV} (once)", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(interpreter), "-m", "pip", "install", "-q", FLINK], check=True)
        (VENV / ".installed").touch()
    return interpreter


def fold(directory: Path, columns: list[str]) -> pa.Table:
    """A Debezium-JSON changelog (every file under ``directory``, in-progress part files
    included) as the rows it leaves: each ``after`` row counted in, each ``before`` row
    counted out; the order of the files does not matter."""
    counts: collections.Counter = collections.Counter()
    for path in sorted(p for p in directory.rglob("*") if p.is_file() and not p.name.endswith(".crc")):
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            change = json.loads(line)
            if change.get("before"):
                counts[tuple(change["before"][c] for c in columns)] -= 1
            if change.get("after"):
                counts[tuple(change["after"][c] for c in columns)] += 1
    negative = [row for row, n in counts.items() if n < 0]
    if negative:
        raise AssertionError(f"Flink's changelog under {directory} retracts rows it never wrote: {negative[:3]}")
    rows = [row for row, n in counts.items() for _ in range(n)]
    return pa.table({c: [row[i] for row in rows] for i, c in enumerate(columns)})


class Flink:
    def __init__(self, home: Path, report: Report, parallelisms=(1, 2), memory: PeakMemory | None = None):
        self.home, self.report, self.parallelisms = home, report, parallelisms
        self.python = python()
        self.jobs = 0
        self.memory = memory  # a job's processes' peak memory is kept for Flink

    def _inputs(self, logs: dict[str, Log]) -> dict[str, str]:
        paths = {}
        for topic, log in logs.items():
            self.jobs += 1
            path = self.home / f"input-{self.jobs}" / f"{topic}.csv"
            path.parent.mkdir(parents=True)
            _write_input(topic, log, path)
            paths[topic] = str(path)
        return paths

    def _job(self, workload: str, inputs: dict[str, str], parallelism: int, expected: dict[str, pa.Table]) -> float:
        self.jobs += 1
        output = self.home / f"output-{self.jobs}"
        spec = self.home / f"spec-{self.jobs}.json"
        spec.write_text(json.dumps({"workload": workload, "parallelism": parallelism, "inputs": inputs,
                                    "output": str(output)}))
        with running(self.memory, "flink"):
            run = subprocess.run([str(self.python), str(JOB), str(spec)], capture_output=True, text=True, check=False)
        if run.returncode != 0:
            raise RuntimeError(f"Flink job {workload} (parallelism {parallelism}) failed:\n{run.stderr[-4000:]}")
        seconds = json.loads(run.stdout.strip().splitlines()[-1])["seconds"]
        for name, table in expected.items():
            check(f"{workload} flink-p{parallelism} {name}", fold(output / name, table.column_names), table)
        return seconds

    def run(self, workload: str, phase: str, logs: dict[str, Log], records: int, expected: dict[str, pa.Table]) -> None:
        """Our phase against one Flink job over the same records, at each parallelism."""
        inputs = self._inputs(logs)
        for parallelism in self.parallelisms:
            seconds = self._job(workload, inputs, parallelism, expected)
            self.report.compared(Timing(workload, phase, f"flink-p{parallelism}", records, seconds, validated=True))

    def catch_up(self, workload: str, before: dict[str, Log], after: dict[str, Log], records: int,
                 expected: dict[str, pa.Table]) -> None:
        """Our catch-up against Flink's time for the backlog: a job over the records
        before it and the backlog, less a job over the records before it (a Flink job
        over files starts from empty state; the difference is what the backlog adds)."""
        first, full = self._inputs(before), self._inputs(after)
        for parallelism in self.parallelisms:
            without = self._job(workload, first, parallelism, {})
            seconds = self._job(workload, full, parallelism, expected)
            self.report.compared(Timing(workload, "catch-up", f"flink-p{parallelism}", records, seconds - without,
                                        validated=True, note=f"{seconds:.1f} s with the records before, less {without:.1f} s"))

    def steady(self, workload: str, states: list[dict[str, Log]], expected: Callable[[dict[str, Log]], dict[str, pa.Table]],
               batch: int) -> None:
        """Our steady batches against a running Flink job's, at each parallelism:
        ``states`` are the logs before our first timed batch and after each. The job
        starts from the records of the first (untimed); each batch's records then reach
        a directory it watches as one file per topic, timed from the file's appearance
        until the job's printed changes leave exactly the rows DuckDB gives for that
        state."""
        results = [expected(state) for state in states]
        for parallelism in self.parallelisms:
            with running(self.memory, "flink"):
                times = self._steady_job(workload, states, results, parallelism)
            self.report.compared(Timing(workload, "steady", f"flink-p{parallelism}", batch, statistics.median(times),
                                        validated=True, note=f"median of {len(times)} batches; Flink's default "
                                                             f"settings, new files looked for every {MONITOR}"))

    def _steady_job(self, workload: str, states: list[dict[str, Log]], results: list[dict[str, pa.Table]],
                    parallelism: int) -> list[float]:
        self.jobs += 1
        watched = {topic: self.home / f"watched-{self.jobs}" / topic for topic in states[0]}
        for topic, directory in watched.items():
            directory.mkdir(parents=True)
            _write_input(topic, states[0][topic], directory / "0.csv")
        spec = self.home / f"spec-{self.jobs}.json"
        spec.write_text(json.dumps({"workload": workload, "parallelism": parallelism, "steady": True,
                                    "inputs": {topic: str(d) for topic, d in watched.items()}}))
        errors = (self.home / f"job-{self.jobs}.err").open("w")
        job = subprocess.Popen([str(self.python), str(JOB), str(spec)], stdout=subprocess.PIPE, stderr=errors,
                               text=True, start_new_session=True)
        try:
            changes = PrintedChanges(job.stdout)
            changes.settle(results[0], f"{workload} flink-p{parallelism}: the state before the batches", errors.name)
            times = []
            for i, (before, after) in enumerate(zip(states, states[1:], strict=False), 1):
                staged = []
                for topic, directory in watched.items():
                    records = after[topic].since(before[topic])
                    if len(records):
                        hidden = directory / f".{i}.csv"  # Flink passes over hidden files
                        _write_input(topic, records, hidden, offset=len(before[topic]))
                        staged.append((hidden, directory / f"{i}.csv"))
                changes.expect(results[i])
                began = time.perf_counter()
                for hidden, final in staged:
                    hidden.rename(final)
                changes.settle(None, f"{workload} flink-p{parallelism}: batch {i}", errors.name)
                times.append(time.perf_counter() - began)
            return times
        finally:
            os.killpg(job.pid, signal.SIGTERM)  # the job's process and Flink's JVM, its child
            try:
                job.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(job.pid, signal.SIGKILL)
                job.wait()
            _await_group(job.pid)
            errors.close()


def _await_group(group: int, seconds: float = 30.0) -> None:
    """Wait until every process of a process group has ended (Flink's JVM outlives its
    Python process for seconds after SIGTERM, and would run beside the next phase), then
    kill what is left."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGKILL)


def _write_input(topic: str, log: Log, path: Path, offset: int = 0) -> None:
    """A topic's records as a Flink job reads them: ``seq`` (from ``offset``), the key,
    the value's fields and whether it is a tombstone, one CSV row each."""
    rows = query(f"SELECT seq + {offset}, key, {VALUES[topic]}, value IS NULL FROM records_{topic} ORDER BY seq",
                 **{topic: log})
    csv.write_csv(rows, path, csv.WriteOptions(include_header=False))


class PrintedChanges:
    """A steady job's results as its ``print`` sinks write them (``<result>> +I[a, 1]``,
    ``<result>:<subtask>> -U[...]``), folded as they arrive by a thread of their own,
    and how many rows differ from the rows expected."""

    def __init__(self, lines) -> None:
        self.rows: collections.Counter = collections.Counter()  # (result, fields) -> count
        self.expected: collections.Counter = collections.Counter()
        self.differing = 0
        self.ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._fold, args=(lines,), daemon=True).start()

    def _fold(self, lines) -> None:
        for line in lines:
            change = printed_change(line)
            if change is None:
                continue
            key, delta = change
            with self._changed:
                wanted = self.expected[key]
                before = self.rows[key]
                self.rows[key] = before + delta
                self.differing += (before + delta != wanted) - (before != wanted)
                if self.differing == 0:
                    self._changed.notify_all()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def expect(self, tables: dict[str, pa.Table]) -> None:
        """The rows a state has: each result's rows as the job prints them."""
        expected = collections.Counter(
            (name, tuple("null" if v is None else str(v) for v in row))
            for name, table in tables.items() for row in zip(*(c.to_pylist() for c in table.columns), strict=True)
        )
        with self._changed:
            self.expected = expected
            self.differing = sum(self.rows[k] != expected[k] for k in set(self.rows) | set(expected))

    def settle(self, tables: dict[str, pa.Table] | None, what: str, errors: str) -> None:
        """Wait until the rows are the ones expected (``tables``, or as expected last)."""
        if tables is not None:
            self.expect(tables)
        with self._changed:
            self._changed.wait_for(lambda: self.differing == 0 or self.ended, SETTLE_SECONDS)
            if self.differing:
                wrong = sorted(k for k in set(self.rows) | set(self.expected) if self.rows[k] != self.expected[k])[:3]
                raise AssertionError(f"{what}: {self.differing} rows differ from DuckDB's, e.g. {wrong}"
                                     + (f"; the job ended (see {errors})" if self.ended else ""))


def printed_change(line: str) -> tuple[tuple[str, tuple[str, ...]], int] | None:
    """``((result, fields), +1 or -1)`` of a line a ``print`` sink wrote; None for
    other output.

    >>> printed_change("enriched:1> -U[o7, 3, product 2, 10]\\n")
    (('enriched', ('o7', '3', 'product 2', '10')), -1)
    """
    sink, marker, row = line.rstrip("\n").partition("> ")
    if not marker or row[:2] not in ("+I", "-U", "+U", "-D") or row[2:3] != "[" or not row.endswith("]"):
        return None
    return (sink.split(":")[0], tuple(row[3:-1].split(", "))), (1 if row[0] == "+" else -1)

"""The ``flink`` peer: Flink SQL through PyFlink (PyPI's apache-flink), in a venv of its
own (``bench/.venv-flink``, made on first use), at parallelism 1 and 2. The records a
workload wrote are given to Flink as CSV files, one per topic (see ``flink_job.py``);
its results, Debezium-JSON changelogs, are folded into rows and checked against DuckDB
as ours are."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as csv

from .oracle import Log, check, query
from .report import Report, Timing

VENV = Path(__file__).resolve().parent.parent / ".venv-flink"
FLINK = "apache-flink==2.3.0"  # runs on Java 17 and Python 3.11
JOB = Path(__file__).resolve().parent / "flink_job.py"
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
    def __init__(self, home: Path, report: Report, parallelisms=(1, 2)):
        self.home, self.report, self.parallelisms = home, report, parallelisms
        self.python = python()
        self.jobs = 0

    def _inputs(self, logs: dict[str, Log]) -> dict[str, str]:
        paths = {}
        for topic, log in logs.items():
            self.jobs += 1
            path = self.home / f"input-{self.jobs}" / f"{topic}.csv"
            path.parent.mkdir(parents=True)
            rows = query(f"SELECT seq, key, {VALUES[topic]}, value IS NULL FROM records_{topic} ORDER BY seq",
                         **{topic: log})
            csv.write_csv(rows, path, csv.WriteOptions(include_header=False))
            paths[topic] = str(path)
        return paths

    def _job(self, workload: str, inputs: dict[str, str], parallelism: int, expected: dict[str, pa.Table]) -> float:
        self.jobs += 1
        output = self.home / f"output-{self.jobs}"
        spec = self.home / f"spec-{self.jobs}.json"
        spec.write_text(json.dumps({"workload": workload, "parallelism": parallelism, "inputs": inputs,
                                    "output": str(output)}))
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

"""The ``sdp`` peer: Spark Declarative Pipelines (``spark-pipelines run``, pyspark 4.2.0
with its Spark Connect client, in ``bench/.venv-sdp``, made on first use). A pipeline
per workload: a streaming table appending each topic's records (Parquet files the
harness adds, one per update), a materialized view of each table topic's latest row per
key (tombstones deleting it), and a materialized view per result, in the same SQL as
the Flink peer's. ``spark-pipelines run`` once per update; its time is the run's own,
from the CLI's "Starting run" to "Run is COMPLETED" (whole seconds), the Spark Connect
server's start left out. Results are read from the pipeline's tables and checked
against DuckDB. (Auto CDC flows cannot write Delta in Spark 4.2, and the pipeline's
tables are Parquet: the latest row per key is a materialized view.)"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .flink import VALUES
from .flink_job import FIELDS, RESULTS, STREAMS
from .oracle import Log, check, query
from .report import Report, Timing

VENV = Path(__file__).resolve().parent.parent / ".venv-sdp"
PYSPARK = "pyspark[pipelines]==4.2.0"
# "2026-11-26 21:56:17: Starting run..." ... "2026-11-26 21:57:04: Run is COMPLETED."
_STAMP = r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d): "


def python() -> Path:
    interpreter = VENV / "bin" / "python"
    if not (VENV / ".installed").exists():
        print(f"installing {PYSPARK} into {VENV} (once)", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(interpreter), "-m", "pip", "install", "-q", PYSPARK, "pandas<3"], check=True)
        (VENV / ".installed").touch()
    return interpreter


def _pipeline(workload: str, topics: list[str], inputs: Path) -> tuple[str, str]:
    """The pipeline's Python file (streaming tables) and SQL file (views)."""
    tables = []
    for topic in topics:
        schema = f"seq BIGINT, k STRING, {FIELDS[topic]}, deleted BOOLEAN"
        tables.append(textwrap.dedent(f"""
            @dp.table(name="{topic}_log")
            def {topic}_log():
                return spark.readStream.format("parquet").schema("{schema}").load("{inputs / topic}")
            """))
    views = []
    for topic in topics:
        columns = [f.split()[0] for f in FIELDS[topic].split(", ")]
        if topic in STREAMS:
            views.append(f"CREATE MATERIALIZED VIEW {topic} AS SELECT k, {', '.join(columns)} FROM {topic}_log;")
        else:
            fields = ", ".join(f"v.{c} AS {c}" for c in columns)
            views.append(
                f"CREATE MATERIALIZED VIEW {topic} AS SELECT k, {fields} FROM (SELECT k, "
                f"max_by(struct({', '.join(columns)}, deleted), seq) AS v FROM {topic}_log GROUP BY k) "
                "WHERE NOT v.deleted;"
            )
    for name, (columns, sql) in RESULTS[workload].items():
        names = ", ".join(c.split()[0].strip("`") for c in columns.split(", "))
        views.append(f"CREATE MATERIALIZED VIEW out_{name} AS SELECT * FROM ({sql}) AS t({names});")
    python_file = "from pyspark import pipelines as dp\n" + "".join(tables)
    return python_file, "\n".join(views) + "\n"


class Sdp:
    def __init__(self, home: Path, report: Report):
        self.home, self.report = home, report
        self.python = python()
        self.written: dict[tuple[str, str], int] = {}

    def _project(self, workload: str, topics: list[str]) -> Path:
        project = self.home / workload
        if not project.exists():
            (project / "transformations").mkdir(parents=True)
            (project / "storage").mkdir()
            (project / "spark-pipeline.yml").write_text(
                f"name: {workload.lower()}\nstorage: file://{project / 'storage'}\n"
                "libraries:\n  - glob:\n      include: transformations/**\n"
            )
            python_file, sql_file = _pipeline(workload, topics, project / "inputs")
            (project / "transformations" / "tables.py").write_text(python_file)
            (project / "transformations" / "views.sql").write_text(sql_file)
        return project

    def _add_records(self, project: Path, workload: str, logs: dict[str, Log]) -> None:
        """The records of each topic not given to the pipeline yet, as one Parquet file."""
        for topic, log in logs.items():
            start = self.written.get((workload, topic), 0)
            rows = query(f"SELECT seq, key AS k, {VALUES[topic]}, value IS NULL AS deleted FROM records_{topic} "
                         f"WHERE seq >= {start} ORDER BY seq", **{topic: log})
            rows = rows.rename_columns(["seq", "k", *[f.split()[0] for f in FIELDS[topic].split(", ")], "deleted"])
            directory = project / "inputs" / topic
            directory.mkdir(parents=True, exist_ok=True)
            pq.write_table(rows, directory / f"part-{start:012d}.parquet")
            self.written[workload, topic] = start + rows.num_rows

    def update(self, workload: str, phase: str | None, logs: dict[str, Log], records: int,
               expected: dict[str, pa.Table] | None) -> float:
        """Give the pipeline the records written since its last update, run it once,
        check its results (``expected``) and report the run's time against our phase."""
        project = self._project(workload, list(logs))
        self._add_records(project, workload, logs)
        env = dict(os.environ, PYSPARK_PYTHON=str(self.python), PYSPARK_DRIVER_PYTHON=str(self.python),
                   SPARK_LOCAL_IP="127.0.0.1")
        env.pop("PYTHONPATH", None)
        # A persistent catalog (Hive's, a Derby metastore in the project): with the default
        # in-memory one, each run's new server forgets the tables and the second run fails
        # on their directories (LOCATION_ALREADY_EXISTS). A static setting: the spec's
        # configuration cannot set it (CANNOT_MODIFY_STATIC_CONFIG).
        command = [str(VENV / "bin" / "spark-pipelines"), "--conf", "spark.sql.catalogImplementation=hive", "run"]
        run = subprocess.run(command, cwd=project, env=env,
                             capture_output=True, text=True, check=False)
        stamps = {}
        for line in run.stdout.splitlines():
            found = re.match(_STAMP + r"(Starting run|Run is COMPLETED)", line)
            if found:
                stamps[found.group(2)] = datetime.datetime.fromisoformat(found.group(1))
        if run.returncode != 0 or len(stamps) != 2:
            raise RuntimeError(f"spark-pipelines run ({workload} {phase}) failed:\n{(run.stdout + run.stderr)[-4000:]}")
        seconds = (stamps["Run is COMPLETED"] - stamps["Starting run"]).total_seconds()
        if expected is not None:
            for name, table in expected.items():
                check(f"{workload} sdp {name}", pq.read_table(project / "spark-warehouse" / f"out_{name}"), table)
        if phase is not None:
            self.report.compared(Timing(workload, phase, "sdp", records, seconds, validated=expected is not None,
                                        note="spark-pipelines run, whole seconds"))
        return seconds

    def steady(self, workload: str, logs: dict[str, Log], produce, expected, batch: int) -> None:
        """After our steady batches: the pipeline brought up to date (untimed), then one
        batch of ``batch`` changes (written by ``produce``) in one timed update."""
        self.update(workload, None, logs, 0, expected())
        produce(batch)
        self.update(workload, "steady", logs, batch, expected())

"""Outputs written by the executors against outputs collected on the driver: a
bootstrap of ROWS records (every one an output record, plus an aggregation's
materialized table) and small batches after it, measured for two source trees
alternately in one run: the driver's peak memory (Python RSS, sampled; JVM heap, the
sum of the heap pools' peaks) and wall times.

usage: python bench/output_paths.py --before <commit> [--rows 1000000] [--small 10000] [--rounds 2]

Each measurement is a process of its own (a fresh JVM), on a copy of one prepared
input topic; the tree under test is the worktree's ``src``, the other ``git archive``
of ``--before``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

CUSTOMERS = 100_000
HERE = Path(__file__).resolve().parent


def _records(start: int, count: int):
    import numpy as np
    import pyarrow as pa

    ids = np.arange(start, start + count)
    keys = pa.array([f"o{i}".encode() for i in ids], pa.binary())
    values = pa.array(
        [f'{{"customer": "c{i % CUSTOMERS}", "amount": {i % 97}}}'.encode() for i in ids], pa.binary()
    )
    return pa.table({"key": keys, "value": values, "timestamp": pa.array(1_000 + ids, pa.int64())})


def prepare(home: Path, rows: int) -> None:
    from tablestream.storage.embedded import EmbeddedStore
    from tablestream.storage.topic import TopicConfig

    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("orders", partitions=2))
    for start in range(0, rows, 250_000):
        store.append("orders", _records(start, min(250_000, rows - start)))


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class _Peak:
    """The largest Python RSS while it runs (sampled every 20 ms)."""

    def __init__(self):
        self.peak = _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self):
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, _rss_mb())

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _jvm_heap_peak_mb(spark, reset: bool) -> float:
    jvm = spark.sparkContext._jvm  # noqa: SLF001 - the JVM's memory beans
    pools = jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    total = 0
    for pool in pools:
        if str(pool.getType().toString()) != "Heap memory":
            continue
        if reset:
            pool.resetPeakUsage()
        else:
            total += pool.getPeakUsage().getUsed()
    return total / 2**20


def measure(home: Path, rows: int, small: int) -> dict:
    from tablestream.dsl import StreamsBuilder
    from tablestream.runtime.app import Application
    from tablestream.spark import get_spark
    from tablestream.storage.embedded import EmbeddedStore

    spark = get_spark()
    store = EmbeddedStore(home)
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="customer STRING, amount BIGINT")
    orders.to("out")
    orders.group_by("customer").sum("amount", materialized_as="totals")
    app = Application(builder.build(), "bench", store=store, spark=spark, partitions=2)
    records = store.read_batch(spark, ["orders"])
    _jvm_heap_peak_mb(spark, reset=True)
    base = _rss_mb()
    with _Peak() as peak:
        started = time.perf_counter()
        app.process_batch(records, 0)
        bootstrap = time.perf_counter() - started
    result = {
        "bootstrap_s": bootstrap,
        "python_peak_mb": peak.peak - base,
        "jvm_heap_peak_mb": _jvm_heap_peak_mb(spark, reset=False),
        "out_records": sum(store.end_offsets("out").values()),
    }
    times = []
    for batch in range(1, 4):
        end = store.end_offsets("orders")
        store.append("orders", _records(rows + (batch - 1) * small, small))
        where = " OR ".join(f"(partition = {p} AND offset >= {o})" for p, o in end.items())
        started = time.perf_counter()
        app.process_batch(store.read_batch(spark, ["orders"]).where(where), batch)
        times.append(time.perf_counter() - started)
    result["small_batch_s"] = statistics.median(times)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", help="the commit to compare with")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--measure", help=argparse.SUPPRESS)
    parser.add_argument("--prepare", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.prepare:
        prepare(Path(args.prepare), args.rows)
        return
    if args.measure:
        print(json.dumps(measure(Path(args.measure), args.rows, args.small)))
        return
    work = Path(tempfile.mkdtemp(prefix="ts-output-bench-"))
    try:
        before = work / "before"
        before.mkdir()
        archive = subprocess.run(["git", "archive", args.before, "src"], cwd=HERE.parent, check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(before)], input=archive.stdout, check=True)
        trees = {"before": before / "src", "after": HERE.parent / "src"}
        prepared = work / "input"
        _run(trees["after"], ["--prepare", str(prepared), "--rows", str(args.rows)])
        results: dict[str, list[dict]] = {"before": [], "after": []}
        for round_ in range(args.rounds):
            for label in ("before", "after") if round_ % 2 == 0 else ("after", "before"):
                home = work / f"{label}-{round_}"
                shutil.copytree(prepared, home)
                out = _run(trees[label], ["--measure", str(home), "--rows", str(args.rows), "--small", str(args.small)])
                results[label].append(json.loads(out.strip().splitlines()[-1]))
                print(label, results[label][-1], flush=True)
                shutil.rmtree(home)
        for label, runs in results.items():
            summary = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
            print(f"{label}: {summary}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run(src: Path, arguments: list[str]) -> str:
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *arguments], env=env, check=True, capture_output=True, text=True
    ).stdout


if __name__ == "__main__":
    main()

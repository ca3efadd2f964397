"""tablestream measured the way users run it, against the engines they would pick instead
(``make bench``; the method and the figures: docs/performance.md).

Every workload runs through the public API (topics in the embedded store, an
``Application`` with default settings, ``run_until_caught_up()`` or a running query);
every result, ours and each peer's, is checked exactly against DuckDB over the same
generated records. The workloads run after each system's first query in the run's JVM
(``startup``: a small W2, timed apart). One JSON line per measurement: ``{"workload", "phase", "system",
"peer", "records", "seconds", "ratio", ...}`` (``seconds``: ours; ``ratio``: the peer's
time over ours per record, measured in the same run), then a table and the peak memory
of every process.

Peers: ``spark_batch`` (a plain Spark batch query for the same final result),
``recompute`` (that query once per micro-batch, against our steady batch),
``transform_with_state`` (the same per-key logic with Spark's transformWithState),
``flink`` (Flink SQL through PyFlink, parallelism 1 and 2, in bench/.venv-flink),
``sdp`` (Spark Declarative Pipelines, ``spark-pipelines run`` per update, in
bench/.venv-sdp).

usage: python bench/run.py [--scale N] [--quick] [--workloads W1,W2,W3,W4]
                           [--peers spark_batch,recompute,transform_with_state,flink,sdp]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from suite.memory import PeakMemory  # noqa: E402
from suite.report import Report  # noqa: E402
from suite.workloads import WORKLOADS, Bench, Sizes, startup  # noqa: E402

PEERS = ("spark_batch", "recompute", "transform_with_state", "flink", "sdp")
DEFAULT_PEERS = PEERS


def _names(text: str, known, what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown:
        raise SystemExit(f"unknown {what}: {', '.join(unknown)} (known: {', '.join(known)})")
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the data sizes (default 1)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (a check of the harness, no figures)")
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--peers", default=",".join(DEFAULT_PEERS))
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory (its path is printed)")
    args = parser.parse_args(argv)
    workloads = _names(args.workloads, WORKLOADS, "workload")
    peers = set(_names(args.peers, PEERS, "peer"))
    sizes = Sizes.quick() if args.quick else Sizes.default(args.scale)

    from tablestream.spark import get_spark

    home = Path(tempfile.mkdtemp(prefix="tablestream-bench-"))
    report = Report()
    try:
        with PeakMemory() as memory:
            spark = get_spark(app_name="tablestream-bench")
            flink = None
            if "flink" in peers:
                from suite.flink import Flink

                flink = Flink(home / "flink", report, parallelisms=(1,) if args.quick else (1, 2), memory=memory)
            sdp = None
            if "sdp" in peers:
                from suite.sdp import Sdp

                sdp = Sdp(home / "sdp", report)
            bench = Bench(spark, home, report, peers, sizes, flink, sdp, memory)
            began = time.perf_counter()
            startup(bench)
            for name in workloads:
                WORKLOADS[name](bench)
            spark.stop()
        report.memory(memory.peaks, memory.peak_processes, memory.while_running)
        report.table(memory.peaks, memory.while_running)
        print(f"{len(report.lines) - 1} measurements in {time.perf_counter() - began:.0f} s; load average "
              f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    finally:
        if args.keep:
            print(f"scratch directory: {home}")
        else:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

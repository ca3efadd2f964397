"""Scale benchmark: a table bootstrap of N records through an aggregation, and separately
through a foreign-key join, run as a user runs an application (topics in the embedded
store, an ``Application`` with default settings, ``run_until_caught_up()``), at a small
and a large size side by side in one run. For each it prints the driver's peak memory
(the Python process's peak RSS and the driver JVM's, from ``/proc/<pid>/status``
``VmHWM``) and the wall time per record, and the large run's ratios to the small one's.

Each run is a process of its own (a fresh driver, so its peaks are its own), timed
after the same topology has run over 20,000 records (a warm JVM); the data is written
by another process first.

usage: python bench/scale.py [--small 1000000] [--large 10000000] [--workloads agg,fk]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PARTITIONS = 4  # of the source topics
GROUPS = 10_000
PRODUCTS = 100_000
CHUNK = 1_000_000  # records written per append


def _keys(prefix: str, numbers: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pa.array(numbers).cast(pa.string()), "").cast(pa.binary())


def _json(parts: list) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "").cast(pa.binary())


def write_data(home: str, workload: str, records: int) -> None:
    """The topics of ``workload``: ``records`` changes to a table of ``records / 5`` keys
    (``agg``: value ``grp, amount``; ``fk``: orders ``product, qty`` and a products
    table of PRODUCTS rows)."""
    from tablestream.storage.embedded import EmbeddedStore
    from tablestream.storage.topic import TopicConfig

    store = EmbeddedStore(home)
    rng = np.random.default_rng(7)
    keys = max(records // 5, 1)
    if workload == "fk":
        store.create_topic(TopicConfig("products", partitions=PARTITIONS))
        numbers = np.arange(PRODUCTS)
        store.append("products", pa.table({
            "key": _keys("p", numbers),
            "value": _json(['{"name":"n', pa.array(numbers).cast(pa.string()), '","price":',
                            pa.array(rng.integers(1, 100, PRODUCTS)).cast(pa.string()), "}"]),
            "timestamp": pa.array(np.zeros(PRODUCTS, np.int64)),
        }))
    topic = "changes" if workload == "agg" else "orders"
    store.create_topic(TopicConfig(topic, partitions=PARTITIONS))
    for start in range(0, records, CHUNK):
        n = min(CHUNK, records - start)
        key = _keys("k", rng.integers(0, keys, n))
        if workload == "agg":
            value = _json(['{"grp":"g', pa.array(rng.integers(0, GROUPS, n)).cast(pa.string()),
                           '","amount":', pa.array(rng.integers(0, 1000, n)).cast(pa.string()), "}"])
        else:
            value = _json(['{"product":"p', pa.array(rng.integers(0, PRODUCTS, n)).cast(pa.string()),
                           '","qty":', pa.array(rng.integers(1, 10, n)).cast(pa.string()), "}"])
        timestamps = pa.array(np.arange(start + 1, start + n + 1, dtype=np.int64))
        store.append(topic, pa.table({"key": key, "value": value, "timestamp": timestamps}))


def topology(workload: str):
    from tablestream.dsl import StreamsBuilder

    builder = StreamsBuilder()
    if workload == "agg":
        table = builder.table("changes", value_schema="grp STRING, amount BIGINT")
        table.group_by(("grp", "value")).sum("amount", materialized_as="sums")
    else:
        orders = builder.table("orders", value_schema="product STRING, qty BIGINT")
        products = builder.table("products", value_schema="name STRING, price BIGINT")
        orders.join(products, "struct(left.qty AS qty, right.price AS price)",
                    foreign_key="product", materialized_as="priced")
    return builder.build()


def _vm_hwm_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmHWM for pid {pid}")


def _java_children(pid: int) -> list[int]:
    """The Java processes under ``pid`` (the driver JVM PySpark launched)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == pid and b"java" in cmdline.split(b"\0")[0]:
            found.append(int(entry.name))
    return found


def run_application(home: str, workload: str, records: int) -> dict:
    """Run the application to the end of its input; its driver's peaks and time."""
    from tablestream.runtime.app import Application
    from tablestream.spark import get_spark

    spark = get_spark(app_name="tablestream-scale")
    # The same topology over a small data set first: the run is timed in a warm JVM.
    warm = os.path.join(home, "warm-up")
    write_data(warm, workload, 20_000)
    Application(topology(workload), f"warm-{workload}", store=_store(warm), spark=spark).run_until_caught_up()
    batches = []
    app = Application(topology(workload), f"scale-{workload}", store=_store(home), spark=spark,
                      progress=batches.append)
    began = time.perf_counter()
    app.run_until_caught_up()
    seconds = time.perf_counter() - began
    jvm = max((_vm_hwm_kib(pid) for pid in _java_children(os.getpid())), default=0)
    return {
        "workload": workload,
        "records": records,
        "batches": len(batches),
        "seconds": round(seconds, 2),
        "us_per_record": round(seconds / records * 1e6, 3),
        "python_peak_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "jvm_peak_mib": round(jvm / 1024, 1),
    }


def _store(home: str):
    from tablestream.storage.embedded import EmbeddedStore

    return EmbeddedStore(home)


def _in_process(function: str, *args: str) -> str:
    run = subprocess.run(
        [sys.executable, __file__, "--do", function, *args], capture_output=True, text=True, check=False
    )
    if run.returncode != 0:
        raise SystemExit(f"{function} {' '.join(args)} failed:\n{run.stderr[-3000:]}")
    return run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small", type=int, default=1_000_000)
    parser.add_argument("--large", type=int, default=10_000_000)
    parser.add_argument("--workloads", default="agg,fk")
    parser.add_argument("--do", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.do:
        function, home, workload, records = args.do
        if function == "write":
            write_data(home, workload, int(records))
        else:
            print(json.dumps(run_application(home, workload, int(records))))
        return
    for workload in args.workloads.split(","):
        runs = {}
        for size in (args.small, args.large):
            with tempfile.TemporaryDirectory(prefix="tablestream-scale-") as home:
                _in_process("write", home, workload, str(size))
                runs[size] = json.loads(_in_process("run", home, workload, str(size)))
                print(json.dumps(runs[size]), flush=True)
        small, large = runs[args.small], runs[args.large]
        print(json.dumps({
            "workload": workload,
            "compared": f"{args.large} vs {args.small} records",
            "python_peak_ratio": round(large["python_peak_mib"] / small["python_peak_mib"], 2),
            "jvm_peak_ratio": round(large["jvm_peak_mib"] / small["jvm_peak_mib"], 2) if small["jvm_peak_mib"] else None,
            "time_per_record_ratio": round(large["us_per_record"] / small["us_per_record"], 2),
        }), flush=True)


if __name__ == "__main__":
    main()

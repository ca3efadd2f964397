"""One Flink SQL job of the benchmark, run by the Flink venv's interpreter (PyFlink does
not share a process with PySpark): ``python flink_job.py SPEC`` reads the job's spec (a
JSON file: workload, parallelism, the input CSV file of each topic, the output
directory), runs the workload's queries in streaming mode over the files, each result
written as a Debezium-JSON changelog (Flink's filesystem sink takes an updating result
in a changelog format), and prints ``{"seconds": ...}``: the job's time, from its
submission to its end (the JVM and the table environment are started before).

With ``"steady": true`` in the spec, each input is a directory Flink watches for new
files (every :data:`MONITOR`), the job runs until it is killed, with Flink's default
settings (no mini-batches: its setting for latency), and each result's changes are
printed as they happen (Flink's ``print`` connector: ``<result>> +I[...]`` lines on
standard output), for the benchmark to fold and time.

Each topic's file holds one row per record: ``seq`` (its position in the topic), the
key, the value's fields and ``deleted`` (a tombstone). A table is the latest row per key
(Flink's Top-N with N = 1, ordered by ``seq``) less the deleted ones: the upsert
semantics a CDC changelog gets in Flink SQL.
"""

from __future__ import annotations

import json
import sys
import time

FIELDS = {
    "w1": "grp STRING, amount BIGINT",
    "w2": "grp STRING, amount BIGINT",
    "orders": "product STRING, qty BIGINT",
    "products": "name STRING, price BIGINT",
    "customers": "name STRING, city STRING",
    "clicks": "amount BIGINT",
}
STREAMS = {"clicks"}
MONITOR = "50 ms"  # how often a steady job looks for new files

# Each workload's results: name -> (columns, query over the views named after the topics).
RESULTS = {
    "W1": {
        "sums": ("key STRING, `value` BIGINT", "SELECT grp, SUM(amount) FROM w1 GROUP BY grp"),
        "rows": ("key STRING, grp STRING, amount BIGINT", "SELECT k, grp, amount FROM w1"),
    },
    "W2": {
        "sums": ("key STRING, `value` BIGINT", "SELECT grp, SUM(amount) FROM w2 GROUP BY grp"),
    },
    "W3": {
        "enriched": ("key STRING, qty BIGINT, name STRING, price BIGINT",
                     "SELECT o.k, o.qty, p.name, p.price FROM orders o JOIN products p ON o.product = p.k"),
        "per_product": ("key STRING, orders BIGINT, qty BIGINT",
                        "SELECT product, COUNT(*), SUM(qty) FROM orders GROUP BY product"),
    },
    "W4": {
        "enriched": ("key STRING, amount BIGINT, name STRING, city STRING",
                     "SELECT c.k, c.amount, t.name, t.city FROM clicks c JOIN customers t ON c.k = t.k"),
    },
}


def main(spec_path: str) -> None:
    from pyflink.table import EnvironmentSettings, TableEnvironment

    spec = json.loads(open(spec_path).read())
    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(spec["parallelism"]))
    steady = spec.get("steady", False)
    if not steady:
        # Mini-batches for the aggregations and the Top-N, as Flink's tuning guide
        # advises for throughput.
        config.set("table.exec.mini-batch.enabled", "true")
        config.set("table.exec.mini-batch.allow-latency", "1 s")
        config.set("table.exec.mini-batch.size", "5000")
    watched = f", 'source.monitor-interval' = '{MONITOR}'" if steady else ""
    for topic, path in spec["inputs"].items():
        env.execute_sql(
            f"CREATE TABLE raw_{topic} (seq BIGINT, k STRING, {FIELDS[topic]}, deleted BOOLEAN) "
            f"WITH ('connector' = 'filesystem', 'path' = '{path}', 'format' = 'csv', 'csv.null-literal' = ''{watched})"
        )
        columns = ", ".join(f.split()[0] for f in FIELDS[topic].split(", "))
        if topic in STREAMS:
            env.execute_sql(f"CREATE VIEW {topic} AS SELECT k, {columns} FROM raw_{topic}")
        else:
            env.execute_sql(
                f"CREATE VIEW {topic} AS SELECT k, {columns} FROM (SELECT *, ROW_NUMBER() OVER "
                f"(PARTITION BY k ORDER BY seq DESC) AS rn FROM raw_{topic}) WHERE rn = 1 AND NOT deleted"
            )
    statements = env.create_statement_set()
    for name, (columns, sql) in RESULTS[spec["workload"]].items():
        sink = (f"'connector' = 'print', 'print-identifier' = '{name}'" if steady else
                f"'connector' = 'filesystem', 'path' = '{spec['output']}/{name}', 'format' = 'debezium-json'")
        env.execute_sql(f"CREATE TABLE out_{name} ({columns}) WITH ({sink})")
        statements.add_insert_sql(f"INSERT INTO out_{name} {sql}")
    if steady:
        statements.execute().wait()  # until the benchmark kills the job
        return
    began = time.perf_counter()
    statements.execute().wait()
    print(json.dumps({"seconds": time.perf_counter() - began}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])

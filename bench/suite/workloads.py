"""The workloads, each run as a user runs an application: its topics in the embedded
store, an :class:`~tablestream.runtime.app.Application` with default settings,
``run_until_caught_up()`` for a bootstrap or a backlog, a running query for steady
batches. Each phase's result is checked against DuckDB over the records written; the
peers are asked for the same result from the same records.

W1 bulk bootstrap: a changelog over KEYS keys materialized into a table and summed by a
   grouping column.
W2 incremental table aggregation: a table of KEYS keys summed by group; catch-up of a
   backlog of changes, then steady batches.
W3 foreign-key join with an aggregation beside it: orders joined to products by each
   order's product, and orders counted and their quantities summed per product;
   bootstrap, catch-up of a backlog of changes (20% foreign-key moves, 5% deletes, 20%
   product updates, 55% quantity updates), steady batches.
W4 stream-table enrichment: a stream of records, each joined to its key's row of a table.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import engine_core
import joins
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tablestream.dsl import StreamsBuilder, aggregates
from tablestream.runtime.app import Application
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig

from . import tws
from .memory import PeakMemory, running
from .oracle import Log, check, query
from .report import SYSTEM, Report, Timing

PARTITIONS = 4  # of every source topic
CHUNK = 500_000  # records per append
STARTUP_KEYS = 20_000  # of the first queries' W2 (see startup)
AGG_SCHEMA = "grp STRING, amount BIGINT"
CUSTOMER_SCHEMA = "name STRING, city STRING"
CLICK_SCHEMA = "amount BIGINT"
GROUP_SUM = ("SELECT json_extract_string(value, '$.grp') AS key, "
             "sum(CAST(json_extract(value, '$.amount') AS BIGINT)) AS value FROM latest_{t} GROUP BY 1")


@dataclass(frozen=True)
class Sizes:
    """Every size of a run; :meth:`default` runs on this machine (2 cores) in about 40
    minutes with every peer; ``scale`` multiplies the data sizes (not the batch size)."""

    w1_records: int
    w1_keys: int
    w2_keys: int
    w2_changes: int
    w3_orders: int
    w3_products: int
    w3_changes: int
    w4_stream: int
    w4_table: int
    batch: int
    batches: int
    tws_sample: int

    @classmethod
    def default(cls, scale: float = 1.0) -> Sizes:
        def n(x: int) -> int:
            return max(1, int(x * scale))

        # W1 and W4 at a fifth of their full sizes (10M records over 2M keys; 5M
        # records against 1M rows) so that the whole run, every peer included, takes
        # about 40 minutes here; --scale 5 gives the full sizes.
        return cls(n(2_000_000), n(400_000), n(1_000_000), n(1_000_000), n(1_000_000), n(100_000),
                   n(1_000_000), n(1_000_000), n(200_000), 10_000, 8, 20_000)

    @classmethod
    def quick(cls) -> Sizes:
        return cls(20_000, 4_000, 5_000, 5_000, 5_000, 500, 5_000, 10_000, 2_000, 500, 3, 1_000)


class Bench:
    """What every workload uses: the Spark session, a store of its own, the report,
    the peers asked for and a scratch directory."""

    def __init__(self, spark, home: Path, report: Report, peers: set[str], sizes: Sizes, flink=None, sdp=None,
                 memory: PeakMemory | None = None):
        self.spark, self.home, self.report, self.peers, self.sizes = spark, home, report, peers, sizes
        self.flink, self.sdp, self.memory = flink, sdp, memory
        self.rng = np.random.default_rng(42)

    def ours(self):
        """The context our application runs in: its processes' peak memory is kept for
        it (see :meth:`PeakMemory.running`)."""
        return running(self.memory, SYSTEM)

    def store(self, workload: str, topics: dict[str, Log]) -> EmbeddedStore:
        store = EmbeddedStore(self.home / workload)
        for topic in topics:
            store.create_topic(TopicConfig(topic, partitions=PARTITIONS))
        return store


def append(store: EmbeddedStore, topic: str, log: Log, records: pa.Table) -> None:
    for start in range(0, records.num_rows, CHUNK):
        store.append(topic, log.add(records.slice(start, CHUNK)))


def timed(action: Callable[[], object]) -> float:
    began = time.perf_counter()
    action()
    return time.perf_counter() - began


def steady(bench: Bench, app: Application, produce: Callable[[int], None], workload: str,
           logs: dict[str, Log], phase: str = "steady") -> list[dict[str, Log]]:
    """Batches of ``sizes.batch`` changes through the running query: from the moment
    they are in the topics until the query has processed them (its outputs committed);
    the median is reported as ``phase`` beside the time of a batch of one change (the
    floor, ``phase``-floor). The first batch after the start is not counted (the query's
    first trigger). Returns the ``logs`` as they were before the first timed batch and
    after each (for Flink's steady batches, the same records)."""
    with bench.ours():
        states, times, floor = _steady_batches(bench, app, produce, logs)
    bench.report.measured(Timing(workload, phase, SYSTEM, bench.sizes.batch, statistics.median(times),
                                 note=f"median of {len(times)} batches"))
    bench.report.measured(Timing(workload, f"{phase}-floor", SYSTEM, 1, statistics.median(floor),
                                 note="a batch of one change, median of 3"))
    return states


def _steady_batches(bench: Bench, app: Application, produce: Callable[[int], None],
                    logs: dict[str, Log]) -> tuple[list[dict[str, Log]], list[float], list[float]]:
    query = app.start()
    try:
        produce(bench.sizes.batch)
        query.processAllAvailable()
        states = [{topic: log.copy() for topic, log in logs.items()}]
        times, floor = [], []
        for _ in range(bench.sizes.batches):
            produce(bench.sizes.batch)
            times.append(timed(query.processAllAvailable))
            states.append({topic: log.copy() for topic, log in logs.items()})
        for _ in range(3):
            produce(1)
            floor.append(timed(query.processAllAvailable))
    finally:
        app.stop()
    return states, times, floor


def state_doubled(bench: Bench, app: Application, grow: Callable[[], str], produce: Callable[[int], None],
                  workload: str, logs: dict[str, Log], check: Callable[[], None]) -> None:
    """The steady batches again once the state has doubled: ``grow()`` writes as many new
    keys as the topics held and says what it wrote, the application catches up with them
    (not timed), then ``produce`` spreads its changes over every key. Reported as phase
    ``steady-2x-state``, with the steady median at the first state as its peer
    ``tablestream-1x-state``: the ratio is that time over this one (0.77 or more: at
    most 30% slower with twice the state). ``check()`` then checks the results."""
    grown = grow()
    with bench.ours():
        app.run_until_caught_up()
    steady(bench, app, produce, workload, logs, phase="steady-2x-state")
    check()
    first = bench.report.ours[workload, "steady"]
    bench.report.compared(Timing(workload, "steady-2x-state", f"{SYSTEM}-1x-state", first.records, first.seconds,
                                 note=f"the steady median before {grown}"))


def driver_memory(bench: Bench, app: Application, produce: Callable[[int], None], workload: str,
                  logs: dict[str, Log], batches: int = 100, every: int = 10) -> None:
    """The driver's memory over ``batches`` consecutive batches of ``sizes.batch`` changes
    through the running query: after every ``every`` batches, the JVM's heap in use after
    a full collection, the JVM's and this Python process's resident sets, and what of the
    latter the harness's ``logs`` hold (every record written, for the checks). A driver
    that keeps something per batch grows from one sample to the next."""
    jvm = bench.spark.sparkContext._jvm  # noqa: SLF001 - the JVM's Runtime: only through the gateway
    runtime = jvm.java.lang.Runtime.getRuntime()
    jvm_pid = jvm.java.lang.ProcessHandle.current().pid()
    samples: dict[str, list] = {
        "after": [], "jvm_heap_mib": [], "jvm_rss_mib": [], "python_rss_mib": [], "harness_logs_mib": [],
    }
    with bench.ours():
        query = app.start()
        try:
            for done in range(1, batches + 1):
                produce(bench.sizes.batch)
                query.processAllAvailable()
                if done % every == 0:
                    gc.collect()
                    jvm.java.lang.System.gc()
                    samples["after"].append(done)
                    samples["jvm_heap_mib"].append(round((runtime.totalMemory() - runtime.freeMemory()) / 2**20, 1))
                    samples["jvm_rss_mib"].append(_resident_mib(jvm_pid))
                    samples["python_rss_mib"].append(_resident_mib("self"))
                    held = sum(part.nbytes for log in logs.values() for part in log.parts)
                    samples["harness_logs_mib"].append(round(held / 2**20, 1))
        finally:
            app.stop()
    bench.report.driver_memory(workload, bench.sizes.batch, samples)


def _resident_mib(pid) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError(f"no VmRSS for process {pid}")


def our_table(app: Application, store: str, *columns: str) -> pa.Table:
    """A materialized table as Arrow: ``key`` and ``columns`` (SQL over ``value``;
    default: ``value``)."""
    return app.table(store).selectExpr("CAST(key AS STRING) AS key", *(columns or ("value",))).toArrow()


# ------------------------------------------------------------------------ Spark peers
def spark_latest(bench: Bench, store: EmbeddedStore, topic: str, schema: str):
    """A table topic's latest row per key (deleted keys left out), as a Spark batch query
    computes it: the value of each key's record with the highest offset."""
    from pyspark.sql import functions as F

    records = store.read_batch(bench.spark, [topic])
    latest = records.groupBy("key").agg(F.max_by("value", F.struct("partition", "offset")).alias("value"))
    return latest.where(F.col("value").isNotNull()).select(
        F.col("key").cast("string").alias("key"), F.from_json(F.col("value").cast("string"), schema).alias("v")
    ).select("key", "v.*")


def spark_results(bench: Bench, workload: str, frames: dict[str, object], name: str) -> tuple[float, dict[str, pa.Table]]:
    """Write every result frame as Parquet (as the application writes its tables), timed
    together; then read them back for the check."""
    import pyarrow.parquet as pq

    out = bench.home / "peers" / workload / name
    began = time.perf_counter()
    for result, frame in frames.items():
        frame.write.mode("overwrite").parquet(str(out / result))
    seconds = time.perf_counter() - began
    return seconds, {result: pq.read_table(out / result) for result in frames}


def spark_peer(bench: Bench, workload: str, phase: str, peer: str, records: int,
               build: Callable[[], dict[str, object]], expected: dict[str, pa.Table], runs: int = 1) -> None:
    """A plain Spark batch query for the whole result (``spark_batch``, or ``recompute``
    for a micro-batch's result recomputed from scratch), checked like ours."""
    if peer not in bench.peers:
        return
    seconds = []
    for _ in range(runs):
        took, results = spark_results(bench, workload, build(), peer)
        seconds.append(took)
    for name, table in expected.items():
        check(f"{workload} {phase} {peer} {name}", results[name], table)
    bench.report.compared(Timing(workload, phase, peer, records, statistics.median(seconds), validated=True,
                                 note=f"median of {runs} runs" if runs > 1 else ""))


# ------------------------------------------------------------------------ W1, W2
def aggregation_topology(topic: str, materialize: bool):
    builder = StreamsBuilder()
    table = builder.table(topic, value_schema=AGG_SCHEMA, materialized_as=f"{topic}-rows" if materialize else None)
    table.group_by(("grp", "value")).sum("amount", materialized_as=f"{topic}-sums")
    return builder.build()


def aggregation_expected(topic: str, log: Log, rows: bool) -> dict[str, pa.Table]:
    expected = {"sums": query(GROUP_SUM.format(t=topic), **{topic: log})}
    if rows:
        expected["rows"] = query(
            f"SELECT key, json_extract_string(value, '$.grp') AS grp, "
            f"CAST(json_extract(value, '$.amount') AS BIGINT) AS amount FROM latest_{topic}", **{topic: log}
        )
    return expected


def aggregation_ours(app: Application, topic: str, rows: bool) -> dict[str, pa.Table]:
    ours = {"sums": our_table(app, f"{topic}-sums")}
    if rows:
        ours["rows"] = our_table(app, f"{topic}-rows", "value.grp AS grp", "value.amount AS amount")
    return ours


def aggregation_spark(bench: Bench, store: EmbeddedStore, topic: str, rows: bool) -> dict[str, object]:
    from pyspark.sql import functions as F

    latest = spark_latest(bench, store, topic, AGG_SCHEMA)
    frames = {"sums": latest.groupBy(F.col("grp").alias("key")).agg(F.sum("amount").alias("value"))}
    if rows:
        frames["rows"] = latest
    return frames


def checked(workload: str, phase: str, ours: dict[str, pa.Table], expected: dict[str, pa.Table]) -> bool:
    for name, table in expected.items():
        check(f"{workload} {phase} {SYSTEM} {name}", ours[name], table)
    return True


def aggregation_bootstrap(bench: Bench, workload: str, store: EmbeddedStore, log: Log, rows: bool,
                          records: int) -> tuple[Application, dict[str, pa.Table]]:
    """Our bootstrap of W1 or W2 over what the topic holds, then ``spark_batch``'s."""
    topic = workload.lower()
    app = Application(aggregation_topology(topic, rows), topic, store=store, spark=bench.spark)
    with bench.ours():
        seconds = timed(app.run_until_caught_up)
    expected = aggregation_expected(topic, log, rows)
    ok = checked(workload, "bootstrap", aggregation_ours(app, topic, rows), expected)
    bench.report.measured(Timing(workload, "bootstrap", SYSTEM, records, seconds, ok))
    spark_peer(bench, workload, "bootstrap", "spark_batch", records,
               lambda: aggregation_spark(bench, store, topic, rows), expected)
    return app, expected


def w1(bench: Bench) -> None:
    """W1: a changelog materialized into a table and summed by group, in one bootstrap."""
    s, topic, log = bench.sizes, "w1", Log()
    store = bench.store("w1", {topic: log})
    append(store, topic, log, engine_core.changelog(bench.rng, s.w1_records, (0, s.w1_keys), 0, 0.05))
    _, expected = aggregation_bootstrap(bench, "W1", store, log, True, s.w1_records)
    if bench.flink is not None:
        bench.flink.run("W1", "bootstrap", {topic: log}, s.w1_records, expected)


def one_record_per_key(bench: Bench, first: int, end: int, ts0: int, rng: np.random.Generator | None = None) -> pa.Table:
    """A W2 record for each of keys ``k<first>`` to ``k<end - 1>``, in key order (values
    drawn from ``rng``, by default the bench's)."""
    records = engine_core.changelog(bench.rng if rng is None else rng, end - first, (first, end), ts0, 0.0)
    keys = pc.binary_join_element_wise("k", pa.array(np.arange(first, end)).cast(pa.string()), "")
    return records.set_column(0, "key", keys.cast(pa.binary()))


def startup(bench: Bench) -> None:
    """Each system's first query in the run's JVM, over a small W2 (``STARTUP_KEYS``
    keys, then as many changes), before the workloads: the one-time costs of a JVM's
    first query (classes loaded, code generated and compiled, Spark's Python daemon and
    its lookup of Python data sources) are timed here, apart, so that every workload
    compares the systems in a JVM that has run each of them once. Ours runs first and
    pays the costs the two share; Flink's jobs each run in a JVM of their own."""
    keys, topic, log = min(STARTUP_KEYS, bench.sizes.w2_keys), "startup", Log()
    rng = np.random.default_rng(7)  # the workloads' data stays what it is without this phase
    store = bench.store("startup", {topic: log})
    append(store, topic, log, one_record_per_key(bench, 0, keys, 0, rng))
    app, _ = aggregation_bootstrap(bench, "startup", store, log, False, keys)
    append(store, topic, log, engine_core.changelog(rng, keys, (0, keys), 1_000_000_000, 0.05))
    app.run_until_caught_up()
    checked("startup", "catch-up", aggregation_ours(app, topic, False), aggregation_expected(topic, log, False))
    app.stop()


def w2(bench: Bench) -> None:
    """W2: a table of KEYS keys summed by group: bootstrap (one record per key), catch-up
    of a backlog of changes, steady batches."""
    s, topic, log = bench.sizes, "w2", Log()
    store = bench.store("w2", {topic: log})
    append(store, topic, log, one_record_per_key(bench, 0, s.w2_keys, 0))
    app, expected = aggregation_bootstrap(bench, "W2", store, log, False, s.w2_keys)
    if bench.sdp is not None:
        bench.sdp.update("W2", "bootstrap", {topic: log}, s.w2_keys, expected)
    bootstrap_log = log.copy()

    backlog = engine_core.changelog(bench.rng, s.w2_changes, (0, s.w2_keys), 1_000_000_000, 0.05)
    append(store, topic, log, backlog)
    with bench.ours():
        seconds = timed(app.run_until_caught_up)
    expected = aggregation_expected(topic, log, False)
    ok = checked("W2", "catch-up", aggregation_ours(app, topic, False), expected)
    bench.report.measured(Timing("W2", "catch-up", SYSTEM, s.w2_changes, seconds, ok))
    if "transform_with_state" in bench.peers:
        sample = backlog.slice(0, min(s.tws_sample, backlog.num_rows))
        rate = engine_core.tws_rate(bench.spark, sample, bench.home / "peers" / "w2-tws")
        bench.report.compared(Timing("W2", "catch-up", "transform_with_state", sample.num_rows,
                                     sample.num_rows / rate, note="the first changes of the backlog, from empty state"))
    if bench.flink is not None:
        bench.flink.catch_up("W2", {topic: bootstrap_log}, {topic: log}, s.w2_changes, expected)
    if bench.sdp is not None:
        bench.sdp.update("W2", "catch-up", {topic: log}, s.w2_changes, expected)

    ts, key_count = [2_000_000_000], [s.w2_keys]

    def produce(n: int) -> None:
        append(store, topic, log, engine_core.changelog(bench.rng, n, (0, key_count[0]), ts[0], 0.05))
        ts[0] += n

    states = steady(bench, app, produce, "W2", {topic: log})
    expected = aggregation_expected(topic, log, False)
    checked("W2", "steady", aggregation_ours(app, topic, False), expected)
    spark_peer(bench, "W2", "steady", "recompute", s.batch,
               lambda: aggregation_spark(bench, store, topic, False), expected, runs=3)
    driver_memory(bench, app, produce, "W2", {topic: log})
    checked("W2", "driver-memory", aggregation_ours(app, topic, False), aggregation_expected(topic, log, False))
    if bench.flink is not None:
        bench.flink.steady("W2", states, lambda state: aggregation_expected(topic, state[topic], False), s.batch)
    if bench.sdp is not None:
        bench.sdp.steady("W2", {topic: log}, produce, lambda: aggregation_expected(topic, log, False), s.batch)

    def grow() -> str:
        append(store, topic, log, one_record_per_key(bench, s.w2_keys, 2 * s.w2_keys, 3_000_000_000))
        key_count[0] = 2 * s.w2_keys
        return f"{s.w2_keys:,} more keys"

    state_doubled(bench, app, grow, produce, "W2", {topic: log}, lambda: checked(
        "W2", "steady-2x-state", aggregation_ours(app, topic, False), aggregation_expected(topic, log, False)))


# ------------------------------------------------------------------------ W3
def fk_topology():
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema=joins.ORDER_SCHEMA)
    products = builder.table("products", value_schema=joins.PRODUCT_SCHEMA)
    orders.join(products, "struct(left.qty AS qty, right.name AS name, right.price AS price)",
                foreign_key="product", materialized_as="enriched")
    orders.group_by(("product", "value")).agg(
        orders=aggregates.count(), qty=aggregates.sum("qty"), materialized_as="per-product")
    return builder.build()


def fk_expected(orders: Log, products: Log) -> dict[str, pa.Table]:
    logs = {"orders": orders, "products": products}
    return {
        "enriched": query(
            "SELECT o.key, CAST(json_extract(o.value, '$.qty') AS BIGINT) AS qty, "
            "json_extract_string(p.value, '$.name') AS name, CAST(json_extract(p.value, '$.price') AS BIGINT) AS price "
            "FROM latest_orders o JOIN latest_products p ON json_extract_string(o.value, '$.product') = p.key", **logs),
        "per_product": query(
            "SELECT json_extract_string(value, '$.product') AS key, count(*) AS orders, "
            "sum(CAST(json_extract(value, '$.qty') AS BIGINT)) AS qty FROM latest_orders GROUP BY 1", **logs),
    }


def fk_ours(app: Application) -> dict[str, pa.Table]:
    return {"enriched": our_table(app, "enriched", "value.qty AS qty", "value.name AS name", "value.price AS price"),
            "per_product": our_table(app, "per-product", "value.orders AS orders", "value.qty AS qty")}


def fk_spark(bench: Bench, store: EmbeddedStore) -> dict[str, object]:
    from pyspark.sql import functions as F

    orders = spark_latest(bench, store, "orders", joins.ORDER_SCHEMA)
    products = spark_latest(bench, store, "products", joins.PRODUCT_SCHEMA)
    enriched = orders.alias("o").join(products.alias("p"), F.col("o.product") == F.col("p.key")).select(
        F.col("o.key").alias("key"), "o.qty", "p.name", "p.price")
    per_product = orders.groupBy(F.col("product").alias("key")).agg(
        F.count(F.lit(1)).alias("orders"), F.sum("qty").alias("qty"))
    return {"enriched": enriched, "per_product": per_product}


def w3(bench: Bench) -> None:
    s = bench.sizes
    logs = {"orders": Log(), "products": Log()}
    store = bench.store("w3", logs)
    work = joins.Workload(np.random.default_rng(7), s.w3_orders, s.w3_products)
    append(store, "products", logs["products"], work.products(np.arange(s.w3_products), 0))
    append(store, "orders", logs["orders"], work.initial_orders(0, s.w3_orders, 1_000_000))
    app = Application(fk_topology(), "w3", store=store, spark=bench.spark)
    bootstrap_records = s.w3_orders + s.w3_products

    def phase(name: str, records: int) -> dict[str, pa.Table]:
        with bench.ours():
            seconds = timed(app.run_until_caught_up)
        expected = fk_expected(logs["orders"], logs["products"])
        ok = checked("W3", name, fk_ours(app), expected)
        bench.report.measured(Timing("W3", name, SYSTEM, records, seconds, ok))
        return expected

    expected = phase("bootstrap", bootstrap_records)
    spark_peer(bench, "W3", "bootstrap", "spark_batch", bootstrap_records, lambda: fk_spark(bench, store), expected)
    if bench.flink is not None:
        bench.flink.run("W3", "bootstrap", logs, bootstrap_records, expected)
    if bench.sdp is not None:
        bench.sdp.update("W3", "bootstrap", logs, bootstrap_records, expected)
    bootstrap_logs = {name: log.copy() for name, log in logs.items()}

    ts = [10_000_000]

    def produce(n: int) -> None:
        for start in range(0, n, CHUNK):
            orders, products = work.changes(min(CHUNK, n - start), ts[0])
            ts[0] += CHUNK
            # Both topics' changes at once, as Flink's files are renamed into its
            # directories at once: a running query takes them in one trigger.
            changes = {"orders": logs["orders"].add(orders)}
            if products.num_rows:
                changes["products"] = logs["products"].add(products)
            store.append_many(changes)

    produce(s.w3_changes)
    expected = phase("catch-up", s.w3_changes)
    if "transform_with_state" in bench.peers:
        # The same fan-out (orders per product) on a sample, from its own state.
        sample, sample_right = s.tws_sample, max(1, s.tws_sample * s.w3_products // s.w3_orders)
        rate = joins.tws_rate(bench.spark, joins.Workload(np.random.default_rng(11), sample, sample_right),
                              sample, sample_right, sample, bench.home / "peers" / "w3-tws")
        bench.report.compared(Timing("W3", "catch-up", "transform_with_state", sample, sample / rate,
                                     note=f"{sample:,} changes over {sample:,} orders and {sample_right:,} products; "
                                          "both sides of the join, no aggregation"))
    if bench.flink is not None:
        bench.flink.catch_up("W3", bootstrap_logs, logs, s.w3_changes, expected)
    if bench.sdp is not None:
        bench.sdp.update("W3", "catch-up", logs, s.w3_changes, expected)

    states = steady(bench, app, produce, "W3", logs)
    expected = fk_expected(logs["orders"], logs["products"])
    checked("W3", "steady", fk_ours(app), expected)
    spark_peer(bench, "W3", "steady", "recompute", s.batch, lambda: fk_spark(bench, store), expected, runs=3)
    if bench.flink is not None:
        bench.flink.steady("W3", states, lambda state: fk_expected(state["orders"], state["products"]), s.batch)
    if bench.sdp is not None:
        bench.sdp.steady("W3", logs, produce, lambda: fk_expected(logs["orders"], logs["products"]), s.batch)

    def grow() -> str:
        append(store, "products", logs["products"], work.products(np.arange(s.w3_products, 2 * s.w3_products), ts[0]))
        work.right = 2 * s.w3_products
        work.grow(s.w3_orders)
        append(store, "orders", logs["orders"], work.initial_orders(s.w3_orders, s.w3_orders, ts[0]))
        ts[0] += s.w3_orders
        return f"{s.w3_orders:,} more orders and {s.w3_products:,} more products"

    state_doubled(bench, app, grow, produce, "W3", logs, lambda: checked(
        "W3", "steady-2x-state", fk_ours(app), fk_expected(logs["orders"], logs["products"])))


# ------------------------------------------------------------------------ W4
def enrichment_topology():
    builder = StreamsBuilder()
    customers = builder.table("customers", value_schema=CUSTOMER_SCHEMA)
    clicks = builder.stream("clicks", value_schema=CLICK_SCHEMA)
    clicks.join(customers, "struct(left.amount AS amount, right.name AS name, right.city AS city)").to("enriched")
    return builder.build()


def customers(ids: np.ndarray, ts0: int) -> pa.Table:
    text = pa.array(ids).cast(pa.string())
    value = pc.binary_join_element_wise('{"name":"customer ', text, '","city":"city',
                                        pa.array(ids % 1000).cast(pa.string()), '"}', "")
    return pa.table({"key": pc.binary_join_element_wise("c", text, "").cast(pa.binary()),
                     "value": value.cast(pa.binary()),
                     "timestamp": pa.array(np.arange(ts0, ts0 + len(ids), dtype=np.int64))})


def clicks(rng: np.random.Generator, n: int, table_rows: int, ts0: int) -> pa.Table:
    # A tenth of the clicks are by customers the table does not hold (no output).
    ids = rng.integers(0, table_rows + table_rows // 10, n)
    value = pc.binary_join_element_wise('{"amount":', pa.array(rng.integers(1, 1000, n)).cast(pa.string()), "}", "")
    return pa.table({"key": pc.binary_join_element_wise("c", pa.array(ids).cast(pa.string()), "").cast(pa.binary()),
                     "value": value.cast(pa.binary()),
                     "timestamp": pa.array(np.arange(ts0, ts0 + n, dtype=np.int64))})


ENRICHED = ("SELECT c.key, CAST(json_extract(c.value, '$.amount') AS BIGINT) AS amount, "
            "json_extract_string(t.value, '$.name') AS name, json_extract_string(t.value, '$.city') AS city "
            "FROM records_clicks c JOIN latest_customers t ON c.key = t.key")


def w4(bench: Bench) -> None:
    s = bench.sizes
    logs = {"customers": Log(), "clicks": Log()}
    store = bench.store("w4", logs)
    table = customers(np.arange(s.w4_table), 0)
    append(store, "customers", logs["customers"], table)
    app = Application(enrichment_topology(), "w4", store=store, spark=bench.spark)
    app.run_until_caught_up()  # the table, not timed
    stream = clicks(bench.rng, s.w4_stream, s.w4_table, 1_000_000_000)
    append(store, "clicks", logs["clicks"], stream)
    with bench.ours():
        seconds = timed(app.run_until_caught_up)
    expected = {"enriched": query(ENRICHED, **logs)}
    written = Log()
    written.add(store.read("enriched"))
    ours = query("SELECT key, CAST(json_extract(value, '$.amount') AS BIGINT) AS amount, "
                 "json_extract_string(value, '$.name') AS name, json_extract_string(value, '$.city') AS city "
                 "FROM records_out", out=written)
    ok = checked("W4", "enrich", {"enriched": ours}, expected)
    bench.report.measured(Timing("W4", "enrich", SYSTEM, s.w4_stream, seconds, ok))

    def spark_join() -> dict[str, object]:
        from pyspark.sql import functions as F

        table = spark_latest(bench, store, "customers", CUSTOMER_SCHEMA)
        stream = store.read_batch(bench.spark, ["clicks"]).select(
            F.col("key").cast("string").alias("key"),
            F.from_json(F.col("value").cast("string"), CLICK_SCHEMA).alias("v"))
        return {"enriched": stream.join(table, "key").select("key", "v.amount", "name", "city")}

    spark_peer(bench, "W4", "enrich", "spark_batch", s.w4_stream, spark_join, expected)
    if "transform_with_state" in bench.peers:
        sample = Log()
        sample.add(stream.slice(0, s.tws_sample))
        seconds, rows = tws.enrich(bench.spark, table, sample.parts[0], bench.home / "peers" / "w4-tws")
        check("W4 transform_with_state enriched", rows, query(ENRICHED, customers=logs["customers"], clicks=sample))
        bench.report.compared(Timing("W4", "enrich", "transform_with_state", sample.parts[0].num_rows, seconds,
                                     validated=True, note="the first stream records, the whole table in state"))
    if bench.flink is not None:
        bench.flink.run("W4", "enrich", logs, s.w4_stream, expected)


WORKLOADS: dict[str, Callable[[Bench], None]] = {"W1": w1, "W2": w2, "W3": w3, "W4": w4}

"""Engine-core benchmark: table materialization + table aggregation (KIP-241), measured
side by side in one run on this machine.

  (a) catch-up: a changelog of CATCHUP_RECORDS records over KEYS keys processed in large
      batches, against the same per-key logic written with Spark's transformWithState
      (latest value per key, then the sum per group with retraction; measured on a sample
      of TWS_SAMPLE records: its rate does not depend on size); both timed in a warm JVM
      (a small run of the same topology first);
  (b) steady: batches of STEADY_BATCH changes against KEYS keys of state, median batch
      time; then the state doubled and the same again;
  (c) the same steady batches against recomputing the aggregation from scratch.

usage: python bench/engine_core.py [--keys 1000000] [--records 2000000] [--batches 8]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from stateful import run_to_end

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.spark import get_spark
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig

GROUPS = 10_000
PARTITIONS = 4  # of the source topic
STATE_PARTITIONS = 2  # one store task per core


def changelog(rng: np.random.Generator, n: int, key_range: tuple[int, int], ts0: int, delete_share: float) -> pa.Table:
    keys = rng.integers(key_range[0], key_range[1], n)
    groups = rng.integers(0, GROUPS, n)
    amounts = rng.integers(0, 1000, n)
    key_text = pc.binary_join_element_wise("k", pa.array(keys).cast(pa.string()), "")
    value_text = pc.binary_join_element_wise(
        '{"grp":"g', pa.array(groups).cast(pa.string()), '","amount":', pa.array(amounts).cast(pa.string()), "}", ""
    )
    deletes = rng.random(n) < delete_share
    values = pc.if_else(pa.array(deletes), pa.nulls(n, pa.string()), value_text)
    return pa.table(
        {
            "key": key_text.cast(pa.binary()),
            "value": values.cast(pa.binary()),
            "timestamp": pa.array(np.arange(ts0, ts0 + n, dtype=np.int64)),
        }
    )


def topology(topic: str = "changes", store: str = "sums"):
    builder = StreamsBuilder()
    table = builder.table(topic, value_schema="grp STRING, amount BIGINT")
    table.group_by(("grp", "value")).sum("amount", materialized_as=store)
    return builder.build()


def warm_up(spark, store: EmbeddedStore, rng: np.random.Generator) -> None:
    """Run the same topology once over a small topic of its own, so the catch-up is
    timed in a warm JVM (classes loaded, code generated and compiled), as the
    transformWithState queries measured after it are."""
    store.create_topic(TopicConfig("warm-up", partitions=PARTITIONS))
    store.append("warm-up", changelog(rng, 20_000, (0, 10_000), 0, 0.05))
    Application(topology("warm-up", "warm-up-sums"), "warm-up", store=store, spark=spark,
                partitions=STATE_PARTITIONS).run_until_caught_up()


def records_frame(spark, store: EmbeddedStore, written: pa.Table):
    """A batch as the streaming source hands it over (normalized topic columns)."""
    frame = written.select(["key", "value", "partition", "offset", "timestamp"]).append_column(
        "topic", pa.array(["changes"] * written.num_rows)
    )
    frame = frame.append_column(
        "headers", pa.nulls(written.num_rows, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
    )
    return spark.createDataFrame(frame.select(["key", "value", "topic", "partition", "offset", "timestamp", "headers"]))


def recompute(spark, store: EmbeddedStore) -> float:
    """The aggregation from scratch over the whole topic, as a plain Spark batch job."""
    from pyspark.sql import functions as F

    began = time.perf_counter()
    records = store.read_batch(spark, ["changes"])
    latest = records.groupBy("key").agg(F.max_by("value", F.struct("partition", "offset")).alias("value"))
    parsed = latest.where(F.col("value").isNotNull()).select(
        F.from_json(F.col("value").cast("string"), "grp STRING, amount BIGINT").alias("v")
    )
    parsed.groupBy("v.grp").agg(F.sum("v.amount")).write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def tws_rate(spark, sample: pa.Table, checkpoint: Path) -> float:
    """Records/s of the same logic written with transformWithState, per key: the table's
    latest value per key (old and new value out), then the sum per group with retraction
    (subtract the old amount, add the new one). Spark runs one transformWithState per
    query in Update mode, so the two stages are two queries, the second reading what the
    first wrote; the rate counts both."""
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    class LatestValue(StatefulProcessor):
        def init(self, handle):
            self.state = handle.getValueState("latest", StructType([StructField("value", StringType())]))

        def handleInputRows(self, key, rows, timerValues):
            old = self.state.get()[0] if self.state.exists() else None
            new = old
            for row in rows:
                new = row.value
            if new is None:
                self.state.clear()
            else:
                self.state.update((new,))
            if new != old:
                yield Row(key=key[0], old=old, new=new)

        def close(self):
            pass

    class GroupSum(StatefulProcessor):
        def init(self, handle):
            self.state = handle.getValueState(
                "sum", StructType([StructField("members", LongType()), StructField("total", LongType())])
            )

        def handleInputRows(self, key, rows, timerValues):
            members, total = self.state.get() if self.state.exists() else (0, 0)
            before = (members, total)
            for row in rows:
                members += row.members
                total += row.amount
            if members == 0:
                self.state.clear()
            else:
                self.state.update((members, total))
            if (members, total) != before:
                yield Row(grp=key[0], total=total if members else None)

        def close(self):
            pass

    def run(frame, processor, out_schema, name: str) -> float:
        return run_to_end(frame, processor, out_schema, checkpoint, name)

    source = checkpoint / "source"
    spark.createDataFrame(sample.select(["key", "value"])).selectExpr(
        "cast(key as string) key", "cast(value as string) value"
    ).write.format("delta").save(str(source))
    changes_schema = StructType(
        [StructField("key", StringType()), StructField("old", StringType()), StructField("new", StringType())]
    )
    latest = run(spark.readStream.format("delta").load(str(source)).groupBy("key"), LatestValue(), changes_schema, "changes")

    value = "grp STRING, amount BIGINT"
    changes = spark.readStream.format("delta").load(str(checkpoint / "changes"))
    signed = changes.select(
        F.explode(
            F.array(
                F.struct(F.from_json("old", value).alias("v"), F.lit(-1).alias("sign")),
                F.struct(F.from_json("new", value).alias("v"), F.lit(1).alias("sign")),
            )
        ).alias("s")
    ).where(F.col("s.v").isNotNull())
    deltas = signed.select(
        F.col("s.v.grp").alias("grp"),
        F.col("s.sign").cast("long").alias("members"),
        (F.col("s.sign") * F.coalesce(F.col("s.v.amount"), F.lit(0))).alias("amount"),
    )
    sums_schema = StructType([StructField("grp", StringType()), StructField("total", LongType())])
    summed = run(deltas.groupBy("grp"), GroupSum(), sums_schema, "sums")
    return sample.num_rows / (latest + summed)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--tws-sample", type=int, default=50_000)
    args = parser.parse_args()

    spark = get_spark(
        "local[2]",
        app_name="tablestream-bench",
        conf={
            "spark.sql.shuffle.partitions": str(PARTITIONS),
            "spark.sql.streaming.stateStore.providerClass":
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            # Steady batches are handed over as a scan, as the streaming source does, not
            # as a local relation inlined in the plan.
            "spark.sql.execution.arrow.localRelationThreshold": "0",
        },
    )
    home = Path(tempfile.mkdtemp(prefix="tablestream-bench-"))
    try:
        store = EmbeddedStore(home)
        store.create_topic(TopicConfig("changes", partitions=PARTITIONS))
        rng = np.random.default_rng(42)

        # (a) catch-up
        warm_up(spark, store, rng)
        backlog = changelog(rng, args.records, (0, args.keys), 0, 0.05)
        for start in range(0, backlog.num_rows, 500_000):
            store.append("changes", backlog.slice(start, 500_000))
        app = Application(topology(), "bench", store=store, spark=spark, partitions=STATE_PARTITIONS, snapshot_every=1_000)
        began = time.perf_counter()
        app.run_until_caught_up()
        catchup = time.perf_counter() - began
        catchup_rate = args.records / catchup
        tws = tws_rate(spark, backlog.slice(0, args.tws_sample), home / "tws")

        # (b) + (c) steady batches
        def steady(key_range: tuple[int, int], first_batch: int) -> tuple[list[float], list[float]]:
            times, recomputes = [], []
            for i in range(args.batches):
                changes = changelog(rng, args.batch_size, key_range, 10_000_000 + i * args.batch_size, 0.05)
                written = store.append("changes", changes)
                frame = records_frame(spark, store, written)
                began = time.perf_counter()
                app.process_batch(frame, first_batch + i)
                times.append(time.perf_counter() - began)
                if i < 3:
                    recomputes.append(recompute(spark, store))
            return times, recomputes

        next_batch = 1_000
        steady_1x, recompute_1x = steady((0, args.keys), next_batch)
        # Double the state: a second backlog over new keys, then the same steady batches.
        extra = changelog(rng, args.keys, (args.keys, 2 * args.keys), 20_000_000, 0.0)
        written = store.append("changes", extra)
        app.process_batch(records_frame(spark, store, written), next_batch + 100)
        steady_2x, recompute_2x = steady((0, 2 * args.keys), next_batch + 200)

        m1, m2 = statistics.median(steady_1x[1:]), statistics.median(steady_2x[1:])
        r1, r2 = statistics.median(recompute_1x), statistics.median(recompute_2x)
        print(f"(a) catch-up: {args.records:,} records / {args.keys:,} keys in {catchup:.1f} s = {catchup_rate:,.0f} records/s")
        print(f"    transformWithState per key (latest value, then sum per group; {args.tws_sample:,}-record sample): {tws:,.0f} records/s")
        print(f"    ratio: {catchup_rate / tws:.1f}x (target >= 50x)")
        print(f"(b) steady {args.batch_size:,}-change batches, {args.keys:,} keys: median {m1:.3f} s (target < 1.0 s)")
        print(f"    state doubled to {2 * args.keys:,} keys: median {m2:.3f} s = {m2 / m1:.2f}x (target < 1.3x)")
        print(f"(c) recompute from scratch: {r1:.3f} s at {args.keys:,} keys, {r2:.3f} s at {2 * args.keys:,}")
        print(f"    ratio recompute / incremental: {r1 / m1:.1f}x and {r2 / m2:.1f}x")
    finally:
        spark.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

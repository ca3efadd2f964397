"""Foreign-key join benchmark (KIP-213): orders (left) joined to products (right) by each
order's product, maintained under changes, measured side by side in one run.

Workload: LEFT orders and RIGHT products; changes are 20% foreign-key moves, 5% order
deletions, 20% product updates and 55% order value updates (random keys).

  (a) catch-up: a backlog of CHANGES changes processed in large batches, in changes/s,
      against the same per-key logic written with Spark's transformWithState, both
      sides (orders keyed by order, subscriptions keyed by product), measured on a
      sample with the same fan-out (its rate per change does not depend on size; it
      leaves out resolving results per order, so it is a lower bound of its cost);
  (b) steady: batches of STEADY_BATCH changes, median batch time, against recomputing
      the whole join in Spark every batch; then the left table doubled and the same again.

The join keeps the products table in every state partition (``replicate_right``, a
dimension table); ``--shuffled`` measures Kafka's layout instead (subscriptions and
products partitioned by product, results regrouped by order).

usage: python bench/joins.py [--left 1000000] [--right 100000] [--changes 1000000] [--shuffled]
       python bench/joins.py --left 10000000 --steady-only   # (b) at 10M orders
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

PARTITIONS = 4  # of each source topic
STATE_PARTITIONS = 2  # one store task per core
ORDER_SCHEMA = "product STRING, qty BIGINT"
PRODUCT_SCHEMA = "name STRING, price BIGINT"


def topology(replicate_right: bool = True):
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema=ORDER_SCHEMA)
    products = builder.table("products", value_schema=PRODUCT_SCHEMA)
    orders.join(
        products,
        "struct(left.qty AS qty, right.name AS name, right.price AS price)",
        foreign_key="product",
        materialized_as="enriched",
        replicate_right=replicate_right,
    )
    return builder.build()


def _text(prefix: str, ids: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(prefix, pa.array(ids).cast(pa.string()), "")


class Workload:
    """The current foreign key of every order, so generated changes are what the
    workload says (a value update keeps the product, a move changes it)."""

    def __init__(self, rng: np.random.Generator, left: int, right: int):
        self.rng, self.right = rng, right
        self.product = rng.integers(0, right, left)

    def orders(self, ids: np.ndarray, products: np.ndarray, deleted: np.ndarray, ts0: int) -> pa.Table:
        n = len(ids)
        qty = self.rng.integers(1, 100, n)
        value = pc.binary_join_element_wise(
            '{"product":"p', pa.array(products).cast(pa.string()), '","qty":', pa.array(qty).cast(pa.string()), "}", ""
        )
        value = pc.if_else(pa.array(deleted), pa.nulls(n, pa.string()), value)
        return pa.table({
            "key": _text("o", ids).cast(pa.binary()),
            "value": value.cast(pa.binary()),
            "timestamp": pa.array(np.arange(ts0, ts0 + n, dtype=np.int64)),
        })

    def products(self, ids: np.ndarray, ts0: int) -> pa.Table:
        n = len(ids)
        price = self.rng.integers(1, 10_000, n)
        value = pc.binary_join_element_wise(
            '{"name":"product ', pa.array(ids).cast(pa.string()), '","price":', pa.array(price).cast(pa.string()), "}", ""
        )
        return pa.table({
            "key": _text("p", ids).cast(pa.binary()),
            "value": value.cast(pa.binary()),
            "timestamp": pa.array(np.arange(ts0, ts0 + n, dtype=np.int64)),
        })

    def initial_orders(self, start: int, count: int, ts0: int) -> pa.Table:
        ids = np.arange(start, start + count)
        return self.orders(ids, self.product[start : start + count], np.zeros(count, bool), ts0)

    def changes(self, n: int, ts0: int) -> tuple[pa.Table, pa.Table]:
        """``n`` changes: (order records, product records)."""
        kind = self.rng.random(n)
        right_updates = kind < 0.20
        order_ids = self.rng.integers(0, len(self.product), n)[~right_updates]
        order_kind = kind[~right_updates]
        moves = order_kind < 0.40  # 20% of all changes
        deletes = (order_kind >= 0.40) & (order_kind < 0.45)  # 5%
        new_products = self.rng.integers(0, self.right, len(order_ids))
        products = np.where(moves, new_products, self.product[order_ids])
        self.product[order_ids[moves]] = new_products[moves]
        orders = self.orders(order_ids, products, deletes, ts0)
        product_ids = self.rng.integers(0, self.right, int(right_updates.sum()))
        return orders, self.products(product_ids, ts0)

    def grow(self, count: int) -> None:
        self.product = np.concatenate([self.product, self.rng.integers(0, self.right, count)])


def records_frame(spark, written: dict[str, pa.Table]):
    """A batch as the streaming source hands it over (normalized topic columns)."""
    tables = []
    for topic, rows in written.items():
        frame = rows.select(["key", "value", "partition", "offset", "timestamp"])
        frame = frame.append_column("topic", pa.array([topic] * rows.num_rows))
        frame = frame.append_column(
            "headers", pa.nulls(rows.num_rows, pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])))
        )
        tables.append(frame.select(["key", "value", "topic", "partition", "offset", "timestamp", "headers"]))
    return spark.createDataFrame(pa.concat_tables(tables))


def recompute(spark, store: EmbeddedStore) -> float:
    """The whole join from scratch over both topics, as a plain Spark batch job."""
    from pyspark.sql import functions as F

    began = time.perf_counter()

    def current(topic: str, schema: str):
        records = store.read_batch(spark, [topic])
        latest = records.groupBy("key").agg(F.max_by("value", F.struct("partition", "offset")).alias("value"))
        return latest.where(F.col("value").isNotNull()).select(
            F.col("key").cast("string").alias("k"), F.from_json(F.col("value").cast("string"), schema).alias("v")
        )

    orders, products = current("orders", ORDER_SCHEMA), current("products", PRODUCT_SCHEMA)
    joined = orders.join(products, orders["v.product"] == products["k"]).select(
        orders["k"], orders["v.qty"], products["v.name"], products["v.price"]
    )
    joined.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def tws_rate(spark, work: Workload, left: int, right: int, changes: int, checkpoint: Path) -> float:
    """Changes/s of the same join written with transformWithState, per key, both sides:
    the orders table keyed by order (its value and foreign key in state; a change
    unsubscribes the old product and subscribes the new one), then the subscriptions
    keyed by product (the product row and its subscribed orders in state; a subscription
    meets the product, a product change every subscriber). Spark runs one
    transformWithState per Update-mode query, so the two stages are two queries, the
    second reading what the first wrote; the rate counts both. The state is loaded first
    with ``left`` orders and ``right`` products (the benchmark's fan-out), untimed; then
    ``changes`` changes are timed. It leaves out the last step of the join (resolving the
    results per order), so it is a lower bound of what the whole join costs."""
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import BooleanType, StringType, StructField, StructType

    event_schema = StructType([
        StructField("fk", StringType()), StructField("kind", StringType()), StructField("key", StringType()),
        StructField("value", StringType()), StructField("deleted", BooleanType()),
    ])

    class Orders(StatefulProcessor):
        def init(self, handle):
            self.state = handle.getValueState(
                "order", StructType([StructField("value", StringType()), StructField("fk", StringType())])
            )

        def handleInputRows(self, key, rows, timerValues):
            old, old_fk = self.state.get() if self.state.exists() else (None, None)
            new, new_fk = old, old_fk
            for row in rows:
                new, new_fk = row.value, row.fk
            if new is None:
                self.state.clear()
            else:
                self.state.update((new, new_fk))
            if old_fk is not None and (new is None or new_fk != old_fk):
                yield Row(fk=old_fk, kind="unsubscribe", key=key[0], value=None, deleted=new is None)
            if new is not None and new_fk is not None and new != old:
                yield Row(fk=new_fk, kind="subscribe", key=key[0], value=new, deleted=False)

        def close(self):
            pass

    class Subscriptions(StatefulProcessor):
        def init(self, handle):
            self.product = handle.getValueState("product", StructType([StructField("v", StringType())]))
            self.orders = handle.getMapState(
                "orders", StructType([StructField("k", StringType())]), StructType([StructField("v", StringType())])
            )

        def handleInputRows(self, key, rows, timerValues):
            product = self.product.get()[0] if self.product.exists() else None
            for row in rows:
                if row.kind == "product":
                    product = row.value
                    self.product.update((product,))
                    for (order,), (value,) in self.orders.iterator():
                        yield Row(order=order, order_value=value, product_value=product)
                elif row.kind == "subscribe":
                    self.orders.updateValue((row.key,), (row.value,))
                    yield Row(order=row.key, order_value=row.value, product_value=product)
                else:
                    self.orders.removeKey((row.key,))
                    if row.deleted:
                        yield Row(order=row.key, order_value=None, product_value=None)

        def close(self):
            pass

    out_schema = StructType([
        StructField("order", StringType()), StructField("order_value", StringType()),
        StructField("product_value", StringType()),
    ])
    orders_source, products_source = checkpoint / "orders", checkpoint / "products"

    def append(orders: pa.Table, products: pa.Table) -> None:
        spark.createDataFrame(orders.select(["key", "value"])).select(
            F.col("key").cast("string").alias("key"), F.col("value").cast("string").alias("value"),
            F.get_json_object(F.col("value").cast("string"), "$.product").alias("fk"),
        ).write.format("delta").mode("append").save(str(orders_source))
        spark.createDataFrame(products.select(["key", "value"])).select(
            F.col("key").cast("string").alias("fk"), F.lit("product").alias("kind"),
            F.lit(None).cast("string").alias("key"), F.col("value").cast("string").alias("value"),
            F.lit(False).alias("deleted"),
        ).write.format("delta").mode("append").save(str(products_source))

    def run(frame, processor, schema, name: str) -> float:
        return run_to_end(frame, processor, schema, checkpoint, name)

    def both() -> float:
        events = run(spark.readStream.format("delta").load(str(orders_source)).groupBy("key"), Orders(),
                     event_schema, "events")
        inputs = spark.readStream.format("delta").load(str(checkpoint / "events")).unionByName(
            spark.readStream.format("delta").load(str(products_source))
        )
        return events + run(inputs.groupBy("fk"), Subscriptions(), out_schema, "joined")

    append(work.initial_orders(0, left, 0), work.products(np.arange(right), 0))
    both()  # the initial tables, untimed
    append(*work.changes(changes, 1_000_000))
    return changes / both()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--left", type=int, default=1_000_000)
    parser.add_argument("--right", type=int, default=100_000)
    parser.add_argument("--changes", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=10_000)
    parser.add_argument("--tws-sample", type=int, default=50_000)
    parser.add_argument("--steady-only", action="store_true",
                        help="bootstrap, then (b) at this size only: no catch-up, no doubling "
                             "(the 10M-row comparison: python bench/joins.py --left 10000000 --steady-only)")
    parser.add_argument("--shuffled", action="store_true",
                        help="products partitioned by product as in Kafka Streams, not replicated")
    args = parser.parse_args()

    spark = get_spark(
        "local[2]",
        app_name="tablestream-bench-joins",
        conf={
            "spark.sql.shuffle.partitions": str(PARTITIONS),
            "spark.sql.streaming.stateStore.providerClass":
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
            # Steady batches are handed over as a scan, as the streaming source does.
            "spark.sql.execution.arrow.localRelationThreshold": "0",
            # A bootstrap batch's results (10M rows at --left 10000000) reach the driver.
            "spark.driver.memory": "8g",
        },
    )
    home = Path(tempfile.mkdtemp(prefix="tablestream-bench-joins-"))
    try:
        store = EmbeddedStore(home)
        for topic in ("orders", "products"):
            store.create_topic(TopicConfig(topic, partitions=PARTITIONS))
        rng = np.random.default_rng(7)
        work = Workload(rng, args.left, args.right)

        # Bootstrap: every product and order once.
        store.append("products", work.products(np.arange(args.right), 0))
        for start in range(0, args.left, 500_000):
            store.append("orders", work.initial_orders(start, min(500_000, args.left - start), 1_000_000 + start))
        app = Application(topology(not args.shuffled), "bench", store=store, spark=spark, partitions=STATE_PARTITIONS, snapshot_every=1_000)
        began = time.perf_counter()
        app.run_until_caught_up()
        bootstrap = time.perf_counter() - began

        # (a) catch-up over a backlog of changes.
        ts = 10_000_000
        if not args.steady_only:
            for start in range(0, args.changes, 250_000):
                orders, products = work.changes(min(250_000, args.changes - start), ts)
                ts += 250_000
                store.append("orders", orders)
                store.append("products", products)
            began = time.perf_counter()
            app.run_until_caught_up()
            catchup = time.perf_counter() - began
            catchup_rate = args.changes / catchup
            # Same fan-out as the benchmark (orders per product), scaled to the sample.
            sample_right = max(1, args.tws_sample * args.right // args.left)
            tws = tws_rate(spark, Workload(np.random.default_rng(11), args.tws_sample, sample_right),
                           args.tws_sample, sample_right, args.tws_sample, home / "tws")

        # (b) steady batches, then the left table doubled.
        next_batch = 1_000_000

        def steady(first_batch: int) -> tuple[list[float], list[float]]:
            nonlocal ts
            times, recomputes = [], []
            for i in range(args.batches):
                orders, products = work.changes(args.batch_size, ts)
                ts += args.batch_size
                written = {"orders": store.append("orders", orders), "products": store.append("products", products)}
                frame = records_frame(spark, written)
                began = time.perf_counter()
                app.process_batch(frame, first_batch + i)
                times.append(time.perf_counter() - began)
                if i < 3:
                    recomputes.append(recompute(spark, store))
            return times, recomputes

        steady_1x, recompute_1x = steady(next_batch)
        m1, r1 = statistics.median(steady_1x[1:]), statistics.median(recompute_1x)
        layout = "partitioned by product (--shuffled)" if args.shuffled else "replicated in every state partition"
        print(f"products {layout}")
        print(f"bootstrap: {args.left:,} orders + {args.right:,} products in {bootstrap:.1f} s")
        if not args.steady_only:
            print(f"(a) catch-up: {args.changes:,} changes in {catchup:.1f} s = {catchup_rate:,.0f} changes/s "
                  "(target >= 100,000)")
            print(f"    transformWithState, both sides ({args.tws_sample:,} changes over {args.tws_sample:,} orders and "
                  f"{sample_right:,} products): {tws:,.0f} changes/s")
            print(f"    ratio: {catchup_rate / tws:.1f}x (target >= 25x)")
        print(f"(b) steady {args.batch_size:,}-change batches, {args.left:,} orders: median {m1:.3f} s "
              "(target < 1.2 s at 1M orders)")
        print(f"    recompute of the whole join: {r1:.3f} s -> {r1 / m1:.1f}x (target >= 10x at 10M orders)")
        if not args.steady_only:
            work.grow(args.left)
            for start in range(args.left, 2 * args.left, 500_000):
                rows = work.initial_orders(start, min(500_000, 2 * args.left - start), ts)
                ts += rows.num_rows
                app.process_batch(records_frame(spark, {"orders": store.append("orders", rows)}), next_batch + 100 + start)
            steady_2x, recompute_2x = steady(next_batch + 10_000_000)
            m2, r2 = statistics.median(steady_2x[1:]), statistics.median(recompute_2x)
            print(f"    orders doubled to {2 * args.left:,}: median {m2:.3f} s = {m2 / m1:.2f}x (target < 1.3x); "
                  f"recompute {r2:.3f} s -> {r2 / m2:.1f}x")
    finally:
        spark.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

"""COUNT and SUM of one grouping: one aggregation (``agg``: one store, one stage) against
two aggregations left-joined on the group key (two stores, two stages and a table-table
join: how SQL planned ``SELECT grp, COUNT(*), SUM(amount) ... GROUP BY grp`` before), in
one run on this machine, over the same table and the same steady batches, alternately.

usage: python bench/numeric_aggregates.py [--keys 100000] [--batches 8] [--batch-size 10000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
from engine_core import PARTITIONS, STATE_PARTITIONS, changelog, records_frame

from tablestream.dsl import StreamsBuilder, aggregates
from tablestream.runtime.app import Application
from tablestream.spark import get_spark
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig


def topology(shape: str):
    builder = StreamsBuilder()
    grouped = builder.table("changes", value_schema="grp STRING, amount BIGINT").group_by(("grp", "value"))
    if shape == "one":
        grouped.agg(n=aggregates.count(), total=aggregates.sum("amount"), materialized_as="stats")
    else:
        grouped.count().left_join(grouped.sum("amount"), "struct(left AS n, right AS total)", materialized_as="stats")
    return builder.build()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=10_000)
    args = parser.parse_args()

    spark = get_spark("local[2]", app_name="tablestream-bench", conf={
        "spark.sql.shuffle.partitions": str(PARTITIONS),
        "spark.sql.execution.arrow.localRelationThreshold": "0",
    })
    home = Path(tempfile.mkdtemp(prefix="tablestream-bench-"))
    try:
        store = EmbeddedStore(home)
        store.create_topic(TopicConfig("changes", partitions=PARTITIONS))
        rng = np.random.default_rng(42)
        store.append("changes", changelog(rng, args.keys, (0, args.keys), 0, 0.0))
        apps = {
            shape: Application(topology(shape), f"bench-{shape}", store=store, spark=spark, partitions=STATE_PARTITIONS)
            for shape in ("joined", "one")
        }
        for app in apps.values():
            app.run_until_caught_up()
        times: dict[str, list[float]] = {shape: [] for shape in apps}
        # One uncounted batch first (the first steady batch builds the rules' columns).
        for i in range(args.batches + 1):
            written = store.append("changes", changelog(rng, args.batch_size, (0, args.keys), 10_000_000 + i, 0.05))
            order = list(apps) if i % 2 == 0 else list(reversed(apps))
            for shape in order:
                frame = records_frame(spark, store, written)
                began = time.perf_counter()
                apps[shape].process_batch(frame, 1_000 + i)
                if i:
                    times[shape].append(time.perf_counter() - began)
        results = {shape: apps[shape].table("stats").orderBy("key").collect() for shape in apps}
        assert results["one"] == results["joined"], "the two plans disagree"
        for shape, label in (("joined", "count and sum joined (2 stores)"), ("one", "agg (1 store)")):
            ts = times[shape]
            print(f"{label}: median {statistics.median(ts):.3f} s per {args.batch_size:,}-change batch "
                  f"over {args.keys:,} keys (min {min(ts):.3f}, max {max(ts):.3f})")
        print(f"ratio: {statistics.median(times['joined']) / statistics.median(times['one']):.2f}x")
    finally:
        spark.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()

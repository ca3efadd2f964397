"""What guarding a Python callable costs: the user function column (its result, whether
it failed, the record's position for the processing log; one nondeterministic Arrow
UDF) against a plain Arrow UDF calling the same function, over the same rows, side by
side in one run.

    python bench/callables.py [--rows 1000000] [--rounds 3]

Prints one JSON line per round and a summary with the median ratio (guarded / plain).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import pyarrow as pa
from pyspark.sql import functions as F
from pyspark.sql.functions import arrow_udf
from pyspark.sql.types import StringType

from tablestream.runtime.expressions import JSON_TEXT, callable_column, unguarded
from tablestream.runtime.failures import FailureLog, ProcessingSettings, operating
from tablestream.spark import get_spark


def mapper(v):
    return {"inv": 1 / v["amount"]}


def rows(spark, count: int):
    return (
        spark.range(count)
        .select(
            F.format_string("k%d", F.col("id") % 100_000).alias("key"),
            F.to_json(F.struct((F.col("id") % 997 + 1).alias("amount"))).alias("value"),
            F.lit(0).cast("int").alias("o_src"),
            F.lit(0).cast("int").alias("o_part"),
            F.col("id").alias("o_off"),
            F.lit(0).cast("int").alias("o_idx"),
            (F.col("id") + 1_700_000_000_000).alias("ts"),
        )
        .repartition(2)
        .cache()
    )


def plain_column():
    def run(keys: pa.Array, values: pa.Array) -> pa.Array:
        return pa.array([json.dumps(mapper(json.loads(v))) for v in values.to_pylist()], pa.string())

    return arrow_udf(run, StringType())(F.col("key"), F.col("value"))


def timed(df) -> float:
    began = time.perf_counter()
    df.write.format("noop").mode("overwrite").save()
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    spark = get_spark()
    df = rows(spark, args.rows)
    df.count()
    failures = FailureLog(spark, ("orders",), ProcessingSettings())
    with operating(failures.reporter("invert", True)):
        guarded = callable_column(mapper, 1, JSON_TEXT, StringType(), convert=json.dumps)
    plain = df.withColumn("value", plain_column())
    checked = unguarded(df.withColumn("value", guarded), ["value"])
    timed(plain), timed(checked)  # warm-up: Python workers started
    ratios = []
    for round_ in range(args.rounds):
        plain_s, guarded_s = timed(plain), timed(checked)
        ratios.append(guarded_s / plain_s)
        print(json.dumps({"round": round_, "rows": args.rows, "plain_s": round(plain_s, 3),
                          "guarded_s": round(guarded_s, 3), "ratio": round(ratios[-1], 3)}))
    print(f"guarded / plain, median of {args.rounds}: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()

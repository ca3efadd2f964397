"""W4's ``transform_with_state`` peer: the stream-table join written per key with Spark's
transformWithState (the other workloads' are the processors of ``bench/engine_core.py``
and ``bench/joins.py``). Table rows and stream records are one input grouped by key:
a table row is kept in the key's state (a tombstone clears it), a stream record meets
the row in state. The table is loaded first (untimed), then the stream records are
timed; the output is checked against DuckDB."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from stateful import run_to_end


def enrich(spark, table: pa.Table, stream: pa.Table, checkpoint: Path) -> tuple[float, pa.Table]:
    """Seconds for the ``stream`` records (``key, value``, JSON ``amount``) once the
    ``table`` (``key, value``, JSON ``name, city``; null: a tombstone) is in state; and
    the output rows (``key, amount, name, city``)."""
    from pyspark.sql import Row
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    class Enrich(StatefulProcessor):
        def init(self, handle):
            self.row = handle.getValueState(
                "row", StructType([StructField("name", StringType()), StructField("city", StringType())])
            )

        def handleInputRows(self, key, rows, timerValues):
            row = self.row.get() if self.row.exists() else None
            for record in rows:
                if record.kind == "table":
                    row = None if record.deleted else (record.name, record.city)
                    if row is None:
                        self.row.clear()
                    else:
                        self.row.update(row)
                elif row is not None:
                    yield Row(key=key[0], amount=record.amount, name=row[0], city=row[1])

        def close(self):
            pass

    source = checkpoint / "source"

    def append(records: pa.Table, kind: str) -> None:
        text = F.col("value").cast("string")
        spark.createDataFrame(records.select(["key", "value"])).select(
            F.col("key").cast("string").alias("key"), F.lit(kind).alias("kind"), text.isNull().alias("deleted"),
            F.get_json_object(text, "$.amount").cast("long").alias("amount"),
            F.get_json_object(text, "$.name").alias("name"), F.get_json_object(text, "$.city").alias("city"),
        ).write.format("delta").mode("append").save(str(source))

    schema = StructType([StructField("key", StringType()), StructField("amount", LongType()),
                         StructField("name", StringType()), StructField("city", StringType())])

    def run() -> float:
        frame = spark.readStream.format("delta").load(str(source)).groupBy("key")
        return run_to_end(frame, Enrich(), schema, checkpoint, "enriched")

    append(table, "table")
    run()  # the table into state, untimed
    append(stream, "stream")
    seconds = run()
    return seconds, spark.read.format("delta").load(str(checkpoint / "enriched")).toArrow()

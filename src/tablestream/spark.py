"""The one place a SparkSession is built.

``local[*]`` unless a master is configured (``spark-submit --master yarn|k8s|spark://``,
``TABLESTREAM_SPARK_MASTER`` or the ``master`` argument); Delta Lake, Spark's Kafka
connector and Spark's Avro functions come through ``spark.jars.packages``; logs are
quiet.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Mapping
from pathlib import Path

DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"
KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# No spark-avro 4.2.x is published on Maven Central; 4.1.1 works with Spark 4.2.0.
AVRO_PACKAGE = "org.apache.spark:spark-avro_2.13:4.1.1"
PACKAGES = (DELTA_PACKAGE, KAFKA_PACKAGE, AVRO_PACKAGE)

MASTER_ENV = "TABLESTREAM_SPARK_MASTER"

_BASE_CONF: dict[str, str] = {
    "spark.jars.packages": ",".join(PACKAGES),
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    # Stores are written by tasks; a speculative copy of a task would write them twice.
    "spark.speculation": "false",
    "spark.sql.streaming.stateStore.providerClass": "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    # Every batch builds its DataFrames anew; PySpark's call-site capture would add
    # several JVM round trips to each function call (a third of a small batch's time).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}

_LOCAL_CONF: dict[str, str] = {
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.driver.memory": "4g",
}


def _configured_master(master: str | None) -> str | None:
    if master:
        return master
    if os.environ.get(MASTER_ENV):
        return os.environ[MASTER_ENV]
    return None  # spark-submit's --master (spark.master) or local[*]


def get_spark(
    master: str | None = None,
    app_name: str = "tablestream",
    conf: Mapping[str, str] | None = None,
):
    """Return the active SparkSession, or build one configured for tablestream.

    >>> spark = get_spark()                          # doctest: +SKIP
    >>> spark = get_spark("spark://host:7077")       # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active

    # Python workers must run this interpreter (the one with pyarrow and rocksdict).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

    chosen = _configured_master(master)
    submitted_master = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    local = chosen is None or chosen.startswith("local")
    if local:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    builder = SparkSession.builder.appName(app_name)
    if chosen is not None:
        builder = builder.master(chosen)
    elif "--master" not in submitted_master:
        builder = builder.master("local[*]")
    settings = dict(_BASE_CONF)
    if local:
        settings.update(_LOCAL_CONF)
        log_config = Path(__file__).with_name("log4j2.properties")
        # The throughput collector: a batch's garbage dies young, and a catch-up batch
        # (1M changes through a foreign-key join) runs about 5% faster than under G1
        # with pauses no longer (longest 222 ms against 279 ms over bootstrap and catch-up).
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log_config} -XX:+UseParallelGC"
        cached = _cached_jars()
        if cached:
            # Skip the Ivy resolve (10 s and a page of output) once it has succeeded here.
            del settings["spark.jars.packages"]
            settings["spark.jars"] = ",".join(cached)
    settings.update(conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if local and "spark.jars.packages" in settings:
        _remember_jars(spark.sparkContext.getConf().get("spark.jars", ""))
    return spark


def _jar_cache_file() -> Path:
    digest = hashlib.sha256(",".join(PACKAGES).encode()).hexdigest()[:16]
    return (
        Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
        / "tablestream"
        / f"jars-{digest}.txt"
    )


def _cached_jars() -> list[str]:
    path = _jar_cache_file()
    if not path.exists():
        return []
    jars = [line for line in path.read_text().splitlines() if line]
    return jars if jars and all(Path(j.removeprefix("file://")).exists() for j in jars) else []


def _remember_jars(jars: str) -> None:
    paths = [j for j in jars.split(",") if j]
    if not paths:
        return
    path = _jar_cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(paths) + "\n")
    tmp.replace(path)

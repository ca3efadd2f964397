"""The one place a SparkSession is built.

``local[*]`` unless a master is configured (``spark-submit --master yarn|k8s|spark://``,
``TABLESTREAM_SPARK_MASTER`` or the ``master`` argument); Delta Lake, Spark's Kafka
connector and Spark's Avro functions come through ``spark.jars.packages``; Spark's
start-up output and logs are quiet unless ``TABLESTREAM_VERBOSE=1``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

from . import config as ts_config

DELTA_PACKAGE = "io.delta:delta-spark_2.13:4.4.0"
KAFKA_PACKAGE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# No spark-avro 4.2.x is published on Maven Central; 4.1.1 works with Spark 4.2.0.
AVRO_PACKAGE = "org.apache.spark:spark-avro_2.13:4.1.1"
PACKAGES = (DELTA_PACKAGE, KAFKA_PACKAGE, AVRO_PACKAGE)

MASTER_ENV = "TABLESTREAM_SPARK_MASTER"
# Spark's JVM logs: errors only (unless verbose).
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")

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
    # Python workers and the Python driver talk to the JVM over Unix domain sockets: over
    # TCP, a reused worker waited about 40 ms for its task's first rows (the delayed
    # acknowledgement of a small write), in every Python task of every stage.
    "spark.python.unix.domain.socket.enabled": "true",
}

_LOCAL_CONF: dict[str, str] = {
    # Spark's daemon, but quiet when Spark stops an idle worker (see spark_daemon).
    "spark.python.daemon.module": "tablestream.spark_daemon",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.host": "127.0.0.1",
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.driver.memory": "4g",
    # Spark's default writer of the query's checkpoint files (offsets, commits) goes
    # through Hadoop's FileContext, which on a local disk forks a `chmod` and four
    # `readlink` processes per file: 20 processes and about 55 ms per trigger. The
    # FileSystem writer writes and renames the same files without them.
    "spark.sql.streaming.checkpointFileManagerClass": (
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager"
    ),
}


def _configured_master(master: str | None) -> str | None:
    if master:
        return master
    if os.environ.get(MASTER_ENV):
        return os.environ[MASTER_ENV]
    return None  # spark-submit's --master (spark.master) or local[*]


def runs_locally(master: str | None, submit_args: str = "") -> bool:
    """Whether Spark runs in this process's host only: ``master`` (else the one in
    ``spark-submit``'s arguments, else ``local[*]``) is ``local...``.

    >>> runs_locally(None), runs_locally("spark://10.0.0.5:7077"), runs_locally(None, "--master yarn pyspark-shell")
    (True, False, False)
    """
    submitted = re.search(r"--master[= ]+(\S+)", submit_args)
    return (master or (submitted.group(1) if submitted else "local[*]")).startswith("local")


def session_runs_locally(spark) -> bool:
    """Whether ``spark``'s master is ``local`` / ``local[...]`` (every task in this
    process's host)."""
    master = spark.sparkContext.master
    return master == "local" or master.startswith("local[")


def get_spark(
    master: str | None = None,
    app_name: str = "tablestream",
    conf: Mapping[str, str] | None = None,
):
    """Return the active SparkSession, or build one configured for tablestream.

    Quiet unless :func:`tablestream.config.verbose` (``TABLESTREAM_VERBOSE=1``): the JVM
    launcher's start-up output (Ivy's resolution report, JVM and log4j warnings) is held
    back, and shown only if the start fails; the first run's download of the Spark
    packages is announced in one line; afterwards Spark logs errors only. Verbose keeps
    Spark's own output and log levels.

    >>> spark = get_spark()                          # doctest: +SKIP
    >>> spark = get_spark("spark://host:7077")       # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active

    chosen = _configured_master(master)
    submitted_master = os.environ.get("PYSPARK_SUBMIT_ARGS", "")
    local = runs_locally(chosen, submitted_master)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if local:
        # Local Python workers run this interpreter (the one with pyarrow and rocksdict);
        # a cluster's executors run the Python its configuration names
        # (spark.pyspark.python or PYSPARK_PYTHON), never this host's path.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    quiet = not ts_config.verbose()
    settings = {"spark.app.name": app_name}
    if chosen is not None:
        settings["spark.master"] = chosen
    elif "--master" not in submitted_master:
        settings["spark.master"] = "local[*]"
    settings.update(_BASE_CONF)
    if local:
        settings.update(_LOCAL_CONF)
        # The throughput collector: a batch's garbage dies young, and a catch-up batch
        # (1M changes through a foreign-key join) runs about 5% faster than under G1
        # with pauses no longer (longest 222 ms against 279 ms over bootstrap and catch-up).
        java_options = ["-XX:+UseParallelGC"]
        if quiet:
            java_options.insert(0, f"-Dlog4j2.configurationFile=file:{LOG_CONFIG}")
        settings["spark.driver.extraJavaOptions"] = " ".join(java_options)
        cached = _cached_jars()
        if cached:
            # Skip the Ivy resolve (10 s and a page of output) once it has succeeded here.
            del settings["spark.jars.packages"]
            settings["spark.jars"] = ",".join(cached)
    settings.update(conf or {})
    home = _local_spark_home() if local and _launches_jvm() else None
    with _spark_home(home):
        if quiet and _launches_jvm():
            spark = _start_quietly(settings)
        else:
            builder = SparkSession.builder
            for key, value in settings.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
        _quiet_query_context_logs()
    if local and "spark.jars.packages" in settings:
        _remember_jars(spark.sparkContext.getConf().get("spark.jars", ""))
    return spark


def batch_session(spark):
    """A session with ``spark``'s settings, temporary views and functions, for an
    application's batches: Spark's adaptive query execution is off in it, its SQL
    executions describe their plans to the UI in the ``simple`` mode, and ``spark``
    itself is left as it is.

    A batch's shuffles are its store stages, each with its partition count fixed (the
    state partitions, or the tasks of a spread stage) and nothing to coalesce or
    re-plan; adaptive execution would run them stage by stage, planning again between
    stages (a 10,000-change batch of a foreign-key join beside an aggregation: about
    0.1-0.6 s more, one-change batches 0.1-0.25 s more, measured side by side).

    Spark describes each SQL execution's physical plan to its UI as the execution
    starts, in ``spark.sql.ui.explainMode``; the default ``formatted`` text of a W2
    batch's plan takes 48 ms to build, the ``simple`` one (the plan's tree, as
    ``explain()`` prints it) 1-4 ms, on every batch.

    >>> batches = batch_session(get_spark())        # doctest: +SKIP
    >>> batches.conf.get("spark.sql.adaptive.enabled")  # doctest: +SKIP
    'false'
    """
    from pyspark.sql import SparkSession

    # Scala's cloneSession (private to Spark's sql package, callable from the JVM's side)
    # copies the session's state; PySpark has no wrapper for it.
    session = SparkSession(spark.sparkContext, spark._jsparkSession.cloneSession())  # noqa: SLF001
    session.conf.set("spark.sql.adaptive.enabled", "false")
    session.conf.set("spark.sql.ui.explainMode", "simple")
    return session


_MAX_BYTES_PER_ARROW_BATCH = "spark.sql.execution.arrow.maxBytesPerBatch"
# Spark's value of it that turns the byte limit off (Scala's Int.MaxValue).
_NO_BYTE_LIMIT = str(2**31 - 1)


@contextlib.contextmanager
def arrow_batches_cut_by_rows(session, rows_only: bool = True) -> Iterator[None]:
    """Within it (when ``rows_only``), the Arrow batches the jobs of ``session`` send to
    Python workers are cut at ``spark.sql.execution.arrow.maxRecordsPerBatch`` rows
    (10,000 by default) only, not also at ``spark.sql.execution.arrow.maxBytesPerBatch``
    bytes; the session's setting is back as it was after it.

    Spark measures a batch's bytes after every row it adds to it, over every column's
    buffers: for the rows of a bulk batch's Python stages that is a per-row cost (in a
    profile of a 1M-record bootstrap, a fifth of the JVM's time writing the positions
    job's rows to Python). Only for rows known to be small: without the byte limit, a
    batch holds its 10,000 rows whatever their size.

    >>> with arrow_batches_cut_by_rows(batches):    # doctest: +SKIP
    ...     summaries = positions.mapInArrow(summarize, schema).toArrow()
    """
    if not rows_only:
        yield
        return
    conf = session.conf
    before = conf.get(_MAX_BYTES_PER_ARROW_BATCH, None)
    conf.set(_MAX_BYTES_PER_ARROW_BATCH, _NO_BYTE_LIMIT)
    try:
        yield
    finally:
        if before is None:
            conf.unset(_MAX_BYTES_PER_ARROW_BATCH)
        else:
            conf.set(_MAX_BYTES_PER_ARROW_BATCH, before)


def _quiet_query_context_logs() -> None:
    """PySpark logs every error that carries a query context (a division by zero in a
    SQL expression) with its whole JVM stack as it raises it; tablestream reports such
    errors itself, in one line, so those logs are left to verbose runs."""
    import logging

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        logging.getLogger(name).disabled = True


def _launches_jvm() -> bool:
    """Whether building a session starts a JVM here (not under ``spark-submit``, which
    started it, nor after an earlier session of this process, whose JVM stays)."""
    from pyspark import SparkContext

    # PySpark keeps its gateway in a class attribute and has no public accessor for it.
    return "PYSPARK_GATEWAY_PORT" not in os.environ and SparkContext._gateway is None  # noqa: SLF001


def _start_quietly(settings: Mapping[str, str]):
    """Start the JVM with its standard error read by :class:`_LauncherOutput`, then the
    session on it."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    spark_conf = SparkConf()  # no JVM yet: the settings become spark-submit's --conf
    for key, value in settings.items():
        spark_conf.set(key, value)
    notice = download_notice(settings)
    if notice:
        print(notice, file=sys.stderr, flush=True)
    output = _LauncherOutput()
    try:
        gateway = launch_gateway(spark_conf, popen_kwargs={"stderr": output.write_end})
        output.launched()
        SparkContext(conf=spark_conf, gateway=gateway)
        spark = SparkSession.builder.config(conf=spark_conf).getOrCreate()
    except BaseException:
        output.show_held()
        raise
    # Everything the JVM wrote before this line belongs to its start-up; from it on,
    # its standard error (Spark's errors, Python workers' output) passes through.
    gateway.jvm.java.lang.System.err.println(output.marker)
    return spark


class _LauncherOutput:
    """The JVM's standard error, read by a daemon thread: held back until the marker
    line that ends the start-up, written to ``sys.stderr`` after it. The held lines are
    written out if the start fails, so that its reason is seen."""

    def __init__(self) -> None:
        read_end, self.write_end = os.pipe()
        self.marker = f"tablestream-started-{uuid.uuid4().hex}"
        self._held: list[str] | None = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        threading.Thread(target=self._pump, args=(read_end,), name="tablestream-jvm-stderr", daemon=True).start()

    def launched(self) -> None:
        """The JVM holds its own copy of the write end; ours must go for an end of file."""
        os.close(self.write_end)
        self.write_end = -1

    def show_held(self) -> None:
        if self.write_end >= 0:
            self.launched()
        self._closed.wait(timeout=5)  # a JVM that exited has written everything
        with self._lock:
            held, self._held = self._held, None
        if held:
            _write_stderr("".join(held))

    def _pump(self, read_end: int) -> None:
        with os.fdopen(read_end, "r", encoding="utf-8", errors="replace") as stream:
            for line in stream:
                with self._lock:
                    if self._held is not None:
                        if line.rstrip("\n") == self.marker:
                            self._held = None
                        else:
                            self._held.append(line)
                        continue
                _write_stderr(line)
        self._closed.set()


def _write_stderr(text: str) -> None:
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):  # sys.stderr replaced and closed (a test's capture)
        sys.__stderr__.write(text)


def download_notice(settings: Mapping[str, str]) -> str | None:
    """The one line that announces the first download of the Spark packages (None when
    Ivy already holds them, or no packages are resolved)."""
    packages = settings.get("spark.jars.packages")
    if not packages:
        return None
    ivy = Path(settings.get("spark.jars.ivy") or Path.home() / ".ivy2.5.2").expanduser()
    coordinates = [p.split(":") for p in packages.split(",") if p.count(":") == 2]
    if all((ivy / "jars" / f"{group}_{artifact}-{version}.jar").exists() for group, artifact, version in coordinates):
        return None
    names = ", ".join(_short_name(artifact) for _, artifact, _ in coordinates)
    shown = f"~/{ivy.relative_to(Path.home())}" if ivy.is_relative_to(Path.home()) else str(ivy)
    return f"Downloading Spark packages ({names}) once, to {shown} ..."


def _short_name(artifact: str) -> str:
    """``spark-sql-kafka-0-10_2.13`` -> ``spark-sql-kafka``."""
    name = artifact.split("_")[0]
    return name.removesuffix("-0-10")


def _cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tablestream"


def _jar_cache_file() -> Path:
    digest = hashlib.sha256(",".join(PACKAGES).encode()).hexdigest()[:16]
    return _cache_dir() / f"jars-{digest}.txt"


def _local_spark_home() -> Path | None:
    """The Spark home a local JVM is started with, for a pip-installed PySpark with no
    ``SPARK_HOME`` set: the package's own directories (``bin``, ``jars``, ...) linked
    from a cache directory, all but ``python``. None: ``SPARK_HOME`` is set, or PySpark
    is not laid out as its pip package is.

    Spark starts every Python process it needs (Python workers, the process that plans
    a Python data source, the one that runs a streaming Python source for each query)
    with ``$SPARK_HOME/python/lib/pyspark.zip`` first on ``PYTHONPATH``, and Python
    compiles modules imported from a zip archive at every start: importing PySpark's
    SQL modules that way took 0.72 s against 0.26 s from the installed package, which
    those processes import instead when that archive is absent (a query on an embedded
    store reached its first batch in 0.5 s instead of 1.0 s).
    """
    if os.environ.get("SPARK_HOME"):
        return None
    import pyspark

    package = Path(pyspark.__file__).resolve().parent
    if not (package / "jars").is_dir() or not (package / "bin").is_dir():
        return None
    digest = hashlib.sha256(f"{package}:{pyspark.__version__}".encode()).hexdigest()[:16]
    home = _cache_dir() / f"spark-home-{digest}"
    if (home / "jars").is_dir():
        return home
    building = home.with_name(f"{home.name}.{uuid.uuid4().hex}.tmp")
    try:
        building.mkdir(parents=True)
        for entry in package.iterdir():
            if entry.name != "python":
                (building / entry.name).symlink_to(entry)
        building.rename(home)
    except OSError:  # another process built it first, or no cache here: Spark's own home
        shutil.rmtree(building, ignore_errors=True)
    return home if (home / "jars").is_dir() else None


@contextlib.contextmanager
def _spark_home(home: Path | None) -> Iterator[None]:
    """``SPARK_HOME`` set to ``home`` while a JVM is started (PySpark starts it with
    this process's environment), then as it was."""
    if home is None:
        yield
        return
    os.environ["SPARK_HOME"] = str(home)
    try:
        yield
    finally:
        del os.environ["SPARK_HOME"]


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

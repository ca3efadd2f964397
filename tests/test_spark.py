"""Starting Spark: nothing on the terminal but tablestream's own line (the first run's
download notice) unless TABLESTREAM_VERBOSE=1, which keeps Spark's own output."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tablestream.spark import PACKAGES, download_notice

NOTICE_START = "Downloading Spark packages (delta-spark, spark-sql-kafka, spark-avro) once, to "

START = """
import sys
from tablestream.spark import get_spark
spark = get_spark()
print(spark.range(3).count())
print("after the start", file=sys.stderr)
spark.stop()
"""


def start_spark(**env) -> subprocess.CompletedProcess:
    """``get_spark()`` in a fresh interpreter, TABLESTREAM_VERBOSE as given."""
    base = {k: v for k, v in os.environ.items() if k != "TABLESTREAM_VERBOSE"}
    base["PYTHONPATH"] = str(Path(__file__).parents[1] / "src")
    return subprocess.run(
        [sys.executable, "-c", START], env={**base, **env}, capture_output=True, text=True, timeout=300
    )


def test_spark_starts_without_a_word_on_stderr():
    started = start_spark()
    assert (started.returncode, started.stdout) == (0, "3\n")
    lines = started.stderr.splitlines()
    # The download notice only on a machine where Ivy does not hold the packages yet.
    assert lines[-1:] == ["after the start"] and all(line.startswith(NOTICE_START) for line in lines[:-1])
    assert len(lines) <= 2


@pytest.mark.slow
def test_verbose_keeps_sparks_own_start_up_output():
    started = start_spark(TABLESTREAM_VERBOSE="1")
    assert (started.returncode, started.stdout) == (0, "3\n")
    assert 'Setting default log level to "WARN".' in started.stderr.splitlines()


def test_the_download_notice_is_one_line_while_ivy_lacks_a_package(tmp_path):
    settings = {"spark.jars.packages": ",".join(PACKAGES), "spark.jars.ivy": str(tmp_path)}
    expected = f"{NOTICE_START}{tmp_path} ..."
    assert download_notice(settings) == expected
    (tmp_path / "jars").mkdir()
    for package in PACKAGES[:2]:
        group, artifact, version = package.split(":")
        (tmp_path / "jars" / f"{group}_{artifact}-{version}.jar").touch()
    assert download_notice(settings) == expected
    group, artifact, version = PACKAGES[2].split(":")
    (tmp_path / "jars" / f"{group}_{artifact}-{version}.jar").touch()
    assert download_notice(settings) is None
    assert download_notice({"spark.jars": "/opt/jars/delta.jar"}) is None


def test_the_download_notice_shows_the_default_ivy_directory_under_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    notice = download_notice({"spark.jars.packages": PACKAGES[0]})
    assert notice == "Downloading Spark packages (delta-spark) once, to ~/.ivy2.5.2 ..."


@pytest.mark.parametrize(
    ("master", "submit_args", "local"),
    [
        (None, "", True),
        ("local[2]", "", True),
        ("local-cluster[2,1,1024]", "", True),
        ("spark://127.0.0.1:7077", "", False),
        (None, "--master yarn --deploy-mode client pyspark-shell", False),
        (None, "--master=k8s://https://api:6443 pyspark-shell", False),
        (None, "--master local[4] pyspark-shell", True),
    ],
)
def test_local_python_workers_run_this_interpreter_and_a_clusters_its_own(master, submit_args, local):
    """In local mode the Python workers get this interpreter (PYSPARK_PYTHON); on a
    cluster the executors run the Python the cluster's configuration names."""
    from tablestream.spark import runs_locally

    assert runs_locally(master, submit_args) is local


def test_a_local_sessions_python_workers_import_the_installed_pyspark_not_sparks_archive(spark):
    """Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on its Python processes'
    path, and Python compiles what it imports from an archive at every start: a local
    session's processes import the installed package instead."""
    import pyspark
    from pyspark.sql import functions as F

    from tablestream.spark import session_runs_locally

    if not session_runs_locally(spark):
        pytest.skip("a cluster's executors run the Python and PySpark their hosts have")

    @F.udf("string")
    def pyspark_file(_):
        import pyspark as worker_pyspark

        return worker_pyspark.__file__

    [row] = spark.range(1).select(pyspark_file("id").alias("file")).collect()
    assert row.file == pyspark.__file__


def test_the_local_spark_home_links_the_package_but_its_python_archives(tmp_path, monkeypatch):
    import pyspark

    from tablestream.spark import _local_spark_home, _spark_home

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    package = Path(pyspark.__file__).resolve().parent
    home = _local_spark_home()
    assert home is not None and home.parent == tmp_path / "tablestream"
    assert (home / "jars").resolve() == package / "jars"
    assert (home / "bin" / "spark-submit").exists()
    assert not (home / "python").exists() and (package / "python" / "lib" / "pyspark.zip").exists()
    assert _local_spark_home() == home
    assert sorted(p.name for p in (tmp_path / "tablestream").iterdir()) == [home.name]  # nothing left over
    with _spark_home(home):
        assert os.environ["SPARK_HOME"] == str(home)
    assert "SPARK_HOME" not in os.environ


def test_a_spark_home_the_user_set_is_kept(monkeypatch):
    from tablestream.spark import _local_spark_home

    monkeypatch.setenv("SPARK_HOME", "/opt/spark")
    assert _local_spark_home() is None


def test_a_local_sessions_python_workers_are_forked_by_the_quiet_daemon(spark):
    from pyspark.sql import functions as F

    from tablestream.spark import session_runs_locally

    if not session_runs_locally(spark):
        pytest.skip("a cluster's executors fork their workers with Spark's own daemon")

    @F.udf("string")
    def main_module(_):
        import sys as worker_sys

        return worker_sys.modules["__main__"].__spec__.name

    assert spark.range(1).select(main_module("id")).collect()[0][0] == "tablestream.spark_daemon"


def test_a_local_sessions_python_workers_hold_their_modules_out_of_the_collectors_reach(spark):
    # Spark's daemon runs a full garbage collection after every task; it walks only the
    # objects the daemon and the worker did not freeze (without freezing: about 100,000).
    from pyspark.sql import functions as F

    from tablestream.spark import session_runs_locally

    if not session_runs_locally(spark):
        pytest.skip("a cluster's executors fork their workers with Spark's own daemon")

    @F.udf("array<long>")
    def collected(_):
        import gc

        return [gc.get_freeze_count(), len(gc.get_objects())]

    spark.range(1).select(collected("id")).collect()  # a first task, which imports its modules
    frozen, walked = spark.range(1).select(collected("id")).collect()[0][0]
    assert frozen > 50_000
    assert walked < 20_000


def test_a_local_sessions_python_workers_have_no_archive_without_python_on_their_path(spark):
    # Spark puts its jar on the workers' path; reading it again at a worker's first task
    # (importlib.invalidate_caches) took 60-70 ms.
    from pyspark.sql import functions as F

    from tablestream.spark import session_runs_locally

    if not session_runs_locally(spark):
        pytest.skip("a cluster's executors fork their workers with Spark's own daemon")

    @F.udf("array<string>")
    def archives(_):
        import sys as worker_sys

        return [entry for entry in worker_sys.path if entry.endswith(".jar")]

    assert spark.range(1).select(archives("id")).collect()[0][0] == []


def test_the_daemon_takes_archives_without_python_out_of_its_path(tmp_path):
    jar, package = tmp_path / "classes.jar", tmp_path / "modules.zip"
    with zipfile.ZipFile(jar, "w") as archive:
        archive.writestr("org/example/Main.class", b"\xca\xfe")
    with zipfile.ZipFile(package, "w") as archive:
        archive.writestr("zipped_module.py", "VALUE = 7\n")
    script = f"""
import sys
sys.path[:0] = [{str(jar)!r}, {str(package)!r}, {str(tmp_path / "absent.jar")!r}]
import zipped_module
try:
    import org.example
except ImportError:
    pass
from tablestream import spark_daemon
print(spark_daemon.drop_archives_without_python() == [{str(jar)!r}])
print({str(jar)!r} in sys.path, {str(package)!r} in sys.path, {str(tmp_path / "absent.jar")!r} in sys.path)
print(any(key.startswith({str(jar)!r}) for key in sys.path_importer_cache), zipped_module.VALUE)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False", "True", "True", "False", "7"]


def test_the_daemon_freezes_what_a_worker_holds_after_a_task_that_imported_modules():
    script = """
import gc
from tablestream import spark_daemon
spark_daemon.preload()
preloaded = gc.get_freeze_count()
spark_daemon.freeze_new_modules()
same = gc.get_freeze_count()
import xml.dom.minidom
spark_daemon.freeze_new_modules()
print(preloaded > 50_000, same == preloaded, gc.get_freeze_count() > preloaded)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True", "True"]


def test_a_local_sessions_queries_write_their_checkpoint_through_hadoops_file_system(spark, tmp_path):
    # Hadoop's FileContext forks chmod and readlink processes for each file it writes on a
    # local disk (20 per trigger); its FileSystem does not.
    from tablestream.spark import session_runs_locally

    if not session_runs_locally(spark):
        pytest.skip("a cluster keeps Spark's default checkpoint writer")
    jvm = spark.sparkContext._jvm
    manager = jvm.org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.create(
        jvm.org.apache.hadoop.fs.Path(str(tmp_path / "checkpoint")), spark._jsparkSession.sessionState().newHadoopConf()
    )
    assert manager.getClass().getSimpleName() == "FileSystemBasedCheckpointFileManager"


def test_the_daemon_ends_a_worker_whose_connection_spark_closed_without_raising(monkeypatch):
    from tablestream import spark_daemon

    def closed(sock, authenticated):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(spark_daemon, "_spark_worker", closed)
    assert spark_daemon.worker(None, True) == -1

    def failed(sock, authenticated):
        raise RuntimeError("a worker's own failure")

    monkeypatch.setattr(spark_daemon, "_spark_worker", failed)
    with pytest.raises(RuntimeError, match="a worker's own failure"):
        spark_daemon.worker(None, True)


def test_a_worker_that_ends_closes_the_stores_it_kept_open_and_one_that_goes_on_keeps_them(
    monkeypatch, tmp_path
):
    from tablestream import spark_daemon
    from tablestream.runtime.state import NEWEST, StoreLayout, StoreSession, process_keeper

    layout = StoreLayout(tmp_path / "local", tmp_path / "durable")

    def task(sock, authenticated):
        with StoreSession(layout, "s", 0, 0, expected=NEWEST, keep="run-1") as session:
            session.put([b"k"], [b"v"])
        return 0

    monkeypatch.setattr(spark_daemon, "_spark_worker", task)
    monkeypatch.setattr(spark_daemon, "freeze_new_modules", lambda: None)
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    assert spark_daemon.worker(None, True) == 0
    assert process_keeper().kept() == [layout.db_dir("s", 0)]
    monkeypatch.delenv("SPARK_REUSE_WORKER")
    assert spark_daemon.worker(None, True) == 0
    assert process_keeper().kept() == []


IDLE = """
import time
from tablestream.spark import get_spark
spark = get_spark()
frame = spark.range(4).repartition(2)
frame.mapInArrow(lambda batches: batches, frame.schema).collect()
time.sleep(75)  # Spark stops a Python worker idle for a minute
print(frame.count())
spark.stop()
"""


@pytest.mark.slow
def test_python_workers_spark_stops_when_idle_leave_nothing_on_stderr():
    env = {k: v for k, v in os.environ.items() if k != "TABLESTREAM_VERBOSE"}
    env["PYTHONPATH"] = str(Path(__file__).parents[1] / "src")
    run = subprocess.run([sys.executable, "-c", IDLE], env=env, capture_output=True, text=True, timeout=400)
    assert (run.returncode, run.stdout) == (0, "4\n")
    assert [line for line in run.stderr.splitlines() if not line.startswith(NOTICE_START)] == []


def test_without_a_writable_cache_spark_keeps_its_own_home(tmp_path, monkeypatch):
    from tablestream.spark import _local_spark_home

    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache directory would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert _local_spark_home() is None


def test_arrow_batches_cut_by_rows_only_within_and_the_setting_back_after_even_on_failure(spark):
    from tablestream.spark import arrow_batches_cut_by_rows, batch_session

    session, setting = batch_session(spark), "spark.sql.execution.arrow.maxBytesPerBatch"
    with arrow_batches_cut_by_rows(session):
        assert session.conf.get(setting) == "2147483647"
    assert session.conf.get(setting) == "67108864b"
    with arrow_batches_cut_by_rows(session, rows_only=False):
        assert session.conf.get(setting) == "67108864b"
    session.conf.set(setting, "1m")
    with pytest.raises(ZeroDivisionError), arrow_batches_cut_by_rows(session):
        assert session.conf.get(setting) == "2147483647"
        1 / 0  # noqa: B018
    assert session.conf.get(setting) == "1m"
    assert spark.conf.get(setting) == "67108864b"

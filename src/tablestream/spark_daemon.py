"""Spark's Python daemon (``pyspark.daemon``, which forks the Python workers of a local
session) with two differences.

A worker whose connection Spark has closed exits without printing a traceback. Spark
stops a Python worker that has been idle for a minute by closing its connection; the
worker then flushes what it had to write, and that flush fails with
``BrokenPipeError``. Over TCP the failure goes unnoticed (a closed peer is found only at
a later write); over the Unix domain sockets tablestream's sessions use
(:mod:`tablestream.spark`) it comes at once, and Spark's daemon prints its traceback:
a local application would print one each time a worker went idle. Whatever that worker
had been running is over, and Spark knows it.

The garbage collection Spark's daemon runs after each task walks only what tasks left.
That collection is a full one: it walks every object the worker holds, the modules of
pyspark, pandas, pyarrow and tablestream among them (about 100,000 objects, 40-90 ms on
two busy cores), more than a small task's own work. So the daemon imports the worker's
modules before it forks, and freezes them (:func:`gc.freeze`: moved out of the
collector's reach, and shared by every worker); a worker freezes what it holds after a
task that imported modules of its own, which is what lives on (modules, their
functions and classes), once that task's garbage is collected.

Spark puts the jar it runs from on the workers' ``PYTHONPATH`` (a place PySpark's own
modules were once packaged in). A worker's first task adds Spark's files directory to
its path and calls :func:`importlib.invalidate_caches`, which makes the import system
read each zip archive on the path again: for ``spark-core``'s jar (5,854 entries, none
of them Python) 60-70 ms, in the first task of every worker. The daemon takes archives
without Python out of its path before it forks, so no worker reads them.

Used through ``spark.python.daemon.module``.
"""

from __future__ import annotations

import gc
import os
import sys
import zipfile

from pyspark import daemon

from tablestream.runtime.state.keeper import process_keeper

_spark_worker = daemon.worker

# What every worker of a tablestream application imports: Spark's worker (with pandas,
# which its Arrow serializers load) and the runtime its tasks run.
PRELOADED = ("pyspark.worker", "pandas", "tablestream.runtime.stage", "tablestream.runtime.kernels")

_modules_when_frozen = 0


def worker(sock, authenticated: bool) -> int:
    """Spark's ``worker``; a connection Spark closed ends it with exit code -1 (the
    daemon then ends the worker's process quietly) instead of raising. After a task
    that imported modules, what the worker holds is frozen. A worker that ends closes
    the stores it kept open (:mod:`tablestream.runtime.state.keeper`), so their last
    batches are in their files rather than replayed from the changelogs."""
    try:
        code = _spark_worker(sock, authenticated)
    except BrokenPipeError:
        code = -1
    if code or not os.environ.get("SPARK_REUSE_WORKER"):
        process_keeper().close_all()
        return code
    freeze_new_modules()
    return code


def freeze_new_modules() -> None:
    """Collect garbage and freeze what lives on, when modules were imported since the
    last time."""
    global _modules_when_frozen
    if len(sys.modules) != _modules_when_frozen:
        gc.collect()
        gc.freeze()
        _modules_when_frozen = len(sys.modules)


def drop_archives_without_python() -> list[str]:
    """Take the zip archives that hold no Python module (jars) out of :data:`sys.path`,
    and their importers out of the import system's cache; returns them."""
    dropped = [entry for entry in sys.path if _archive_without_python(entry)]
    if dropped:
        sys.path[:] = [entry for entry in sys.path if entry not in dropped]
        for cached in list(sys.path_importer_cache):
            if any(cached == entry or cached.startswith(entry + "/") for entry in dropped):
                del sys.path_importer_cache[cached]
    return dropped


_PYTHON = (".py", ".pyc", ".so", ".pyd")


def _archive_without_python(entry: str) -> bool:
    if not zipfile.is_zipfile(entry):
        return False
    with zipfile.ZipFile(entry) as archive:
        return not any(name.endswith(_PYTHON) for name in archive.namelist())


def preload() -> None:
    """Import what every worker imports, and freeze it, before the daemon forks (with
    the archives without Python out of the path)."""
    drop_archives_without_python()
    for module in PRELOADED:
        __import__(module)
    freeze_new_modules()


if __name__ == "__main__":
    daemon.worker = worker
    preload()
    daemon.manager()

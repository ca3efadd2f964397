"""Spark's Python daemon (``pyspark.daemon``, which forks the Python workers of a local
session) with one difference: a worker whose connection Spark has closed exits without
printing a traceback.

Spark stops a Python worker that has been idle for a minute by closing its connection;
the worker then flushes what it had to write, and that flush fails with
``BrokenPipeError``. Over TCP the failure goes unnoticed (a closed peer is found only at
a later write); over the Unix domain sockets tablestream's sessions use
(:mod:`tablestream.spark`) it comes at once, and Spark's daemon prints its traceback:
a local application would print one each time a worker went idle. Whatever that worker
had been running is over, and Spark knows it. Used through
``spark.python.daemon.module``.
"""

from __future__ import annotations

from pyspark import daemon

_spark_worker = daemon.worker


def worker(sock, authenticated: bool) -> int:
    """Spark's ``worker``; a connection Spark closed ends it with exit code -1 (the
    daemon then ends the worker's process quietly) instead of raising."""
    try:
        return _spark_worker(sock, authenticated)
    except BrokenPipeError:
        return -1


if __name__ == "__main__":
    daemon.worker = worker
    daemon.manager()

"""Shared fixtures: one SparkSession per test session, an isolated tablestream home per test."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


MASTER_ENV = "TABLESTREAM_TEST_MASTER"
"""A Spark standalone master (``spark://127.0.0.1:P``) the session's tests run on
instead of ``local[2]``: the cluster tier runs property tests there this way."""


@pytest.fixture(scope="session")
def spark():
    from tablestream.spark import get_spark

    master = os.environ.get(MASTER_ENV)
    if master:
        from integration.cluster_apps.app import session as cluster_session

        session = cluster_session(master)
    else:
        session = get_spark(
            "local[2]",
            app_name="tablestream-tests",
            conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        )
    yield session
    session.stop()


@pytest.fixture
def ts_home(tmp_path, monkeypatch):
    """A fresh TABLESTREAM_HOME for one test."""
    home = tmp_path / "home"
    monkeypatch.setenv("TABLESTREAM_HOME", str(home))
    return home

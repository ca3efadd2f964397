"""Shared fixtures: one SparkSession per test session, an isolated tablestream home per test."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


@pytest.hookimpl(optionalhook=True)  # without pytest-xdist (-p no:xdist) it is not called
def pytest_xdist_make_scheduler(config, log):
    """Run in parallel (``pytest -n 2``), a worker takes a whole test module at a time,
    and every integration test goes to the one worker that takes the first of them: one
    broker and one cluster serve them all."""
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if nodeid.startswith("tests/integration/"):
                return "tests/integration"
            return super()._split_scope(nodeid)

    return ByModule(config, log)


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


@pytest.fixture(scope="session")
def s3_server():
    """An S3 endpoint served by moto on 127.0.0.1 (a free port), stopped at the end:
    the storage options that reach it."""
    moto_server = pytest.importorskip("moto.server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield {
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    server.stop()


@pytest.fixture
def s3_home(s3_server, request):
    """A fresh bucket on the moto S3 endpoint, as an ``s3a://`` location."""
    import re

    import pyarrow.fs as pafs

    from tablestream.storage.location import Location

    admin = pafs.S3FileSystem(
        access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
        endpoint_override=s3_server["AWS_ENDPOINT_URL"].removeprefix("http://"),
        allow_bucket_creation=True, allow_bucket_deletion=True,
    )
    bucket = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:50].strip("-") + f"-{os.getpid()}"
    admin.create_dir(bucket)
    yield Location(f"s3a://{bucket}/ts", s3_server)
    admin.delete_dir(bucket)

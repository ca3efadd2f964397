"""An application whose home is given as a ``file://`` URI: every durable file is read
and written through the location layer (pyarrow.fs), Spark gets the URI, and the outputs
are exactly those of the same application on a plain-path home."""

from __future__ import annotations

import pytest

from tablestream.demo import PHASE_ONE, create_demo_topics, demo_topology, produce_demo_data
from tablestream.runtime.app import Application
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.location import Location
from tablestream.storage.processing_log import processing_log_topic

pytestmark = pytest.mark.spark

TABLES = ("revenue-per-customer", "customers-per-tier", "priced-lines")


def _run_demo(spark, home) -> tuple[dict, dict]:
    store = EmbeddedStore(home)
    create_demo_topics(store)
    produce_demo_data(store, slice(0, PHASE_ONE))
    app = Application(demo_topology(), "demo", store=store, spark=spark, snapshot_every=1)
    app.run_until_caught_up()
    produce_demo_data(store, slice(PHASE_ONE, None))
    app.run_until_caught_up()
    topics = sorted({s.topic for s in app.topology.sinks} | {processing_log_topic("demo")})
    records = {t: store.read(t).drop_columns(["headers"]).to_pylist() for t in topics}
    tables = {
        t: sorted((repr(r.key), repr(r.value), r.ts) for r in app.table(t).collect()) for t in TABLES
    }
    return records, {"tables": tables, "paths": app.paths, "layout": app.layout}


def test_a_home_given_as_a_file_uri_gives_the_outputs_of_a_plain_path(spark, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plain_records, plain = _run_demo(spark, tmp_path / "plain")
    uri = f"file://{tmp_path}/uri-home"
    uri_records, by_uri = _run_demo(spark, uri)

    assert uri_records == plain_records
    assert by_uri["tables"] == plain["tables"]
    assert sum(len(r) for r in uri_records.values()) > 0
    paths = by_uri["paths"]
    assert paths.root == Location(f"{uri}/apps/demo")
    assert str(paths.checkpoint) == f"{uri}/apps/demo/checkpoint"  # what Spark was given
    # Every durable file under the URI's directory, the working copies under its state/.
    root = tmp_path / "uri-home" / "apps" / "demo"
    assert sorted(p.name for p in root.iterdir()) == sorted(p.name for p in (tmp_path / "plain" / "apps" / "demo").iterdir())
    assert {p.name for p in (root / "checkpoint" / "commits").iterdir()} >= {"0", "1"}
    assert any((root / "changelog").rglob("*.arrow")) and any((root / "changelog").rglob("CURRENT"))
    assert by_uri["layout"].local_dir == root / "state"
    assert (tmp_path / "uri-home" / "topics" / "orders" / "topic.json").is_file()
    assert not (tmp_path / "file:").exists()

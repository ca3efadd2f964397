"""Applications on the embedded store with batches bounded in records: a backlog runs in
bounded batches with the outputs of one unbounded batch; the bound is shared among
partitions by their backlog; a restart mid-backlog resumes where the batches ended."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import DEFAULT_MAX_RECORDS_PER_BATCH, Application
from tablestream.runtime.layout import ApplicationError
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig

pytestmark = pytest.mark.spark


def _topology():
    builder = StreamsBuilder()
    events = builder.stream("events", value_schema="grp STRING, amount BIGINT")
    events.filter("amount >= 50").to("big-events")
    events.group_by("grp").sum("amount", materialized_as="sums")
    builder.table("users", value_schema="region STRING, score BIGINT", materialized_as="users")
    return builder.build()


def _store(home, events_by_partition=(700, 700, 600), users=500, compact_users=False):
    """``events`` with the given records per partition (3 partitions), ``users`` with
    ``users`` updates over 100 keys (3 partitions, by key)."""
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("events", partitions=3))
    store.create_topic(TopicConfig("users", partitions=3, cleanup_policy="compact" if compact_users else "delete"))
    ts = 1_000
    for partition, n in enumerate(events_by_partition):
        if n:
            store.append("events", pa.table({
                "key": [b"e%d-%d" % (partition, i % 37) for i in range(n)],  # a key in one partition
                "value": [b'{"grp": "g%d", "amount": %d}' % (i % 7, (i * 13) % 100) for i in range(n)],
                "timestamp": list(range(ts, ts + n)),
                "partition": [partition] * n,
            }))
            ts += n
    store.append("users", pa.table({
        "key": [b"u%d" % (i % 100) for i in range(users)],
        "value": [b'{"region": "r%d", "score": %d}' % (i % 3, i) for i in range(users)],
        "timestamp": list(range(5_000, 5_000 + users)),
    }))
    return store


def _run(spark, store, bound, app_id="bounded", progress=None):
    seen = []

    def report(p):
        seen.append((p.batch_id, p.records))
        if progress is not None:
            progress(p)

    app = Application(_topology(), app_id, store=store, spark=spark, max_records_per_batch=bound, progress=report)
    app.run_until_caught_up()
    return app, seen


def _outputs(store, app):
    big = sorted(((r.key, r.value, r.timestamp) for r in store.consume("big-events")), key=lambda r: r[0])
    return {
        "big-events": big,  # per key in the order written
        "sums": sorted(map(tuple, app.table("sums").collect())),
        "users": sorted(map(tuple, app.table("users").collect())),
        "processing log": store.consume(f"{app.application_id}-processing-log"),
    }


def _planned(app):
    """The end offsets of each batch as the checkpoint's offset log records them."""
    offsets = app.paths.checkpoint / "offsets"
    return [json.loads((offsets / str(b)).read_text().splitlines()[2]) for b in app.paths.batches("offsets")]


def test_a_backlog_runs_in_bounded_batches_with_the_outputs_of_one_batch(tmp_path, spark):
    once, batches = _run(spark, _store(tmp_path / "one"), None)
    assert batches == [(0, 2_500)]
    expected = _outputs(once.store, once)
    assert len(expected["big-events"]) == 1_000 and len(expected["users"]) == 100 and len(expected["sums"]) == 7

    app, batches = _run(spark, _store(tmp_path / "bounded"), 1_000)
    assert batches == [(0, 1_000), (1, 1_000), (2, 500)]
    assert _outputs(app.store, app) == expected
    # 1,000 of 2,500 offsets: 40% of each partition's (users: 5 updates of each key).
    users = app.store.end_offsets("users")
    assert _planned(app)[0] == {
        "events": {"0": 280, "1": 280, "2": 240},
        "users": {str(p): end * 2 // 5 for p, end in users.items()},
    }


def test_a_skewed_backlog_shares_the_bound_by_each_partitions_backlog(tmp_path, spark):
    once, _ = _run(spark, _store(tmp_path / "one", events_by_partition=(2_000, 10, 0), users=0), None)
    app, batches = _run(spark, _store(tmp_path / "bounded", events_by_partition=(2_000, 10, 0), users=0), 1_000)
    assert batches == [(0, 1_000), (1, 1_000), (2, 10)]
    assert [p["events"] for p in _planned(app)] == [
        {"0": 995, "1": 5, "2": 0},
        {"0": 1_990, "1": 10, "2": 0},
        {"0": 2_000, "1": 10, "2": 0},
    ]
    assert _outputs(app.store, app) == _outputs(once.store, once)


def test_a_restart_mid_backlog_replays_the_unfinished_batch_then_goes_on_without_a_gap(tmp_path, spark):
    once, _ = _run(spark, _store(tmp_path / "one"), None)
    store = _store(tmp_path / "bounded")

    def fail_after_first_batch(progress):
        raise RuntimeError("stopped after its outputs were committed")

    with pytest.raises(ApplicationError):
        _run(spark, store, 1_000, progress=fail_after_first_batch)
    assert Application(_topology(), "bounded", store=store, spark=spark).lag() == 1_500
    # Batch 0 again, as planned (1,000 records), then batches of the new bound.
    app, batches = _run(spark, store, 700)
    assert batches == [(0, 1_000), (1, 700), (2, 700), (3, 100)]
    assert _outputs(store, app) == _outputs(once.store, once)
    assert app.lag() == 0


def _users_with_a_gap(store):
    """100 more updates of users u0-u49: the last records of u50-u99 (offsets of 350-399
    in the order written) and of u0-u49 (450-499) have superseded records between them."""
    store.append("users", pa.table({
        "key": [b"u%d" % (i % 50) for i in range(400, 500)],
        "value": [b'{"region": "r%d", "score": %d}' % (i % 3, i) for i in range(400, 500)],
        "timestamp": list(range(5_400, 5_500)),
    }))
    return store


def test_records_removed_by_compaction_are_skipped(tmp_path, spark):
    """Only the latest record of each user is left (100 of 500); the bound counts the
    offsets compaction emptied between them, as Kafka's ``maxOffsetsPerTrigger`` does."""
    once, _ = _run(spark, _users_with_a_gap(_store(tmp_path / "one", events_by_partition=(0, 0, 0), users=400)), None)
    store = _users_with_a_gap(
        _store(tmp_path / "bounded", events_by_partition=(0, 0, 0), users=400, compact_users=True)
    )
    assert store.compact("users") == {"before": 500, "after": 100}
    app, batches = _run(spark, store, 50)
    # From the first record kept (written 350th) to the end: 150 offsets, 100 records.
    assert len(batches) == 3
    assert sum(n for _, n in batches) == 100
    assert _outputs(store, app) == _outputs(once.store, once)
    assert sorted(map(tuple, app.table("users").collect()))[:3] == [
        ("u0", ("r0", 450), 5_450),
        ("u1", ("r1", 451), 5_451),
        ("u10", ("r1", 460), 5_460),
    ]


def test_the_default_bound_reaches_the_source_and_none_reads_everything(tmp_path, spark, monkeypatch):
    store = _store(tmp_path / "home", events_by_partition=(3, 0, 0), users=0)
    bounds = []
    read_stream = EmbeddedStore.read_stream

    def spy(self, spark, topics, *, max_records_per_batch=None):
        bounds.append(max_records_per_batch)
        return read_stream(self, spark, topics, max_records_per_batch=max_records_per_batch)

    monkeypatch.setattr(EmbeddedStore, "read_stream", spy)
    app = Application(_topology(), "default", store=store, spark=spark)
    assert app.max_records_per_batch == DEFAULT_MAX_RECORDS_PER_BATCH == 1_000_000
    app.run_until_caught_up()
    _, batches = _run(spark, store, None, app_id="unbounded")
    assert bounds == [1_000_000, None]
    assert batches == [(0, 3)]
    with pytest.raises(ApplicationError) as refused:
        Application(_topology(), "default", store=store, spark=spark, max_records_per_batch=0)
    assert str(refused.value) == "max_records_per_batch must be a positive integer or None (unbounded), got 0"

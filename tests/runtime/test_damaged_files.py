"""Damaged files an application depends on give one line naming the file and the way
out, and that way out works: after ``topics delete`` or ``reset()`` the application
runs again and produces exactly the expected records. A second instance of a running
application is refused, in this process and from another one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.errors import DamagedStateError, DamagedTopicError
from tablestream.runtime.app import Application
from tablestream.runtime.layout import (
    ApplicationError,
    ApplicationRunningError,
    InstanceLock,
    running_instance,
)
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark

RESET = (
    "reset the application to rebuild it from its source topics: "
    "'tablestream app reset revenue' or Application.reset()"
)


def _topology():
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="customer STRING, amount BIGINT")
    orders.group_by("customer").sum("amount", materialized_as="revenue")
    return builder.build()


def _order(key: str, customer: str, amount: int, ts: int) -> Record:
    return Record(key.encode(), json.dumps({"customer": customer, "amount": amount}).encode(), ts)


def _app(store, spark, **options) -> Application:
    return Application(_topology(), "revenue", store=store, spark=spark, **options)


def _revenue(app) -> list[tuple]:
    return sorted(map(tuple, app.table("revenue").collect()))


def _two_batches(store, spark, **options) -> Application:
    """The application after two batches: ada 1 then ada 2, bob 5."""
    store.create_topic(TopicConfig("orders"))
    app = _app(store, spark, **options)
    store.produce("orders", [_order("o1", "ada", 1, 1_000)])
    app.run_until_caught_up()
    store.produce("orders", [_order("o2", "ada", 2, 1_001), _order("o3", "bob", 5, 1_002)])
    app.run_until_caught_up()
    return app


EXPECTED = [("ada", 3, 1_001), ("bob", 5, 1_002), ("cy", 7, 1_003)]


@pytest.mark.parametrize("damaged", ["changelog", "snapshot"])
def test_a_damaged_store_file_is_one_line_and_a_reset_recovers(tmp_path, spark, damaged):
    """The live store is lost (its local directory removed), so the next batch restores
    it from a changelog or snapshot that is damaged: the error names that file and the
    reset; after the reset the application rebuilds its state from the topic."""
    store = EmbeddedStore(tmp_path / "home")
    # A snapshot every 2 batches: batch 1 is kept as a snapshot; without one, as
    # changelogs 0 and 1.
    app = _two_batches(store, spark, snapshot_every=2 if damaged == "snapshot" else 10)
    layout = app.layout
    shutil.rmtree(layout.local_dir)
    if damaged == "changelog":
        [path] = layout.changelog_dir("revenue", 0).glob("1-*.arrow")  # batch 1's, by its version
        path.write_bytes(b"\x17" * 64)
        problem = "unreadable changelog: Not an Arrow file"
    else:
        [path] = layout.snapshot_dir("revenue", 0).glob("1-*")
        for file in path.iterdir():
            file.unlink()
        # As a second snapshot would prune them: nothing but the snapshot holds batch 0.
        for changelog in layout.changelog_dir("revenue", 0).glob("0-*.arrow"):
            changelog.unlink()
        problem = "not a snapshot of batch 1 (it holds no batch)"
    store.produce("orders", [_order("o4", "cy", 7, 1_003)])

    # Raised in a Spark task, the error reaches the user as one line.
    with pytest.raises(ApplicationError) as failed:
        app.run_until_caught_up()
    line = f"State store 'revenue' partition 0 is damaged: {path}: {problem} ({RESET})"
    assert str(failed.value) == f"Application 'revenue' failed in batch 2: {line}"

    app.reset()
    app.run_until_caught_up()
    assert _revenue(app) == EXPECTED


def test_a_store_whose_durable_files_are_gone_is_one_line_never_an_empty_store(tmp_path, spark):
    """A store partition's changelogs and snapshots are removed under the application,
    and its working copy is lost: the record of the versions says it holds batch 1, so
    the next batch fails naming what is missing, where an empty store would have
    silently restarted ada's sum from 0."""
    store = EmbeddedStore(tmp_path / "home")
    app = _two_batches(store, spark)
    layout = app.layout
    version = layout.version_record().before(2)["revenue"][0]
    assert version.batch == 1
    shutil.rmtree(layout.durable_dir / "revenue")
    shutil.rmtree(layout.local_dir)
    store.produce("orders", [_order("o4", "ada", 4, 1_003)])

    with pytest.raises(ApplicationError) as failed:
        app.run_until_caught_up()
    missing = layout.changelog_dir("revenue", 0) / f"{version.name}.arrow"
    line = (
        f"State store 'revenue' partition 0 is damaged: {missing}: missing, and no snapshot holds batch 1 "
        f"(the store's last batch) ({RESET})"
    )
    assert str(failed.value) == f"Application 'revenue' failed in batch 2: {line}"


def test_a_missing_record_of_the_stores_versions_is_one_line(tmp_path, spark):
    """The checkpoint says batch 1 is done, so its record of the stores' versions must
    be there: removed, the next batch after a restart fails naming it (an older record
    would open the stores as of an older version)."""
    store = EmbeddedStore(tmp_path / "home")
    shutil.rmtree(_two_batches(store, spark).layout.versions_dir)
    store.produce("orders", [_order("o4", "cy", 7, 1_003)])
    app = _app(store, spark)  # a restart (a running instance keeps the versions it recorded)

    with pytest.raises(ApplicationError) as failed:
        app.run_until_caught_up()
    line = (
        f"The record of the stores' versions is damaged: {app.layout.versions_dir / '1.json'}: missing "
        f"(the stores' versions after batch 1) ({RESET})"
    )
    assert str(failed.value) == f"Application 'revenue' failed in batch 2: {line}"

    app.reset()
    app.run_until_caught_up()
    assert _revenue(app) == EXPECTED


def _newest_table_file(db):
    return sorted(db.glob("*.sst"))[-1]


def _current_overwritten(db):
    (db / "CURRENT").write_bytes(b"\x17" * 64)
    return "Corruption: CURRENT file does not end with newline"


def _table_file_truncated(db):
    sst = _newest_table_file(db)
    size = sst.stat().st_size
    sst.write_bytes(sst.read_bytes()[:100])
    return f"Corruption: Sst file size mismatch: {sst}. Expected {size}, actual size 100"


def _directory_replaced_by_a_file(db):
    shutil.rmtree(db)
    db.write_bytes(b"\x17" * 64)
    return "a file, not a directory"


@pytest.mark.parametrize("damage", [_current_overwritten, _table_file_truncated, _directory_replaced_by_a_file])
def test_a_damaged_live_store_is_rebuilt_and_the_outputs_are_exact(tmp_path, spark, capfd, damage):
    """The live RocksDB store (``state/``) is a cache of the changelogs: damaged, it is
    discarded with one warning line (from the Spark task) and rebuilt, and the batch
    gives what it gives on an undamaged store (ada's sum goes on from 3)."""
    store = EmbeddedStore(tmp_path / "home")
    app = _two_batches(store, spark)
    db = app.layout.db_dir("revenue", 0)
    problem = damage(db)
    store.produce("orders", [_order("o4", "ada", 4, 1_003), _order("o5", "cy", 7, 1_004)])
    capfd.readouterr()

    app.run_until_caught_up()
    assert _revenue(app) == [("ada", 7, 1_003), ("bob", 5, 1_002), ("cy", 7, 1_004)]
    warning = (
        f"State store 'revenue' partition 0: discarding its damaged working copy {db} ({problem}); "
        "rebuilding it from its changelogs and snapshots"
    )
    assert [line for line in capfd.readouterr().err.splitlines() if "State store" in line] == [warning]


def test_a_live_store_sharing_a_damaged_file_with_its_first_snapshot_is_rebuilt_from_the_changelogs(
    tmp_path, spark, capfd
):
    """A snapshot on the live store's file system shares its table files (hard links),
    so one overwritten in place damages both; the first snapshot leaves the changelogs
    before it, so the store is rebuilt from them and the outputs are exact."""
    store = EmbeddedStore(tmp_path / "home")
    app = _two_batches(store, spark, snapshot_every=2)  # batch 1 is a snapshot
    db = app.layout.db_dir("revenue", 0)
    [snapshot] = app.layout.snapshot_dir("revenue", 0).glob("1-*")
    sst = _newest_table_file(db)
    assert (snapshot / sst.name).samefile(sst)
    sst.write_bytes(b"\x17" * sst.stat().st_size)
    store.produce("orders", [_order("o4", "cy", 7, 1_003)])
    capfd.readouterr()

    app.run_until_caught_up()
    assert _revenue(app) == EXPECTED
    warnings = [line for line in capfd.readouterr().err.splitlines() if "State store" in line]
    assert [w.split(" (")[0] for w in warnings] == [
        f"State store 'revenue' partition 0: discarding its damaged working copy {db}",
        f"State store 'revenue' partition 0: its snapshot {snapshot} is damaged",
    ]


def test_a_first_offset_file_spark_did_not_finish_writing_does_not_stop_a_start(tmp_path, spark):
    """What a stop or a kill while Spark writes its first offset file leaves behind (the
    file's temporary copy and checksum): Spark took such a checkpoint for another
    query's (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY); a start removes them first."""
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("orders"))
    store.produce("orders", [_order("o1", "ada", 3, 1_001), _order("o2", "bob", 5, 1_002)])
    app = _app(store, spark)
    offsets = app.paths.checkpoint / "offsets"
    offsets.mkdir(parents=True)
    (offsets / ".0.5d0c3b52-7f1e-4c55-9a8e-1f2b3c4d5e6f.tmp").write_bytes(b"")
    (offsets / "..0.5d0c3b52-7f1e-4c55-9a8e-1f2b3c4d5e6f.tmp.crc").write_bytes(b"")

    app.run_until_caught_up()
    assert _revenue(app) == [("ada", 3, 1_001), ("bob", 5, 1_002)]
    assert sorted(p.name for p in offsets.iterdir()) == [".0.crc", "0"]


def test_a_damaged_checkpoint_offset_file_is_found_before_spark_reads_it(tmp_path, spark):
    store = EmbeddedStore(tmp_path / "home")
    app = _two_batches(store, spark)
    offsets = app.paths.checkpoint / "offsets" / "1"
    offsets.write_text("garbage\n")
    store.produce("orders", [_order("o4", "cy", 7, 1_003)])

    with pytest.raises(DamagedStateError) as damaged:
        app.run_until_caught_up()
    assert str(damaged.value) == (
        f"Application 'revenue' is damaged: {offsets}: not a checkpoint file "
        f"(it starts with 'garbage', not a version such as 'v1') ({RESET})"
    )
    assert running_instance(app.paths) is None  # a failed start leaves no lock behind

    app.reset()
    app.run_until_caught_up()
    assert _revenue(app) == EXPECTED


def test_a_damaged_source_topic_is_named_and_deleting_it_recovers(tmp_path, spark):
    store = EmbeddedStore(tmp_path / "home")
    _two_batches(store, spark)
    log = store.topics_dir / "orders" / "log"
    shutil.rmtree(log / "_delta_log")

    with pytest.raises(DamagedTopicError) as damaged:
        _app(store, spark).run_until_caught_up()
    assert str(damaged.value) == (
        f"Topic 'orders' is damaged: {log}: no Delta log (_delta_log is missing or empty) "
        "(delete it with 'tablestream topics delete orders')"
    )

    store.delete_topic("orders")
    store.create_topic(TopicConfig("orders"))
    store.produce("orders", [_order("o1", "ada", 3, 1_001), _order("o2", "bob", 5, 1_002), _order("o3", "cy", 7, 1_003)])
    app = _app(store, spark)
    app.reset()  # its checkpoint holds positions in the deleted topic's log
    app.run_until_caught_up()
    assert _revenue(app) == EXPECTED


def test_a_second_instance_is_refused_while_the_first_runs(tmp_path, spark):
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("orders"))
    store.produce("orders", [_order("o1", "ada", 3, 1_001)])
    first, second = _app(store, spark), _app(store, spark)
    first.start(processing_time="1 second")
    try:
        with pytest.raises(ApplicationRunningError) as refused:
            second.start(available_now=True)
        holder = json.loads(first.paths.lock.read_text())
        assert holder["pid"] > 0
        assert str(refused.value) == (
            f"Application 'revenue' is already running (pid {holder['pid']}, since {holder['since']})"
        )
        first._query.processAllAvailable()  # stopped after its first batch, not during it
    finally:
        first.stop()
    second.run_until_caught_up()
    assert _revenue(second) == [("ada", 3, 1_001)]
    assert running_instance(second.paths) is None


def test_an_instance_in_another_process_is_refused_until_that_process_ends(tmp_path, spark):
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("orders"))
    store.produce("orders", [_order("o1", "ada", 3, 1_001)])
    app = _app(store, spark)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            from tablestream.runtime.layout import AppPaths, InstanceLock
            InstanceLock(AppPaths.of("revenue", {str(store.home)!r})).acquire()
            print("held", flush=True)
            sys.stdin.read()
        """)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(ApplicationRunningError) as refused:
            app.run_until_caught_up()
        since = json.loads(app.paths.lock.read_text())["since"]
        assert str(refused.value) == f"Application 'revenue' is already running (pid {holder.pid}, since {since})"
    finally:
        holder.kill()  # a process that dies releases its lock
        holder.wait(30)
    app.run_until_caught_up()
    assert _revenue(app) == [("ada", 3, 1_001)]


def test_an_instance_whose_query_ended_does_not_block_another_in_the_process(tmp_path, spark):
    """A query that ended without ``stop()`` (here: it processed everything there was)
    leaves its lock to the next instance of this process."""
    store = EmbeddedStore(tmp_path / "home")
    store.create_topic(TopicConfig("orders"))
    store.produce("orders", [_order("o1", "ada", 3, 1_001)])
    first = _app(store, spark)
    first.start(available_now=True).awaitTermination()
    assert running_instance(first.paths) is not None
    lock = InstanceLock(first.paths)
    lock.acquire()
    assert lock.held
    lock.release()
    assert running_instance(first.paths) is None

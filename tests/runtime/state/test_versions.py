"""Stores opened by version: two hosts (two working-copy directories over one durable
location), attempts that did not count, a partition moved between hosts, durable files
gone, and the runner's record of the versions each batch left."""

from __future__ import annotations

import json
import shutil

import pytest

from tablestream.errors import DamagedStateError
from tablestream.runtime.state import StoreLayout, StoreSession, Version

RESET = "reset the application to rebuild it from its source topics: 'tablestream app reset revenue' or Application.reset()"


@pytest.fixture
def hosts(tmp_path):
    """Two hosts' layouts: each its own working copies, one durable location."""
    return tuple(
        StoreLayout(tmp_path / host, tmp_path / "durable", snapshot_every=3, application_id="revenue")
        for host in ("host-a", "host-b")
    )


def write(layout, batch, expected, commit, changes: dict[bytes, bytes | None]) -> tuple[list, Version | None]:
    """One attempt of ``batch`` on ``layout``'s host: the values before it, and the
    version it wrote."""
    with StoreSession(layout, "s", 0, batch, expected=expected, commit=commit) as session:
        before = session.get_and_put(list(changes), list(changes.values()))
    return before, session.written


def read(layout, batch, expected, keys=(b"k", b"m")) -> list:
    with StoreSession(layout, "s", 0, batch, expected=expected) as session:
        return session.get_before(list(keys))


def test_a_partition_moved_to_another_host_and_back_reads_every_batch(hosts):
    a, b = hosts
    _, v0 = write(a, 0, None, "a0", {b"k": b"1"})
    _, v1 = write(a, 1, v0, "a1", {b"k": b"2"})
    # Batch 2 runs on host b: no working copy there; rebuilt from the durable files.
    assert write(b, 2, v1, "b2", {b"m": b"3"}) == ([None], Version(2, "b2"))
    # Back on host a, whose copy holds batch 1: caught up with batch 2's changelog.
    assert read(a, 3, Version(2, "b2")) == [b"2", b"3"]


def test_a_working_copy_written_by_an_attempt_that_did_not_count_is_not_used(hosts):
    """Two attempts of batch 1 wrote different values (the first one's results were
    discarded); the record names the second: host a's copy, holding the first, is
    rebuilt from the second's changelog."""
    a, b = hosts
    _, v0 = write(a, 0, None, "a0", {b"k": b"1"})
    assert write(a, 1, v0, "lost", {b"k": b"2"}) == ([b"1"], Version(1, "lost"))
    assert write(b, 1, v0, "won", {b"k": b"3"}) == ([b"1"], Version(1, "won"))
    assert read(a, 2, Version(1, "won")) == [b"3", None]
    assert read(b, 2, Version(1, "won")) == [b"3", None]


def test_an_attempt_that_commits_after_the_winner_writes_a_changelog_of_its_own(hosts, tmp_path):
    """A zombie attempt (its host lost to the driver) commits after the winner: its
    changelog has its own name, and a store rebuilt as of the winner's version reads
    the winner's values."""
    a, b = hosts
    _, v0 = write(a, 0, None, "a0", {b"k": b"1"})
    write(b, 1, v0, "won", {b"k": b"3"})
    write(a, 1, v0, "zombie", {b"k": b"9"})
    assert sorted(p.name for p in a.changelog_dir("s", 0).iterdir()) == ["0-a0.arrow", "1-won.arrow", "1-zombie.arrow"]
    shutil.rmtree(b.local_dir)
    assert read(b, 2, Version(1, "won")) == [b"3", None]


def test_a_run_of_the_same_batch_on_the_version_before_reads_as_before_it(hosts):
    """A task retried on the same host: its copy holds an earlier attempt of this batch,
    written on the version the batch opens at, and reads it as before the batch."""
    a, _ = hosts
    _, v0 = write(a, 0, None, "a0", {b"k": b"1"})
    write(a, 1, v0, "first", {b"k": b"2", b"m": b"5"})
    assert write(a, 1, v0, "second", {b"k": b"2", b"m": b"5"}) == ([b"1", None], Version(1, "second"))
    assert read(a, 2, Version(1, "second")) == [b"2", b"5"]


def test_a_store_that_should_hold_batches_never_opens_empty(hosts):
    """The durable files of a partition that should hold batch 4 are gone: with no
    working copy, opening it is an error naming the version, never an empty store."""
    a, b = hosts
    _, v0 = write(a, 0, None, "a0", {b"k": b"1"})
    shutil.rmtree(a.durable_dir / "s")
    with pytest.raises(DamagedStateError) as damaged:
        read(b, 1, v0)
    changelog = b.changelog_dir("s", 0) / "0-a0.arrow"
    assert str(damaged.value) == (
        f"State store 's' partition 0 is damaged: {changelog}: missing, and no snapshot holds "
        f"batch 0 (the store's last batch) ({RESET})"
    )
    # Host a's working copy still holds that version: it is used as it is.
    assert read(a, 1, v0) == [b"1", None]


def test_snapshots_and_changelogs_are_named_by_version_and_a_restore_follows_the_chain(hosts):
    a, b = hosts
    version = None
    for batch in range(7):
        _, version = write(a, batch, version, f"c{batch}", {b"k": str(batch).encode()})
    assert sorted(p.name for p in a.snapshot_dir("s", 0).iterdir()) == ["2-c2", "5-c5"]
    assert sorted(p.name for p in a.changelog_dir("s", 0).iterdir()) == [
        "3-c3.arrow", "4-c4.arrow", "5-c5.arrow", "6-c6.arrow"
    ]
    assert read(b, 7, version) == [b"6", None]  # snapshot 5-c5, then changelog 6-c6
    shutil.rmtree(a.snapshot_dir("s", 0) / "5-c5")
    shutil.rmtree(b.local_dir)
    assert read(b, 7, version) == [b"6", None]  # snapshot 2-c2, then changelogs 3 to 6


def test_the_record_gives_each_batch_the_versions_the_batch_before_left(tmp_path):
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", application_id="revenue")
    record = layout.version_record()
    assert record.before(0) == {}
    record.record(0, [("counts", 0, Version(0, "a")), ("counts", 1, Version(0, "b"))])
    # Several reports of one partition (a stage run twice): the last counts. A report
    # of another batch (an earlier run's) is not this batch's.
    record.record(1, [("counts", 1, Version(1, "c")), ("counts", 1, Version(1, "d")), ("sums", 0, Version(0, "z"))])
    record.record(2, [])
    fresh = layout.version_record()  # as after a restart
    assert fresh.before(2) == {"counts": {0: Version(0, "a"), 1: Version(1, "d")}}
    assert fresh.before(3) == fresh.before(2)
    assert json.loads((layout.versions_dir / "1.json").read_text()) == {
        "batch": 1, "stores": {"counts": {"0": "0-a", "1": "1-d"}}
    }
    record.record(3, [])
    assert sorted(p.name for p in layout.versions_dir.iterdir()) == ["1.json", "2.json", "3.json"]
    # Batch ids with gaps (batches run directly, without a checkpoint): the newest
    # record before the batch.
    record.record(10, [("sums", 0, Version(10, "e"))])
    assert layout.version_record().before(12) == {
        "counts": {0: Version(0, "a"), 1: Version(1, "d")}, "sums": {0: Version(10, "e")}
    }
    assert layout.version_record().before(10) == fresh.before(3)
    # A batch the checkpoint says is done needs its own record, never an older one.
    with pytest.raises(DamagedStateError, match=r"/11.json: missing \(the stores' versions after batch 11\)"):
        layout.version_record().before(12, committed=11)


@pytest.mark.parametrize(
    ("damage", "problem"),
    [
        (lambda path: path.unlink(), "missing (the stores' versions after batch 0)"),
        (lambda path: path.write_text("{"), "unreadable: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (lambda path: path.write_text('{"batch": 7, "stores": {}}'), "not a record of the stores' versions (it records batch 7)"),
        (lambda path: path.write_text('{"batch": 0, "stores": {"s": {"0": "x"}}}'), "not a record of the stores' versions (not a store version: 'x')"),
    ],
    ids=["missing", "not-json", "another-batch", "bad-version"],
)
def test_a_damaged_record_names_the_file_and_the_way_out(tmp_path, damage, problem):
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", application_id="revenue")
    layout.version_record().record(0, [("s", 0, Version(0, "a"))])
    path = layout.versions_dir / "0.json"
    damage(path)
    with pytest.raises(DamagedStateError) as damaged:
        layout.version_record().before(1, committed=0)  # the checkpoint says batch 0 is done
    assert str(damaged.value) == f"The record of the stores' versions is damaged: {path}: {problem} ({RESET})"

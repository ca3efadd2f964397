"""Durable files: restore from snapshot and changelogs, catching up, pruning, a store ahead."""

from __future__ import annotations

import shutil

import pytest

from tablestream.errors import DamagedStateError
from tablestream.runtime.state import StoreError, StoreLayout

from .stores import dump, run


def _history(layout, batches):
    for batch, (keys, values) in enumerate(batches):
        run(layout, batch, keys, values)


BATCHES = [
    ([b"a", b"b"], [b"1", b"2"]),
    ([b"a"], [b"3"]),
    ([b"c"], [b"4"]),
    ([b"b"], [None]),
    ([b"d", b"a"], [b"5", b"6"]),
    ([b"c"], [b"7"]),
    ([b"e"], [b"8"]),
]


@pytest.mark.parametrize("lost_at", [1, 3, 5, 7])
def test_a_deleted_store_is_restored_from_snapshot_and_changelogs(layout, tmp_path, lost_at):
    reference = StoreLayout(tmp_path / "ref-local", tmp_path / "ref-durable", snapshot_every=3)
    _history(reference, BATCHES)
    _history(layout, BATCHES[:lost_at])
    shutil.rmtree(layout.local_dir)
    for batch in range(lost_at, len(BATCHES)):
        run(layout, batch, *BATCHES[batch])
    assert dump(layout, len(BATCHES)) == dump(reference, len(BATCHES)) == {
        b"a": b"6", b"c": b"7", b"d": b"5", b"e": b"8"
    }


def test_restore_gives_the_same_outputs_as_an_uninterrupted_run(layout, tmp_path):
    reference = StoreLayout(tmp_path / "ref-local", tmp_path / "ref-durable", snapshot_every=3)
    outputs, restored_outputs = [], []
    for batch, (keys, values) in enumerate(BATCHES):
        outputs.append(run(reference, batch, keys, values))
        if batch in (2, 5):
            shutil.rmtree(layout.local_dir, ignore_errors=True)
        restored_outputs.append(run(layout, batch, keys, values))
    assert restored_outputs == outputs


def test_a_store_behind_catches_up_from_changelogs(layout, tmp_path):
    _history(layout, BATCHES[:2])
    saved = tmp_path / "saved-db"
    shutil.copytree(layout.db_dir("s", 0), saved)
    run(layout, 2, *BATCHES[2])
    shutil.rmtree(layout.db_dir("s", 0))
    shutil.copytree(saved, layout.db_dir("s", 0))  # the store as of batch 1: behind
    assert run(layout, 3, *BATCHES[3]) == [b"2"]
    assert dump(layout, 4) == {b"a": b"3", b"c": b"4"}


def test_snapshots_and_changelogs_are_pruned(layout):
    _history(layout, BATCHES)
    snapshots = sorted(int(p.name) for p in layout.snapshot_dir("s", 0).iterdir())
    changelogs = sorted(int(p.stem) for p in layout.changelog_dir("s", 0).glob("*.arrow"))
    assert snapshots == [2, 5]
    # The older snapshot and the changelogs after it rebuild a replay of batch 5.
    assert changelogs == [3, 4, 5, 6]


def test_a_store_ahead_of_the_batch_is_an_error(layout):
    _history(layout, BATCHES[:3])
    with pytest.raises(StoreError, match="^store s/0 holds batch 2, ahead of batch 1$"):
        run(layout, 1, [b"a"], [b"x"])


def _lost_local_state(tmp_path):
    """A store with snapshots of batches 2 and 5 and changelogs 3 to 6, whose live
    database is lost: the next batch restores it from the durable files."""
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3, application_id="revenue")
    _history(layout, BATCHES)
    shutil.rmtree(layout.local_dir)
    return layout


RESET = "reset the application to rebuild it from its source topics: 'tablestream app reset revenue' or Application.reset()"


def _damaged_changelog(layout):
    changelog = layout.changelog_dir("s", 0) / "6.arrow"
    changelog.write_bytes(b"\x17" * 64)
    return changelog, "unreadable changelog: Not an Arrow file"


def _missing_changelog(layout):
    shutil.rmtree(layout.snapshot_dir("s", 0) / "5")
    (layout.changelog_dir("s", 0) / "4.arrow").unlink()
    return (
        layout.changelog_dir("s", 0) / "4.arrow",
        "missing, and no snapshot holds batch 4 (the changelog of batch 5 follows it)",
    )


def _missing_snapshots(layout):
    shutil.rmtree(layout.snapshot_dir("s", 0))
    return (
        layout.changelog_dir("s", 0) / "2.arrow",
        "missing, and no snapshot holds batch 2 (the changelog of batch 3 follows it)",
    )


def _restore_error(layout) -> str:
    with pytest.raises(DamagedStateError) as damaged:
        run(layout, 7, [b"a"], [b"x"])
    return str(damaged.value)


@pytest.mark.parametrize("damage", [_damaged_changelog, _missing_changelog, _missing_snapshots])
def test_a_damaged_or_missing_changelog_names_the_file_and_the_way_out(tmp_path, damage):
    """A missing changelog is found by the one after it, which names the batch before
    it; missing snapshots by the first changelog left."""
    layout = _lost_local_state(tmp_path)
    path, problem = damage(layout)
    assert _restore_error(layout) == f"State store 's' partition 0 is damaged: {path}: {problem} ({RESET})"


def test_a_damaged_snapshot_names_its_directory(tmp_path):
    layout = _lost_local_state(tmp_path)
    snapshot = layout.snapshot_dir("s", 0) / "5"
    (snapshot / "CURRENT").write_text("garbage\n")
    unreadable = _restore_error(layout)
    assert unreadable.startswith(f"State store 's' partition 0 is damaged: {snapshot}: unreadable snapshot: ")
    assert unreadable.endswith(f" ({RESET})")
    assert "\n" not in unreadable
    assert not layout.db_dir("s", 0).exists()

    for path in snapshot.iterdir():
        path.unlink()
    assert _restore_error(layout) == (
        f"State store 's' partition 0 is damaged: {snapshot}: not a snapshot of batch 5 (it holds no batch) ({RESET})"
    )


def test_changelogs_that_do_not_name_the_batch_before_them_still_restore(tmp_path):
    """Changelogs written before they named the batch before them restore as they did."""
    import pyarrow as pa

    layout = _lost_local_state(tmp_path)
    for path in layout.changelog_dir("s", 0).glob("*.arrow"):
        table = pa.ipc.open_file(str(path)).read_all().replace_schema_metadata(None)
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
    shutil.rmtree(layout.snapshot_dir("s", 0) / "5")
    assert dump(layout, 7) == {b"a": b"6", b"c": b"7", b"d": b"5", b"e": b"8"}

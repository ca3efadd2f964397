"""Durable files: restore from snapshot and changelogs, catching up, pruning, a store ahead."""

from __future__ import annotations

import shutil

import pytest

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

"""The stores' durable files on S3 (moto on 127.0.0.1), the working copies local:
changelogs, snapshot uploads and restores, pruning, the record of the versions, and
damaged or missing files named by their URIs."""

from __future__ import annotations

import json
import shutil

import pytest

from tablestream.errors import DamagedStateError
from tablestream.runtime.state import StoreLayout, Version
from tablestream.storage.location import COMPLETE_MARKER, remove_tree

from .stores import BATCHES, dump, run

FINAL = {b"a": b"6", b"c": b"7", b"d": b"5", b"e": b"8"}  # the store after BATCHES
RESET = "reset the application to rebuild it from its source topics: 'tablestream app reset revenue' or Application.reset()"


@pytest.fixture
def layout(tmp_path, s3_home):
    return StoreLayout(tmp_path / "local", s3_home / "durable", snapshot_every=3, application_id="revenue")


def _history(layout, batches):
    return [run(layout, batch, keys, values) for batch, (keys, values) in enumerate(batches)]


def test_the_durable_files_are_on_s3_and_pruned(layout):
    _history(layout, BATCHES)
    snapshots = sorted(p.name for p in layout.snapshot_dir("s", 0).iterdir())
    changelogs = sorted(p.name for p in layout.changelog_dir("s", 0).iterdir())
    assert snapshots == ["2", "5"]
    assert changelogs == ["3.arrow", "4.arrow", "5.arrow", "6.arrow"]
    assert COMPLETE_MARKER in {p.name for p in (layout.snapshot_dir("s", 0) / "5").iterdir()}
    assert "CURRENT" in {p.name for p in (layout.snapshot_dir("s", 0) / "5").iterdir()}
    assert not (layout.local_dir / "s" / "0" / ".snapshot-5").exists()  # the local checkpoint is gone


@pytest.mark.parametrize("lost_at", [1, 3, 5, 7])
def test_a_lost_working_copy_is_restored_from_s3(layout, tmp_path, lost_at):
    reference = StoreLayout(tmp_path / "ref-local", tmp_path / "ref-durable", snapshot_every=3)
    outputs = _history(reference, BATCHES)
    restored = _history(layout, BATCHES[:lost_at])
    shutil.rmtree(layout.local_dir)
    for batch in range(lost_at, len(BATCHES)):
        restored.append(run(layout, batch, *BATCHES[batch]))
    assert restored == outputs
    assert dump(layout, len(BATCHES)) == dump(reference, len(BATCHES)) == FINAL


def test_another_host_restores_the_store_from_s3(layout, tmp_path):
    """A partition that moves to a host with a working directory of its own."""
    _history(layout, BATCHES[:6])
    elsewhere = StoreLayout(tmp_path / "other-host", layout.durable_dir, snapshot_every=3, application_id="revenue")
    assert run(elsewhere, 6, *BATCHES[6]) == [None]
    assert dump(elsewhere, 7) == FINAL


def test_a_snapshot_whose_upload_did_not_finish_is_not_used(layout, caplog):
    _history(layout, BATCHES)
    (layout.snapshot_dir("s", 0) / "5" / COMPLETE_MARKER).unlink()  # as if cut short
    shutil.rmtree(layout.local_dir)
    assert dump(layout, 7) == FINAL  # from snapshot 2 and changelogs 3 to 6
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []


def test_a_missing_changelog_is_named_by_its_uri(layout):
    _history(layout, BATCHES)
    remove_tree(layout.snapshot_dir("s", 0) / "5")
    (layout.changelog_dir("s", 0) / "4.arrow").unlink()
    shutil.rmtree(layout.local_dir)
    with pytest.raises(DamagedStateError) as damaged:
        run(layout, 7, [b"a"], [b"x"])
    assert str(damaged.value) == (
        f"State store 's' partition 0 is damaged: {layout.durable_dir}/s/0/changelog/4.arrow: missing, and no "
        f"snapshot holds batch 4 (the changelog of batch 5 follows it) ({RESET})"
    )
    assert str(layout.durable_dir).startswith("s3a://")


def test_a_damaged_changelog_is_named_by_its_uri(layout):
    _history(layout, BATCHES)
    changelog = layout.changelog_dir("s", 0) / "6.arrow"
    changelog.write_bytes(b"\x17" * 64)
    shutil.rmtree(layout.local_dir)
    with pytest.raises(DamagedStateError) as damaged:
        run(layout, 7, [b"a"], [b"x"])
    assert str(damaged.value).startswith(
        f"State store 's' partition 0 is damaged: {changelog}: unreadable changelog: "
    )


def test_the_record_of_the_versions_on_s3(layout):
    record = layout.version_record()
    record.record(0, [("counts", 0, Version(0, "a"))])
    record.record(1, [("counts", 1, Version(1, "d"))])
    for batch in (2, 3):
        record.record(batch, [])
    assert layout.version_record().before(4) == {"counts": {0: Version(0, "a"), 1: Version(1, "d")}}
    assert json.loads((layout.versions_dir / "1.json").read_text()) == {
        "batch": 1, "stores": {"counts": {"0": "0-a", "1": "1-d"}}
    }
    assert sorted(p.name for p in layout.versions_dir.iterdir()) == ["1.json", "2.json", "3.json"]
    (layout.versions_dir / "3.json").unlink()
    with pytest.raises(DamagedStateError) as damaged:
        layout.version_record().before(4, committed=3)
    assert str(damaged.value) == (
        f"The record of the stores' versions is damaged: {layout.versions_dir}/3.json: missing "
        f"(the stores' versions after batch 3) ({RESET})"
    )

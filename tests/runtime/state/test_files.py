"""Durable files: restore from snapshot and changelogs, catching up, pruning, a store ahead;
damaged durable files and a damaged working copy."""

from __future__ import annotations

import re
import shutil

import pyarrow as pa
import pytest

from tablestream.errors import DamagedStateError
from tablestream.runtime.state import StoreError, StoreLayout, StoreSession

from .stores import BATCHES, dump, run


def _history(layout, batches):
    for batch, (keys, values) in enumerate(batches):
        run(layout, batch, keys, values)



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


FINAL = {b"a": b"6", b"c": b"7", b"d": b"5", b"e": b"8"}  # the store after BATCHES


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]


def test_a_damaged_snapshot_is_passed_over_for_the_one_before_it(tmp_path, caplog):
    """Snapshot 5 does not open: the store is rebuilt from snapshot 2 and changelogs 3 to 6."""
    layout = _lost_local_state(tmp_path)
    snapshot = layout.snapshot_dir("s", 0) / "5"
    (snapshot / "CURRENT").write_text("garbage\n")
    assert dump(layout, 7) == FINAL
    assert _warnings(caplog) == [
        f"State store 's' partition 0: its snapshot {snapshot} is damaged "
        "(unreadable snapshot: Corruption: CURRENT file corrupted); restoring from an older one"
    ]


def test_when_every_snapshot_is_damaged_the_newest_is_named(tmp_path):
    layout = _lost_local_state(tmp_path)
    newest, older = (layout.snapshot_dir("s", 0) / str(b) for b in (5, 2))
    (newest / "CURRENT").write_text("garbage\n")
    (older / "CURRENT").write_text("garbage\n")
    assert _restore_error(layout) == (
        f"State store 's' partition 0 is damaged: {newest}: unreadable snapshot: Corruption: CURRENT file corrupted ({RESET})"
    )
    assert not layout.db_dir("s", 0).exists()

    for path in [*newest.iterdir(), *older.iterdir()]:
        path.unlink()
    assert _restore_error(layout) == (
        f"State store 's' partition 0 is damaged: {newest}: not a snapshot of batch 5 (it holds no batch) ({RESET})"
    )


# ---------------------------------------------------------------------- the working copy
# The live database is a cache of the changelogs and snapshots: damaged, it is discarded
# with one warning line and rebuilt, and the batch reads and writes what it would have.
DISCARDED = "State store 's' partition 0: discarding its damaged working copy {} ({}); rebuilding it from its changelogs and snapshots"


def _newest_sst(db):
    sst = sorted(db.glob("*.sst"))[-1]
    assert sst.stat().st_nlink == 1  # written after the last snapshot: in no snapshot
    return sst


def _manifest(db):
    return next(db.glob("MANIFEST-*"))


def _current_overwritten(layout, db):
    (db / "CURRENT").write_bytes(b"\x17" * 64)
    return DISCARDED.format(db, "Corruption: CURRENT file does not end with newline")


def _manifest_truncated(layout, db):
    manifest = _manifest(db)
    manifest.write_bytes(manifest.read_bytes()[:100])
    problem = "Corruption: no log_file_number, next_file_number, last_sequence entry in MANIFEST"
    return DISCARDED.format(db, f"{problem}  The file {manifest} may be corrupted.")


def _sst_overwritten(layout, db):
    sst = _newest_sst(db)
    sst.write_bytes(b"\x17" * sst.stat().st_size)
    problem = f"Corruption: Bad table magic number: expected 9863518390377041911, found 1663823975275763479 in {sst}"
    return DISCARDED.format(db, f"{problem}  The file {_manifest(db)} may be corrupted.")


def _sst_truncated(layout, db):
    sst = _newest_sst(db)
    size = sst.stat().st_size
    sst.write_bytes(sst.read_bytes()[:500])
    return DISCARDED.format(db, f"Corruption: Sst file size mismatch: {sst}. Expected {size}, actual size 500")


def _options_overwritten(layout, db):
    for options in db.glob("OPTIONS-*"):
        options.write_bytes(b"\x17" * 64)
    return None  # the store opens with its own options: nothing to discard


def _directory_replaced_by_a_file(layout, db):
    shutil.rmtree(db)
    db.write_bytes(b"\x17" * 64)
    return DISCARDED.format(db, "a file, not a directory")


def _partition_directory_replaced_by_a_file(layout, db):
    shutil.rmtree(db.parent)
    db.parent.write_bytes(b"\x17" * 64)
    return DISCARDED.format(db.parent, "a file, not a directory")


def _local_directory_replaced_by_a_file(layout, db):
    shutil.rmtree(layout.local_dir)
    layout.local_dir.write_bytes(b"\x17" * 64)
    return DISCARDED.format(layout.local_dir, "a file, not a directory")


@pytest.mark.parametrize(
    "damage",
    [
        _current_overwritten,
        _manifest_truncated,
        _sst_overwritten,
        _sst_truncated,
        _options_overwritten,
        _directory_replaced_by_a_file,
        _partition_directory_replaced_by_a_file,
        _local_directory_replaced_by_a_file,
    ],
)
def test_a_damaged_working_copy_is_discarded_and_rebuilt(tmp_path, caplog, damage):
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3, application_id="revenue")
    _history(layout, BATCHES)
    warning = damage(layout, layout.db_dir("s", 0))
    assert run(layout, 7, [b"a", b"b"], [b"9", b"10"]) == [b"6", None]
    assert dump(layout, 8) == {**FINAL, b"a": b"9", b"b": b"10"}
    assert _warnings(caplog) == ([warning] if warning else [])


def test_a_working_copy_file_shared_with_the_newest_snapshot_restores_from_the_one_before(tmp_path, caplog):
    """A snapshot on the working copy's file system shares its table files (hard links):
    one overwritten in place damages both, and the store is rebuilt from the older
    snapshot, which does not hold it."""
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3, application_id="revenue")
    _history(layout, BATCHES)
    db, newest = layout.db_dir("s", 0), layout.snapshot_dir("s", 0) / "5"
    sst = next(p for p in sorted(db.glob("*.sst")) if p.stat().st_nlink == 2)
    assert (newest / sst.name).samefile(sst) and not (layout.snapshot_dir("s", 0) / "2" / sst.name).exists()
    sst.write_bytes(b"\x17" * sst.stat().st_size)
    magic = "Corruption: Bad table magic number: expected 9863518390377041911, found 1663823975275763479"
    warnings = [
        DISCARDED.format(db, f"{magic} in {sst}  The file {_manifest(db)} may be corrupted."),
        f"State store 's' partition 0: its snapshot {newest} is damaged (unreadable snapshot: {magic} in "
        f"{newest / sst.name}  The file {_manifest(newest)} may be corrupted.); restoring from an older one",
    ]

    assert run(layout, 7, [b"a", b"b"], [b"9", b"10"]) == [b"6", None]
    assert dump(layout, 8) == {**FINAL, b"a": b"9", b"b": b"10"}
    assert _warnings(caplog) == warnings


def _flip_first_blocks(ssts):
    """Damage the first data block of each of ``ssts``: found when a read reaches it."""
    for sst in ssts:
        data = bytearray(sst.read_bytes())
        data[:16] = bytes(b ^ 0xFF for b in data[:16])
        sst.write_bytes(bytes(data))


def _but_the_newest(directory):
    """The table files of a database but the newest, which holds the last batch written
    (read when the store opens)."""
    return sorted(directory.glob("*.sst"))[:-1]


def _block_damage(path) -> str:
    """RocksDB's report on a damaged block of a table file in ``path``, as a pattern."""
    return rf"Corruption: block checksum mismatch: .* in {re.escape(str(path))}/\d+\.sst offset \d+ size \d+"


def _reads(session):
    return session.get_and_put([b"a", b"b"], [b"9", b"10"])


def _prefix_reads(session):
    return list(session.prefix_items(b""))


def _prefix_reads_descending(session):
    return list(session.prefix_items(b"", reverse=True))


def _scans(session):
    owner, keys, values = session.prefix_scan_before([b"a", b"c"])
    return owner.tolist(), keys.to_pylist(), values.to_pylist()


def _bulk_reads(session):
    return session.get_before_all(pa.array([b"a", b"b", b"c"])).to_pylist()


@pytest.mark.parametrize(
    ("read", "expected"),
    [
        (_reads, [b"6", None]),
        (_prefix_reads, sorted(FINAL.items())),
        (_prefix_reads_descending, sorted(FINAL.items(), reverse=True)),
        (_scans, ([0, 1], [b"", b""], [b"6", b"7"])),
        (_bulk_reads, [b"6", None, b"7"]),
    ],
)
def test_a_block_found_damaged_during_a_batch_is_read_again_from_a_rebuilt_store(tmp_path, caplog, read, expected):
    """RocksDB checks a block when it reads it: a damaged one is found during the batch
    (an iterator stops on it, which is not taken for the end of the keys), the store is
    rebuilt, and the read goes on from where it was."""
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=100, application_id="revenue")
    _history(layout, BATCHES)
    db = layout.db_dir("s", 0)
    _flip_first_blocks(_but_the_newest(db))
    with StoreSession(layout, "s", 0, 7) as session:
        assert read(session) == expected
    [warning] = _warnings(caplog)
    assert re.fullmatch(re.escape(DISCARDED.format(db, "@")).replace("@", _block_damage(db)), warning), warning


def test_a_snapshot_found_damaged_during_a_batch_is_passed_over_for_the_one_before_it(tmp_path, caplog):
    """The store is restored from snapshot 5 (its working copy lost), whose blocks are
    found damaged as the batch reads them: it is rebuilt from snapshot 2 and changelogs
    3 to 5, and the read goes on."""
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3, application_id="revenue")
    _history(layout, BATCHES[:6])
    shutil.rmtree(layout.local_dir)
    newest = layout.snapshot_dir("s", 0) / "5"
    _flip_first_blocks([p for p in _but_the_newest(newest) if p.stat().st_nlink == 1])  # not in snapshot 2
    assert run(layout, 6, [b"a", b"e"], [b"9", b"8"]) == [b"6", None]
    assert dump(layout, 7) == {**FINAL, b"a": b"9"}
    [warning] = _warnings(caplog)
    assert re.fullmatch(
        rf"State store 's' partition 0: its snapshot {re.escape(str(newest))} is damaged "
        rf"\(unreadable snapshot: {_block_damage(newest)}\); restoring from an older one",
        warning,
    ), warning


def test_a_block_found_damaged_again_in_the_only_snapshot_falls_back_to_the_changelogs(tmp_path, caplog):
    """A snapshot on the working copy's file system shares its table files (hard links):
    damaged in place, the store rebuilt from the snapshot is damaged the same way; the
    first snapshot leaves the changelogs before it, so the store is rebuilt from them."""
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3, application_id="revenue")
    _history(layout, BATCHES[:3])
    snapshot = layout.snapshot_dir("s", 0) / "2"
    _flip_first_blocks(_but_the_newest(layout.db_dir("s", 0)))
    assert run(layout, 3, [b"a", b"b"], [b"9", None]) == [b"3", b"2"]
    assert dump(layout, 4) == {b"a": b"9", b"c": b"4"}
    assert [w.split(" (")[0] for w in _warnings(caplog)] == [
        f"State store 's' partition 0: discarding its damaged working copy {layout.db_dir('s', 0)}",
        f"State store 's' partition 0: its snapshot {snapshot} is damaged",
    ]


def test_a_changelog_that_does_not_name_the_version_it_follows_is_damaged(tmp_path):
    """Every changelog names the version it was written on; one that does not (written
    by another format) is never replayed on a guess."""
    import pyarrow as pa

    layout = _lost_local_state(tmp_path)
    path = layout.changelog_dir("s", 0) / "6.arrow"
    table = pa.ipc.open_file(str(path)).read_all().replace_schema_metadata(None)
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    assert _restore_error(layout) == (
        f"State store 's' partition 0 is damaged: {path}: not a changelog (it does not name the "
        f"version it follows) ({RESET})"
    )

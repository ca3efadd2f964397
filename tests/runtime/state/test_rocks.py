"""The RocksDB database: level-0 compaction at close, info logs kept."""

from __future__ import annotations

from tablestream.runtime.state.rocks import RocksStore

from .stores import dump, run


def _level0_files(layout, store="s", partition=0) -> int:
    db = RocksStore(layout.db_dir(store, partition))
    try:
        return db.level0_files()
    finally:
        db.close()


def test_a_store_compacts_the_files_its_batches_leave_in_level_0(layout, monkeypatch):
    # Each close flushes the batch's writes to a new level-0 file; RocksDB itself would
    # start compacting at 4, so at 2 the store's own compaction is the only one.
    monkeypatch.setattr("tablestream.runtime.state.rocks.COMPACT_LEVEL0", 2)
    run(layout, 0, [b"a", b"b"], [b"1", b"2"])
    assert _level0_files(layout) == 1
    run(layout, 1, [b"a", b"c"], [b"10", b"3"])
    assert _level0_files(layout) == 2
    run(layout, 2, [b"b", b"d"], [None, b"4"])  # closes with 2 there: compacts
    assert _level0_files(layout) == 0
    assert dump(layout, 3) == {b"a": b"10", b"c": b"3", b"d": b"4"}


def test_a_store_keeps_two_info_logs(layout):
    for batch in range(5):
        run(layout, batch, [b"k%d" % batch], [b"v"])
    logs = sorted(p.name.split(".")[0] for p in layout.db_dir("s", 0).iterdir() if p.name.startswith("LOG"))
    assert logs == ["LOG", "LOG"]

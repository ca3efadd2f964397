"""The RocksDB database: level-0 compaction at close, info logs kept."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.state.rocks import RocksStore
from tablestream.runtime.state.versioning import Version

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


def test_a_multi_get_in_a_store_without_keys_finds_none_and_one_with_keys_finds_them(layout):
    # A store without user keys answers get_all without a lookup; its metadata keys (the
    # versions) are not user keys.
    keys = pa.array([b"a", b"b", b"c"], pa.binary())
    db = RocksStore(layout.db_dir("s", 0))
    try:
        assert not db.holds_keys()
        assert db.get_all(keys).to_pylist() == [None, None, None]
    finally:
        db.close()
    run(layout, 0, [b"a", b"b"], [b"1", b"2"])
    db = RocksStore(layout.db_dir("s", 0))
    try:
        assert db.holds_keys()
        assert db.version() is not None
        assert db.get_all(keys).to_pylist() == [db.get([b"a"])[0], db.get([b"b"])[0], None]
        assert db.get_all(keys)[0].as_py() is not None
    finally:
        db.close()


def test_keys_under_a_prefix_in_descending_order(tmp_path):
    """The last key under a prefix first, neighbours on both sides left out (a key of
    0xFF bytes, the prefix alone, the next prefix), and, going on from a key, the ones
    before it."""
    db = RocksStore(tmp_path / "db")
    try:
        keys = [b"g0|z", b"g1", b"g1|", b"g1|a", b"g1|b\xff", b"g1|\xff\xff", b"g1}", b"g2|a"]
        db.write(pa.array(keys, pa.binary()), pa.array([k.upper() for k in keys], pa.binary()), Version(0, "c"), None)
        assert [k for k, _ in db.items(b"g1|", reverse=True)] == [b"g1|\xff\xff", b"g1|b\xff", b"g1|a", b"g1|"]
        assert [k for k, _ in db.items(b"g1|")] == [b"g1|", b"g1|a", b"g1|b\xff", b"g1|\xff\xff"]
        assert list(db.items(b"g1|", after=b"g1|b\xff", reverse=True)) == [(b"g1|a", b"G1|A"), (b"g1|", b"G1|")]
        assert [k for k, _ in db.items(b"g2|", reverse=True)] == [b"g2|a"]  # the last key of the database
        assert list(db.items(b"g3", reverse=True)) == []
        assert [k for k, _ in db.items(b"", reverse=True)] == list(reversed(keys))
    finally:
        db.close()

"""A table materialized from its changelog records: one row per key whose value changed."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.upsert import SCHEMA, upsert

from .rows import at, cb, rows_table

_FIELDS = [("kb", pa.binary()), ("vb", pa.binary())]
K1, K2, K3 = cb(1), cb(2), cb(3)


def _run(stores, batch_id: int, *rows: dict) -> list[dict]:
    out = stores.run(upsert, rows_table(_FIELDS, list(rows)), ("table",), batch_id)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["kb"])


def _change(kb: bytes, old: bytes | None, new: bytes | None, ts: int, off: int, **order) -> dict:
    return {"kb": kb, "old": old, "new": new, **at(ts, off, **order)}


def test_insert_update_repeat_and_delete(stores):
    """An insert has no old value; a repeat of the current value and a tombstone of a
    missing key emit nothing; a delete emits the old value with no new one."""
    assert _run(
        stores, 0,
        {"kb": K1, "vb": cb(5), **at(10, 0)},
        {"kb": K2, "vb": cb("eu"), **at(11, 1)},
        {"kb": K3, "vb": None, **at(12, 2)},
    ) == [_change(K1, None, cb(5), 10, 0), _change(K2, None, cb("eu"), 11, 1)]
    assert _run(
        stores, 1,
        {"kb": K1, "vb": cb(6), **at(20, 3)},
        {"kb": K2, "vb": cb("eu"), **at(21, 4)},
        {"kb": K3, "vb": None, **at(22, 5)},
    ) == [_change(K1, cb(5), cb(6), 20, 3)]
    assert _run(
        stores, 2,
        {"kb": K1, "vb": None, **at(30, 6)},
        {"kb": K2, "vb": cb({"id": 1, "name": "a"}), **at(31, 7)},
    ) == [_change(K1, cb(6), None, 30, 6), _change(K2, cb("eu"), cb({"id": 1, "name": "a"}), 31, 7)]


def test_last_change_of_a_key_by_the_ordering_key_wins(stores):
    """Rows arrive out of order: the winner is the largest ordering key (timestamp
    before offset), and its ordering key leaves with it."""
    _run(stores, 0, {"kb": K1, "vb": cb("eu"), **at(1, 0)})
    assert _run(
        stores, 1,
        {"kb": K1, "vb": cb("us"), **at(31, 8, src=1)},
        {"kb": K1, "vb": cb("asia"), **at(31, 6, src=1)},
        {"kb": K1, "vb": cb("latest-offset"), **at(29, 9, src=1)},
        {"kb": K1, "vb": cb("same-ts-lower-part"), **at(31, 9, src=0, part=3)},
    ) == [_change(K1, cb("eu"), cb("us"), 31, 8, src=1)]


def test_changes_ending_at_the_stored_value_emit_nothing(stores):
    """Several changes of a key within a batch that end where it started change nothing,
    and the store keeps that value."""
    _run(stores, 0, {"kb": K1, "vb": cb(5), **at(1, 0)})
    assert _run(stores, 1, {"kb": K1, "vb": cb(5), **at(3, 2)}, {"kb": K1, "vb": cb(7), **at(2, 1)}) == []
    assert _run(stores, 2, {"kb": K1, "vb": cb(8), **at(4, 3)}) == [_change(K1, cb(5), cb(8), 4, 3)]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the store as it was before that batch."""
    _run(stores, 0, {"kb": K1, "vb": cb(5), **at(1, 0)}, {"kb": K2, "vb": cb(1), **at(1, 1)})
    batch = [{"kb": K1, "vb": cb(6), **at(2, 2)}, {"kb": K2, "vb": None, **at(2, 3)}, {"kb": K3, "vb": cb(0), **at(2, 4)}]
    first = _run(stores, 1, *batch)
    assert first == [_change(K1, cb(5), cb(6), 2, 2), _change(K2, cb(1), None, 2, 3), _change(K3, None, cb(0), 2, 4)]
    assert _run(stores, 1, *batch) == first
    assert _run(stores, 2, {"kb": K2, "vb": cb(1), **at(3, 5)}, {"kb": K3, "vb": None, **at(3, 6)}) == [
        _change(K2, None, cb(1), 3, 5), _change(K3, cb(0), None, 3, 6),
    ]

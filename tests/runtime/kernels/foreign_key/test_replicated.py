"""A foreign-key join whose right table every state partition keeps in full: one row
per left key whose join inputs changed."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.foreign_key.replicated import replicated_foreign_key_join, schema

from ..rows import at, cb, rows_table

_FIELDS = [("side", pa.int8()), ("kb", pa.binary()), ("vb", pa.binary()), ("fk", pa.binary())]
_STORES = ("left", "right", "subscriptions")
R1, R2, L1, L2, L3 = cb("r1"), cb("r2"), cb("l1"), cb("l2"), cb("l3")
A, B, C, D = (cb({"name": n}) for n in "abcd")
RIGHT, LEFT = 0, 1


def _left(fk: str | None) -> bytes:
    return cb({"fk": fk})


def _l(lk: bytes, fk: bytes | None, value: bytes | None, ts: int, off: int, **order) -> dict:
    return {"side": LEFT, "kb": lk, "vb": value, "fk": fk, **at(ts, off, src=1, **order)}


def _r(rk: bytes, value: bytes | None, ts: int, off: int) -> dict:
    return {"side": RIGHT, "kb": rk, "vb": value, "fk": None, **at(ts, off)}


def _run(stores, batch_id: int, *rows: dict, **types) -> list[dict]:
    out = stores.run(replicated_foreign_key_join, rows_table(_FIELDS, list(rows)), _STORES, batch_id, **types)
    assert out.schema.equals(schema(types.get("left_type"), types.get("right_type"), types.get("key_type")))
    return sorted(out.to_pylist(), key=lambda r: r["lk"])


def _out(lk, l_old, l_new, r_old, r_new, ts: int) -> dict:
    return {"lk": lk, "l_old": l_old, "l_new": l_new, "r_old": r_old, "r_new": r_new, "ts": ts}


def _batch0(stores) -> list[dict]:
    """Right rows r1 = a and r2 = b; l1 references r1, l2 r2, l3 nothing."""
    return _run(
        stores, 0,
        _l(L1, R1, _left("r1"), 12, 0), _r(R1, A, 10, 0), _r(R2, B, 14, 1),
        _l(L2, R2, _left("r2"), 13, 1), _l(L3, None, _left(None), 9, 2),
    )


def test_left_rows_meet_their_right_rows(stores):
    """A new left row meets its foreign key's row after the batch, at the later of the
    two timestamps; one without a foreign key meets none."""
    assert _batch0(stores) == [
        _out(L1, None, _left("r1"), None, A, 12),
        _out(L2, None, _left("r2"), None, B, 14),
        _out(L3, None, _left(None), None, None, 9),
    ]


def test_right_change_reaches_an_unchanged_subscriber(stores):
    """A right change meets each subscriber (old and new right row, the left row as it
    is); a right record repeating its value and a left one repeating its own change
    nothing."""
    _batch0(stores)
    assert _run(stores, 1, _r(R1, C, 20, 3), _r(R2, B, 21, 4), _l(L3, None, _left(None), 22, 3)) == [
        _out(L1, _left("r1"), _left("r1"), A, C, 20),
    ]


def test_foreign_key_move_and_deletes(stores):
    """A left row moving meets its old right row before the batch and its new one
    after, and a change of the old one no longer reaches it; a deleted right row reaches
    its subscribers with none; a deleted left row leaves with its old right row."""
    _batch0(stores)
    assert _run(stores, 1, _l(L1, R2, _left("r2"), 30, 3), _r(R1, D, 31, 2)) == [
        _out(L1, _left("r1"), _left("r2"), A, B, 30),
    ]
    assert _run(stores, 2, _r(R1, C, 35, 3)) == []
    assert _run(stores, 3, _r(R2, None, 40, 4), _l(L2, None, None, 41, 4)) == [
        _out(L1, _left("r2"), _left("r2"), B, None, 40),
        _out(L2, _left("r2"), None, B, None, 41),
    ]


def test_last_change_of_a_key_wins_by_the_ordering_key(stores):
    """Left and right rows arrive out of order: the last of each key by the ordering
    key wins."""
    _batch0(stores)
    assert _run(
        stores, 1,
        _r(R1, D, 22, 5), _l(L3, R1, _left("r1"), 21, 9), _r(R1, C, 21, 6), _l(L3, R2, _left("r2"), 23, 3),
    ) == [
        _out(L1, _left("r1"), _left("r1"), A, D, 22),
        _out(L3, _left(None), _left("r2"), None, B, 23),
    ]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the left rows, right rows and subscriptions as they
    were before it."""
    _batch0(stores)
    batch = [_l(L1, R2, _left("r2"), 30, 3), _r(R2, C, 31, 4)]
    first = _run(stores, 1, *batch)
    assert first == [
        _out(L1, _left("r1"), _left("r2"), A, C, 31),
        _out(L2, _left("r2"), _left("r2"), B, C, 31),
    ]
    assert _run(stores, 1, *batch) == first
    assert _run(stores, 2, _r(R2, D, 40, 5)) == [
        _out(L1, _left("r2"), _left("r2"), C, D, 40),
        _out(L2, _left("r2"), _left("r2"), C, D, 40),
    ]


def test_values_and_keys_leave_decoded(stores):
    """With Arrow types the values and the left key leave decoded."""
    types = {"left_type": pa.struct([("fk", pa.string())]), "right_type": pa.struct([("name", pa.string())]),
             "key_type": pa.string()}
    _run(stores, 0, _r(R1, A, 10, 0), _l(L1, R1, _left("r1"), 12, 0))
    assert _run(stores, 1, _r(R1, B, 20, 1), _l(L2, R1, _left("r1"), 21, 1), **types) == [
        {"lk": "l1", "l_old": {"fk": "r1"}, "l_new": {"fk": "r1"}, "r_old": {"name": "a"}, "r_new": {"name": "b"},
         "ts": 20},
        {"lk": "l2", "l_old": None, "l_new": {"fk": "r1"}, "r_old": None, "r_new": {"name": "b"}, "ts": 21},
    ]

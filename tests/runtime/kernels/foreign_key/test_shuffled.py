"""KIP-213's subscription side, keyed by foreign key: left rows subscribe, right
changes reach their unchanged subscribers, left changes pass through."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.foreign_key.shuffled import foreign_key_join, schema
from tablestream.runtime.kernels.foreign_key.subscriptions import (
    LEFT_CHANGE,
    OLD_LOOKUP,
    RIGHT_CHANGE,
    ROLE_LEFT,
    ROLE_NEW,
    ROLE_OLD,
    ROLE_RIGHT,
    SUBSCRIBE,
)

from ..rows import at, cb, rows_table

_FIELDS = [("fkb", pa.binary()), ("kind", pa.int8()), ("vb", pa.binary()), ("unsubscribe", pa.bool_()),
           ("l_old", pa.binary()), ("l_new", pa.binary()), ("lkb", pa.binary())]
_STORES = ("right", "subscriptions")
R1, R2, L1, L2 = cb("r1"), cb("r2"), cb("l1"), cb("l2")
A, B, C, D = (cb({"name": n}) for n in "abcd")


def _left(fk: str) -> bytes:
    return cb({"fk": fk})


def _right(fk: bytes, value: bytes | None, ts: int, off: int) -> list[dict]:
    return [{"fkb": fk, "kind": RIGHT_CHANGE, "vb": value, "unsubscribe": False, "l_old": None, "l_new": None,
             "lkb": None, **at(ts, off)}]


def _left_change(lk: bytes, old_fk: bytes | None, new_fk: bytes | None, old: bytes | None, new: bytes | None,
                 ts: int, off: int) -> list[dict]:
    """A left change's rows as they reach this stage: the old foreign key's lookup, the
    new one's subscription, the change itself."""
    common = {"lkb": lk, **at(ts, off, src=1)}
    rows = []
    if old is not None and old_fk is not None:
        rows.append({"fkb": old_fk, "kind": OLD_LOOKUP, "vb": None, "unsubscribe": new is None or new_fk != old_fk,
                     "l_old": None, "l_new": None, **common})
    if new is not None and new_fk is not None:
        rows.append({"fkb": new_fk, "kind": SUBSCRIBE, "vb": new, "unsubscribe": False, "l_old": None, "l_new": None,
                     **common})
    rows.append({"fkb": lk, "kind": LEFT_CHANGE, "vb": None, "unsubscribe": False, "l_old": old, "l_new": new,
                 **common})
    return rows


def _run(stores, batch_id: int, *changes: list[dict], **types) -> list[dict]:
    table = rows_table(_FIELDS, [row for rows in changes for row in rows])
    out = stores.run(foreign_key_join, table, _STORES, batch_id, **types)
    assert out.schema.equals(schema(types.get("left_type"), types.get("right_type")))
    return sorted(out.to_pylist(), key=lambda r: (r["lkb"], r["role"]))


def _out(lk: bytes, role: int, **columns) -> dict:
    row = dict.fromkeys(schema().names)
    return row | {"lkb": lk, "role": role} | columns


def _batch0(stores) -> list[dict]:
    """Right rows r1 = a and r2 = b; l1 subscribes to r1 and l2 to r2."""
    return _run(
        stores, 0,
        _right(R1, A, 10, 0), _right(R2, B, 11, 1),
        _left_change(L1, None, R1, None, _left("r1"), 12, 0),
        _left_change(L2, None, R2, None, _left("r2"), 13, 1),
    )


def test_left_rows_subscribe_and_meet_the_right_row_after_the_batch(stores):
    """A new left row's subscription meets its foreign key's right row as the batch
    leaves it; its change passes through."""
    assert _batch0(stores) == [
        _out(L1, ROLE_NEW, r_new=A, r_new_ts=10),
        _out(L1, ROLE_LEFT, l_new=_left("r1"), l_ts=12),
        _out(L2, ROLE_NEW, r_new=B, r_new_ts=11),
        _out(L2, ROLE_LEFT, l_new=_left("r2"), l_ts=13),
    ]


def test_right_change_reaches_an_unchanged_subscriber(stores):
    """A right change meets each subscriber with its stored left value; a right record
    repeating its row's value reaches nobody."""
    _batch0(stores)
    assert _run(stores, 1, _right(R1, C, 20, 2), _right(R2, B, 21, 3)) == [
        _out(L1, ROLE_RIGHT, lv=_left("r1"), lts=12, r_old=A, r_old_ts=10, r_new=C, r_new_ts=20, r_change_ts=20),
    ]


def test_foreign_key_move_and_deletes(stores):
    """A left row moving to another foreign key meets the old one's row before the batch
    and the new one's after, and a change of its old right row no longer reaches it; a
    deleted right row reaches its subscribers with no new row; a deleted left row
    unsubscribes."""
    _batch0(stores)
    _run(stores, 1, _right(R1, C, 20, 2))
    assert _run(stores, 2, _left_change(L1, R1, R2, _left("r1"), _left("r2"), 30, 2), _right(R1, D, 31, 4)) == [
        _out(L1, ROLE_OLD, r_old=C, r_old_ts=20),
        _out(L1, ROLE_NEW, r_new=B, r_new_ts=11),
        _out(L1, ROLE_LEFT, l_old=_left("r1"), l_new=_left("r2"), l_ts=30),
    ]
    assert _run(stores, 3, _right(R1, A, 40, 5)) == []
    assert _run(stores, 4, _right(R2, None, 50, 6), _left_change(L2, R2, None, _left("r2"), None, 51, 3)) == [
        _out(L1, ROLE_RIGHT, lv=_left("r2"), lts=30, r_old=B, r_old_ts=11, r_change_ts=50),
        _out(L2, ROLE_OLD, r_old=B, r_old_ts=11),
        _out(L2, ROLE_LEFT, l_old=_left("r2"), l_ts=51),
    ]
    assert _run(stores, 5, _right(R2, C, 60, 7)) == [
        _out(L1, ROLE_RIGHT, lv=_left("r2"), lts=30, r_new=C, r_new_ts=60, r_change_ts=60),
    ]


def test_last_right_change_of_a_batch_wins(stores):
    """Several changes of one right row, out of order: the last by the ordering key is
    the row after the batch."""
    _batch0(stores)
    assert _run(stores, 1, _right(R1, D, 22, 5), _right(R1, C, 21, 6), _right(R1, B, 22, 4)) == [
        _out(L1, ROLE_RIGHT, lv=_left("r1"), lts=12, r_old=A, r_old_ts=10, r_new=D, r_new_ts=22, r_change_ts=22),
    ]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the right rows and subscriptions as they were before it."""
    _batch0(stores)
    batch = [_right(R2, C, 20, 2), _left_change(L1, R1, R2, _left("r1"), _left("r2"), 21, 2)]
    first = _run(stores, 1, *batch)
    assert first == [
        _out(L1, ROLE_OLD, r_old=A, r_old_ts=10),
        _out(L1, ROLE_NEW, r_new=C, r_new_ts=20),
        _out(L1, ROLE_LEFT, l_old=_left("r1"), l_new=_left("r2"), l_ts=21),
        _out(L2, ROLE_RIGHT, lv=_left("r2"), lts=13, r_old=B, r_old_ts=11, r_new=C, r_new_ts=20, r_change_ts=20),
    ]
    assert _run(stores, 1, *batch) == first
    assert _run(stores, 2, _right(R2, D, 30, 3)) == [
        _out(L1, ROLE_RIGHT, lv=_left("r2"), lts=21, r_old=C, r_old_ts=20, r_new=D, r_new_ts=30, r_change_ts=30),
        _out(L2, ROLE_RIGHT, lv=_left("r2"), lts=13, r_old=C, r_old_ts=20, r_new=D, r_new_ts=30, r_change_ts=30),
    ]


def test_values_leave_decoded(stores):
    """With Arrow types the left and right values leave decoded."""
    left_type = pa.struct([("fk", pa.string())])
    right_type = pa.struct([("name", pa.string())])
    _run(stores, 0, _right(R1, A, 10, 0), _left_change(L1, None, R1, None, _left("r1"), 12, 0))
    assert _run(stores, 1, _right(R1, B, 20, 1), left_type=left_type, right_type=right_type) == [
        _out(L1, ROLE_RIGHT, lv={"fk": "r1"}, lts=12, r_old={"name": "a"}, r_old_ts=10, r_new={"name": "b"},
             r_new_ts=20, r_change_ts=20),
    ]

"""COLLECT_LIST and COLLECT_SET per group: values in arrival order up to a limit, a
table row's old value retracted (a list's last occurrence; a set's value when no member
holds it any more)."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.collect import SCHEMA, collect_groups

from .rows import at, cb, rows_table

G, H = cb("g"), cb("h")


def _run(stores, batch_id: int, rows: list[tuple], *, distinct: bool = False, limit: int | None = 1000) -> list[dict]:
    """``rows``: (group, sign, value, ts, offset)."""
    table = rows_table([("gkb", pa.binary()), ("sign", pa.int32()), ("vb", pa.binary())], [
        {"gkb": g, "sign": s, "vb": None if v is None else cb(v), **at(ts, off)} for g, s, v, ts, off in rows
    ])
    out = stores.run(collect_groups, table, ("collect",), batch_id, distinct=distinct, limit=limit)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _change(gkb: bytes, old, new, ts: int) -> dict:
    return {"gkb": gkb, "old_vb": None if old is None else cb(old), "new_vb": None if new is None else cb(new), "ts": ts}


def test_a_list_collects_every_value_in_offset_order_nulls_included(stores):
    assert _run(stores, 0, [(G, 1, "b", 2, 1), (G, 1, "a", 1, 0), (G, 1, None, 3, 2), (G, 1, "a", 4, 3)]) == [
        _change(G, None, ["a", "b", None, "a"], 4),
    ]
    assert _run(stores, 1, [(G, 1, "c", 5, 4)]) == [_change(G, ["a", "b", None, "a"], ["a", "b", None, "a", "c"], 5)]


def test_a_retraction_removes_the_last_occurrence_and_an_emptied_group_is_deleted(stores):
    """A change's retraction runs before its addition (same position): the row's value
    moves from one group's list to the other's."""
    _run(stores, 0, [(G, 1, "a", 1, 0), (G, 1, "b", 2, 1), (G, 1, "a", 3, 2)])
    assert _run(stores, 1, [(H, 1, "a", 4, 3), (G, -1, "a", 4, 3)]) == [
        _change(G, ["a", "b", "a"], ["a", "b"], 4), _change(H, None, ["a"], 4),
    ]
    assert _run(stores, 2, [(G, -1, "a", 5, 4), (G, -1, "b", 6, 5)]) == [_change(G, ["a", "b"], None, 6)]


def test_the_limit_leaves_later_values_out(stores):
    """At the limit a value is left out; retracting a left-out value removes nothing it
    did not add (ksqlDB's undo)."""
    assert _run(stores, 0, [(G, 1, v, v, v) for v in (1, 2, 3)], limit=2) == [_change(G, None, [1, 2], 3)]
    assert _run(stores, 1, [(G, -1, 3, 4, 4)], limit=2) == []
    assert _run(stores, 2, [(G, -1, 1, 5, 5), (G, 1, 4, 6, 6)], limit=2) == [_change(G, [1, 2], [2, 4], 6)]


def test_a_limit_of_zero_keeps_the_group_with_an_empty_array(stores):
    assert _run(stores, 0, [(G, 1, 1, 1, 0)], limit=0) == [_change(G, None, [], 1)]


def test_a_set_keeps_distinct_values_while_a_member_holds_them(stores):
    assert _run(stores, 0, [(G, 1, "a", 1, 0), (G, 1, "b", 2, 1), (G, 1, "a", 3, 2), (G, 1, None, 4, 3)],
                distinct=True) == [_change(G, None, ["a", "b", None], 4)]
    assert _run(stores, 1, [(G, -1, "a", 5, 4)], distinct=True) == []
    assert _run(stores, 2, [(G, -1, "a", 6, 5), (G, -1, None, 7, 6)], distinct=True) == [
        _change(G, ["a", "b", None], ["b"], 7),
    ]
    assert _run(stores, 3, [(G, 1, "c", 8, 7), (G, 1, "d", 9, 8)], distinct=True, limit=2) == [
        _change(G, ["b"], ["b", "c"], 9),
    ]

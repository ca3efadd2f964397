"""MIN and MAX per group with retraction, from a sorted index of each group's members."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from tablestream.runtime.kernels.extreme import SCHEMA, extreme_groups, order_bytes

from .rows import cb, rows_table

G, H = cb("g"), cb("h")


def _run(stores, batch_id: int, rows: list[tuple], *, which: str, stream: bool = False) -> list[dict]:
    """``rows``: (group, sign, value, member, ts)."""
    fields = [("gkb", pa.binary()), ("sign", pa.int32()), ("v", pa.int64()), ("vb", pa.binary()), ("skb", pa.binary())]
    table = rows_table(fields, [
        {"gkb": g, "sign": s, "v": v, "vb": None if v is None else cb(v), "skb": m, "ts": ts} for g, s, v, m, ts in rows
    ], order=False)
    out = stores.run(extreme_groups, table, ("extreme",), batch_id, which=which, stream=stream)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _change(gkb: bytes, old, new, ts: int) -> dict:
    return {"gkb": gkb, "old_vb": None if old is None else cb(old), "new_vb": None if new is None else cb(new), "ts": ts}


def _index(stores, batch_id: int) -> list[bytes]:
    """The values of the store's index entries (every group), in key order."""
    with stores.session("extreme", batch_id) as session:
        return [value for _, value in session.prefix_items(b"I")]


def test_min_with_retraction_of_the_current_minimum(stores):
    """Retracting the minimum moves to the next member; a change past the minimum emits
    nothing; a group whose members all leave is deleted."""
    assert _run(stores, 0, [(G, 1, 5, b"k1", 10), (G, 1, 3, b"k2", 12), (G, 1, 8, b"k3", 11), (H, 1, 4, b"k4", 5)],
                which="min") == [_change(G, None, 3, 12), _change(H, None, 4, 5)]
    assert _run(stores, 1, [(G, -1, 3, b"k2", 20), (G, 1, 6, b"k5", 21), (H, 1, 9, b"k6", 22)],
                which="min") == [_change(G, 3, 5, 21)]
    assert _run(stores, 2, [(G, -1, 5, b"k1", 30), (G, -1, 8, b"k3", 31), (G, -1, 6, b"k5", 29), (H, -1, 4, b"k4", 3)],
                which="min") == [_change(G, 5, None, 31), _change(H, 4, 9, 22)]


def test_max_with_retraction_of_the_current_maximum(stores):
    """The maximum is the last entry of the group's index."""
    assert _run(stores, 0, [(G, 1, -5, b"k1", 1), (G, 1, 7, b"k2", 2), (G, 1, 2, b"k3", 3)],
                which="max") == [_change(G, None, 7, 3)]
    assert _run(stores, 1, [(G, -1, 7, b"k2", 4)], which="max") == [_change(G, 7, 2, 4)]
    assert _run(stores, 2, [(G, -1, 2, b"k3", 5), (G, 1, -9, b"k4", 6)], which="max") == [_change(G, 2, -5, 6)]


def test_equal_values_of_two_members_are_two_entries(stores):
    """Retracting one of two members with the minimum keeps it, and emits nothing."""
    _run(stores, 0, [(G, 1, 3, b"k1", 1), (G, 1, 3, b"k2", 1), (G, 1, 4, b"k3", 1)], which="min")
    assert _run(stores, 1, [(G, -1, 3, b"k1", 2)], which="min") == []
    assert _run(stores, 2, [(G, -1, 3, b"k2", 3)], which="min") == [_change(G, 3, 4, 3)]


def test_a_member_without_a_value_makes_a_group_without_an_extreme(stores):
    """A null value counts as a member but has no index entry."""
    assert _run(stores, 0, [(G, 1, None, b"k1", 1)], which="max") == [_change(G, None, None, 1)]
    assert _run(stores, 1, [(G, 1, 2, b"k2", 2)], which="max") == [_change(G, None, 2, 2)]
    assert _run(stores, 2, [(G, -1, 2, b"k2", 3)], which="max") == [_change(G, 2, None, 3)]


def test_stream_keeps_one_index_entry_per_group(stores):
    """A stream's records are never retracted: only the extreme entry stays."""
    assert _run(stores, 0, [(G, 1, 5, b"0|0|1|0", 1), (G, 1, 3, b"0|0|2|0", 2), (G, 1, 8, b"0|0|3|0", 3)],
                which="min", stream=True) == [_change(G, None, 3, 3)]
    assert _index(stores, 1) == [cb(3)]
    assert _run(stores, 1, [(G, 1, 4, b"0|0|4|0", 4)], which="min", stream=True) == []
    assert _run(stores, 2, [(G, 1, 2, b"0|0|5|0", 5), (H, 1, 7, b"0|0|6|0", 6)], which="min", stream=True) == [
        _change(G, 3, 2, 5), _change(H, None, 7, 6),
    ]
    assert _index(stores, 3) == [cb(2), cb(7)]


def test_stream_min_of_a_group_without_a_value(stores):
    """A stream record without a value makes its group, as MAX does."""
    assert _run(stores, 0, [(G, 1, None, b"0|0|1|0", 1)], which="min", stream=True) == [_change(G, None, None, 1)]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the index and the member counts as they were before it."""
    _run(stores, 0, [(G, 1, 5, b"k1", 1), (G, 1, 3, b"k2", 1)], which="min")
    batch = [(G, -1, 3, b"k2", 2), (H, 1, 1, b"k3", 2)]
    first = _run(stores, 1, batch, which="min")
    assert first == [_change(G, 3, 5, 2), _change(H, None, 1, 2)]
    assert _run(stores, 1, batch, which="min") == first
    assert _run(stores, 2, [(G, -1, 5, b"k1", 3)], which="min") == [_change(G, 5, None, 3)]


def test_order_bytes_sort_as_the_values():
    """Integers, doubles and strings: the bytes sort as the values (negatives, -0.0, a
    string and its extensions, an escaped zero byte)."""
    ints = [-(2**63), -2, -1, 0, 1, 2**63 - 1]
    assert order_bytes(pa.array([1], pa.int64())) == [b"\x80" + b"\x00" * 6 + b"\x01"]
    assert order_bytes(pa.array(ints[::-1], pa.int64())) == sorted(order_bytes(pa.array(ints, pa.int64())), reverse=True)
    assert sorted(order_bytes(pa.array(ints[::-1], pa.int64()))) == order_bytes(pa.array(ints, pa.int64()))
    doubles = [float("-inf"), -2.5, -1e-300, 0.0, 1e-300, 3.0, float("inf")]
    assert sorted(order_bytes(pa.array(doubles[::-1]))) == order_bytes(pa.array(doubles))
    assert order_bytes(pa.array([-0.0])) == order_bytes(pa.array([0.0])) == [struct.pack(">Q", 1 << 63)]
    texts = ["", "a", "a\x00", "a\x00b", "ab", "b"]
    assert sorted(order_bytes(pa.array(texts[::-1]))) == order_bytes(pa.array(texts))
    assert order_bytes(pa.array(["a\x00", None])) == [b"a\x00\xff\x00\x00", None]
    assert order_bytes(pa.array([True, False])) == order_bytes(pa.array([1, 0], pa.int64()))
    with pytest.raises(TypeError, match="not supported"):
        order_bytes(pa.array([[1]]))

"""LATEST_BY_OFFSET and EARLIEST_BY_OFFSET per group: the last (first) value or values
in offset order, a batch after the stored ones, nulls ignored unless asked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tablestream.runtime.kernels.offset import SCHEMA, by_offset_groups

from .rows import at, cb, rows_table

G, H = cb("g"), cb("h")


def _run(stores, batch_id: int, rows: list[tuple], **options) -> list[dict]:
    """``rows``: (group, value, ts, offset)."""
    table = rows_table([("gkb", pa.binary()), ("vb", pa.binary())], [
        {"gkb": g, "vb": None if v is None else cb(v), **at(ts, off)} for g, v, ts, off in rows
    ])
    out = stores.run(by_offset_groups, table, ("offset",), batch_id, **options)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _change(gkb: bytes, old, new, ts: int) -> dict:
    return {"gkb": gkb, "old_vb": None if old is None else cb(old), "new_vb": None if new is None else cb(new), "ts": ts}


SINGLE = {"n": None, "ignore_nulls": True}


def test_latest_is_the_last_record_by_offset_not_by_arrival(stores):
    """Rows arrive in any order; the ordering key decides; a null is skipped and a
    batch whose last value equals the stored one emits nothing."""
    assert _run(stores, 0, [(G, 7, 10, 2), (G, 5, 10, 1), (H, "x", 4, 3)], latest=True, **SINGLE) == [
        _change(G, None, 7, 10), _change(H, None, "x", 4),
    ]
    assert _run(stores, 1, [(G, None, 12, 4), (H, "x", 13, 5)], latest=True, **SINGLE) == []
    assert _run(stores, 2, [(G, 9, 3, 6)], latest=True, **SINGLE) == [_change(G, 7, 9, 12)]


def test_earliest_keeps_the_first_value(stores):
    assert _run(stores, 0, [(G, None, 1, 0), (G, 5, 2, 1), (G, 6, 3, 2)], latest=False, **SINGLE) == [
        _change(G, None, 5, 3),
    ]
    assert _run(stores, 1, [(G, 1, 4, 3)], latest=False, **SINGLE) == []


def test_nulls_are_values_when_not_ignored(stores):
    """A latest null makes the result null (no row); earliest keeps a first null."""
    assert _run(stores, 0, [(G, 5, 1, 0)], latest=True, n=None, ignore_nulls=False) == [_change(G, None, 5, 1)]
    assert _run(stores, 1, [(G, None, 2, 1)], latest=True, n=None, ignore_nulls=False) == [_change(G, 5, None, 2)]


def test_n_values_are_an_array_oldest_first(stores):
    """With ``n`` the result is an array: the last ``n`` values, or the first ``n``; a
    group of only ignored nulls is an empty array."""
    assert _run(stores, 0, [(G, 1, 1, 0), (G, 2, 2, 1), (G, 3, 3, 2), (H, None, 9, 3)],
                latest=True, n=2, ignore_nulls=True) == [_change(G, None, [2, 3], 3), _change(H, None, [], 9)]
    assert _run(stores, 1, [(G, None, 4, 4), (G, 4, 5, 5)], latest=True, n=2, ignore_nulls=False) == [
        _change(G, [2, 3], [None, 4], 5),
    ]


@pytest.mark.parametrize("latest", [True, False])
def test_earliest_n_stops_at_n(stores, latest):
    got = _run(stores, 0, [(G, v, v, v) for v in range(5)], latest=latest, n=3, ignore_nulls=True)
    assert got == [_change(G, None, [2, 3, 4] if latest else [0, 1, 2], 4)]

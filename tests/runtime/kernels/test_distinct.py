"""COUNT_DISTINCT per group, exact and with retraction."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tablestream.runtime.kernels.distinct import SCHEMA, count_distinct_groups

from .rows import cb, rows_table

G, H = cb("g"), cb("h")


def _run(stores, batch_id: int, rows: list[tuple]) -> list[dict]:
    """``rows``: (group, sign, value, ts)."""
    table = rows_table([("gkb", pa.binary()), ("sign", pa.int32()), ("vb", pa.binary())], [
        {"gkb": g, "sign": s, "vb": None if v is None else cb(v), "ts": ts} for g, s, v, ts in rows
    ], order=False)
    out = stores.run(count_distinct_groups, table, ("distinct",), batch_id)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _change(gkb: bytes, old, new, ts: int) -> dict:
    return {"gkb": gkb, "old_count": old, "new_count": new, "ts": ts}


def test_distinct_values_are_counted_exactly_nulls_not(stores):
    """A group of only nulls counts 0; a repeated value adds nothing."""
    assert _run(stores, 0, [(G, 1, "a", 1), (G, 1, "b", 3), (G, 1, "a", 2), (H, 1, None, 5)]) == [
        _change(G, None, 2, 3), _change(H, None, 0, 5),
    ]
    assert _run(stores, 1, [(G, 1, "b", 6), (H, 1, 7, 4)]) == [_change(H, 0, 1, 5)]


def test_a_value_leaves_when_its_last_holder_is_retracted(stores):
    _run(stores, 0, [(G, 1, 1, 1), (G, 1, 1, 2), (G, 1, 2, 3)])
    assert _run(stores, 1, [(G, -1, 1, 4)]) == []
    assert _run(stores, 2, [(G, -1, 1, 5)]) == [_change(G, 2, 1, 5)]
    assert _run(stores, 3, [(G, -1, 2, 6)]) == [_change(G, 1, None, 6)]


def test_retracting_a_value_never_added_fails(stores):
    _run(stores, 0, [(G, 1, 1, 1)])
    with pytest.raises(ValueError, match="retracted a value more often than it was added"):
        _run(stores, 1, [(G, -1, 2, 2)])

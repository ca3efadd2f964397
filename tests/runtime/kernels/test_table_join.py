"""Primary-key table-table join: both sides' rows before and after the batch."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.runtime.kernels.table_join import SCHEMA, table_join

from .rows import at, cb, rows_table

_FIELDS = [("kb", pa.binary()), ("side", pa.int8()), ("vb", pa.binary())]
K1, K2 = cb(1), cb(2)
LEFT, RIGHT = 0, 1


def _run(stores, batch_id: int, *rows: tuple) -> list[dict]:
    """``rows``: (key, side, value, ts, offset)."""
    table = rows_table(_FIELDS, [{"kb": k, "side": s, "vb": v, **at(ts, off)} for k, s, v, ts, off in rows])
    out = stores.run(table_join, table, ("left", "right"), batch_id)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["kb"])


def _join(kb: bytes, left: tuple, right: tuple, change_ts: int) -> dict:
    """``left`` / ``right``: (old, old ts, new, new ts)."""
    row = {"kb": kb, "change_ts": change_ts}
    for prefix, (old, old_ts, new, new_ts) in (("l", left), ("r", right)):
        row |= {f"{prefix}_old": old, f"{prefix}_old_ts": old_ts, f"{prefix}_new": new, f"{prefix}_new_ts": new_ts}
    return row


NONE = (None, None, None, None)


def test_changes_on_either_side_before_and_after(stores):
    """A key changed on one side brings the other side's row as it stands; a delete has
    no new timestamp; the change timestamp is the latest winning change's."""
    assert _run(stores, 0, (K1, LEFT, cb("a"), 10, 0), (K2, RIGHT, cb("x"), 11, 1)) == [
        _join(K1, (None, None, cb("a"), 10), NONE, 10),
        _join(K2, NONE, (None, None, cb("x"), 11), 11),
    ]
    assert _run(stores, 1, (K1, RIGHT, cb("y"), 20, 2), (K2, RIGHT, None, 23, 4), (K2, LEFT, cb("b"), 22, 3)) == [
        _join(K1, (cb("a"), 10, cb("a"), 10), (None, None, cb("y"), 20), 20),
        _join(K2, (None, None, cb("b"), 22), (cb("x"), 11, None, None), 23),
    ]


def test_last_change_of_a_side_wins_by_the_ordering_key(stores):
    """Several changes of one key and side, out of order: the last by the ordering key
    is the new row, and the keys left alone are not in the output."""
    _run(stores, 0, (K1, LEFT, cb("a"), 10, 0), (K1, RIGHT, cb("y"), 10, 1), (K2, LEFT, cb("b"), 10, 2))
    assert _run(stores, 1, (K1, LEFT, cb("c"), 31, 6), (K1, LEFT, cb("d"), 30, 7), (K1, LEFT, cb("e"), 31, 5)) == [
        _join(K1, (cb("a"), 10, cb("c"), 31), (cb("y"), 10, cb("y"), 10), 31),
    ]
    assert _run(stores, 2, (K1, LEFT, None, 40, 8)) == [
        _join(K1, (cb("c"), 31, None, None), (cb("y"), 10, cb("y"), 10), 40),
    ]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads both sides as they were before it."""
    _run(stores, 0, (K1, LEFT, cb("a"), 1, 0))
    batch = [(K1, RIGHT, cb("x"), 2, 1), (K1, LEFT, cb("b"), 3, 2)]
    first = _run(stores, 1, *batch)
    assert first == [_join(K1, (cb("a"), 1, cb("b"), 3), (None, None, cb("x"), 2), 3)]
    assert _run(stores, 1, *batch) == first
    assert _run(stores, 2, (K1, RIGHT, None, 4, 3)) == [
        _join(K1, (cb("b"), 3, cb("b"), 3), (cb("x"), 2, None, None), 4),
    ]


def _reference(batches: list[list[tuple]]) -> list[list[dict]]:
    """Each batch's output, one change at a time: both sides' rows before the batch and
    after its changes in the ordering key's order."""
    state: list[dict[bytes, tuple]] = [{}, {}]
    outputs = []
    for rows in batches:
        before = [dict(s) for s in state]
        won: dict[tuple[bytes, int], int] = {}
        for kb, side, value, ts, _off in sorted(rows, key=lambda r: (r[3], r[4])):
            state[side][kb] = (value, ts if value is not None else None)
            won[kb, side] = ts
        out = []
        for kb in sorted({kb for kb, _ in won}):
            old, new = (before[s].get(kb, (None, None)) for s in (0, 1)), (state[s].get(kb, (None, None)) for s in (0, 1))
            (l_old, r_old), (l_new, r_new) = old, new
            out.append(_join(kb, (*l_old, *l_new), (*r_old, *r_new), max(ts for (k, _), ts in won.items() if k == kb)))
        outputs.append(out)
    return outputs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 1), st.integers(0, 6), st.booleans()),
                         max_size=12), min_size=1, max_size=3))
def test_as_a_change_at_a_time(tmp_path_factory, batches):
    """Random batches of changes (deletes among them) to both sides over a few keys give,
    batch after batch, what applying them one at a time in the ordering key's order gives."""
    from .rows import Stores

    stores = Stores(tmp_path_factory.mktemp("tj"))
    offsets = iter(range(10_000))
    made = []
    for b in batches:
        made.append([(cb(k), side, None if deletes else cb(f"v{off}"), ts, off)
                     for (k, side, ts, deletes), off in zip(b, offsets, strict=False)])
    for batch_id, (rows, expected) in enumerate(zip(made, _reference(made), strict=True)):
        assert _run(stores, batch_id, *rows) == expected

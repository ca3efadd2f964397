"""LATEST_BY_OFFSET and EARLIEST_BY_OFFSET per group of a stream: each group keeps its
last (or first) ``n`` values in offset order, so a record only appends to a short list."""

from __future__ import annotations

import pyarrow as pa

from ..state import StoreSession
from .codec import (
    VALUE_CHANGES,
    canonical_array,
    canonical_of,
    dump_json_state,
    inner_text,
    load_json_states,
    rows,
)
from .order import in_order

SCHEMA = VALUE_CHANGES


def by_offset_groups(
    table: pa.Table, session: StoreSession, *, latest: bool, n: int | None, ignore_nulls: bool
) -> pa.Table:
    """The latest (or earliest) value, or ``n`` values, of each group in offset order.

    In: ``gkb``, ``vb`` (canonical bytes of the value, null for a null value), ``ts`` and
    the ordering key. A batch's records come after the stored ones, and within the batch
    in the ordering key's order (the source partition's offset order for one key). The
    store holds per group its kept values' JSON texts (at most ``n``, one without ``n``)
    and the group's timestamp. A group of only ignored nulls keeps no value: its result
    is null (an empty array with ``n``). Out: ``gkb, old_vb, new_vb, ts`` for each group
    whose result changed (``new_vb``: canonical bytes of the value or of the array).
    """
    keep = 1 if n is None else n
    ordered = in_order(table)
    gkbs = ordered.column("gkb").to_pylist()
    groups = list(dict.fromkeys(gkbs))
    state = load_json_states(session, groups)
    before = {g: None if s is None else _result(s[0], n) for g, s in state.items()}
    for g, vb, ts in zip(gkbs, ordered.column("vb").to_pylist(), ordered.column("ts").to_pylist(), strict=True):
        values, stamp = state[g] if state[g] is not None else ([], ts)
        if vb is not None or not ignore_nulls:
            element = None if vb is None else inner_text(vb)
            if latest:
                values = [*values, element][-keep:]
            elif len(values) < keep:
                values = [*values, element]
        state[g] = (values, max(stamp, ts))
    out: dict[str, list] = {"gkb": [], "old_vb": [], "new_vb": [], "ts": []}
    for g in groups:
        values, stamp = state[g]
        new = _result(values, n)
        if before[g] != new:
            for name, value in zip(out, (g, before[g], new, stamp), strict=True):
                out[name].append(value)
    session.put(groups, [dump_json_state(*state[g]) for g in groups])
    return rows(SCHEMA, **out)


def _result(values: list[str | None], n: int | None) -> bytes | None:
    """A group's result: its one value (null when it has none or it is null), or with
    ``n`` the array of its values."""
    if n is None:
        return canonical_of(values[-1]) if values else None
    return canonical_array(values)

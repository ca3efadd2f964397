"""COLLECT_LIST and COLLECT_SET per group, with retraction: each group keeps its
collected values (the set with how many rows hold each value) and its member count."""

from __future__ import annotations

import pyarrow as pa

from ..state import StoreSession
from .codec import (
    VALUE_CHANGES,
    canonical_array,
    dump_json_state,
    inner_text,
    load_json_states,
    rows,
)
from .order import ORDER_COLUMNS

SCHEMA = VALUE_CHANGES


def collect_groups(table: pa.Table, session: StoreSession, *, distinct: bool, limit: int | None) -> pa.Table:
    """COLLECT_LIST (or, ``distinct``, COLLECT_SET) per group, in arrival order.

    In: ``gkb``, ``sign`` (+1 add / -1 retract a table row's old value), ``vb``
    (canonical bytes of the value; null for a null value, which is collected too),
    ``ts`` and the ordering key; rows run in the ordering key's order, a change's
    retraction before its addition. A value that would make the result longer than
    ``limit`` is left out (ksqlDB's ``ksql.functions.collect_list.limit``). A retraction
    removes the value's last occurrence from a list (ksqlDB's undo; nothing if the limit
    left it out), and a value from a set once no member holds it. The store holds per
    group ``{"m": members, "e": elements}`` (a set's elements are ``[value, holders]``)
    and the timestamp. Out: ``gkb, old_vb, new_vb`` (canonical bytes of the arrays; null:
    no group) and ``ts``, for each group whose array changed, appeared or disappeared.
    """
    ordered = table.sort_by([(c, "ascending") for c in ORDER_COLUMNS] + [("sign", "ascending")])
    gkbs = ordered.column("gkb").to_pylist()
    groups = list(dict.fromkeys(gkbs))
    state = load_json_states(session, groups)
    before = {g: None if s is None else _array(s[0], distinct) for g, s in state.items()}
    held: dict[bytes, dict] = {}  # per group of a set: value -> its [value, holders] element
    for g, sign, vb, ts in zip(gkbs, *(ordered.column(c).to_pylist() for c in ("sign", "vb", "ts")), strict=True):
        group, stamp = state[g] if state[g] is not None else ({"m": 0, "e": []}, ts)
        group["m"] += sign
        if group["m"] < 0:
            raise ValueError(f"group {g!r} retracted more members than it had")
        element = None if vb is None else inner_text(vb)
        if distinct:
            if g not in held:
                held[g] = {pair[0]: pair for pair in group["e"]}
            _set_change(group["e"], held[g], element, sign, limit)
        else:
            _list_change(group["e"], element, sign, limit)
        state[g] = (group, max(stamp, ts))
    out: dict[str, list] = {"gkb": [], "old_vb": [], "new_vb": [], "ts": []}
    writes = []
    for g in groups:
        group, stamp = state[g]
        alive = group["m"] > 0
        writes.append(dump_json_state(group, stamp) if alive else None)
        new = _array(group, distinct) if alive else None
        if before[g] != new:
            for name, value in zip(out, (g, before[g], new, stamp), strict=True):
                out[name].append(value)
    session.put(groups, writes)
    return rows(SCHEMA, **out)


def _set_change(elements: list, held: dict, element: str | None, sign: int, limit: int | None) -> None:
    """Add or retract one value of a set's ``[value, holders]`` elements, in place."""
    pair = held.get(element)
    if pair is not None:
        pair[1] += sign
        if pair[1] == 0:
            elements.remove(pair)
            del held[element]
    elif sign > 0 and (limit is None or len(elements) < limit):
        pair = held[element] = [element, 1]
        elements.append(pair)


def _list_change(elements: list, element: str | None, sign: int, limit: int | None) -> None:
    """Add or retract (its last occurrence) one value of a list, in place."""
    if sign > 0:
        if limit is None or len(elements) < limit:
            elements.append(element)
    else:
        last = next((i for i in range(len(elements) - 1, -1, -1) if elements[i] == element), None)
        if last is not None:
            del elements[last]


def _array(group: dict, distinct: bool) -> bytes:
    return canonical_array([pair[0] for pair in group["e"]] if distinct else group["e"])

"""COUNT_DISTINCT per group, exact and with retraction: how many members hold each
distinct value, one store entry per (group, value), so a group's state grows with its
distinct values and a record touches one entry."""

from __future__ import annotations

import struct

import pyarrow as pa

from ..state import StoreSession
from .codec import rows

SCHEMA = pa.schema([("gkb", pa.binary()), ("old_count", pa.int64()), ("new_count", pa.int64()), ("ts", pa.int64())])

_GROUP = struct.Struct(">qqq")  # members, distinct values, timestamp
_HOLDERS = struct.Struct(">q")


def _value_key(gkb: bytes, vb: bytes) -> bytes:
    return b"V" + struct.pack(">I", len(gkb)) + gkb + vb


def count_distinct_groups(table: pa.Table, session: StoreSession) -> pa.Table:
    """The number of distinct non-null values per group.

    In: ``gkb``, ``sign`` (+1 add / -1 retract), ``vb`` (canonical bytes of the value;
    null: a member without a value), ``ts``. The store holds ``M|group -> (members,
    distinct, ts)`` and ``V|group|value -> holders``; order does not matter (the counts
    are invertible). Out: ``gkb, old_count, new_count`` (null: no group) and ``ts`` for
    each group whose count changed, appeared or disappeared.
    """
    gkbs = table.column("gkb").to_pylist()
    signs = table.column("sign").to_pylist()
    stamps = table.column("ts").to_pylist()
    deltas: dict[bytes, int] = {}
    members: dict[bytes, int] = {}
    latest: dict[bytes, int] = {}
    value_group: dict[bytes, bytes] = {}
    for g, sign, vb, ts in zip(gkbs, signs, table.column("vb").to_pylist(), stamps, strict=True):
        members[g] = members.get(g, 0) + sign
        latest[g] = max(latest.get(g, ts), ts)
        if vb is not None:
            key = _value_key(g, vb)
            deltas[key] = deltas.get(key, 0) + sign
            value_group[key] = g
    groups = list(members)
    meta = {g: _GROUP.unpack(m) if m else None for g, m in zip(groups, session.get_before([b"M" + g for g in groups]), strict=True)}
    changed = [k for k, d in deltas.items() if d != 0]
    distinct = {g: (meta[g][1] if meta[g] else 0) for g in groups}
    writes = []
    for key, raw in zip(changed, session.get_before(changed), strict=True):
        held = _HOLDERS.unpack(raw)[0] if raw else 0
        now = held + deltas[key]
        if now < 0:
            raise ValueError(f"group {value_group[key]!r} retracted a value more often than it was added")
        distinct[value_group[key]] += (now > 0) - (held > 0)
        writes.append(_HOLDERS.pack(now) if now else None)
    session.put(changed, writes)
    out: dict[str, list] = {"gkb": [], "old_count": [], "new_count": [], "ts": []}
    meta_writes = []
    for g in groups:
        before = meta[g]
        count = (before[0] if before else 0) + members[g]
        if count < 0:
            raise ValueError(f"group {g!r} retracted more members than it had")
        stamp = max(before[2], latest[g]) if before else latest[g]
        meta_writes.append(_GROUP.pack(count, distinct[g], stamp) if count else None)
        old, new = (before[1] if before else None), (distinct[g] if count else None)
        if old != new:
            for name, value in zip(out, (g, old, new, stamp), strict=True):
                out[name].append(value)
    session.put([b"M" + g for g in groups], meta_writes)
    return rows(SCHEMA, **out)

"""count, sum and avg per group, by signed deltas: a group's state is its member count,
non-null count, sum and timestamp, so a retraction subtracts what an addition added."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.compute as pc

from ..state import StoreSession


def schema(floating: bool) -> pa.Schema:
    """The rows of :func:`aggregate_deltas` (sums as doubles when ``floating``)."""
    number = pa.float64() if floating else pa.int64()
    return pa.schema([
        ("gkb", pa.binary()), ("old_members", pa.int64()), ("old_nonnull", pa.int64()), ("old_total", number),
        ("new_members", pa.int64()), ("new_nonnull", pa.int64()), ("new_total", number), ("ts", pa.int64()),
    ])


_AGG = struct.Struct(">qqq")  # members, non-null members, timestamp; then the sum



class NumericAggregate:
    """State of the built-in aggregates of one group: member count, non-null count,
    sum (int or float), timestamp. count/sum/avg follow from it by signed deltas."""

    __slots__ = ("members", "nonnull", "total", "ts")

    def __init__(self, members: int, nonnull: int, total: int | float, ts: int):
        self.members, self.nonnull, self.total, self.ts = members, nonnull, total, ts

    def encode(self, floating: bool) -> bytes:
        tail = struct.pack(">d", self.total) if floating else struct.pack(">q", int(self.total))
        return _AGG.pack(self.members, self.nonnull, self.ts) + tail

    @classmethod
    def decode(cls, data: bytes, floating: bool) -> NumericAggregate:
        members, nonnull, ts = _AGG.unpack_from(data)
        (total,) = struct.unpack_from(">d" if floating else ">q", data, _AGG.size)
        return cls(members, nonnull, total, ts)



def aggregate_deltas(table: pa.Table, session: StoreSession, *, floating: bool) -> pa.Table:
    """Apply signed deltas to per-group numeric aggregates (count, sum, avg).

    In: ``gkb`` (group key bytes), ``sign`` (+1 add / -1 retract), ``v`` (the summed
    column; null counts as a member without a value), ``ts``. Out: one row per group
    whose aggregate changed: ``gkb``, old and new ``members``/``nonnull``/``total``
    (new ``members`` = 0 means the group is gone), ``ts`` = max of the inputs' and the
    old aggregate's timestamps. Order does not matter: these aggregates are invertible.
    """
    if table.num_rows == 0:
        return _numeric_output([], [], [], [], floating)
    # Integer sums stay integers (a null among them must not make them doubles).
    signs = table.column("sign").cast(pa.int64())
    values = table.column("v").cast(pa.float64() if floating else pa.int64())
    deltas = pa.table({
        "gkb": table.column("gkb"),
        "dm": signs,
        "dn": pc.multiply(signs, pc.is_valid(values).cast(pa.int64())),
        "ds": pc.multiply(signs.cast(values.type), pc.fill_null(values, 0)),
        "ts": table.column("ts"),
    })
    grouped = deltas.group_by("gkb", use_threads=False).aggregate(
        [("dm", "sum"), ("dn", "sum"), ("ds", "sum"), ("ts", "max")]
    )
    keys = grouped.column("gkb").to_pylist()
    sums = zip(*(grouped.column(c).to_pylist() for c in ("dm_sum", "dn_sum", "ds_sum", "ts_max")), strict=True)
    stored = session.get_before(keys)
    old_aggs, new_aggs, out_keys, stamps = [], [], [], []
    writes = []
    for key, (dm, dn, ds, ts), before in zip(keys, sums, stored, strict=True):
        old = NumericAggregate.decode(before, floating) if before is not None else None
        members = (old.members if old else 0) + int(dm)
        nonnull = (old.nonnull if old else 0) + int(dn)
        total = (old.total if old else 0) + (float(ds) if floating else int(ds))
        if members < 0 or nonnull < 0:
            raise ValueError(f"aggregate of group {key!r} retracted more members than it had")
        new_ts = max(int(ts), old.ts) if old else int(ts)
        new = NumericAggregate(members, nonnull, total, new_ts) if members else None
        writes.append((key, new.encode(floating) if new else None))
        if _same_numeric(old, new):
            continue
        out_keys.append(key)
        old_aggs.append(old)
        new_aggs.append(new)
        stamps.append(new_ts)
    session.put([k for k, _ in writes], [v for _, v in writes])
    return _numeric_output(out_keys, old_aggs, new_aggs, stamps, floating)



def _same_numeric(a: NumericAggregate | None, b: NumericAggregate | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.members, a.nonnull, a.total) == (b.members, b.nonnull, b.total)



def _numeric_output(keys, old, new, stamps, floating: bool) -> pa.Table:
    number = pa.float64() if floating else pa.int64()

    def field(aggs, name, typ):
        return pa.array([getattr(a, name) if a is not None else None for a in aggs], typ)

    return pa.table(
        {
            "gkb": pa.array(keys, pa.binary()),
            "old_members": field(old, "members", pa.int64()),
            "old_nonnull": field(old, "nonnull", pa.int64()),
            "old_total": field(old, "total", number),
            "new_members": field(new, "members", pa.int64()),
            "new_nonnull": field(new, "nonnull", pa.int64()),
            "new_total": field(new, "total", number),
            "ts": pa.array(stamps, pa.int64()),
        },
        schema=schema(floating),
    )

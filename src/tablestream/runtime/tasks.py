"""What runs inside a Spark task: Arrow tables in, Arrow tables out, one store session.

Every function here takes the whole input of one task for one state partition (the
Arrow batches gathered and concatenated: their arrival order means nothing), orders it
by the ordering key, and calls the store's vectorized primitives once. No Spark here,
so each kernel is unit-tested on plain Arrow tables.

Ordering key columns (carried by every change through every stage): ``o_ts`` (the
record's timestamp made monotone within its source partition), ``o_src`` (source
topic), ``o_part``, ``o_off``, ``o_idx`` (the index among the records one input record
fanned out to). Within one key the last change by this key wins.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .state import StoreSession

ORDER_COLUMNS = ("o_ts", "o_src", "o_part", "o_off", "o_idx")

_TS = struct.Struct(">q")


def last_per_key(table: pa.Table, key: str = "kb") -> pa.Table:
    """The last row of each key by the ordering key (one row per distinct key)."""
    if table.num_rows == 0:
        return table
    ordered = table.sort_by([(key, "ascending")] + [(c, "ascending") for c in ORDER_COLUMNS])
    keys = ordered.column(key)
    following = pc.not_equal(keys.slice(1), keys.slice(0, len(keys) - 1)).to_numpy(zero_copy_only=False)
    last = np.append(following, True)
    return ordered.filter(pa.array(last))


def encode_timestamped(value: bytes | None, ts: int) -> bytes | None:
    return None if value is None else _TS.pack(ts) + value


def decode_timestamped(stored: bytes | None) -> tuple[bytes | None, int | None]:
    if stored is None:
        return None, None
    return stored[8:], _TS.unpack_from(stored)[0]


def upsert(table: pa.Table, session: StoreSession) -> pa.Table:
    """Materialize a table from its changelog records (KTable source semantics).

    In: ``kb`` (key bytes), ``vb`` (value bytes, null = tombstone), ``ts``, the ordering
    key. Out: one row per key whose value changed: ``kb, old, new, ts`` and the winning
    record's ordering key. A tombstone for a missing key and a repeat of the current
    value emit nothing (emit-on-change); the store keeps each key's value and timestamp.
    """
    latest = last_per_key(table)
    keys = latest.column("kb").to_pylist()
    values = latest.column("vb").to_pylist()
    stamps = latest.column("ts").to_pylist()
    old = session.get_before(keys)
    changed, writes = [], []
    for i, (value, ts, stored) in enumerate(zip(values, stamps, old, strict=True)):
        before, _ = decode_timestamped(stored)
        if before == value:
            if value is not None:
                writes.append((keys[i], encode_timestamped(value, ts)))
            continue
        changed.append(i)
        writes.append((keys[i], encode_timestamped(value, ts)))
    if writes:
        session.put([k for k, _ in writes], [v for _, v in writes])
    rows = latest.take(pa.array(changed, pa.int64()))
    old_values = [decode_timestamped(old[i])[0] for i in changed]
    return pa.table(
        {
            "kb": rows.column("kb"),
            "old": pa.array(old_values, pa.binary()),
            "new": rows.column("vb"),
            "ts": rows.column("ts"),
            **{c: rows.column(c) for c in ORDER_COLUMNS},
        }
    )


# ------------------------------------------------------------------ aggregation state
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
    frame = table.select(["gkb", "sign", "v", "ts"]).to_pandas()
    frame["has"] = frame["v"].notna().astype("int64")
    frame["sv"] = frame["sign"] * frame["v"].fillna(0)
    frame["sn"] = frame["sign"] * frame["has"]
    grouped = frame.groupby("gkb", sort=False).agg(dm=("sign", "sum"), dn=("sn", "sum"), ds=("sv", "sum"), ts=("ts", "max"))
    keys = list(grouped.index)
    stored = session.get_before(keys)
    old_aggs, new_aggs, out_keys, stamps = [], [], [], []
    writes = []
    for key, (dm, dn, ds, ts), before in zip(keys, grouped.itertuples(index=False), stored, strict=True):
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
        }
    )


# ---------------------------------------------------------------- min / max by index
def order_preserving(values: pa.Array) -> list[bytes | None]:
    """Bytes whose lexicographic order is the values' order (for a sorted index):
    signed integers with the sign bit flipped, doubles by the IEEE total-order trick,
    strings as UTF-8 (Spark compares strings by their UTF-8 bytes too)."""
    typ = values.type
    out: list[bytes | None] = []
    if pa.types.is_integer(typ):
        for v in values.to_pylist():
            out.append(None if v is None else struct.pack(">Q", (v + (1 << 63)) & ((1 << 64) - 1)))
    elif pa.types.is_floating(typ):
        for v in values.to_pylist():
            if v is None:
                out.append(None)
                continue
            (bits,) = struct.unpack(">Q", struct.pack(">d", v + 0.0))  # -0.0 sorts as 0.0
            bits = bits ^ ((1 << 64) - 1) if bits >> 63 else bits | (1 << 63)
            out.append(struct.pack(">Q", bits))
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
        out = [None if v is None else v.encode() for v in values.to_pylist()]
    elif pa.types.is_binary(typ):
        out = values.to_pylist()
    else:
        raise TypeError(f"min/max over {typ} is not supported")
    return out


def length_prefixed(key: bytes) -> bytes:
    return struct.pack(">I", len(key)) + key


def extremes(table: pa.Table, session: StoreSession, groups: list[bytes]) -> tuple[list, list]:
    """Maintain the sorted index ``group | value | source key`` and return the min and
    max value bytes (as stored) of each group after this batch.

    In: ``gkb``, ``sign``, ``ob`` (order-preserving value bytes, null skipped),
    ``vb`` (the value's own encoding, stored as the index entry), ``skb`` (source key).
    """
    puts: dict[bytes, bytes | None] = {}
    for gkb, sign, ob, vb, skb in zip(
        table.column("gkb").to_pylist(),
        table.column("sign").to_pylist(),
        table.column("ob").to_pylist(),
        table.column("vb").to_pylist(),
        table.column("skb").to_pylist(),
        strict=True,
    ):
        if ob is None:
            continue
        index_key = length_prefixed(gkb) + length_prefixed(ob) + skb
        if sign < 0:
            puts.setdefault(index_key, None)  # a retraction never overrides an add
            if puts[index_key] is None:
                puts[index_key] = None
        else:
            puts[index_key] = vb
    if puts:
        session.put(list(puts), list(puts.values()))
    minimums, maximums = [], []
    for gkb in groups:
        first = last = None
        for _, value in session.prefix_items(length_prefixed(gkb)):
            if first is None:
                first = value
            last = value
        minimums.append(first)
        maximums.append(last)
    return minimums, maximums


# --------------------------------------------------------------------- user folds
Fold = Callable[[object, object, object], object]


def fold_groups(
    rows: list[tuple[bytes, int, object, object, int, bytes | None]],
    stored: dict[bytes, tuple[object, int] | None],
    *,
    initializer: Callable[[], object] | None,
    adder: Callable[..., object],
    subtractor: Callable[..., object] | None,
    group_key: Callable[[bytes], object],
) -> dict[bytes, tuple[object, int] | None]:
    """Kafka Streams' KTableAggregate/KTableReduce over ordered rows, per group.

    ``rows``: ``(gkb, sign, value, source_key, ts, _)`` in processing order (a retraction
    before the addition of the same change). ``stored``: each group's aggregate and
    timestamp before the batch. Returns each touched group's new (aggregate, ts), or
    None where the aggregate became null (the row is deleted).
    """
    result = dict(stored)
    for gkb, sign, value, source_key, ts, _ in rows:
        current = result.get(gkb)
        agg, agg_ts = current if current is not None else (None, None)
        key = group_key(gkb)
        if sign < 0:
            if agg is None or subtractor is None:
                continue
            agg = _call(subtractor, key, value, agg, source_key)
            new_ts = max(ts, agg_ts)
        else:
            if agg is None:
                agg = initializer() if initializer is not None else None
            agg = value if agg is None and initializer is None else _call(adder, key, value, agg, source_key)
            new_ts = max(ts, agg_ts) if agg_ts is not None else ts
        result[gkb] = None if agg is None else (agg, new_ts)
    return result


def _call(fn: Callable[..., object], key, value, agg, source_key):
    arity = getattr(fn, "_ts_arity", None)
    if arity is None:
        import inspect

        try:
            params = inspect.signature(fn).parameters.values()
            arity = sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
        except (TypeError, ValueError):
            arity = 3
    return fn(key, value, agg, source_key) if arity >= 4 else fn(key, value, agg)

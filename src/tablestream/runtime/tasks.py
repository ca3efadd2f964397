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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary import strip_prefix
from .state import StoreSession

ORDER_COLUMNS = ("o_ts", "o_src", "o_part", "o_off", "o_idx")

_TS = struct.Struct(">q")


def last_per_key(table: pa.Table, key: str = "kb") -> pa.Table:
    """The last row of each key by the ordering key (one row per distinct key, in no
    particular order): each row's rank in the ordering key's order, then the largest
    rank per key by a hash aggregation (cheaper than sorting by the key bytes)."""
    if table.num_rows == 0:
        return table
    order = pc.sort_indices(table, sort_keys=[(c, "ascending") for c in ORDER_COLUMNS])
    rank = np.empty(len(order), np.int64)
    rank[order.to_numpy()] = np.arange(len(order))
    winners = (
        pa.table({"k": table.column(key), "r": rank})
        .group_by("k", use_threads=False)
        .aggregate([("r", "max")])
        .column("r_max")
    )
    return table.take(order.take(winners)).sort_by(key)


def encode_timestamped(value: bytes | None, ts: int) -> bytes | None:
    return None if value is None else _TS.pack(ts) + value


def decode_timestamped(stored: bytes | None) -> tuple[bytes | None, int | None]:
    if stored is None:
        return None, None
    return stored[8:], _TS.unpack_from(stored)[0]


def timestamped(values: pa.Array, stamps: pa.Array) -> pa.Array:
    """:func:`encode_timestamped` over Arrow arrays (null values stay null)."""
    stamp_bytes = np.ascontiguousarray(np.asarray(stamps, np.int64).astype(">i8")).view(np.uint8)
    prefixes = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(stamps), [None, pa.py_buffer(stamp_bytes)])
    return pc.binary_join_element_wise(prefixes.cast(pa.binary()), values.cast(pa.binary()), b"")


def same_values(a: pa.Array, b: pa.Array) -> pa.Array:
    """Null-safe equality of two binary arrays (emit on change: what changes nothing)."""
    return pc.or_(pc.and_(pc.is_null(a), pc.is_null(b)), pc.fill_null(pc.equal(a, b), False))


def upsert(table: pa.Table, session: StoreSession) -> pa.Table:
    """Materialize a table from its changelog records (KTable source semantics).

    In: ``kb`` (key bytes), ``vb`` (value bytes, null = tombstone), ``ts``, the ordering
    key. Out: one row per key whose value changed: ``kb, old, new, ts`` and the winning
    record's ordering key. A tombstone for a missing key and a repeat of the current
    value emit nothing (emit-on-change); the store keeps each key's value and timestamp.
    """
    latest = last_per_key(table)
    values = latest.column("vb").combine_chunks()
    stored = session.get_and_put_all(
        latest.column("kb").combine_chunks(), timestamped(values, latest.column("ts").combine_chunks())
    )
    old = strip_prefix(stored, 8)
    changed = pc.invert(same_values(old, values))
    rows = latest.filter(changed)
    return pa.table(
        {
            "kb": rows.column("kb"),
            "old": old.filter(changed),
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


# ------------------------------------------------------------------------ min / max
def order_bytes(values: pa.Array) -> list[bytes | None]:
    """Bytes whose lexicographic order is the values' order and that end unambiguously
    (so a longer key cannot sort inside a shorter one's range): integers big-endian
    with the sign bit flipped, doubles by the IEEE total-order trick, strings and
    binaries with 0x00 escaped as 0x00 0xFF and terminated by 0x00 0x00."""
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
    elif pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ):
        for v in values.to_pylist():
            if v is None:
                out.append(None)
                continue
            raw = v.encode() if isinstance(v, str) else v
            out.append(raw.replace(b"\x00", b"\x00\xff") + b"\x00\x00")
    elif pa.types.is_boolean(typ) or pa.types.is_date(typ) or pa.types.is_timestamp(typ):
        return order_bytes(values.cast(pa.int64()))
    else:
        raise TypeError(f"min/max over {typ} is not supported")
    return out


def _group_prefix(gkb: bytes) -> bytes:
    return b"I" + struct.pack(">I", len(gkb)) + gkb


_MEMBERS = struct.Struct(">qq")  # members, timestamp


def extreme_groups(table: pa.Table, session: StoreSession, *, which: str, stream: bool) -> pa.Table:
    """MIN/MAX per group, with retraction.

    In: ``gkb``, ``sign``, ``v`` (typed), ``vb`` (canonical bytes of v), ``skb`` (the
    member's identity: the source key for a table, the record's position for a stream),
    ``ts``. The store holds, per group, ``M|group -> (members, ts)`` and a sorted index
    ``I|group|order(v)|member -> vb``; a group's extreme is the first or last entry of
    its index. Out: ``gkb, old_vb, new_vb, ts`` for each group whose extreme changed or
    that appeared or disappeared (``new_vb`` null and no members: deleted).
    """
    ob = order_bytes(table.column("v").combine_chunks() if table.num_rows else pa.array([], pa.int64()))
    gkbs = table.column("gkb").to_pylist()
    signs = table.column("sign").to_pylist()
    vbs = table.column("vb").to_pylist()
    skbs = table.column("skb").to_pylist()
    stamps = table.column("ts").to_pylist()
    groups = list(dict.fromkeys(gkbs))
    meta_keys = [b"M" + g for g in groups]
    before_meta = dict(zip(groups, session.get_before(meta_keys), strict=True))
    old_extreme = {g: _extreme(session, g, which, before=True) for g in groups}
    members = {g: (_MEMBERS.unpack(m) if m else (0, None)) for g, m in before_meta.items()}
    index_writes: dict[bytes, bytes | None] = {}
    counts = {g: members[g][0] for g in groups}
    latest = {g: members[g][1] for g in groups}
    for g, sign, o, vb, skb, ts in zip(gkbs, signs, ob, vbs, skbs, stamps, strict=True):
        counts[g] += sign
        latest[g] = ts if latest[g] is None else max(latest[g], ts)
        if o is None:
            continue
        key = _group_prefix(g) + o + skb
        if sign > 0:
            index_writes[key] = vb
        elif index_writes.get(key) is None:
            index_writes[key] = None
    session.put(list(index_writes), list(index_writes.values()))
    out_g, out_old, out_new, out_ts = [], [], [], []
    meta_writes = []
    for g in groups:
        if counts[g] < 0:
            raise ValueError(f"group {g!r} retracted more members than it had")
        alive = counts[g] > 0
        meta_writes.append(_MEMBERS.pack(counts[g], latest[g]) if alive else None)
        new = _extreme(session, g, which, before=False) if alive else None
        old = old_extreme[g]
        existed = members[g][0] > 0
        if existed == alive and old == new:
            continue
        out_g.append(g)
        out_old.append(old)
        out_new.append(new)
        out_ts.append(latest[g])
    session.put(meta_keys, meta_writes)
    if stream:
        _prune_stream_index(session, groups, which)
    return pa.table(
        {
            "gkb": pa.array(out_g, pa.binary()),
            "old_vb": pa.array(out_old, pa.binary()),
            "new_vb": pa.array(out_new, pa.binary()),
            "ts": pa.array(out_ts, pa.int64()),
        }
    )


def _extreme(session: StoreSession, gkb: bytes, which: str, *, before: bool) -> bytes | None:
    found = None
    for _, value in session.prefix_items(_group_prefix(gkb), before=before):
        if which == "min":
            return value
        found = value
    return found


def _prune_stream_index(session: StoreSession, groups: list[bytes], which: str) -> None:
    """A stream's records are never retracted, so only each group's extreme entry is
    kept: the index stays one entry per group."""
    for g in groups:
        entries = [k for k, _ in session.prefix_items(_group_prefix(g))]
        keep = entries[0] if which == "min" else entries[-1] if entries else None
        drop = [k for k in entries if k != keep]
        if drop:
            session.put(drop, [None] * len(drop))


# --------------------------------------------------------------------- user folds
class FoldKernel:
    """Kafka Streams' reduce/aggregate per group, with the user's callables, in order.

    Rows: ``gkb, sign, vj (the value as JSON text), skb, gkj (group key as JSON), ts``
    and the ordering key. For each source change the retraction (sign -1) runs before
    the addition, as KTableAggregate does. A table aggregate is deleted when it becomes
    null (the subtractor returned None). Out: ``gkb, old, new (JSON text), ts``.
    """

    def __init__(self, *, initializer, adder, subtractor, reduce: bool, adder_arity, subtractor_arity):
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor
        self.reduce = reduce
        self.adder_arity = adder_arity
        self.subtractor_arity = subtractor_arity

    def __call__(self, table: pa.Table, session: StoreSession) -> pa.Table:
        import json

        ordered = table.sort_by([(c, "ascending") for c in ORDER_COLUMNS] + [("sign", "ascending")])
        groups = list(dict.fromkeys(ordered.column("gkb").to_pylist()))
        stored = dict(zip(groups, session.get_before(groups), strict=True))
        state: dict[bytes, tuple[object, int] | None] = {}
        for g, raw in stored.items():
            text, ts = decode_timestamped(raw)
            state[g] = None if text is None else (json.loads(text), ts)
        before = dict(state)
        for gkb, sign, vj, skb, gkj, ts in zip(
            *(ordered.column(c).to_pylist() for c in ("gkb", "sign", "vj", "skb", "gkj", "ts")), strict=True
        ):
            value = None if vj is None else json.loads(vj)
            key = None if gkj is None else json.loads(gkj)
            source_key = None if skb is None else json.loads(skb)["v"]
            current = state.get(gkb)
            agg, agg_ts = current if current is not None else (None, None)
            if sign < 0:
                if agg is None:
                    continue
                agg = self._apply(self.subtractor, self.subtractor_arity, key, value, agg, source_key)
                new_ts = max(ts, agg_ts)
            else:
                if agg is None and not self.reduce:
                    agg = self.initializer()
                if agg is None:
                    agg = value
                else:
                    agg = self._apply(self.adder, self.adder_arity, key, value, agg, source_key)
                new_ts = ts if agg_ts is None else max(ts, agg_ts)
            state[gkb] = None if agg is None else (agg, new_ts)
        out_g, out_old, out_new, out_ts, keys, writes = [], [], [], [], [], []
        for g in groups:
            old, new = before.get(g), state.get(g)
            old_text = None if old is None else json.dumps(old[0], separators=(",", ":"), ensure_ascii=False)
            new_text = None if new is None else json.dumps(new[0], separators=(",", ":"), ensure_ascii=False)
            keys.append(g)
            writes.append(None if new is None else encode_timestamped(new_text.encode(), new[1]))
            if old_text == new_text:
                continue
            out_g.append(g)
            out_old.append(old_text)
            out_new.append(new_text)
            out_ts.append(new[1] if new is not None else old[1])
        session.put(keys, writes)
        return pa.table(
            {
                "gkb": pa.array(out_g, pa.binary()),
                "old": pa.array(out_old, pa.string()),
                "new": pa.array(out_new, pa.string()),
                "ts": pa.array(out_ts, pa.int64()),
            }
        )

    def _apply(self, fn, arity, key, value, agg, source_key):
        if self.reduce:
            return fn(agg, value)
        return fn(key, value, agg, source_key) if arity == 4 else fn(key, value, agg)

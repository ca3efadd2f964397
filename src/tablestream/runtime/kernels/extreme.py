"""MIN and MAX per group with retraction: a sorted index of each group's members, so
the extreme is the first or last entry under the group's prefix."""

from __future__ import annotations

import struct

import pyarrow as pa

from ..state import StoreSession

SCHEMA = pa.schema([("gkb", pa.binary()), ("old_vb", pa.binary()), ("new_vb", pa.binary()), ("ts", pa.int64())])


def order_bytes(values: pa.Array) -> list[bytes | None]:
    """Bytes whose lexicographic order is the values' order and that end unambiguously
    (so a longer key cannot sort inside a shorter one's range): integers big-endian
    with the sign bit flipped (decimals as their unscaled 128-bit integers), doubles by
    the IEEE total-order trick, strings and
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
    elif pa.types.is_decimal(typ):
        # One column has one scale: the unscaled integers (below 10^38 < 2^127) order it.
        for v in values.to_pylist():
            if v is None:
                out.append(None)
                continue
            unscaled = int(v.scaleb(typ.scale))
            out.append(((unscaled + (1 << 127)) & ((1 << 128) - 1)).to_bytes(16, "big"))
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
        },
        schema=SCHEMA,
    )



def _extreme(session: StoreSession, gkb: bytes, which: str, *, before: bool) -> bytes | None:
    """The group's first (min) or last (max) live index entry: one seek either way."""
    for _, value in session.prefix_items(_group_prefix(gkb), before=before, reverse=which == "max"):
        return value
    return None



def _prune_stream_index(session: StoreSession, groups: list[bytes], which: str) -> None:
    """A stream's records are never retracted, so only each group's extreme entry is
    kept: the index stays one entry per group."""
    for g in groups:
        entries = [k for k, _ in session.prefix_items(_group_prefix(g))]
        keep = (entries[0] if which == "min" else entries[-1]) if entries else None
        drop = [k for k in entries if k != keep]
        if drop:
            session.put(drop, [None] * len(drop))

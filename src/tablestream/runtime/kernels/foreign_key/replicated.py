"""A foreign-key join whose right table every state partition keeps in full: each
partition holds the whole right table, its own left rows and their subscriptions, so a
batch is one stage (no shuffle by foreign key and back)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...binary import buffers, leading_int64, slices, strip_prefix
from ...state import StoreSession
from ..codec import as_array, decode_canonical, same_values, timestamped
from ..order import last_per_key
from .subscriptions import subscription_keys, subscription_prefix

_NO_FK = 0xFFFFFFFF  # the foreign-key length of a left row without a foreign key


# Sides of the rows entering the stage.
RIGHT_ROW = 0  # a right row of the batch, sent to every partition
LEFT_ROW = 1  # a left row of this partition

_BYTES = pa.schema([
    ("lk", pa.binary()), ("l_old", pa.binary()), ("l_new", pa.binary()),
    ("r_old", pa.binary()), ("r_new", pa.binary()), ("ts", pa.int64()),
])


def schema(
    left_type: pa.DataType | None = None, right_type: pa.DataType | None = None, key_type: pa.DataType | None = None
) -> pa.Schema:
    """The rows of :func:`replicated_foreign_key_join`: the left key and the values as
    canonical bytes, or as the given Arrow types when the kernel decodes them."""
    values = {"lk": key_type, "l_old": left_type, "l_new": left_type, "r_old": right_type, "r_new": right_type}
    return pa.schema([(f.name, values.get(f.name) or f.type) for f in _BYTES])


def left_entries(stamps: pa.Array, foreign_keys: pa.Array, values: pa.Array) -> pa.Array:
    """Left-row entries of a replicated foreign-key join: the row's timestamp (8 bytes),
    its foreign key's length (4 bytes, all ones for none), the foreign key, the value
    (null values stay null)."""
    n = len(values)
    lengths = np.where(
        pc.is_valid(foreign_keys).to_numpy(zero_copy_only=False),
        pc.fill_null(pc.binary_length(foreign_keys), 0).to_numpy(zero_copy_only=False), _NO_FK,
    ).astype(">u4")
    header = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(4), n, [None, pa.py_buffer(np.ascontiguousarray(lengths).view(np.uint8))]
    ).cast(pa.binary())
    keys = pc.fill_null(foreign_keys.cast(pa.binary()), pa.scalar(b"", pa.binary()))
    return timestamped(pc.binary_join_element_wise(header, keys, values.cast(pa.binary()), b""), stamps)



def read_left_entries(entries: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    """``(timestamps, foreign keys, values)`` of :func:`left_entries` (null for a null
    entry; a null foreign key for a row without one)."""
    offsets, data, valid = buffers(entries)
    starts = np.where(valid, offsets[:-1], 0)
    if data.size:
        lengths = np.ascontiguousarray(data[starts[:, None] + 8 + np.arange(4)]).view(">u4")[:, 0].astype(np.int64)
    else:
        lengths = np.zeros(len(valid), np.int64)
    has_fk = valid & (lengths != _NO_FK)
    fk_sizes = np.where(has_fk, lengths, 0)
    foreign_keys = slices(entries.cast(pa.binary()), starts + 12, fk_sizes, has_fk)
    return leading_int64(entries), foreign_keys, strip_prefix(entries, 12 + fk_sizes)



def replicated_foreign_key_join(
    table: pa.Table, left: StoreSession, right: StoreSession, subscriptions: StoreSession,
    left_type: pa.DataType | None = None, right_type: pa.DataType | None = None,
    key_type: pa.DataType | None = None,
) -> pa.Table:
    """One state partition of a foreign-key join whose right table is replicated: every
    partition holds the whole right table (``right``: key -> timestamped value), its own
    left rows (``left``: left key -> timestamp, foreign key, value) and their
    subscriptions (``subscriptions``: foreign key, left key -> the left row's timestamped
    value, so a right change finds its subscribers' values in one walk), so a batch is
    one stage.

    Rows: ``side`` :data:`LEFT_ROW` the left rows of this partition (``kb`` the left key, ``vb`` its new
    value or null, ``fk`` its foreign key), ``side`` :data:`RIGHT_ROW` every right row of the batch
    (``kb`` its key, ``vb`` its new value or null); the last of each key by the ordering
    key wins, and one that leaves its row as it was changes nothing (emit on change).

    Out, one row per left key whose join inputs changed: ``lk`` (the left key's
    canonical bytes), the left and right values before and after the batch, and the
    result's timestamp (a changed left row: the larger of its timestamp and its new right
    row's, or its old right row's when deleted; an unchanged left row reached by a right
    change: the larger of its and the change's). With ``left_type`` / ``right_type`` /
    ``key_type`` (Arrow types) values and keys leave decoded."""
    side = table.column("side")
    lefts = last_per_key(table.filter(pc.equal(side, LEFT_ROW)))
    rights = last_per_key(table.filter(pc.equal(side, RIGHT_ROW)))

    def decoder(value_type):
        # Each distinct value is decoded once, before it is repeated across the rows.
        return (lambda values: values) if value_type is None else (lambda values: decode_canonical(values, value_type))

    decode_left, decode_right = decoder(left_type), decoder(right_type)

    # Left rows: value before from this partition's copy; the changed ones move on.
    l_keys = as_array(lefts.column("kb"))
    l_before = left.get_before_all(l_keys)
    old_ts, old_fk, old_value = read_left_entries(l_before)
    new_value, new_fk = as_array(lefts.column("vb")), as_array(lefts.column("fk"))
    new_fk = pc.if_else(pc.is_valid(new_value), new_fk, pa.nulls(len(new_fk), pa.binary()))
    changed = pc.invert(same_values(old_value, new_value))
    l_keys, l_before, old_ts, old_value, new_value, old_fk, new_fk = (
        a.filter(changed) for a in (l_keys, l_before, old_ts, old_value, new_value, old_fk, new_fk)
    )
    l_ts = as_array(lefts.column("ts")).filter(changed)

    # Right rows: before and after the batch for every foreign key this batch touches.
    r_keys, r_values, r_ts = (as_array(rights.column(c)) for c in ("kb", "vb", "ts"))
    fks = as_array(pc.unique(pa.concat_arrays([r_keys, old_fk.drop_null(), new_fk.drop_null()])))
    stored = right.get_before_all(fks)
    before_value, before_ts = strip_prefix(stored, 8), leading_int64(stored)
    r_at = pc.index_in(r_keys, value_set=fks)
    moved = pc.invert(same_values(before_value.take(r_at), r_values))
    r_keys, r_values, r_ts, r_at = r_keys.filter(moved), r_values.filter(moved), r_ts.filter(moved), r_at.filter(moved)
    after_value, after_ts = before_value, before_ts
    if len(r_keys):
        changed_at = pc.index_in(fks, value_set=r_keys)  # null: no right change
        has_change, at = pc.is_valid(changed_at), pc.fill_null(changed_at, 0)
        after_value = pc.if_else(has_change, r_values.take(at), before_value)
        after_ts = pc.if_else(
            has_change, pc.if_else(pc.is_valid(after_value), r_ts.take(at), pa.nulls(len(fks), pa.int64())), before_ts
        )
    r_before, r_after = decode_right(before_value), decode_right(after_value)

    def right_rows(keys: pa.Array, values: pa.Array, stamps: pa.Array) -> tuple[pa.Array, pa.Array]:
        at = pc.index_in(keys, value_set=fks)  # null for a null foreign key: no right row
        return values.take(at), stamps.take(at)

    r_old, r_old_ts = right_rows(old_fk, r_before, before_ts)
    r_new, r_new_ts = right_rows(new_fk, r_after, after_ts)
    parts = [pa.table({
        "lk": l_keys, "l_old": decode_left(old_value), "l_new": decode_left(new_value), "r_old": r_old, "r_new": r_new,
        "ts": pc.max_element_wise(l_ts, pc.if_else(pc.is_valid(new_value), r_new_ts, r_old_ts)),
    })]

    # Unchanged left rows subscribed to a changed right row meet the change.
    if len(r_keys):
        owner, reached, entries = subscriptions.prefix_scan_before([subscription_prefix(k) for k in r_keys.to_pylist()])
        keep = pc.invert(pc.is_in(reached, value_set=l_keys))
        owner, reached, entries = owner[keep.to_numpy(zero_copy_only=False)], reached.filter(keep), entries.filter(keep)
        if len(reached):
            lv = decode_left(strip_prefix(entries, 8))
            at = r_at.take(owner)
            parts.append(pa.table({
                "lk": reached, "l_old": lv, "l_new": lv, "r_old": r_before.take(at), "r_new": r_after.take(at),
                "ts": pc.max_element_wise(leading_int64(entries), r_ts.take(owner)),
            }))

    # Writes, each store's values before the batch already known: the left rows; their
    # subscriptions (moved, or with the new value), which hold what the left row's entry
    # holds (timestamp and value) under its foreign key; the right rows.
    if len(l_keys):
        left.put_all(l_keys, left_entries(l_ts, new_fk, new_value), l_before)
        same_fk = same_values(old_fk, new_fk)
        gone = pc.and_(pc.invert(same_fk), pc.is_valid(old_fk))
        live = pc.is_valid(new_fk)
        kept_fk = same_fk.filter(live)
        old_sub = timestamped(old_value, pc.fill_null(old_ts, 0))
        keys = pa.concat_arrays([
            subscription_keys(old_fk.filter(gone), l_keys.filter(gone)),
            subscription_keys(new_fk.filter(live), l_keys.filter(live)),
        ])
        if len(keys):
            n_gone = len(keys) - pc.sum(live).as_py()
            values = pa.concat_arrays([pa.nulls(n_gone, pa.binary()), timestamped(new_value.filter(live), l_ts.filter(live))])
            befores = pa.concat_arrays([
                old_sub.filter(gone), pc.if_else(kept_fk, old_sub.filter(live), pa.nulls(len(kept_fk), pa.binary())),
            ])
            order = pc.sort_indices(keys)  # RocksDB takes a write batch in key order faster
            subscriptions.put_all(keys.take(order), values.take(order), befores.take(order))
    if len(r_keys):
        right.put_all(r_keys, timestamped(r_values, r_ts), stored.take(r_at))

    decoded = schema(left_type, right_type)
    out = pa.concat_tables([part.cast(decoded) for part in parts])
    if key_type is not None:
        out = out.set_column(0, "lk", decode_canonical(as_array(out.column("lk")), key_type))
    return out

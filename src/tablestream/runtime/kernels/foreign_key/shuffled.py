"""KIP-213's subscription side in Kafka's layout: one task per foreign-key partition
meets right changes with the subscriptions of left rows (the rows come keyed by foreign
key, and leave keyed by left key for the next shuffle)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...binary import leading_int64, strip_prefix
from ...state import StoreSession
from ..codec import as_array, decode_canonical, same_values, timestamped
from ..order import in_order
from .subscriptions import (
    LEFT_CHANGE,
    OLD_LOOKUP,
    RIGHT_CHANGE,
    ROLE_LEFT,
    ROLE_NEW,
    ROLE_OLD,
    ROLE_RIGHT,
    SUBSCRIBE,
    subscription_keys,
    subscription_prefix,
)

# Every value as canonical bytes; :func:`schema` puts decoded types in their place.
_BYTES = pa.schema([
    ("lkb", pa.binary()), ("role", pa.int8()), ("lv", pa.binary()), ("lts", pa.int64()),
    ("r_old", pa.binary()), ("r_old_ts", pa.int64()), ("r_new", pa.binary()), ("r_new_ts", pa.int64()),
    ("r_change_ts", pa.int64()), ("l_old", pa.binary()), ("l_new", pa.binary()), ("l_ts", pa.int64()),
])
_LEFT_VALUES = ("lv", "l_old", "l_new")
_RIGHT_VALUES = ("r_old", "r_new")


def schema(left_type: pa.DataType | None = None, right_type: pa.DataType | None = None) -> pa.Schema:
    """The rows of :func:`foreign_key_join`: left and right values as canonical bytes, or
    as the given Arrow types when the kernel decodes them."""
    values = {**dict.fromkeys(_LEFT_VALUES, left_type), **dict.fromkeys(_RIGHT_VALUES, right_type)}
    return pa.schema([(f.name, values.get(f.name) or f.type) for f in _BYTES])


def foreign_key_join(
    table: pa.Table, right: StoreSession, subscriptions: StoreSession,
    left_type: pa.DataType | None = None, right_type: pa.DataType | None = None,
) -> pa.Table:
    """One foreign-key partition of a batch (KIP-213's subscription side, keyed by the
    foreign key ``fkb``). Rows: right changes or records (``kind`` 0: ``vb`` the new
    right value; one that leaves the right row as it was changes nothing),
    lookups of a changed left row's old foreign key (``kind`` 1: ``unsubscribe`` when
    the row leaves it) and subscriptions of a left row's new foreign key (``kind`` 2:
    ``vb`` the new left value), and the left changes themselves (``kind`` 3: ``l_old``,
    ``l_new``; placed by their left key), which pass through untouched so that the left
    table's changes are read once and meet their lookups after the next shuffle.

    Out, per left key: ``role`` 0 the right row its old foreign key had before the batch,
    ``role`` 1 the right row its new foreign key has after the batch, ``role`` 2 for
    every unchanged left row subscribed to a changed right row: its left value and the
    right row before and after, and ``role`` 3 the left change. Column work is Arrow
    compute; Python touches each distinct foreign key and steps the store's iterator
    over each subscriber reached. With ``left_type`` / ``right_type`` (Arrow types) the
    left / right values leave decoded instead of as canonical bytes."""
    table = in_order(table).combine_chunks()
    left_changes = table.filter(pc.equal(table.column("kind"), LEFT_CHANGE))
    table = table.filter(pc.not_equal(table.column("kind"), LEFT_CHANGE))
    parts = []
    if left_changes.num_rows:
        n = left_changes.num_rows
        parts.append(pa.table({
            "lkb": left_changes.column("lkb"), "role": pa.array(np.full(n, ROLE_LEFT, np.int8)),
            "l_old": left_changes.column("l_old"), "l_new": left_changes.column("l_new"),
            "l_ts": left_changes.column("ts"),
        }))
    kind = table.column("kind")
    fkb = table.column("fkb")

    # The last change of each right key, and every foreign key's right row before and after.
    changes = table.filter(pc.equal(kind, RIGHT_CHANGE))
    if changes.num_rows:
        last = changes.append_column("_i", pa.array(np.arange(changes.num_rows))).group_by("fkb").aggregate(
            [("_i", "max")]
        )
        changes = changes.take(last.column("_i_max"))
    fks = as_array(pc.unique(fkb))
    stored = pa.array(right.get_before(fks.to_pylist()), pa.binary())
    before_value, before_ts = strip_prefix(stored, 8), leading_int64(stored)
    if changes.num_rows:
        # Emit on change: a record that repeats the stored value, or deletes a missing
        # row, changes nothing.
        prior = before_value.take(pc.index_in(changes.column("fkb"), value_set=fks))
        changes = changes.filter(pc.invert(same_values(prior, as_array(changes.column("vb")))))
    if changes.num_rows:
        changed_at = pc.index_in(fks, value_set=as_array(changes.column("fkb")))  # null: no right change
        change_value = as_array(changes.column("vb")).take(pc.fill_null(changed_at, 0))
        change_ts = as_array(changes.column("ts")).take(pc.fill_null(changed_at, 0))
        has_change = pc.is_valid(changed_at)
        after_value = pc.if_else(has_change, change_value, before_value)
        after_ts = pc.if_else(has_change, pc.if_else(pc.is_valid(change_value), change_ts, pa.nulls(len(fks), pa.int64())), before_ts)
    else:
        after_value, after_ts = before_value, before_ts

    lookups = table.filter(pc.equal(kind, OLD_LOOKUP))
    subscribes = table.filter(pc.equal(kind, SUBSCRIBE))
    for rows, role, values, stamps in ((lookups, ROLE_OLD, before_value, before_ts), (subscribes, ROLE_NEW, after_value, after_ts)):
        if not rows.num_rows:
            continue
        at = pc.index_in(rows.column("fkb"), value_set=fks)
        n = rows.num_rows
        right_value, right_ts = values.take(at), stamps.take(at)
        nulls_b, nulls_t = pa.nulls(n, pa.binary()), pa.nulls(n, pa.int64())
        old = (right_value, right_ts) if role == ROLE_OLD else (nulls_b, nulls_t)
        new = (right_value, right_ts) if role == ROLE_NEW else (nulls_b, nulls_t)
        parts.append(pa.table({
            "lkb": rows.column("lkb"), "role": pa.array(np.full(n, role, np.int8)),
            "lv": nulls_b, "lts": nulls_t, "r_old": old[0], "r_old_ts": old[1],
            "r_new": new[0], "r_new_ts": new[1], "r_change_ts": nulls_t,
        }))

    # Subscriptions: removed when a row leaves its foreign key, written with its new value.
    leaving = lookups.filter(lookups.column("unsubscribe"))
    sub_keys = pa.concat_arrays([
        subscription_keys(as_array(leaving.column("fkb")), as_array(leaving.column("lkb"))),
        subscription_keys(as_array(subscribes.column("fkb")), as_array(subscribes.column("lkb"))),
    ])
    sub_values = pa.concat_arrays([
        pa.nulls(leaving.num_rows, pa.binary()),
        timestamped(as_array(subscribes.column("vb")), as_array(subscribes.column("ts"))),
    ])

    # Every unchanged subscriber of a changed right row meets the change (a subscriber
    # whose left row changed in this batch meets it through that change's own rows).
    if changes.num_rows:
        change_fks = as_array(changes.column("fkb"))
        owner, lkbs, entries = subscriptions.prefix_scan_before([subscription_prefix(f) for f in change_fks.to_pylist()])
        near = [rows.filter(pc.is_in(rows.column("fkb"), value_set=change_fks)) for rows in (lookups, subscribes)]
        touched = pa.concat_arrays([subscription_keys(as_array(r.column("fkb")), as_array(r.column("lkb"))) for r in near])
        untouched = pc.invert(pc.is_in(subscription_keys(change_fks.take(owner), lkbs), value_set=touched))
        owner = owner[untouched.to_numpy(zero_copy_only=False)]
        lkbs, entries = lkbs.filter(untouched), entries.filter(untouched)
        at = pc.index_in(change_fks, value_set=fks).take(owner)
        parts.append(pa.table({
            "lkb": lkbs, "role": pa.array(np.full(len(lkbs), ROLE_RIGHT, np.int8)),
            "lv": strip_prefix(entries, 8), "lts": leading_int64(entries),
            "r_old": before_value.take(at), "r_old_ts": before_ts.take(at),
            "r_new": after_value.take(at), "r_new_ts": after_ts.take(at),
            "r_change_ts": as_array(changes.column("ts")).take(owner),
        }))

    if len(sub_keys):
        # The last write of a key in the batch wins; keys in order (RocksDB reads and
        # writes sorted keys faster).
        last = pa.table({"k": sub_keys, "_i": pa.array(np.arange(len(sub_keys)))}).group_by("k").aggregate([("_i", "max")])
        written = last.column("_i_max").take(pc.sort_indices(last.column("k")))
        subscriptions.get_and_put_all(sub_keys.take(written), sub_values.take(written))
    if changes.num_rows:
        right.put(
            changes.column("fkb").to_pylist(),
            timestamped(as_array(changes.column("vb")), as_array(changes.column("ts"))).to_pylist(),
        )
    out = pa.concat_tables([_fk_columns(p) for p in parts]) if parts else _BYTES.empty_table()
    # Values leave decoded when their type allows (one Arrow parse per column, not a
    # Spark from_json per value).
    for columns, value_type in ((("lv", "l_old", "l_new"), left_type), (("r_old", "r_new"), right_type)):
        if value_type is not None:
            for name in columns:
                at = out.column_names.index(name)
                out = out.set_column(at, name, decode_canonical(as_array(out.column(name)), value_type))
    return out



def _fk_columns(part: pa.Table) -> pa.Table:
    """A part of the output with every output column (the missing ones null)."""
    n = part.num_rows
    return pa.table(
        {f.name: part.column(f.name).cast(f.type) if f.name in part.column_names else pa.nulls(n, f.type)
         for f in _BYTES},
        schema=_BYTES,
    )

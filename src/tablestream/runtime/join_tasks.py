"""Task kernels of the joins: what one task does with one state partition's rows of a
batch and the join's stores (:mod:`tablestream.runtime.stage` runs them).

Each join keeps its own copy of the input rows it looks up (a *mirror*: key -> the row's
timestamp and value, as canonical bytes), written from the input's changes, so a join
sees exactly its input table whatever operators made it. Stored values are
``8-byte big-endian timestamp + value bytes``.

Every kernel reads stores as they were before the batch and applies the batch's changes
in the ordering key's order, so a replayed batch produces the same rows.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .binary import buffers, leading_int64, slices, strip_prefix
from .frames import decode_canonical
from .state import StoreSession
from .tasks import ORDER_COLUMNS, last_per_key, same_values, timestamped

_TS = struct.Struct(">q")
_LEN = struct.Struct(">I")


def pack(ts: int, value: bytes) -> bytes:
    """A mirror entry: the row's timestamp and value."""
    return _TS.pack(ts) + value


def unpack(entry: bytes | None) -> tuple[bytes | None, int | None]:
    """``(value, ts)`` of a mirror entry (``(None, None)`` for no row)."""
    if entry is None:
        return None, None
    return entry[8:], _TS.unpack_from(entry)[0]


def subscription_key(foreign_key: bytes, left_key: bytes) -> bytes:
    """Subscriptions are keyed by the foreign key (length-prefixed, so a prefix scan
    finds exactly one foreign key's subscribers) and then the left key."""
    return subscription_prefix(foreign_key) + left_key


def subscription_prefix(foreign_key: bytes) -> bytes:
    return _LEN.pack(len(foreign_key)) + foreign_key


def subscription_keys(foreign_keys: pa.Array, left_keys: pa.Array) -> pa.Array:
    """:func:`subscription_key` over Arrow arrays."""
    lengths = pc.binary_length(foreign_keys).to_numpy(zero_copy_only=False).astype(">u4")
    prefixes = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(_LEN.size), len(lengths), [None, pa.py_buffer(np.ascontiguousarray(lengths).view(np.uint8))]
    )
    return pc.binary_join_element_wise(prefixes.cast(pa.binary()), foreign_keys, left_keys, b"")


def _in_order(table: pa.Table) -> pa.Table:
    """Rows in the ordering key's order (a task gathers Arrow batches in no promised
    order)."""
    return table.sort_by([(c, "ascending") for c in ORDER_COLUMNS])


def _last_per_key(table: pa.Table, *keys: str) -> dict:
    """The last row (in the ordering key's order) of each key: ``{key: row dict}``."""
    rows: dict = {}
    names = list(keys)
    for row in _in_order(table).to_pylist():
        rows[tuple(row[k] for k in names) if len(names) > 1 else row[names[0]]] = row
    return rows


# --------------------------------------------------------------------- primary key
PK_SCHEMA = (
    "kb binary, l_old binary, l_old_ts bigint, r_old binary, r_old_ts bigint, "
    "l_new binary, l_new_ts bigint, r_new binary, r_new_ts bigint, change_ts bigint"
)


def table_join(table: pa.Table, left: StoreSession, right: StoreSession) -> pa.Table:
    """Both sides' rows before and after the batch for every key that changed on either
    side (``side`` 0 is left, 1 right; ``vb`` null is a deletion)."""
    changes = _last_per_key(table, "kb", "side")
    keys = sorted({kb for kb, _ in changes})
    sides = (left, right)
    before = [dict(zip(keys, s.get_before(keys), strict=True)) for s in sides]
    for side, session in enumerate(sides):
        written = [(kb, row) for (kb, s), row in changes.items() if s == side]
        if written:
            session.put(
                [kb for kb, _ in written],
                [None if row["vb"] is None else pack(row["ts"], row["vb"]) for _, row in written],
            )
    out: dict[str, list] = {name: [] for name in (
        "kb", "l_old", "l_old_ts", "r_old", "r_old_ts", "l_new", "l_new_ts", "r_new", "r_new_ts", "change_ts")}
    for kb in keys:
        out["kb"].append(kb)
        change_ts = None
        for side, prefix in enumerate(("l", "r")):
            old, old_ts = unpack(before[side][kb])
            row = changes.get((kb, side))
            if row is None:
                new, new_ts = old, old_ts
            else:
                new, new_ts = row["vb"], (row["ts"] if row["vb"] is not None else None)
                change_ts = row["ts"] if change_ts is None else max(change_ts, row["ts"])
            out[f"{prefix}_old"].append(old)
            out[f"{prefix}_old_ts"].append(old_ts)
            out[f"{prefix}_new"].append(new)
            out[f"{prefix}_new_ts"].append(new_ts)
        out["change_ts"].append(change_ts)
    return pa.table(out)


# ------------------------------------------------------------------ stream-table
STREAM_TABLE_SCHEMA = (
    "sk binary, sv binary, tv binary, ts bigint, "
    "o_ts bigint, o_src int, o_part int, o_off bigint, o_idx int"
)


def stream_table_join(table: pa.Table, mirror: StoreSession) -> pa.Table:
    """Each stream record (``kind`` 1) with the table value of its key (``kb``) as of
    its ordering key: the mirror before the batch, then the table changes (``kind`` 0)
    of the batch that come before it."""
    rows = _in_order(table).to_pylist()
    keys = sorted({r["kb"] for r in rows})
    current = {kb: unpack(entry)[0] for kb, entry in zip(keys, mirror.get_before(keys), strict=True)}
    last_change: dict[bytes, dict] = {}
    out: dict[str, list] = {name: [] for name in ("sk", "sv", "tv", "ts", *ORDER_COLUMNS)}
    for row in rows:
        kb = row["kb"]
        if row["kind"] == 0:
            current[kb] = row["vb"]
            last_change[kb] = row
            continue
        out["sk"].append(row["sk"])
        out["sv"].append(row["sv"])
        out["tv"].append(current[kb])
        out["ts"].append(row["ts"])
        for c in ORDER_COLUMNS:
            out[c].append(row[c])
    if last_change:
        mirror.put(
            list(last_change),
            [None if r["vb"] is None else pack(r["ts"], r["vb"]) for r in last_change.values()],
        )
    return pa.table(out)


# ------------------------------------------------------------------ foreign key
RIGHT_CHANGE, OLD_LOOKUP, SUBSCRIBE, LEFT_CHANGE = 0, 1, 2, 3
ROLE_OLD, ROLE_NEW, ROLE_RIGHT, ROLE_LEFT = 0, 1, 2, 3


def fk_schema(left_type=None, right_type=None):
    """The Spark schema of :func:`foreign_key_join`'s rows: left and right values as
    canonical bytes, or as the given Spark types when the kernel decodes them."""
    from pyspark.sql.types import BinaryType, ByteType, LongType, StructField, StructType

    spark_types = {pa.binary(): BinaryType(), pa.int8(): ByteType(), pa.int64(): LongType()}
    values = {"lv": left_type, "l_old": left_type, "l_new": left_type, "r_old": right_type, "r_new": right_type}
    return StructType([
        StructField(name, values.get(name) or spark_types[t], True) for name, t in _FK_ARROW
    ])


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
    table = _in_order(table).combine_chunks()
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
    fks = _array(pc.unique(fkb))
    stored = pa.array(right.get_before(fks.to_pylist()), pa.binary())
    before_value, before_ts = strip_prefix(stored, 8), leading_int64(stored)
    if changes.num_rows:
        # Emit on change: a record that repeats the stored value, or deletes a missing
        # row, changes nothing.
        prior = before_value.take(pc.index_in(changes.column("fkb"), value_set=fks))
        changes = changes.filter(pc.invert(same_values(prior, _array(changes.column("vb")))))
    if changes.num_rows:
        changed_at = pc.index_in(fks, value_set=_array(changes.column("fkb")))  # null: no right change
        change_value = _array(changes.column("vb")).take(pc.fill_null(changed_at, 0))
        change_ts = _array(changes.column("ts")).take(pc.fill_null(changed_at, 0))
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
        subscription_keys(_array(leaving.column("fkb")), _array(leaving.column("lkb"))),
        subscription_keys(_array(subscribes.column("fkb")), _array(subscribes.column("lkb"))),
    ])
    sub_values = pa.concat_arrays([
        pa.nulls(leaving.num_rows, pa.binary()),
        timestamped(_array(subscribes.column("vb")), _array(subscribes.column("ts"))),
    ])

    # Every unchanged subscriber of a changed right row meets the change (a subscriber
    # whose left row changed in this batch meets it through that change's own rows).
    if changes.num_rows:
        change_fks = _array(changes.column("fkb"))
        owner, lkbs, entries = subscriptions.prefix_scan_before([subscription_prefix(f) for f in change_fks.to_pylist()])
        near = [rows.filter(pc.is_in(rows.column("fkb"), value_set=change_fks)) for rows in (lookups, subscribes)]
        touched = pa.concat_arrays([subscription_keys(_array(r.column("fkb")), _array(r.column("lkb"))) for r in near])
        untouched = pc.invert(pc.is_in(subscription_keys(change_fks.take(owner), lkbs), value_set=touched))
        owner = owner[untouched.to_numpy(zero_copy_only=False)]
        lkbs, entries = lkbs.filter(untouched), entries.filter(untouched)
        at = pc.index_in(change_fks, value_set=fks).take(owner)
        parts.append(pa.table({
            "lkb": lkbs, "role": pa.array(np.full(len(lkbs), ROLE_RIGHT, np.int8)),
            "lv": strip_prefix(entries, 8), "lts": leading_int64(entries),
            "r_old": before_value.take(at), "r_old_ts": before_ts.take(at),
            "r_new": after_value.take(at), "r_new_ts": after_ts.take(at),
            "r_change_ts": _array(changes.column("ts")).take(owner),
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
            timestamped(_array(changes.column("vb")), _array(changes.column("ts"))).to_pylist(),
        )
    out = pa.concat_tables([_fk_columns(p) for p in parts]) if parts else pa.table(
        {name: pa.array([], t) for name, t in _FK_ARROW}
    )
    # Values leave decoded when their type allows (one Arrow parse per column, not a
    # Spark from_json per value).
    for columns, value_type in ((("lv", "l_old", "l_new"), left_type), (("r_old", "r_new"), right_type)):
        if value_type is not None:
            for name in columns:
                at = out.column_names.index(name)
                out = out.set_column(at, name, decode_canonical(_array(out.column(name)), value_type))
    return out


def _fk_columns(part: pa.Table) -> pa.Table:
    """A part of the output with every output column (the missing ones null)."""
    n = part.num_rows
    return pa.table(
        {name: part.column(name).cast(t) if name in part.column_names else pa.nulls(n, t) for name, t in _FK_ARROW},
        schema=pa.schema(_FK_ARROW),
    )


def _array(values) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


_FK_ARROW = [
    ("lkb", pa.binary()), ("role", pa.int8()), ("lv", pa.binary()), ("lts", pa.int64()),
    ("r_old", pa.binary()), ("r_old_ts", pa.int64()), ("r_new", pa.binary()), ("r_new_ts", pa.int64()),
    ("r_change_ts", pa.int64()), ("l_old", pa.binary()), ("l_new", pa.binary()), ("l_ts", pa.int64()),
]


# ------------------------------------------------- foreign key, right table replicated
_NO_FK = 0xFFFFFFFF  # the foreign-key length of a left row without a foreign key

REPLICATED_FK_ARROW = [
    ("lk", pa.binary()), ("l_old", pa.binary()), ("l_new", pa.binary()),
    ("r_old", pa.binary()), ("r_new", pa.binary()), ("ts", pa.int64()),
]


def replicated_fk_schema(left_type=None, right_type=None, key_type=None):
    """The Spark schema of :func:`replicated_foreign_key_join`'s rows (the left key and
    the values as canonical bytes, or as the given Spark types when the kernel decodes
    them)."""
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    values = {"lk": key_type, "l_old": left_type, "l_new": left_type, "r_old": right_type, "r_new": right_type}
    spark_types = {pa.binary(): BinaryType(), pa.int64(): LongType()}
    return StructType([StructField(n, values.get(n) or spark_types[t], True) for n, t in REPLICATED_FK_ARROW])


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

    Rows: ``side`` 1 the left rows of this partition (``kb`` the left key, ``vb`` its new
    value or null, ``fk`` its foreign key), ``side`` 0 every right row of the batch
    (``kb`` its key, ``vb`` its new value or null); the last of each key by the ordering
    key wins, and one that leaves its row as it was changes nothing (emit on change).

    Out, one row per left key whose join inputs changed: ``lk`` (the left key's
    canonical bytes), the left and right values before and after the batch, and the
    result's timestamp (a changed left row: the larger of its timestamp and its new right
    row's, or its old right row's when deleted; an unchanged left row reached by a right
    change: the larger of its and the change's). With ``left_type`` / ``right_type`` /
    ``key_type`` (Arrow types) values and keys leave decoded."""
    side = table.column("side")
    lefts = last_per_key(table.filter(pc.equal(side, 1)))
    rights = last_per_key(table.filter(pc.equal(side, 0)))

    def decoder(value_type):
        # Each distinct value is decoded once, before it is repeated across the rows.
        return (lambda values: values) if value_type is None else (lambda values: decode_canonical(values, value_type))

    decode_left, decode_right = decoder(left_type), decoder(right_type)

    # Left rows: value before from this partition's copy; the changed ones move on.
    l_keys = _array(lefts.column("kb"))
    l_before = left.get_before_all(l_keys)
    old_ts, old_fk, old_value = read_left_entries(l_before)
    new_value, new_fk = _array(lefts.column("vb")), _array(lefts.column("fk"))
    new_fk = pc.if_else(pc.is_valid(new_value), new_fk, pa.nulls(len(new_fk), pa.binary()))
    changed = pc.invert(same_values(old_value, new_value))
    l_keys, l_before, old_ts, old_value, new_value, old_fk, new_fk = (
        a.filter(changed) for a in (l_keys, l_before, old_ts, old_value, new_value, old_fk, new_fk)
    )
    l_ts = _array(lefts.column("ts")).filter(changed)

    # Right rows: before and after the batch for every foreign key this batch touches.
    r_keys, r_values, r_ts = (_array(rights.column(c)) for c in ("kb", "vb", "ts"))
    fks = _array(pc.unique(pa.concat_arrays([r_keys, old_fk.drop_null(), new_fk.drop_null()])))
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

    values = {"l_old": left_type, "l_new": left_type, "r_old": right_type, "r_new": right_type}
    out = pa.concat_tables([
        part.cast(pa.schema([(name, values.get(name) or t) for name, t in REPLICATED_FK_ARROW])) for part in parts
    ])
    if key_type is not None:
        out = out.set_column(0, "lk", decode_canonical(_array(out.column("lk")), key_type))
    return out


__all__ = [
    "fk_schema",
    "left_entries",
    "read_left_entries",
    "replicated_fk_schema",
    "replicated_foreign_key_join",
    "PK_SCHEMA",
    "STREAM_TABLE_SCHEMA",
    "foreign_key_join",
    "pack",
    "stream_table_join",
    "subscription_key",
    "table_join",
    "unpack",
]

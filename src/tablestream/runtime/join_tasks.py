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

import pyarrow as pa

from .state import StoreSession
from .tasks import ORDER_COLUMNS

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
FK_SCHEMA = (
    "lkb binary, role tinyint, lv binary, lts bigint, "
    "r_old binary, r_old_ts bigint, r_new binary, r_new_ts bigint, r_change_ts bigint"
)
RIGHT_CHANGE, OLD_LOOKUP, SUBSCRIBE = 0, 1, 2
ROLE_OLD, ROLE_NEW, ROLE_RIGHT = 0, 1, 2


def foreign_key_join(table: pa.Table, right: StoreSession, subscriptions: StoreSession) -> pa.Table:
    """One foreign-key partition of a batch (KIP-213's subscription side, keyed by the
    foreign key ``fkb``). Rows: right changes (``kind`` 0: ``vb`` the new right value),
    lookups of a changed left row's old foreign key (``kind`` 1: ``unsubscribe`` when
    the row leaves it) and subscriptions of a left row's new foreign key (``kind`` 2:
    ``vb`` the new left value).

    Out, per left key: ``role`` 0 the right row its old foreign key had before the batch,
    ``role`` 1 the right row its new foreign key has after the batch, and ``role`` 2 for
    every unchanged left row subscribed to a changed right row: its left value and the
    right row before and after."""
    rows = _in_order(table).to_pylist()
    right_changes = {r["fkb"]: r for r in rows if r["kind"] == RIGHT_CHANGE}
    fks = sorted({r["fkb"] for r in rows})
    right_before = {fk: unpack(e) for fk, e in zip(fks, right.get_before(fks), strict=True)}

    def right_after(fk: bytes) -> tuple[bytes | None, int | None]:
        change = right_changes.get(fk)
        if change is None:
            return right_before[fk]
        return change["vb"], (change["ts"] if change["vb"] is not None else None)

    out: dict[str, list] = {name: [] for name in (
        "lkb", "role", "lv", "lts", "r_old", "r_old_ts", "r_new", "r_new_ts", "r_change_ts")}

    def emit(lkb, role, lv=None, lts=None, old=(None, None), new=(None, None), change_ts=None):
        out["lkb"].append(lkb)
        out["role"].append(role)
        out["lv"].append(lv)
        out["lts"].append(lts)
        out["r_old"].append(old[0])
        out["r_old_ts"].append(old[1])
        out["r_new"].append(new[0])
        out["r_new_ts"].append(new[1])
        out["r_change_ts"].append(change_ts)

    changed_left: dict[bytes, set[bytes]] = {}
    sub_keys: list[bytes] = []
    sub_values: list[bytes | None] = []
    for row in rows:
        fk = row["fkb"]
        if row["kind"] == OLD_LOOKUP:
            changed_left.setdefault(fk, set()).add(row["lkb"])
            emit(row["lkb"], ROLE_OLD, old=right_before[fk])
            if row["unsubscribe"]:
                sub_keys.append(subscription_key(fk, row["lkb"]))
                sub_values.append(None)
        elif row["kind"] == SUBSCRIBE:
            changed_left.setdefault(fk, set()).add(row["lkb"])
            emit(row["lkb"], ROLE_NEW, new=right_after(fk))
            sub_keys.append(subscription_key(fk, row["lkb"]))
            sub_values.append(pack(row["ts"], row["vb"]))
    for fk, change in right_changes.items():
        prefix = subscription_prefix(fk)
        skip = changed_left.get(fk, ())
        for key, entry in subscriptions.prefix_items(prefix, before=True):
            lkb = key[len(prefix):]
            if lkb in skip:
                continue
            lv, lts = unpack(entry)
            emit(lkb, ROLE_RIGHT, lv, lts, right_before[fk], right_after(fk), change["ts"])
    if sub_keys:
        # One write per subscription key: the last of the batch wins.
        last = dict(zip(sub_keys, sub_values, strict=True))
        subscriptions.put(list(last), list(last.values()))
    if right_changes:
        right.put(
            list(right_changes),
            [None if r["vb"] is None else pack(r["ts"], r["vb"]) for r in right_changes.values()],
        )
    return pa.table(out)


__all__ = [
    "FK_SCHEMA",
    "PK_SCHEMA",
    "STREAM_TABLE_SCHEMA",
    "foreign_key_join",
    "pack",
    "stream_table_join",
    "subscription_key",
    "table_join",
    "unpack",
]


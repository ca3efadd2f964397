"""Primary-key table-table join: both sides' rows before and after the batch.

Each join keeps its own copy of the input rows it looks up (a *mirror*: key -> the
row's timestamped value, canonical bytes), written from the input's changes, so a join
sees exactly its input table whatever operators made it. Stores are read as they were
before the batch and the batch's changes applied in the ordering key's order, so a
replayed batch produces the same rows.
"""

from __future__ import annotations

import pyarrow as pa

from ..state import StoreSession
from .codec import decode_timestamped, encode_timestamped
from .order import last_rows

SCHEMA = pa.schema([
    ("kb", pa.binary()), ("l_old", pa.binary()), ("l_old_ts", pa.int64()), ("r_old", pa.binary()),
    ("r_old_ts", pa.int64()), ("l_new", pa.binary()), ("l_new_ts", pa.int64()), ("r_new", pa.binary()),
    ("r_new_ts", pa.int64()), ("change_ts", pa.int64()),
])


def table_join(table: pa.Table, left: StoreSession, right: StoreSession) -> pa.Table:
    """Both sides' rows before and after the batch for every key that changed on either
    side (``side`` 0 is left, 1 right; ``vb`` null is a deletion)."""
    changes = last_rows(table, "kb", "side")
    keys = sorted({kb for kb, _ in changes})
    sides = (left, right)
    before = [dict(zip(keys, s.get_before(keys), strict=True)) for s in sides]
    for side, session in enumerate(sides):
        written = [(kb, row) for (kb, s), row in changes.items() if s == side]
        if written:
            session.put(
                [kb for kb, _ in written],
                [None if row["vb"] is None else encode_timestamped(row["vb"], row["ts"]) for _, row in written],
            )
    out: dict[str, list] = {name: [] for name in (
        "kb", "l_old", "l_old_ts", "r_old", "r_old_ts", "l_new", "l_new_ts", "r_new", "r_new_ts", "change_ts")}
    for kb in keys:
        out["kb"].append(kb)
        change_ts = None
        for side, prefix in enumerate(("l", "r")):
            old, old_ts = decode_timestamped(before[side][kb])
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
    return pa.table(out, schema=SCHEMA)

"""Primary-key table-table join: both sides' rows before and after the batch.

Each join keeps its own copy of the input rows it looks up (a *mirror*: key -> the
row's timestamped value, canonical bytes), written from the input's changes, so a join
sees exactly its input table whatever operators made it. Stores are read as they were
before the batch and the batch's changes applied in the ordering key's order, so a
replayed batch produces the same rows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..binary import leading_int64, strip_prefix
from ..state import StoreSession
from .codec import as_array, timestamped
from .order import last_per_key

SCHEMA = pa.schema([
    ("kb", pa.binary()), ("l_old", pa.binary()), ("l_old_ts", pa.int64()), ("r_old", pa.binary()),
    ("r_old_ts", pa.int64()), ("l_new", pa.binary()), ("l_new_ts", pa.int64()), ("r_new", pa.binary()),
    ("r_new_ts", pa.int64()), ("change_ts", pa.int64()),
])


def table_join(table: pa.Table, left: StoreSession, right: StoreSession) -> pa.Table:
    """Both sides' rows before and after the batch for every key that changed on either
    side (``side`` 0 is left, 1 right; ``vb`` null is a deletion), in key order: each
    side's last change per key by the ordering key, one multi-get of each side's store,
    array operations throughout."""
    side = table.column("side")
    lasts = [last_per_key(table.filter(pc.equal(side, s))) for s in (0, 1)]
    changed = [as_array(t.column("kb")).cast(pa.binary()) for t in lasts]
    keys = pc.unique(pa.concat_arrays(changed))
    keys = keys.take(pc.sort_indices(keys))
    out = {"kb": keys}
    change_ts = pa.nulls(len(keys), pa.int64())
    for session, last, changed_keys, prefix in zip((left, right), lasts, changed, ("l", "r"), strict=True):
        stored = session.get_before_all(keys)
        old, old_ts = strip_prefix(stored, 8), leading_int64(stored)
        values, stamps = as_array(last.column("vb")).cast(pa.binary()), as_array(last.column("ts"))
        at = pc.index_in(keys, value_set=changed_keys)  # null: no change on this side
        has, row = pc.is_valid(at), pc.fill_null(at, 0)
        new = pc.if_else(has, values.take(row), old) if len(values) else old
        if len(values):
            new_ts = pc.if_else(has, pc.if_else(pc.is_valid(new), stamps.take(row), None), old_ts)
            side_ts = pc.if_else(has, stamps.take(row), None)
            change_ts = pc.max_element_wise(change_ts, side_ts, skip_nulls=True)
            session.put_all(changed_keys, timestamped(values, stamps), stored.take(pc.index_in(changed_keys, value_set=keys)))
        else:
            new_ts = old_ts
        out |= {f"{prefix}_old": old, f"{prefix}_old_ts": old_ts, f"{prefix}_new": new, f"{prefix}_new_ts": new_ts}
    out["change_ts"] = change_ts
    return pa.table({f.name: out[f.name] for f in SCHEMA}, schema=SCHEMA)

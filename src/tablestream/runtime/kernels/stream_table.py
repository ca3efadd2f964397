"""Stream-table join: each stream record meets the table as of its ordering key.

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
from .order import ORDER_COLUMNS, ORDER_FIELDS, in_order

# Kinds of the rows entering the stage.
TABLE_CHANGE = 0  # a change of the table (``vb`` its new value)
STREAM_RECORD = 1  # a stream record looking up its key

SCHEMA = pa.schema([("sk", pa.binary()), ("sv", pa.binary()), ("tv", pa.binary()), ("ts", pa.int64()), *ORDER_FIELDS])


def stream_table_join(table: pa.Table, mirror: StoreSession) -> pa.Table:
    """Each stream record (:data:`STREAM_RECORD`) with the table value of its key (``kb``) as of
    its ordering key: the mirror before the batch, then the table changes (:data:`TABLE_CHANGE`)
    of the batch that come before it."""
    rows = in_order(table).to_pylist()
    keys = sorted({r["kb"] for r in rows})
    current = {kb: decode_timestamped(entry)[0] for kb, entry in zip(keys, mirror.get_before(keys), strict=True)}
    last_change: dict[bytes, dict] = {}
    out: dict[str, list] = {name: [] for name in ("sk", "sv", "tv", "ts", *ORDER_COLUMNS)}
    for row in rows:
        kb = row["kb"]
        if row["kind"] == TABLE_CHANGE:
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
            [None if r["vb"] is None else encode_timestamped(r["vb"], r["ts"]) for r in last_change.values()],
        )
    return pa.table(out, schema=SCHEMA)

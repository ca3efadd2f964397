"""A table materialized from its changelog records (KTable source semantics)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..binary import strip_prefix
from ..state import StoreSession
from .codec import same_values, timestamped
from .order import ORDER_COLUMNS, ORDER_FIELDS, last_per_key

SCHEMA = pa.schema([("kb", pa.binary()), ("old", pa.binary()), ("new", pa.binary()), ("ts", pa.int64()), *ORDER_FIELDS])


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
        },
        schema=SCHEMA,
    )

"""Stream-table join: each stream record meets the table as of its ordering key.

Each join keeps its own copy of the input rows it looks up (a *mirror*: key -> the
row's timestamped value, canonical bytes), written from the input's changes, so a join
sees exactly its input table whatever operators made it. Stores are read as they were
before the batch and the batch's changes applied in the ordering key's order, so a
replayed batch produces the same rows.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary import strip_prefix
from ..state import StoreSession
from .codec import as_array, decode_canonical, timestamped
from .order import ORDER_FIELDS, in_order

# Kinds of the rows entering the stage.
TABLE_CHANGE = 0  # a change of the table (``vb`` its new value)
STREAM_RECORD = 1  # a stream record looking up its key

SCHEMA = pa.schema([("sk", pa.binary()), ("sv", pa.binary()), ("tv", pa.binary()), ("ts", pa.int64()), *ORDER_FIELDS])


def stream_table_join(table: pa.Table, mirror: StoreSession, table_type: pa.DataType | None = None) -> pa.Table:
    """Each stream record (:data:`STREAM_RECORD`) with the table value of its key (``kb``) as of
    its ordering key: the mirror before the batch, then the table changes (:data:`TABLE_CHANGE`)
    of the batch that come before it. The stream record's key and value (``sk``, ``sv``)
    pass through as they came, of any type; the table value ``tv`` leaves as canonical
    bytes, or decoded to ``table_type`` (an Arrow type). Out in the ordering key's order.

    Array operations only: the rows sorted by key (stably, so each key's rows stay in
    the ordering key's order), each row finds the last table change of its key at or
    before it."""
    rows = in_order(table)
    n = rows.num_rows
    if n == 0:
        return _output(rows, pa.array([], table_type or pa.binary()))
    keys = as_array(rows.column("kb")).cast(pa.binary())
    changes = rows.column("kind").to_numpy(zero_copy_only=False) == TABLE_CHANGE
    by_key = pc.sort_indices(keys).to_numpy()  # a stable sort
    sorted_keys = keys.take(by_key)
    starts = np.r_[True, pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, n - 1)).to_numpy(zero_copy_only=False)]
    position = np.arange(n)
    group_start = np.maximum.accumulate(np.where(starts, position, 0))
    group = np.cumsum(starts) - 1
    last_change = np.maximum.accumulate(np.where(changes[by_key], position, -1))
    has_change = last_change >= group_start
    distinct = sorted_keys.filter(pa.array(starts))
    stored = mirror.get_before_all(distinct)
    values = as_array(rows.column("vb")).cast(pa.binary())

    # The stream records, each with its key's table value: a change of the batch before it, else the mirror's.
    looking = np.flatnonzero(~changes[by_key])
    met_change = has_change[looking]
    tv = pc.if_else(
        pa.array(met_change),
        values.take(pa.array(by_key[np.where(met_change, last_change[looking], 0)])),
        strip_prefix(stored, 8).take(pa.array(group[looking])),
    )
    in_order_of_rows = np.argsort(by_key[looking], kind="stable")
    records = rows.take(pa.array(by_key[looking][in_order_of_rows]))
    tv = tv.take(pa.array(in_order_of_rows))
    if table_type is not None:
        tv = decode_canonical(tv, table_type)

    # Each key's last change is the mirror's for the next batches (a delete too).
    ends = np.flatnonzero(np.r_[starts[1:], True])  # each key's last row
    changed = has_change[ends]
    if changed.any():
        last = pa.array(by_key[last_change[ends[changed]]])
        kept = pa.array(changed)
        stamps = as_array(rows.column("ts")).take(last)
        mirror.put_all(distinct.filter(kept), timestamped(values.take(last), stamps), stored.filter(kept))
    return _output(records, tv)


def _output(records: pa.Table, tv: pa.Array) -> pa.Table:
    out = records.select(["sk", "sv"]).append_column("tv", tv)
    for name in ("ts", *(f[0] for f in ORDER_FIELDS)):
        out = out.append_column(name, records.column(name))
    return out


def schema(key_type: pa.DataType | None = None, value_type: pa.DataType | None = None,
           table_type: pa.DataType | None = None) -> pa.Schema:
    """The rows of :func:`stream_table_join`: the stream key and value and the table
    value as canonical bytes, or of the given Arrow types."""
    types = {"sk": key_type, "sv": value_type, "tv": table_type}
    return pa.schema([(f.name, types.get(f.name) or f.type) for f in SCHEMA])

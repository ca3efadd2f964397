"""count, sum and avg per group, by signed deltas: a group's state is its member count,
its timestamp and, per aggregated column, the non-null count and the total, so a
retraction subtracts what an addition added, and any number of these aggregates of one
grouping share one state (one store, one stage).

A state is fixed-width: big-endian 64-bit members, the non-null count of each column,
the timestamp, then the total of each column (an integer or a double). With one column
this is the state the single count, sum and avg have always kept.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary import buffers
from ..state import StoreSession

__all__ = ["aggregate_deltas", "schema", "state_dtype"]


def schema(floating: Sequence[bool]) -> pa.Schema:
    """The rows of :func:`aggregate_deltas` for columns whose totals are doubles where
    ``floating`` (else 64-bit integers): ``gkb``, ``old_members``, ``new_members``,
    ``ts``, and per column ``i`` ``old_nonnull<i>``, ``old_total<i>``,
    ``new_nonnull<i>``, ``new_total<i>``."""
    fields = [("gkb", pa.binary()), ("old_members", pa.int64()), ("new_members", pa.int64()), ("ts", pa.int64())]
    for i, fl in enumerate(floating):
        number = pa.float64() if fl else pa.int64()
        fields += [
            (f"old_nonnull{i}", pa.int64()), (f"old_total{i}", number),
            (f"new_nonnull{i}", pa.int64()), (f"new_total{i}", number),
        ]
    return pa.schema(fields)


def state_dtype(floating: Sequence[bool]) -> np.dtype:
    """The numpy record of one stored state (big-endian, packed)."""
    fields = [("members", ">i8")]
    fields += [(f"nonnull{i}", ">i8") for i in range(len(floating))]
    fields.append(("ts", ">i8"))
    fields += [(f"total{i}", ">f8" if fl else ">i8") for i, fl in enumerate(floating)]
    return np.dtype(fields)


def aggregate_deltas(table: pa.Table, session: StoreSession, *, floating: Sequence[bool]) -> pa.Table:
    """Apply signed deltas to per-group numeric states (count, sum, avg of any number of
    columns at once).

    In: ``gkb`` (group key bytes), ``sign`` (+1 add / -1 retract), ``v<i>`` per column
    (a null counts as a member without a value), ``ts``. Out (:func:`schema`): one row
    per group whose state changed (members, a non-null count or a total): old and new
    members, non-null counts and totals (new ones null when the group is gone, old
    ones null when it is new), ``ts`` = max of the inputs' and the stored timestamps.
    Order does not matter: these aggregates are invertible. Every group the batch
    touched is written (its timestamp moves even when its results do not).
    """
    out_schema = schema(floating)
    if table.num_rows == 0:
        return out_schema.empty_table()
    k = len(floating)
    signs = table.column("sign").cast(pa.int64())
    deltas = {"gkb": table.column("gkb"), "dm": signs, "ts": table.column("ts")}
    for i, fl in enumerate(floating):
        # Integer sums stay integers (a null among them must not make them doubles).
        values = table.column(f"v{i}").cast(pa.float64() if fl else pa.int64())
        deltas[f"dn{i}"] = pc.multiply(signs, pc.is_valid(values).cast(pa.int64()))
        deltas[f"ds{i}"] = pc.multiply(signs.cast(values.type), pc.fill_null(values, 0))
    sums = [("dm", "sum"), ("ts", "max")] + [(f"{p}{i}", "sum") for i in range(k) for p in ("dn", "ds")]
    grouped = pa.table(deltas).group_by("gkb", use_threads=False).aggregate(sums)
    keys = grouped.column("gkb").combine_chunks()
    before = session.get_before_all(keys)
    dtype = state_dtype(floating)
    old, had = _decode(before, dtype)

    new = np.zeros(len(keys), dtype)
    new["members"] = old["members"] + grouped.column("dm_sum").to_numpy()
    batch_ts = grouped.column("ts_max").to_numpy()
    new["ts"] = np.where(had, np.maximum(batch_ts, old["ts"]), batch_ts)
    negative = new["members"] < 0
    for i in range(k):
        new[f"nonnull{i}"] = old[f"nonnull{i}"] + grouped.column(f"dn{i}_sum").to_numpy()
        new[f"total{i}"] = old[f"total{i}"] + grouped.column(f"ds{i}_sum").to_numpy()
        negative |= new[f"nonnull{i}"] < 0
    if negative.any():
        key = keys[int(np.flatnonzero(negative)[0])].as_py()
        raise ValueError(f"aggregate of group {key!r} retracted more members than it had")
    alive = new["members"] > 0
    session.put_all(keys, _encode(new, alive), before)

    # Changed: made, deleted, or a count or a total moved (timestamps alone do not count).
    same = had == alive
    for name in dtype.names:
        if name != "ts":
            same &= old[name] == new[name]
    changed = ~same
    if not changed.any():
        return out_schema.empty_table()
    at = np.flatnonzero(changed)
    old_mask, new_mask = ~had[at], ~alive[at]
    columns = {
        "gkb": keys.take(pa.array(at)),
        "old_members": pa.array(old["members"][at].astype(np.int64), pa.int64(), mask=old_mask),
        "new_members": pa.array(new["members"][at].astype(np.int64), pa.int64(), mask=new_mask),
        "ts": pa.array(new["ts"][at].astype(np.int64), pa.int64()),
    }
    for i, fl in enumerate(floating):
        number = pa.float64() if fl else pa.int64()
        for side, state, mask in (("old", old, old_mask), ("new", new, new_mask)):
            columns[f"{side}_nonnull{i}"] = pa.array(state[f"nonnull{i}"][at].astype(np.int64), pa.int64(), mask=mask)
            columns[f"{side}_total{i}"] = pa.array(
                state[f"total{i}"][at].astype(np.float64 if fl else np.int64), number, mask=mask
            )
    return pa.table(columns, schema=out_schema)


def _decode(stored: pa.Array, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The states (zeros where absent) and which groups had one."""
    offsets, data, had = buffers(stored)
    n, width = len(had), dtype.itemsize
    if had.any():
        sizes = np.diff(offsets)[had]
        if (sizes != width).any():
            raise ValueError(f"numeric aggregate state of {int(sizes[sizes != width][0])} bytes, expected {width}")
        rows = data[np.where(had, offsets[:-1], 0)[:, None] + np.arange(width)]
        states = np.ascontiguousarray(rows).view(dtype)[:, 0].copy()
        states[~had] = np.zeros(1, dtype)
    else:
        states = np.zeros(n, dtype)
    return states, had


def _encode(states: np.ndarray, alive: np.ndarray) -> pa.Array:
    """The states of the groups alive, null (deleted) for the others."""
    width = states.dtype.itemsize
    n = len(states)
    data = np.ascontiguousarray(states[alive]).view(np.uint8)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.where(alive, width, 0), out=offsets[1:])
    validity = None if alive.all() else pa.array(alive).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(offsets), pa.py_buffer(data)])

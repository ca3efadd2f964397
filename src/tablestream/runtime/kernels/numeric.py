"""count, sum and avg per group, by signed deltas: a group's state is its member count,
its timestamp and, per aggregated column, the non-null count and the total, so a
retraction subtracts what an addition added, and any number of these aggregates of one
grouping share one state (one store, one stage).

A state is fixed-width: big-endian 64-bit members, the non-null count of each column,
the timestamp, then the total of each column (an integer or a double, big-endian, or a
decimal: Arrow's 128-bit little-endian unscaled integer). With one column of integers or
doubles this is the state the single count, sum and avg have always kept.

Decimal totals are exact: a batch's deltas are summed in 256-bit decimals, and a total
that leaves ``DECIMAL(38, s)`` is an error naming the group, never a rounded or wrapped
number. Integer totals likewise: a batch's deltas are summed as 30-digit decimals (64-bit
sums, Arrow's and numpy's, wrap around), and a total that leaves ``BIGINT`` is an error
naming the group.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary import buffers
from ..state import StoreSession

__all__ = ["INTEGER_SUMS", "aggregate_deltas", "aggregate_summed", "schema", "state_dtype"]


def total_type(arrow: pa.DataType) -> pa.DataType:
    """The total kept for values of an Arrow type: a 64-bit integer for integers, a
    ``decimal128(38, s)`` for decimals of scale ``s``, a double for anything else that
    is a number.

    >>> total_type(pa.decimal128(10, 2))
    Decimal128Type(decimal128(38, 2))
    """
    if pa.types.is_integer(arrow):
        return pa.int64()
    if pa.types.is_decimal(arrow):
        return pa.decimal128(38, arrow.scale)
    return pa.float64()


def schema(totals: Sequence[pa.DataType]) -> pa.Schema:
    """The rows of :func:`aggregate_deltas` for columns whose totals are of ``totals``
    (each :func:`total_type`): ``gkb``, ``old_members``, ``new_members``, ``ts``, and
    per column ``i`` ``old_nonnull<i>``, ``old_total<i>``, ``new_nonnull<i>``,
    ``new_total<i>``."""
    fields = [("gkb", pa.binary()), ("old_members", pa.int64()), ("new_members", pa.int64()), ("ts", pa.int64())]
    for i, number in enumerate(totals):
        fields += [
            (f"old_nonnull{i}", pa.int64()), (f"old_total{i}", number),
            (f"new_nonnull{i}", pa.int64()), (f"new_total{i}", number),
        ]
    return pa.schema(fields)


def state_dtype(totals: Sequence[pa.DataType]) -> np.dtype:
    """The numpy record of one stored state (packed)."""
    fields = [("members", ">i8")]
    fields += [(f"nonnull{i}", ">i8") for i in range(len(totals))]
    fields.append(("ts", ">i8"))
    fields += [(f"total{i}", _STORED[_kind(t)]) for i, t in enumerate(totals)]
    return np.dtype(fields)


_STORED = {"integer": ">i8", "double": ">f8", "decimal": "V16"}
_WIDE = 76  # digits of the 256-bit decimals a batch's decimal deltas are summed in


def _kind(total: pa.DataType) -> str:
    if pa.types.is_decimal(total):
        return "decimal"
    return "double" if pa.types.is_floating(total) else "integer"


def aggregate_deltas(table: pa.Table, session: StoreSession, *, totals: Sequence[pa.DataType]) -> pa.Table:
    """Apply signed deltas to per-group numeric states (count, sum, avg of any number of
    columns at once).

    In: ``gkb`` (group key bytes), ``sign`` (+1 add / -1 retract), ``v<i>`` per column
    (a null counts as a member without a value; of ``totals[i]``), ``ts``. Out
    (:func:`schema`): one row per group whose state changed (members, a non-null count
    or a total): old and new members, non-null counts and totals (new ones null when
    the group is gone, old ones null when it is new), ``ts`` = max of the inputs' and
    the stored timestamps. Order does not matter: these aggregates are invertible.
    Every group the batch touched is written (its timestamp moves even when its
    results do not).
    """
    out_schema = schema(totals)
    if table.num_rows == 0:
        return out_schema.empty_table()
    kinds = [_kind(t) for t in totals]
    signs = table.column("sign").cast(pa.int64())
    deltas = {"gkb": table.column("gkb"), "dm": signs, "ts": table.column("ts")}
    for i, (total, kind) in enumerate(zip(totals, kinds, strict=True)):
        # Integer sums stay integers (a null among them must not make them doubles).
        values = table.column(f"v{i}").cast(total)
        deltas[f"dn{i}"] = pc.multiply(signs, pc.is_valid(values).cast(pa.int64()))
        if kind == "decimal":
            wide = pc.fill_null(values, 0).cast(pa.decimal256(_WIDE, total.scale))
            deltas[f"ds{i}"] = pc.if_else(pc.greater(signs, 0), wide, pc.negate(wide))
        else:
            deltas[f"ds{i}"] = pc.multiply(signs.cast(values.type), pc.fill_null(values, 0))
    return _apply_deltas(pa.table(deltas), session, totals)


def aggregate_summed(table: pa.Table, session: StoreSession, *, totals: Sequence[pa.DataType]) -> pa.Table:
    """:func:`aggregate_deltas` over deltas already summed per group (by Spark, before
    the shuffle), several rows of a group summed again: ``gkb``, ``dm`` (the members
    added less those retracted), ``ts`` (the largest timestamp), and per column ``dn<i>``
    (non-null values added less those retracted) and ``ds<i>`` (their signed sum, an
    integer or a decimal of scale 0). Only integer totals are summed so (exact in any
    order)."""
    if table.num_rows == 0:
        return schema(totals).empty_table()
    if not all(_kind(t) == "integer" for t in totals):
        raise ValueError("summed deltas are for integer totals only")
    names = ["gkb", "dm", "ts", *[f"{p}{i}" for i in range(len(totals)) for p in ("dn", "ds")]]
    return _apply_deltas(table.select(names), session, totals)


def _apply_deltas(deltas: pa.Table, session: StoreSession, totals: Sequence[pa.DataType]) -> pa.Table:
    """The groups' states moved by ``deltas`` (``gkb``, ``dm``, ``ts``, ``dn<i>``,
    ``ds<i>``; several rows of a group are summed), written, and the changed groups."""
    out_schema = schema(totals)
    kinds = [_kind(t) for t in totals]
    for i, kind in enumerate(kinds):
        if kind == "integer":  # summed exactly: Arrow's and numpy's 64-bit sums wrap around
            at = deltas.column_names.index(f"ds{i}")
            deltas = deltas.set_column(at, f"ds{i}", deltas.column(at).cast(INTEGER_SUMS))
    sums = [("dm", "sum"), ("ts", "max")] + [(f"{p}{i}", "sum") for i in range(len(totals)) for p in ("dn", "ds")]
    grouped = deltas.group_by("gkb", use_threads=False).aggregate(sums)
    keys = grouped.column("gkb").combine_chunks()
    before = session.get_before_all(keys)
    dtype = state_dtype(totals)
    old, had = _decode(before, dtype)

    new = np.zeros(len(keys), dtype)
    new["members"] = old["members"] + grouped.column("dm_sum").to_numpy()
    batch_ts = grouped.column("ts_max").to_numpy()
    new["ts"] = np.where(had, np.maximum(batch_ts, old["ts"]), batch_ts)
    negative = new["members"] < 0
    for i, (total, kind) in enumerate(zip(totals, kinds, strict=True)):
        new[f"nonnull{i}"] = old[f"nonnull{i}"] + grouped.column(f"dn{i}_sum").to_numpy()
        added = grouped.column(f"ds{i}_sum")
        if kind == "decimal":
            new[f"total{i}"] = _decimal_sum(old[f"total{i}"], added, total, keys)
        elif kind == "integer":
            new[f"total{i}"] = _integer_sum(old[f"total{i}"], added, keys)
        else:
            new[f"total{i}"] = old[f"total{i}"] + added.to_numpy()
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
    for i, (total, kind) in enumerate(zip(totals, kinds, strict=True)):
        for side, state, mask in (("old", old, old_mask), ("new", new, new_mask)):
            columns[f"{side}_nonnull{i}"] = pa.array(state[f"nonnull{i}"][at].astype(np.int64), pa.int64(), mask=mask)
            if kind == "decimal":
                columns[f"{side}_total{i}"] = _masked(_decimals(state[f"total{i}"][at], total), mask)
            else:
                columns[f"{side}_total{i}"] = pa.array(
                    state[f"total{i}"][at].astype(np.float64 if kind == "double" else np.int64), total, mask=mask
                )
    return pa.table(columns, schema=out_schema)


def _decimals(stored: np.ndarray, total: pa.DataType) -> pa.Array:
    """Stored decimal totals (16-byte unscaled integers) as an Arrow array of ``total``."""
    data = np.ascontiguousarray(stored)
    return pa.Array.from_buffers(total, len(data), [None, pa.py_buffer(data.view(np.uint8))])


def _masked(values: pa.Array, mask: np.ndarray) -> pa.Array:
    return pc.if_else(pa.array(mask), pa.scalar(None, values.type), values) if mask.any() else values


# A batch's integer deltas are summed as decimals of 30 digits (a 64-bit integer has 19).
INTEGER_SUMS = pa.decimal128(30, 0)
_INT64_RANGE = (pa.scalar(Decimal(-(2**63)), pa.decimal128(31, 0)), pa.scalar(Decimal(2**63 - 1), pa.decimal128(31, 0)))


def _integer_sum(old: np.ndarray, added: pa.ChunkedArray, keys: pa.Array) -> np.ndarray:
    """Stored integer totals plus a batch's summed deltas, exactly; a total that leaves
    ``BIGINT`` (64 bits) is an error naming its group, never a wrapped number."""
    summed = pc.add(pa.array(old.astype(np.int64)).cast(INTEGER_SUMS), added.combine_chunks().cast(INTEGER_SUMS))
    low, high = _INT64_RANGE
    over = pc.or_(pc.less(summed, low), pc.greater(summed, high)).to_numpy(zero_copy_only=False)
    if over.any():
        at = int(np.flatnonzero(over)[0])
        raise ValueError(f"the sum of group {keys[at].as_py()!r} overflows BIGINT: {summed[at].as_py()}")
    return summed.cast(pa.int64()).to_numpy()


def _decimal_sum(old: np.ndarray, added: pa.ChunkedArray, total: pa.DataType, keys: pa.Array) -> np.ndarray:
    """Stored totals plus a batch's summed deltas, exactly, as stored totals; a total
    that leaves ``total`` (``DECIMAL(38, s)``) is an error naming its group."""
    scale = total.scale
    wide = pa.decimal256(_WIDE - 1, scale)
    summed = pc.add(_decimals(old, total).cast(wide), added.combine_chunks().cast(wide))
    limit = pa.scalar(Decimal(10 ** (total.precision - scale)), wide)
    over = pc.greater_equal(pc.abs(summed), limit).to_numpy(zero_copy_only=False)
    if over.any():
        at = int(np.flatnonzero(over)[0])
        raise ValueError(
            f"the sum of group {keys[at].as_py()!r} overflows DECIMAL({total.precision}, {scale}): {summed[at].as_py()}"
        )
    narrow = summed.cast(total)
    return np.frombuffer(narrow.buffers()[1], dtype="V16", count=len(narrow), offset=narrow.offset * 16)


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

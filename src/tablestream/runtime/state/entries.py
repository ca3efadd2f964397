"""The entry codec: what a state store holds under a key, scalar and Arrow-array forms.

An entry carries the id of the batch that wrote it, its value and the value before that
batch (either may be missing: a delete keeps its batch id and value before), so a
replayed batch reads the store as it was before it. Pure bytes and arrays, no storage.
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..binary import buffers, slices

_HEADER = struct.Struct(">qBI")  # batch id, flags, length of the value
_HEADER_FIELDS = np.dtype([("batch", ">i8"), ("flags", "u1"), ("length", ">u4")])  # the same, for arrays
_HAS_VALUE = 1
_HAS_PREV = 2


class StoreError(RuntimeError):
    """A state store that cannot serve a batch (ahead of it, or its files are damaged)."""


def encode_entry(batch_id: int, value: bytes | None, prev: bytes | None) -> bytes:
    """The entry written by ``batch_id``: ``value`` now, ``prev`` before it."""
    flags = (_HAS_VALUE if value is not None else 0) | (_HAS_PREV if prev is not None else 0)
    return _HEADER.pack(batch_id, flags, len(value or b"")) + (value or b"") + (prev or b"")


def decode_entry(entry: bytes) -> tuple[int, bytes | None, bytes | None]:
    """The batch id, value and value before of an entry."""
    batch_id, flags, length = _HEADER.unpack_from(entry)
    start = _HEADER.size
    value = entry[start : start + length] if flags & _HAS_VALUE else None
    prev = entry[start + length :] if flags & _HAS_PREV else None
    return batch_id, value, prev


def value_before(entry: bytes | None, batch_id: int) -> bytes | None:
    """The value an entry held before ``batch_id`` ran."""
    if entry is None:
        return None
    written, value, prev = decode_entry(entry)
    if written == batch_id:
        return prev
    if written > batch_id:
        raise StoreError(f"store entry written by batch {written} is ahead of batch {batch_id}")
    return value


def values_before(entries: pa.Array, batch_id: int) -> pa.Array:
    """:func:`value_before` over an Arrow array of entries: the values before ``batch_id``."""
    offsets, data, valid = buffers(entries)
    n = len(valid)
    if n == 0:
        return pa.array([], pa.binary())
    starts = offsets[:-1]
    header = data[np.where(valid, starts, 0)[:, None] + np.arange(_HEADER.size)] if data.size else np.zeros((n, _HEADER.size), np.uint8)
    fields = np.ascontiguousarray(header).view(_HEADER_FIELDS)[:, 0]
    written = np.where(valid, fields["batch"], -1)
    if (written > batch_id).any():
        ahead = int(written[written > batch_id][0])
        raise StoreError(f"store entry written by batch {ahead} is ahead of batch {batch_id}")
    flags = fields["flags"].astype(np.int64)
    length = fields["length"].astype(np.int64)
    replayed = written == batch_id  # written by this batch before: its value before is ``prev``
    value_start = starts + _HEADER.size
    start = np.where(replayed, value_start + length, value_start)
    size = np.where(replayed, offsets[1:] - value_start - length, length)
    present = valid & np.where(replayed, (flags & _HAS_PREV) != 0, (flags & _HAS_VALUE) != 0)
    return slices(entries, start, size, present)


def encode_entries(batch_id: int, values: pa.Array, prevs: pa.Array) -> pa.Array:
    """:func:`encode_entry` over Arrow arrays (one entry per row)."""
    n = len(values)
    has_value = pc.is_valid(values).to_numpy(zero_copy_only=False)
    has_prev = pc.is_valid(prevs).to_numpy(zero_copy_only=False)
    header = np.zeros(n, _HEADER_FIELDS)
    header["batch"] = batch_id
    header["flags"] = np.where(has_value, _HAS_VALUE, 0) | np.where(has_prev, _HAS_PREV, 0)
    header["length"] = pc.fill_null(pc.binary_length(values), 0).to_numpy(zero_copy_only=False)
    headers = pa.FixedSizeBinaryArray.from_buffers(pa.binary(_HEADER.size), n, [None, pa.py_buffer(header.tobytes())])
    empty = pa.scalar(b"", pa.binary())
    return pc.binary_join_element_wise(
        headers.cast(pa.binary()), pc.fill_null(values.cast(pa.binary()), empty), pc.fill_null(prevs.cast(pa.binary()), empty), b""
    )

"""Arrow binary arrays read and cut with numpy: byte ranges, prefixes, leading integers.

Shared by the state stores (entries) and the task kernels (timestamped values, left-row
entries); no Spark, no RocksDB.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def slices(source: pa.Array, starts: np.ndarray, lengths: np.ndarray, valid: np.ndarray) -> pa.Array:
    """A binary array of the byte ranges ``[starts[i], starts[i] + lengths[i])`` of
    ``source``'s data buffer (null where not ``valid``): built as Arrow binary views
    into that buffer (16 bytes per row, whatever the values' sizes), then cast."""
    data_buffer = source.buffers()[2] or pa.py_buffer(b"")
    data = np.frombuffer(data_buffer, np.uint8)
    n = len(starts)
    lengths = np.where(valid, lengths, 0)
    views = np.zeros((n, 16), np.uint8)
    views[:, :4] = lengths.astype("<i4").view(np.uint8).reshape(n, 4)
    short = lengths <= 12
    if data.size:
        # The first bytes: the whole value when it fits in the view, else its prefix.
        head = data[np.minimum(starts[:, None] + np.arange(12), data.size - 1)]
        views[:, 4:] = np.where(np.arange(12) < np.where(short, lengths, 4)[:, None], head, 0)
    far = ~short
    views[far, 8:12] = 0  # buffer index
    views[far, 12:] = starts[far].astype("<i4").view(np.uint8).reshape(-1, 4)
    validity = None if valid.all() else pa.array(valid).buffers()[1]
    return pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), data_buffer]).cast(pa.binary())


def buffers(array: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, bytes and validity of a binary Arrow array."""
    array = array.cast(pa.binary())
    n = len(array)
    offsets = np.frombuffer(array.buffers()[1], np.int32)[array.offset : array.offset + n + 1].astype(np.int64)
    data_buffer = array.buffers()[2]
    data = np.frombuffer(data_buffer, np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    valid = ~np.asarray(array.is_null())
    return offsets, data, valid


def strip_prefix(values: pa.Array, size: int | np.ndarray) -> pa.Array:
    """Each value without its first ``size`` bytes (one size, or one per value; nulls
    stay null)."""
    values = values.cast(pa.binary())
    offsets, _, valid = buffers(values)
    return slices(values, offsets[:-1] + size, np.maximum(np.diff(offsets) - size, 0), valid)


def leading_int64(values: pa.Array) -> pa.Array:
    """The big-endian 64-bit integer each value starts with (null for a null value)."""
    offsets, data, valid = buffers(values)
    starts = np.where(valid, offsets[:-1], 0)
    head = data[starts[:, None] + np.arange(8)] if data.size else np.zeros((len(valid), 8), np.uint8)
    numbers = np.ascontiguousarray(head).view(">i8")[:, 0].astype(np.int64)
    return pa.array(numbers, pa.int64(), mask=~valid)

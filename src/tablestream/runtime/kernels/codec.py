"""Value layouts shared by the kernels: timestamped values (an 8-byte big-endian
timestamp, then the value bytes), null-safe equality of binary arrays, and canonical
bytes (the JSON text of ``{"v": x}``, written by Spark's ``to_json``) decoded in Arrow."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

_TS = struct.Struct(">q")


def encode_timestamped(value: bytes | None, ts: int) -> bytes | None:
    return None if value is None else _TS.pack(ts) + value


def decode_timestamped(stored: bytes | None) -> tuple[bytes | None, int | None]:
    if stored is None:
        return None, None
    return stored[8:], _TS.unpack_from(stored)[0]


def timestamped(values: pa.Array, stamps: pa.Array) -> pa.Array:
    """:func:`encode_timestamped` over Arrow arrays (null values stay null)."""
    stamp_bytes = np.ascontiguousarray(np.asarray(stamps, np.int64).astype(">i8")).view(np.uint8)
    prefixes = pa.FixedSizeBinaryArray.from_buffers(pa.binary(8), len(stamps), [None, pa.py_buffer(stamp_bytes)])
    return pc.binary_join_element_wise(prefixes.cast(pa.binary()), values.cast(pa.binary()), b"")


def same_values(a: pa.Array, b: pa.Array) -> pa.Array:
    """Null-safe equality of two binary arrays (emit on change: what changes nothing)."""
    return pc.or_(pc.and_(pc.is_null(a), pc.is_null(b)), pc.fill_null(pc.equal(a, b), False))


def as_array(values) -> pa.Array:
    return values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values


def decode_canonical(values: pa.Array, arrow_type: pa.DataType) -> pa.Array:
    """Spark's ``from_json`` of canonical bytes, in Arrow, for a type whose JSON text Arrow
    reads exactly as Spark does (booleans, integers, strings, and structs and arrays of them): the
    canonical texts are parsed as one block of JSON lines (a null value is an empty
    object's line, nulled after), not one value at a time.

    >>> decode_canonical(pa.array([b'{"v":{"n":1}}', None]), pa.struct([("n", pa.int64())])).to_pylist()
    [{'n': 1}, None]
    """
    values = values.cast(pa.binary())
    if len(values) == 0:
        return pa.array([], arrow_type)
    lines = pc.binary_join_element_wise(pc.fill_null(values, b"{}"), b"", b"\n")
    size = pc.sum(pc.binary_length(lines)).as_py()
    first = int(np.frombuffer(lines.buffers()[1], np.int32)[lines.offset])
    text = lines.buffers()[2].slice(first, size)
    parsed = pa_json.read_json(
        pa.BufferReader(text),
        read_options=pa_json.ReadOptions(block_size=max(size, 1 << 20)),
        parse_options=pa_json.ParseOptions(
            explicit_schema=pa.schema([("v", arrow_type)]), unexpected_field_behavior="ignore"
        ),
    ).column("v").combine_chunks()
    return pc.if_else(pc.is_valid(values), parsed, pa.nulls(len(values), arrow_type))

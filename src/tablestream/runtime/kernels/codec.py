"""Value layouts shared by the kernels: timestamped values (an 8-byte big-endian
timestamp, then the value bytes) and JSON states, null-safe equality of binary arrays,
kernel outputs from Python lists, and canonical bytes (the JSON text of ``{"v": x}``,
written by Spark's ``to_json``) built from JSON texts and decoded in Arrow."""

from __future__ import annotations

import json
import struct
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

if TYPE_CHECKING:
    from ..state import StoreSession

_TS = struct.Struct(">q")
_OPEN, _CLOSE = b'{"v":', b"}"  # canonical bytes are the JSON text of {"v": value}

# The rows of a kernel whose results are values in canonical bytes: per group the
# result before and after, and the timestamp.
VALUE_CHANGES = pa.schema([("gkb", pa.binary()), ("old_vb", pa.binary()), ("new_vb", pa.binary()), ("ts", pa.int64())])


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


def rows(schema: pa.Schema, **columns: list) -> pa.Table:
    """A kernel's output from Python lists, one per column of ``schema``."""
    return pa.table({f.name: pa.array(columns[f.name], f.type) for f in schema}, schema=schema)


def inner_text(canonical: bytes) -> str:
    """The JSON text of the value inside canonical bytes.

    >>> inner_text(b'{"v":[1,2]}')
    '[1,2]'
    """
    return canonical[len(_OPEN) : -len(_CLOSE)].decode()


def canonical_of(text: str | None) -> bytes | None:
    """Canonical bytes of a value given as its JSON text (``None``: a null value)."""
    return None if text is None else _OPEN + text.encode() + _CLOSE


def canonical_array(texts: list[str | None]) -> bytes:
    """Canonical bytes of an array of values given as their JSON texts (``None``: null).

    >>> canonical_array(["1", None])
    b'{"v":[1,null]}'
    """
    return canonical_of("[" + ",".join("null" if t is None else t for t in texts) + "]")


def load_json_states(session: StoreSession, keys: list[bytes]) -> dict[bytes, tuple[object, int] | None]:
    """Timestamped JSON states as stored before this batch: ``{key: (state, ts) or None}``."""
    states: dict[bytes, tuple[object, int] | None] = {}
    for key, raw in zip(keys, session.get_before(keys), strict=True):
        text, ts = decode_timestamped(raw)
        states[key] = None if text is None else (json.loads(text), ts)
    return states


def dump_json_state(state: object, ts: int) -> bytes:
    """A state as :func:`load_json_states` reads it."""
    return encode_timestamped(json.dumps(state, separators=(",", ":"), ensure_ascii=False).encode(), ts)


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

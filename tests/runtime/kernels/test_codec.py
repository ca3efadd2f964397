"""Timestamped values, null-safe equality and canonical bytes decoded in Arrow."""

from __future__ import annotations

import doctest

import pyarrow as pa

from tablestream.runtime.kernels import codec
from tablestream.runtime.kernels.codec import (
    as_array,
    decode_canonical,
    decode_timestamped,
    encode_timestamped,
    same_values,
    timestamped,
)


def test_timestamped_value_is_a_big_endian_timestamp_then_the_value():
    """Eight bytes of timestamp (signed, big-endian), then the value; none stays none."""
    assert encode_timestamped(b'{"v":1}', 258) == b"\x00\x00\x00\x00\x00\x00\x01\x02" + b'{"v":1}'
    assert encode_timestamped(b"x", -1) == b"\xff" * 8 + b"x"
    assert encode_timestamped(None, 5) is None
    assert decode_timestamped(b"\xff" * 8 + b"x") == (b"x", -1)
    assert decode_timestamped(b"\x00" * 7 + b"\x07") == (b"", 7)
    assert decode_timestamped(None) == (None, None)


def test_timestamped_over_arrays():
    """The Arrow form gives the per-value bytes; a null value stays null."""
    values = pa.array([b"a", None, b"", b"bc"], pa.binary())
    stamps = pa.array([1, 2, -2, 1 << 40], pa.int64())
    assert timestamped(values, stamps).to_pylist() == [
        b"\x00" * 7 + b"\x01a", None, b"\xff" * 7 + b"\xfe", b"\x00\x00\x01" + b"\x00" * 5 + b"bc",
    ]


def test_same_values_is_null_safe():
    """Two nulls are the same; a null and a value are not."""
    a = pa.array([b"x", None, b"x", None, b"x"], pa.binary())
    b = pa.array([b"x", None, b"y", b"x", None], pa.binary())
    assert same_values(a, b).to_pylist() == [True, True, False, False, False]


def test_decode_canonical_scalars_and_nulls():
    """Integers, strings (escapes included) and booleans; a null value decodes to null."""
    ints = pa.array([b'{"v":5}', None, b'{"v":-7}', b'{"v":null}'], pa.binary())
    assert decode_canonical(ints, pa.int64()).to_pylist() == [5, None, -7, None]
    texts = pa.array([b'{"v":"eu"}', b'{"v":"a\\"b\\u00e9"}', None], pa.binary())
    assert decode_canonical(texts, pa.string()).to_pylist() == ["eu", 'a"b\u00e9', None]
    flags = pa.array([b'{"v":true}', b'{"v":false}'], pa.binary())
    assert decode_canonical(flags, pa.bool_()).to_pylist() == [True, False]


def test_decode_canonical_structs_lists_empty_and_slices():
    """Nested values decode to their type; no values give an empty array; a slice of a
    larger array decodes its own values only."""
    point = pa.struct([("id", pa.int64()), ("name", pa.string())])
    values = pa.array([b'{"v":{"id":1,"name":"a"}}', None, b'{"v":{"id":2,"name":null}}'], pa.binary())
    out = decode_canonical(values, point)
    assert out.type == point
    assert out.to_pylist() == [{"id": 1, "name": "a"}, None, {"id": 2, "name": None}]
    lists = pa.array([b'{"v":[1,2]}', b'{"v":[]}'], pa.binary())
    assert decode_canonical(lists, pa.list_(pa.int64())).to_pylist() == [[1, 2], []]
    empty = decode_canonical(pa.array([], pa.binary()), pa.int64())
    assert empty.type == pa.int64() and len(empty) == 0
    many = pa.array([b'{"v":1}', b'{"v":2}', b'{"v":3}', b'{"v":4}'], pa.binary())
    assert decode_canonical(many.slice(1, 2), pa.int64()).to_pylist() == [2, 3]


def test_as_array_joins_chunks():
    """A chunked array becomes one array; an array is returned as it is."""
    chunked = pa.chunked_array([[b"a"], [b"b", None]], pa.binary())
    joined = as_array(chunked)
    assert isinstance(joined, pa.Array) and joined.to_pylist() == [b"a", b"b", None]
    plain = pa.array([1])
    assert as_array(plain) is plain


def test_docstring_examples():
    result = doctest.testmod(codec)
    assert (result.attempted, result.failed) == (3, 0)

"""Arrow binary helpers: prefixes and leading integers cut with numpy."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from tablestream.runtime.binary import leading_int64, strip_prefix

_values = st.one_of(st.none(), st.binary(max_size=12))


@given(st.lists(_values, max_size=30), st.integers(0, 4))
def test_strip_prefix_drops_the_first_bytes_of_each_value(values, size):
    assert strip_prefix(pa.array(values, pa.binary()), size).to_pylist() == [
        None if v is None else v[size:] for v in values
    ]


@given(st.lists(st.one_of(st.none(), st.tuples(st.integers(-(2**63), 2**63 - 1), st.binary(max_size=6))), max_size=20))
def test_leading_int64_reads_the_big_endian_number_each_value_starts_with(rows):
    values = [None if r is None else r[0].to_bytes(8, "big", signed=True) + r[1] for r in rows]
    assert leading_int64(pa.array(values, pa.binary())).to_pylist() == [None if r is None else r[0] for r in rows]

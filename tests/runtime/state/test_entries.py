"""The entry codec: the Arrow forms agree with the per-entry ones."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablestream.runtime.state import StoreError
from tablestream.runtime.state.entries import (
    encode_entries,
    encode_entry,
    value_before,
    values_before,
)

_values = st.one_of(st.none(), st.binary(max_size=12))


# The first example runs the Arrow kernels cold (this file's tests run first).
@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), _values, _values, st.booleans()), max_size=30), st.integers(0, 5))
def test_arrow_entry_codecs_agree_with_the_per_key_ones(rows, batch_id):
    entries = [encode_entry(written, value, prev) if present else None for written, value, prev, present in rows]
    values = [value for _, value, _, _ in rows]
    prevs = [prev for _, _, prev, _ in rows]
    assert encode_entries(batch_id, pa.array(values, pa.binary()), pa.array(prevs, pa.binary())).to_pylist() == [
        encode_entry(batch_id, v, p) for v, p in zip(values, prevs, strict=True)
    ]
    if any(e is not None and written > batch_id for e, (written, *_rest) in zip(entries, rows, strict=True)):
        with pytest.raises(StoreError, match="ahead of batch"):
            values_before(pa.array(entries, pa.binary()), batch_id)
    else:
        assert values_before(pa.array(entries, pa.binary()), batch_id).to_pylist() == [value_before(e, batch_id) for e in entries]

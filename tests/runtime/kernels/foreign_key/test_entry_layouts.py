"""Arrow forms of the join kernels' key and entry layouts agree with the per-row ones."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from tablestream.runtime.kernels.codec import encode_timestamped, timestamped
from tablestream.runtime.kernels.foreign_key.replicated import left_entries, read_left_entries
from tablestream.runtime.kernels.foreign_key.subscriptions import (
    subscription_key,
    subscription_keys,
)

_bytes = st.binary(max_size=20)


@settings(deadline=None)
@given(st.lists(st.tuples(_bytes, _bytes), max_size=20))
def test_subscription_keys_are_the_per_row_keys(pairs):
    fks = pa.array([f for f, _ in pairs], pa.binary())
    lks = pa.array([lk for _, lk in pairs], pa.binary())
    assert subscription_keys(fks, lks).to_pylist() == [subscription_key(f, lk) for f, lk in pairs]


@settings(deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), _bytes), st.integers(-(2**63), 2**63 - 1)), max_size=20))
def test_timestamped_values_are_the_per_row_entries(rows):
    values = pa.array([v for v, _ in rows], pa.binary())
    stamps = pa.array([t for _, t in rows], pa.int64())
    assert timestamped(values, stamps).to_pylist() == [None if v is None else encode_timestamped(v, t) for v, t in rows]


@settings(deadline=None)
@given(st.lists(st.one_of(st.none(), st.tuples(st.integers(-(2**63), 2**63 - 1), st.one_of(st.none(), _bytes), _bytes)),
                max_size=20))
def test_left_entries_read_back(rows):
    """A replicated foreign-key join's left-row entries: timestamp, foreign key (or
    none) and value, read back with array operations (null rows stay null)."""
    stamps = pa.array([0 if r is None else r[0] for r in rows], pa.int64())
    fks = pa.array([None if r is None else r[1] for r in rows], pa.binary())
    values = pa.array([None if r is None else r[2] for r in rows], pa.binary())
    ts, fk, value = read_left_entries(left_entries(stamps, fks, values))
    assert ts.to_pylist() == [None if r is None else r[0] for r in rows]
    assert fk.to_pylist() == [None if r is None else r[1] for r in rows]
    assert value.to_pylist() == [None if r is None else r[2] for r in rows]

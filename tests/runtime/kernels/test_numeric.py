"""count, sum and avg per group by signed deltas: old and new member count, and per
column non-null count and total, of each group whose state changed; several columns in
one state."""

from __future__ import annotations

import struct
from decimal import Decimal

import pyarrow as pa
import pytest

from tablestream.runtime.kernels.numeric import aggregate_deltas, aggregate_summed, schema

from .rows import Stores, cb, rows_table

A, B, C = cb("a"), cb("b"), cb("c")


INT64, DOUBLE = pa.int64(), pa.float64()


def _run_columns(stores, batch_id: int, rows: list[tuple], totals: tuple[pa.DataType, ...]) -> list[dict]:
    """``rows``: (group, sign, (value of each column), ts); ``totals``: each column's."""
    fields = [("gkb", pa.binary()), ("sign", pa.int32())]
    fields += [(f"v{i}", t) for i, t in enumerate(totals)]
    table = rows_table(
        fields,
        [{"gkb": g, "sign": s, **{f"v{i}": v for i, v in enumerate(vs)}, "ts": ts} for g, s, vs, ts in rows],
        order=False,
    )
    out = stores.run(aggregate_deltas, table, ("agg",), batch_id, totals=totals)
    assert out.schema.equals(schema(totals))
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _run(stores, batch_id: int, rows: list[tuple], *, total: pa.DataType = INT64) -> list[dict]:
    """One column; ``rows``: (group, sign, value, ts)."""
    out = _run_columns(stores, batch_id, [(g, s, (v,), ts) for g, s, v, ts in rows], (total,))
    return [
        {"gkb": r["gkb"], "ts": r["ts"], **{
            f"{side}_{name}": r[f"{side}_{name}" + ("" if name == "members" else "0")]
            for side in ("old", "new") for name in ("members", "nonnull", "total")
        }}
        for r in out
    ]


def _delta(gkb: bytes, old: tuple | None, new: tuple | None, ts: int) -> dict:
    """One output row; ``old`` / ``new``: (members, non-null members, total) or None."""
    row = {"gkb": gkb, "ts": ts}
    for side, agg in (("old", old), ("new", new)):
        for name, value in zip(("members", "nonnull", "total"), agg or (None, None, None), strict=True):
            row[f"{side}_{name}"] = value
    return row


def _deltas(gkb: bytes, old: tuple | None, new: tuple | None, ts: int) -> dict:
    """One output row of several columns; ``old`` / ``new``: (members, (non-null count,
    total) of each column) or None."""
    row = {"gkb": gkb, "ts": ts}
    columns = len((old or new)[1])
    for side, agg in (("old", old), ("new", new)):
        row[f"{side}_members"] = agg[0] if agg else None
        for i in range(columns):
            nonnull, total = agg[1][i] if agg else (None, None)
            row[f"{side}_nonnull{i}"], row[f"{side}_total{i}"] = nonnull, total
    return row


def test_count_and_sum_over_signed_rows(stores):
    """Additions and retractions move the counts and the total; a null value counts as
    a member only; a group whose members all leave is deleted (no new aggregate), its
    timestamp the larger of the retraction's and the stored one."""
    assert _run(stores, 0, [(A, 1, 5, 10), (B, 1, 1, 5), (A, 1, None, 11), (A, 1, 7, 12)]) == [
        _delta(A, None, (3, 2, 12), 12),
        _delta(B, None, (1, 1, 1), 5),
    ]
    assert _run(stores, 1, [(A, -1, 5, 20), (B, -1, 1, 3)]) == [
        _delta(A, (3, 2, 12), (2, 1, 7), 20),
        _delta(B, (1, 1, 1), None, 5),
    ]
    assert _run(stores, 2, [(B, 1, 2, 40), (A, -1, None, 41)]) == [
        _delta(A, (2, 1, 7), (1, 1, 7), 41),
        _delta(B, None, (1, 1, 2), 40),
    ]


def test_changes_that_cancel_emit_nothing(stores):
    """An addition and its retraction in one batch change no aggregate (nor make or
    delete a group), but the stored timestamp moves to the batch's latest."""
    _run(stores, 0, [(A, 1, 4, 10)])
    assert _run(stores, 1, [(A, 1, 9, 30), (A, -1, 9, 31), (C, 1, 1, 32), (C, -1, 1, 33)]) == []
    assert _run(stores, 2, [(A, 1, 1, 25)]) == [_delta(A, (1, 1, 4), (2, 2, 5), 31)]


def test_floating_sums(stores):
    """Double totals."""
    assert _run(stores, 0, [(A, 1, 0.5, 1), (A, 1, 0.25, 2)], total=DOUBLE) == [_delta(A, None, (2, 2, 0.75), 2)]
    out = _run(stores, 1, [(A, -1, 0.5, 3), (A, 1, -1.5, 4)], total=DOUBLE)
    assert out == [_delta(A, (2, 2, 0.75), (2, 2, -1.25), 4)]
    assert isinstance(out[0]["new_total"], float)


def test_integer_sums_stay_integers(stores):
    """Integer totals are 64-bit integers, exact beyond 2**53."""
    big = 2**62
    out = _run(stores, 0, [(A, 1, big, 1), (A, 1, 3, 2)])
    assert out == [_delta(A, None, (2, 2, big + 3), 2)]
    assert isinstance(out[0]["new_total"], int)


def test_integer_sums_stay_exact_beside_a_null(stores):
    """A null value in the same batch does not round an integer total."""
    big = 2**53 + 1
    assert _run(stores, 0, [(A, 1, big, 1), (A, 1, None, 2)]) == [_delta(A, None, (2, 1, big), 2)]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the aggregates as they were before it."""
    _run(stores, 0, [(A, 1, 5, 1), (B, 1, 2, 1)])
    batch = [(A, 1, 3, 2), (B, -1, 2, 2)]
    first = _run(stores, 1, batch)
    assert first == [_delta(A, (1, 1, 5), (2, 2, 8), 2), _delta(B, (1, 1, 2), None, 2)]
    assert _run(stores, 1, batch) == first
    assert _run(stores, 2, [(A, 1, 1, 3)]) == [_delta(A, (2, 2, 8), (3, 3, 9), 3)]


def test_retracting_more_members_than_a_group_has_fails(stores):
    """A retraction without the addition it undoes is an error, not a negative count."""
    _run(stores, 0, [(A, 1, 5, 1)])
    with pytest.raises(ValueError, match="retracted more members than it had"):
        _run(stores, 1, [(A, -1, 5, 2), (A, -1, 5, 3)])


def test_several_columns_in_one_state(stores):
    """An integer and a floating column in one state: each keeps its own non-null count
    and total (an integer total stays an integer, a floating one a double), the members
    are counted once; a retraction takes each value out of its own column."""
    totals = (INT64, DOUBLE)
    assert _run_columns(stores, 0, [(A, 1, (5, 0.5), 10), (A, 1, (None, 1.25), 12), (B, 1, (2, None), 7)], totals) == [
        _deltas(A, None, (2, [(1, 5), (2, 1.75)]), 12),
        _deltas(B, None, (1, [(1, 2), (0, 0.0)]), 7),
    ]
    out = _run_columns(stores, 1, [(A, -1, (5, 0.5), 20), (B, -1, (2, None), 3), (C, 1, (None, None), 4)], totals)
    assert out == [
        _deltas(A, (2, [(1, 5), (2, 1.75)]), (1, [(0, 0), (1, 1.25)]), 20),
        _deltas(B, (1, [(1, 2), (0, 0.0)]), None, 7),
        _deltas(C, None, (1, [(0, 0), (0, 0.0)]), 4),
    ]
    assert isinstance(out[0]["new_total0"], int) and isinstance(out[0]["new_total1"], float)


def test_no_column_counts_members(stores):
    """Without columns the state is the member count and the timestamp."""
    assert _run_columns(stores, 0, [(A, 1, (), 3), (A, 1, (), 1), (B, 1, (), 2)], ()) == [
        {"gkb": A, "old_members": None, "new_members": 2, "ts": 3},
        {"gkb": B, "old_members": None, "new_members": 1, "ts": 2},
    ]
    assert _run_columns(stores, 1, [(A, -1, (), 4), (A, -1, (), 5), (B, 1, (), 1)], ()) == [
        {"gkb": A, "old_members": 2, "new_members": None, "ts": 5},
        {"gkb": B, "old_members": 1, "new_members": 2, "ts": 2},
    ]


def test_a_state_of_one_column_is_the_single_aggregates_state(stores):
    """One column's state is the bytes the single count, sum and avg have always
    stored (members, non-null count, timestamp, total; big-endian), so their stores
    read as before; a group with no members left has no state."""
    _run(stores, 0, [(A, 1, 5, 10), (A, 1, None, 11), (B, 1, 1, 5)])
    _run(stores, 1, [(B, -1, 1, 6)])
    with stores.session("agg", 2) as session:
        assert session.get_before([A, B]) == [struct.pack(">qqqq", 2, 1, 11, 5), None]
    with stores.session("agg", 3) as session:
        session.put([C], [struct.pack(">qqqq", 3, 2, 40, 7)])
    assert _run(stores, 4, [(C, -1, 4, 30)]) == [_delta(C, (3, 2, 7), (2, 1, 3), 40)]


def test_decimal_sums_are_exact(stores):
    """Decimal totals keep every digit (38 of them, beyond a double's 17), a retraction
    takes its value out exactly, and the state keeps the 16-byte unscaled total."""
    dec = pa.decimal128(38, 2)
    big = Decimal("123456789012345678901234567.89")
    out = _run(stores, 0, [(A, 1, big, 1), (A, 1, Decimal("0.01"), 2), (A, 1, None, 3), (B, 1, Decimal("-1.50"), 4)], total=dec)
    assert out == [
        _delta(A, None, (3, 2, Decimal("123456789012345678901234567.90")), 3),
        _delta(B, None, (1, 1, Decimal("-1.50")), 4),
    ]
    assert _run(stores, 1, [(A, -1, big, 5), (B, 1, Decimal("1.50"), 6)], total=dec) == [
        _delta(A, (3, 2, Decimal("123456789012345678901234567.90")), (2, 1, Decimal("0.01")), 5),
        _delta(B, (1, 1, Decimal("-1.50")), (2, 2, Decimal("0.00")), 6),
    ]
    with stores.session("agg", 2) as session:
        (state,) = session.get_before([B])
    assert state == struct.pack(">qqq", 2, 2, 6) + (0).to_bytes(16, "little", signed=True)


def test_a_decimal_total_beyond_38_digits_is_an_error(stores):
    """A total that no DECIMAL(38, s) holds fails the batch, naming the group."""
    dec = pa.decimal128(38, 0)
    nines = Decimal("9" * 38)
    _run(stores, 0, [(A, 1, nines, 1)], total=dec)
    with pytest.raises(ValueError, match=r"^the sum of group b'.*' overflows DECIMAL\(38, 0\): 1999+8$"):
        _run(stores, 1, [(A, 1, nines, 2)], total=dec)
    # Within a batch, sums pass through 256 bits: 9..9 + 9..9 - 9..9 is exact.
    assert _run(stores, 1, [(A, 1, nines, 2), (A, -1, nines, 3), (B, 1, nines, 4), (B, 1, Decimal("-" + "9" * 38), 5)], total=dec) == [
        _delta(B, None, (2, 2, Decimal(0)), 5),
    ]


def test_an_integer_total_beyond_64_bits_is_an_error(stores):
    """A total that leaves BIGINT fails the batch, naming the group, never wraps; within
    a batch the deltas are summed exactly (2**62 + 2**62 - 2**62)."""
    big = 2**62
    assert _run(stores, 0, [(A, 1, big, 1), (A, 1, big, 2), (A, -1, big, 3)]) == [_delta(A, None, (1, 1, big), 3)]
    with pytest.raises(ValueError, match=rf"^the sum of group b'.*' overflows BIGINT: {2**63}$"):
        _run(stores, 1, [(A, 1, big, 4)])
    with pytest.raises(ValueError, match=rf"^the sum of group b'.*' overflows BIGINT: {-(2**63) - 1}$"):
        _run(stores, 1, [(A, 1, -big, 4), (A, 1, -big, 5), (A, 1, -big, 6), (A, 1, -1, 7)])
    assert _run(stores, 1, [(A, 1, big - 1, 4)]) == [_delta(A, (1, 1, big), (2, 2, 2**63 - 1), 4)]


def _run_summed(stores, batch_id: int, rows: list[tuple]) -> list[dict]:
    """Deltas summed ahead, one integer column; ``rows``: (group, dm, dn, ds, ts)."""
    table = pa.table({
        "gkb": pa.array([r[0] for r in rows], pa.binary()),
        **{name: pa.array([r[i + 1] for r in rows], pa.int64()) for i, name in enumerate(("dm", "dn0", "ds0", "ts"))},
    })
    out = stores.run(aggregate_summed, table, ("agg",), batch_id, totals=(INT64,))
    assert out.schema.equals(schema((INT64,)))
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def test_summed_deltas_give_what_their_rows_give(stores, tmp_path):
    """Deltas Spark summed per group and task (several rows of a group summed again)
    move the states as the rows they sum: members, non-null counts, totals, the largest
    timestamp; a group left without members is deleted."""
    (tmp_path / "summed").mkdir()
    other_stores = Stores(tmp_path / "summed")
    rows = [[(A, 1, 5, 10), (B, 1, 1, 5), (A, 1, None, 11), (A, 1, 7, 12)], [(A, -1, 5, 20), (B, -1, 1, 3), (C, 1, 2, 4)]]
    summed = [
        [(A, 2, 1, 5, 10), (B, 1, 1, 1, 5), (A, 1, 1, 7, 12)],  # A's rows summed by two tasks
        [(A, -1, -1, -5, 20), (B, -1, -1, -1, 3), (C, 1, 1, 2, 4)],
    ]
    for batch, (by_rows, by_sums) in enumerate(zip(rows, summed, strict=True)):
        assert _run_summed(other_stores, batch, by_sums) == _run_columns(
            stores, batch, [(g, s, (v,), ts) for g, s, v, ts in by_rows], (INT64,)
        )
    assert _run_summed(other_stores, 2, []) == []
    with pytest.raises(ValueError, match=r"^the sum of group b'.*' overflows BIGINT: 9223372036854775810$"):
        _run_summed(other_stores, 2, [(C, 1, 1, 2**62, 5), (C, 1, 1, 2**62, 6)])


def test_only_integer_totals_are_summed_ahead(stores):
    table = pa.table({"gkb": [A], "dm": [1], "ts": [1], "dn0": [1], "ds0": [1.5]})
    with pytest.raises(ValueError, match="summed deltas are for integer totals only"):
        stores.run(aggregate_summed, table, ("agg",), 0, totals=(DOUBLE,))

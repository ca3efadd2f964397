"""The ordering key: rows in its order, the last row of each key by it."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.order import in_order, last_per_key, last_rows

from .rows import at, rows_table

_FIELDS = [("kb", pa.binary()), ("vb", pa.binary())]


def _rows(*rows: dict) -> pa.Table:
    return rows_table(_FIELDS, list(rows))


def test_in_order_compares_each_ordering_column_in_turn():
    """Timestamp first, then source, partition, offset and fan-out index."""
    table = _rows(
        {"kb": b"k", "vb": b"idx1", **at(5, 3, src=1, part=1, idx=1)},
        {"kb": b"k", "vb": b"late", **at(6, 0)},
        {"kb": b"k", "vb": b"src1", **at(5, 9, src=1, part=2)},
        {"kb": b"k", "vb": b"idx0", **at(5, 3, src=1, part=1)},
        {"kb": b"k", "vb": b"src0", **at(5, 9, src=0, part=9)},
        {"kb": b"k", "vb": b"off2", **at(5, 2, src=1, part=1, idx=7)},
    )
    assert in_order(table).column("vb").to_pylist() == [b"src0", b"off2", b"idx0", b"idx1", b"src1", b"late"]


def test_last_per_key_keeps_the_last_row_of_each_key_by_the_ordering_key():
    """Arrival order means nothing: the larger timestamp wins over a larger offset."""
    table = _rows(
        {"kb": b"a", "vb": b"a3", **at(10, 3)},
        {"kb": b"b", "vb": b"b1", **at(1, 1)},
        {"kb": b"a", "vb": b"a9", **at(9, 9)},
        {"kb": b"a", "vb": b"a4", **at(10, 4)},
        {"kb": b"a", "vb": b"a2", **at(10, 2)},
    )
    out = last_per_key(table)
    assert out.schema.equals(table.schema)
    assert sorted(out.to_pylist(), key=lambda r: r["kb"]) == [
        {"kb": b"a", "vb": b"a4", **at(10, 4)},
        {"kb": b"b", "vb": b"b1", **at(1, 1)},
    ]


def test_last_per_key_comes_in_key_order_with_the_missing_key_one_key_last():
    table = _rows(
        {"kb": b"b", "vb": b"b0", **at(1, 0)},
        {"kb": None, "vb": b"n1", **at(2, 1)},
        {"kb": b"a", "vb": b"a2", **at(3, 2)},
        {"kb": None, "vb": b"n3", **at(4, 3)},
        {"kb": b"b", "vb": b"b4", **at(0, 4)},
        {"kb": b"a", "vb": b"a5", **at(1, 5)},
    )
    out = last_per_key(table)
    assert list(zip(out.column("kb").to_pylist(), out.column("vb").to_pylist(), strict=True)) == [
        (b"a", b"a2"), (b"b", b"b0"), (None, b"n3"),
    ]


def test_last_per_key_by_another_column_and_of_no_rows():
    """The key column is a parameter; a table without rows comes back as it is."""
    table = _rows(
        {"kb": b"x", "vb": b"v", **at(2, 0)},
        {"kb": b"y", "vb": b"v", **at(1, 1)},
        {"kb": b"z", "vb": b"w", **at(1, 2)},
    )
    assert sorted(last_per_key(table, "vb").column("kb").to_pylist()) == [b"x", b"z"]
    empty = table.slice(0, 0)
    assert last_per_key(empty).num_rows == 0
    assert last_per_key(empty).schema.equals(table.schema)


def test_last_rows_by_one_key_and_by_several():
    """One key column gives its values as keys; several give tuples."""
    table = rows_table(
        [("kb", pa.binary()), ("side", pa.int8()), ("vb", pa.binary())],
        [
            {"kb": b"k", "side": 1, "vb": b"r2", **at(2, 5)},
            {"kb": b"k", "side": 0, "vb": b"l1", **at(1, 0)},
            {"kb": b"k", "side": 1, "vb": b"r1", **at(2, 4)},
        ],
    )
    assert last_rows(table, "kb") == {b"k": {"kb": b"k", "side": 1, "vb": b"r2", **at(2, 5)}}
    assert {k: r["vb"] for k, r in last_rows(table, "kb", "side").items()} == {(b"k", 0): b"l1", (b"k", 1): b"r2"}

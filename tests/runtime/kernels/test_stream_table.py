"""Stream-table join: each stream record meets the table as of its ordering key."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.stream_table import SCHEMA, stream_table_join

from .rows import at, cb, rows_table

_FIELDS = [("kind", pa.int8()), ("kb", pa.binary()), ("vb", pa.binary()), ("sk", pa.binary()), ("sv", pa.binary())]
K1, K2 = cb(1), cb(2)
TABLE, STREAM = 0, 1


def _change(kb: bytes, value: bytes | None, ts: int, off: int, **order) -> dict:
    return {"kind": TABLE, "kb": kb, "vb": value, "sk": None, "sv": None, **at(ts, off, src=1, **order)}


def _record(kb: bytes, n: int, ts: int, off: int, **order) -> dict:
    return {"kind": STREAM, "kb": kb, "vb": None, "sk": cb(f"s{n}"), "sv": cb(n), **at(ts, off, **order)}


def _joined(n: int, table_value: bytes | None, ts: int, off: int, **order) -> dict:
    return {"sk": cb(f"s{n}"), "sv": cb(n), "tv": table_value, **at(ts, off, **order)}


def _run(stores, batch_id: int, *rows: dict) -> list[dict]:
    out = stores.run(stream_table_join, rows_table(_FIELDS, list(rows)), ("mirror",), batch_id)
    assert out.schema.equals(SCHEMA)
    return out.to_pylist()


def test_stream_record_meets_the_table_as_of_its_ordering_key(stores):
    """A table change earlier in the batch counts, a later one does not (a tie on the
    timestamp goes by the rest of the ordering key); a key without a row meets none.
    The output is in the ordering key's order."""
    assert _run(
        stores, 0,
        _record(K1, 4, 25, 4),
        _change(K1, cb("us"), 20, 1),
        _record(K1, 1, 5, 1),
        _record(K1, 3, 15, 3),
        _change(K1, cb("eu"), 10, 0),
        _record(K2, 2, 12, 2),
        _record(K1, 5, 20, 0, src=0),
    ) == [
        _joined(1, None, 5, 1), _joined(2, None, 12, 2), _joined(3, cb("eu"), 15, 3),
        _joined(5, cb("eu"), 20, 0), _joined(4, cb("us"), 25, 4),
    ]


def test_table_carried_to_the_next_batches(stores):
    """The table's last change of a batch is kept for the next; a delete too."""
    _run(stores, 0, _change(K1, cb("eu"), 10, 0), _change(K1, cb("us"), 11, 1), _change(K2, cb("x"), 12, 2))
    assert _run(stores, 1, _record(K1, 1, 40, 5), _change(K1, None, 41, 3), _record(K1, 2, 42, 6),
                _record(K2, 3, 43, 7)) == [
        _joined(1, cb("us"), 40, 5), _joined(2, None, 42, 6), _joined(3, cb("x"), 43, 7),
    ]
    assert _run(stores, 2, _record(K1, 4, 50, 8)) == [_joined(4, None, 50, 8)]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again reads the table as it was before it."""
    _run(stores, 0, _change(K1, cb("eu"), 10, 0))
    batch = [_record(K1, 1, 20, 1), _change(K1, cb("us"), 21, 1), _record(K1, 2, 22, 2)]
    first = _run(stores, 1, *batch)
    assert first == [_joined(1, cb("eu"), 20, 1), _joined(2, cb("us"), 22, 2)]
    assert _run(stores, 1, *batch) == first
    assert _run(stores, 2, _record(K1, 3, 30, 3)) == [_joined(3, cb("us"), 30, 3)]

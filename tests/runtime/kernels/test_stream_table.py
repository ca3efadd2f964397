"""Stream-table join: each stream record meets the table as of its ordering key."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablestream.runtime.kernels.stream_table import SCHEMA, schema, stream_table_join

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


def test_stream_key_and_value_pass_through_as_they_came(stores):
    """The stream record's key and value reach the output with their own Arrow types
    (here a timestamp, a decimal and a map), untouched; the table value leaves decoded
    when the kernel is given its type."""
    when = pa.timestamp("us", tz="UTC")
    value_type = pa.struct([("at", when), ("price", pa.decimal128(10, 2)), ("tags", pa.map_(pa.string(), pa.int64()))])
    fields = [("kind", pa.int8()), ("kb", pa.binary()), ("vb", pa.binary()), ("sk", pa.int64()), ("sv", value_type)]
    sent = {"at": datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC), "price": Decimal("12.34"), "tags": [("a", 1)]}
    table = rows_table(fields, [
        {"kind": TABLE, "kb": K1, "vb": b'{"v":{"name":"eu","n":7}}', "sk": None, "sv": None, **at(10, 0, src=1)},
        {"kind": STREAM, "kb": K1, "vb": None, "sk": 41, "sv": sent, **at(11, 0)},
        {"kind": STREAM, "kb": K2, "vb": None, "sk": 42, "sv": None, **at(12, 1)},
    ])
    table_type = pa.struct([("name", pa.string()), ("n", pa.int64())])
    out = stores.run(stream_table_join, table, ("mirror",), 0, table_type=table_type)
    assert out.schema.equals(schema(pa.int64(), value_type, table_type))
    assert out.to_pylist() == [
        {"sk": 41, "sv": {**sent, "tags": [("a", 1)]}, "tv": {"name": "eu", "n": 7}, **at(11, 0)},
        {"sk": 42, "sv": None, "tv": None, **at(12, 1)},
    ]


def _reference(batches: list[list[dict]]) -> list[list[tuple]]:
    """Each batch's output, one row at a time: the table as of each record."""
    table: dict[bytes, bytes | None] = {}
    outputs = []
    for rows in batches:
        out = []
        for row in sorted(rows, key=lambda r: tuple(r[c] for c in ("o_ts", "o_src", "o_part", "o_off", "o_idx"))):
            if row["kind"] == TABLE:
                table[row["kb"]] = row["vb"]
            else:
                out.append((row["sv"], table.get(row["kb"]), row["o_off"]))
        outputs.append(out)
    return outputs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.integers(0, 5), st.booleans()),
                         max_size=14), min_size=1, max_size=3))
def test_as_a_row_at_a_time(tmp_path_factory, batches):
    """Random batches of table changes (deletes among them) and stream records over a
    few keys give, batch after batch, what applying them one at a time in the ordering
    key's order gives."""
    from .rows import Stores

    stores = Stores(tmp_path_factory.mktemp("st"))
    offsets = iter(range(10_000))
    made = []
    for b in batches:
        rows = []
        for is_change, key, ts, deletes in b:
            off = next(offsets)
            if is_change:
                rows.append(_change(cb(key), None if deletes else cb(f"t{off}"), ts, off))
            else:
                rows.append(_record(cb(key), off, ts, off))
        made.append(rows)
    expected = _reference(made)
    for batch_id, rows in enumerate(made):
        out = stores.run(stream_table_join, rows_table(_FIELDS, rows), ("mirror",), batch_id).to_pylist()
        assert [(r["sv"], r["tv"], r["o_off"]) for r in out] == expected[batch_id]

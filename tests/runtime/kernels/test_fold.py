"""A user's reduce or aggregate per group, the callables run in the ordering key's
order, the retraction of each source change before its addition."""

from __future__ import annotations

import json

import pyarrow as pa

from tablestream.runtime.kernels.fold import SCHEMA, FoldKernel

from .rows import at, cb, rows_table

_FIELDS = [("gkb", pa.binary()), ("sign", pa.int32()), ("vj", pa.string()), ("skb", pa.binary()), ("gkj", pa.string())]
EU, US = cb("eu"), cb("us")


def _row(group: str, sign: int, value, source: str, ts: int, off: int) -> dict:
    return {"gkb": cb(group), "sign": sign, "vj": json.dumps(value), "skb": cb(source), "gkj": json.dumps(group),
            **at(ts, off)}


def _run(stores, kernel: FoldKernel, batch_id: int, *rows: dict, store: str = "fold") -> list[dict]:
    out = stores.run(kernel, rows_table(_FIELDS, list(rows)), (store,), batch_id)
    assert out.schema.equals(SCHEMA)
    return sorted(out.to_pylist(), key=lambda r: r["gkb"])


def _change(gkb: bytes, old: str | None, new: str | None, ts: int) -> dict:
    return {"gkb": gkb, "old": old, "new": new, "ts": ts}


def _names(calls: list) -> FoldKernel:
    """An aggregate of the names in a group, recording each call."""

    def add(key, value, agg, source):
        calls.append(("add", key, value["name"], source))
        return [*agg, value["name"]]

    def subtract(key, value, agg, source):
        calls.append(("sub", key, value["name"], source))
        rest = [n for n in agg if n != value["name"]]
        return rest or None

    return FoldKernel(initializer=list, adder=add, subtractor=subtract, reduce=False, adder_arity=4,
                      subtractor_arity=4)


def test_aggregate_runs_the_retraction_before_the_addition(stores):
    """Rows arrive out of order: the callables run by the ordering key, a change's
    retraction before its addition; a group left by its source key takes it in the
    same order; the initializer starts a new group."""
    calls: list = []
    kernel = _names(calls)
    assert _run(stores, kernel, 0,
                _row("eu", 1, {"name": "b"}, "k2", 11, 1),
                _row("eu", 1, {"name": "a"}, "k1", 10, 0)) == [_change(EU, None, '["a","b"]', 11)]
    assert calls == [("add", "eu", "a", "k1"), ("add", "eu", "b", "k2")]
    calls.clear()
    assert _run(stores, kernel, 1,
                _row("us", 1, {"name": "b"}, "k2", 21, 3),
                _row("eu", 1, {"name": "c"}, "k1", 20, 2),
                _row("eu", -1, {"name": "b"}, "k2", 21, 3),
                _row("eu", -1, {"name": "a"}, "k1", 20, 2)) == [
        _change(EU, '["a","b"]', '["c"]', 21), _change(US, None, '["b"]', 21),
    ]
    assert calls == [("sub", "eu", "a", "k1"), ("add", "eu", "c", "k1"), ("sub", "eu", "b", "k2"),
                     ("add", "us", "b", "k2")]


def test_aggregate_deleted_when_the_subtractor_returns_none(stores):
    """A null aggregate deletes the group; a retraction from a missing group is
    skipped; the next addition starts from the initializer again."""
    calls: list = []
    kernel = _names(calls)
    _run(stores, kernel, 0, _row("eu", 1, {"name": "a"}, "k1", 10, 0))
    assert _run(stores, kernel, 1, _row("eu", -1, {"name": "a"}, "k1", 10, 1)) == [_change(EU, '["a"]', None, 10)]
    calls.clear()
    assert _run(stores, kernel, 2,
                _row("eu", -1, {"name": "x"}, "k9", 30, 2),
                _row("eu", 1, {"name": "d"}, "k1", 31, 3)) == [_change(EU, None, '["d"]', 31)]
    assert calls == [("add", "eu", "d", "k1")]


def test_deleted_aggregate_takes_the_deletions_timestamp(stores):
    """A deletion's timestamp is the larger of the change's and the aggregate's, as
    for every other change of the aggregate."""
    kernel = _names([])
    _run(stores, kernel, 0, _row("eu", 1, {"name": "a"}, "k1", 10, 0))
    assert _run(stores, kernel, 1, _row("eu", -1, {"name": "a"}, "k1", 20, 1)) == [_change(EU, '["a"]', None, 20)]


def test_reduce_and_the_three_argument_aggregate(stores):
    """A reduce takes (aggregate, value) and starts from the first value; an aggregate
    of arity 3 gets no source key. The timestamp is the largest seen; an unchanged
    aggregate emits nothing but is stored with the later timestamp."""
    total = FoldKernel(initializer=None, adder=lambda agg, v: agg + v, subtractor=lambda agg, v: agg - v,
                       reduce=True, adder_arity=2, subtractor_arity=2)
    count = FoldKernel(initializer=lambda: 0, adder=lambda key, v, agg: agg + 1, subtractor=lambda key, v, agg: agg - 1,
                       reduce=False, adder_arity=3, subtractor_arity=3)
    assert _run(stores, total, 0, _row("eu", 1, 3, "k1", 10, 0), _row("eu", 1, 4, "k2", 12, 1)) == [
        _change(EU, None, "7", 12)]
    assert _run(stores, total, 1, _row("eu", 1, 5, "k1", 11, 2), _row("eu", -1, 3, "k1", 11, 2)) == [
        _change(EU, "7", "9", 12)]
    assert _run(stores, total, 2, _row("eu", 1, 0, "k3", 13, 3)) == []
    with stores.session("fold", 3) as session:
        assert session.get([EU]) == [b"\x00" * 7 + b"\x0d" + b"9"]
    assert _run(stores, count, 0, _row("eu", 1, "x", "k1", 1, 0), _row("eu", 1, "y", "k2", 2, 1), store="count") == [
        _change(EU, None, "2", 2)]


def test_replayed_batch_gives_the_same_rows(stores):
    """A batch run again starts from the aggregates as they were before it."""
    kernel = _names([])
    _run(stores, kernel, 0, _row("eu", 1, {"name": "a"}, "k1", 10, 0))
    batch = [_row("eu", 1, {"name": "b"}, "k2", 20, 1), _row("us", 1, {"name": "c"}, "k3", 21, 2)]
    first = _run(stores, kernel, 1, *batch)
    assert first == [_change(EU, '["a"]', '["a","b"]', 20), _change(US, None, '["c"]', 21)]
    assert _run(stores, kernel, 1, *batch) == first
    assert _run(stores, kernel, 2, _row("eu", -1, {"name": "a"}, "k1", 30, 3)) == [
        _change(EU, '["a","b"]', '["b"]', 30)]

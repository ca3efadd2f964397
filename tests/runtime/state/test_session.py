"""Store sessions: replay-exact reads, per-key and bulk writes, prefix reads, locking."""

from __future__ import annotations

import multiprocessing
import shutil
import time

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablestream.runtime.state import StoreError, StoreLayout, StoreSession

from .stores import dump, run


def test_get_and_put_returns_values_before_the_batch(layout):
    assert run(layout, 0, [b"a", b"b"], [b"1", b"2"]) == [None, None]
    assert run(layout, 1, [b"a", b"c"], [b"10", b"3"]) == [b"1", None]
    assert run(layout, 2, [b"b", b"a"], [None, b"11"]) == [b"2", b"10"]
    assert dump(layout, 3) == {b"a": b"11", b"c": b"3"}


def test_replayed_batch_reads_the_store_as_before_and_leaves_it_as_one_run(layout):
    run(layout, 0, [b"a", b"b"], [b"1", b"2"])
    first = run(layout, 1, [b"a", b"b", b"c"], [b"10", None, b"3"])
    after_first = dump(layout, 2)
    replay = run(layout, 1, [b"a", b"b", b"c"], [b"10", None, b"3"])
    assert first == replay == [b"1", b"2", None]
    assert dump(layout, 2) == after_first == {b"a": b"10", b"c": b"3"}


def test_prefix_reads_see_entries_of_a_replayed_batch_as_before(layout):
    run(layout, 0, [b"g1|a", b"g1|b", b"g2|c"], [b"1", b"2", b"3"])
    run(layout, 1, [b"g1|a", b"g1|d"], [None, b"4"])
    with StoreSession(layout, "s", 0, 1) as replaying:
        assert list(replaying.prefix_items(b"g1|", before=True)) == [(b"g1|a", b"1"), (b"g1|b", b"2")]
        assert list(replaying.prefix_items(b"g1|")) == [(b"g1|b", b"2"), (b"g1|d", b"4")]
        replaying.put([b"g1|e"], [b"5"])
        assert list(replaying.prefix_items(b"g1|")) == [(b"g1|b", b"2"), (b"g1|d", b"4"), (b"g1|e", b"5")]


def test_get_sees_this_batchs_writes_and_get_before_does_not(layout):
    run(layout, 0, [b"a"], [b"1"])
    with StoreSession(layout, "s", 0, 1) as session:
        session.put([b"a", b"b"], [b"2", b"9"])
        assert session.get([b"a", b"b", b"z"]) == [b"2", b"9", None]
        assert session.get_before([b"a", b"b", b"z"]) == [b"1", None, None]


def _hold(layout, seconds, started):
    with StoreSession(layout, "s", 0, 0) as session:
        started.set()
        time.sleep(seconds)
        session.put([b"held"], [b"1"])


def test_two_processes_never_hold_one_store_at_once(layout):
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    holder = ctx.Process(target=_hold, args=(layout, 1.5, started))
    holder.start()
    assert started.wait(30)
    began = time.monotonic()
    with StoreSession(layout, "s", 0, 1) as session:
        waited = time.monotonic() - began
        assert session.get([b"held"]) == [b"1"]
    holder.join(30)
    assert holder.exitcode == 0
    assert waited > 0.5


def test_a_dropped_entry_reads_as_missing_within_the_batch(layout):
    run(layout, 0, [b"a"], [b"1"])
    run(layout, 1, [b"a"], [None])  # a tombstone entry
    with StoreSession(layout, "s", 0, 2) as session:
        session.put([b"a"], [None])  # nothing before this batch: the entry is dropped
        assert session.get([b"a"]) == [None]
        assert session.get_and_put([b"a"], [b"2"]) == [None]
    assert dump(layout, 3) == {b"a": b"2"}



# ------------------------------------------------------------- Arrow (bulk) primitive
def bulk_run(layout, batch, keys, values, store="s", partition=0):
    with StoreSession(layout, store, partition, batch) as session:
        return session.get_and_put_all(pa.array(keys, pa.binary()), pa.array(values, pa.binary())).to_pylist()


def known_before_run(layout, batch, keys, values):
    """A batch written with ``put_all``, its values before read with ``get_before_all``."""
    with StoreSession(layout, "s", 0, batch) as session:
        keys = pa.array(keys, pa.binary())
        before = session.get_before_all(keys)
        session.put_all(keys, pa.array(values, pa.binary()), before)
        return before.to_pylist()


_batches = st.lists(
    st.tuples(
        st.dictionaries(st.sampled_from([b"a", b"b", b"c", b"d"]), st.one_of(st.none(), st.sampled_from([b"1", b"22", b""]))),
        st.booleans(),  # run the batch twice (a replay)
    ),
    max_size=8,
)


@pytest.mark.parametrize("bulk_write", [bulk_run, known_before_run], ids=["get_and_put_all", "put_all"])
@settings(max_examples=40, deadline=None)
@given(_batches)
def test_bulk_writes_read_write_and_replay_as_get_and_put(tmp_path_factory, bulk_write, batches):
    root = tmp_path_factory.mktemp("bulk")
    per_key = StoreLayout(root / "a" / "local", root / "a" / "durable", snapshot_every=3)
    bulk = StoreLayout(root / "b" / "local", root / "b" / "durable", snapshot_every=3)
    for batch_id, (changes, replay) in enumerate(batches):
        keys, values = list(changes), list(changes.values())
        for _ in range(2 if replay else 1):
            assert bulk_write(bulk, batch_id, keys, values) == run(per_key, batch_id, keys, values)
    end = len(batches)
    assert dump(bulk, end) == dump(per_key, end)
    # The changelogs written by the bulk path restore the store.
    shutil.rmtree(bulk.db_dir("s", 0))
    assert dump(bulk, end) == dump(per_key, end)


def test_put_all_is_the_only_write_of_its_session(layout):
    with StoreSession(layout, "s", 0, 0) as session:
        session.put_all(pa.array([b"a"]), pa.array([b"1"]), pa.nulls(1, pa.binary()))
        with pytest.raises(StoreError, match="only access"):
            session.put_all(pa.array([b"b"]), pa.array([b"1"]), pa.nulls(1, pa.binary()))
    with StoreSession(layout, "s", 0, 1) as session:
        session.get([b"a"])
        with pytest.raises(StoreError, match="put_all must be the only write of a store session"):
            session.put_all(pa.array([b"a"]), pa.array([b"2"]), pa.array([b"1"]))
    assert dump(layout, 2) == {b"a": b"1"}


def test_get_and_put_all_is_the_only_access_of_its_session(layout):
    with StoreSession(layout, "s", 0, 0) as session:
        session.get_and_put_all(pa.array([b"a"]), pa.array([b"1"]))
        with pytest.raises(StoreError, match="only access"):
            session.get([b"a"])
    with StoreSession(layout, "s", 0, 1) as session:
        session.get([b"a"])
        with pytest.raises(StoreError, match="only access"):
            session.get_and_put_all(pa.array([b"a"]), pa.array([b"2"]))



_prefixed_batches = st.lists(
    st.tuples(
        st.dictionaries(
            st.sampled_from([b"a|1", b"a|22", b"ab|3", b"b|4", b"b|", b"c|5"]),
            st.one_of(st.none(), st.sampled_from([b"x", b"yy", b""])),
        ),
        st.booleans(),  # run the batch twice (a replay)
    ),
    min_size=1,
    max_size=6,
)


def _readers(root, batches):
    """Runs each batch, then yields a session of the batch itself (a replay reads as
    before it) where the batch is replayed, and of the next batch."""
    layout = StoreLayout(root / "local", root / "durable", snapshot_every=3)
    for batch_id, (changes, replay) in enumerate(batches):
        run(layout, batch_id, list(changes), list(changes.values()))
        for reader in (batch_id, batch_id + 1) if replay else (batch_id + 1,):
            with StoreSession(layout, "s", 0, reader) as session:
                yield session


@settings(max_examples=40, deadline=None)
@given(_prefixed_batches, st.lists(st.sampled_from([b"a|", b"a", b"b|", b"c|", b"z|"]), max_size=4))
def test_prefix_scan_before_finds_what_prefix_items_finds(tmp_path_factory, batches, prefixes):
    for session in _readers(tmp_path_factory.mktemp("scan"), batches):
        expected = [(i, k[len(p):], v) for i, p in enumerate(prefixes) for k, v in session.prefix_items(p, before=True)]
        owner, keys, values = session.prefix_scan_before(prefixes)
        assert list(zip(owner.tolist(), keys.to_pylist(), values.to_pylist(), strict=True)) == expected


def test_prefix_scan_before_comes_before_the_sessions_writes(layout):
    with StoreSession(layout, "s", 0, 0) as session:
        session.put([b"a|1"], [b"1"])
        with pytest.raises(StoreError, match="prefix_scan_before must come before the session's writes"):
            session.prefix_scan_before([b"a|"])


@settings(max_examples=40, deadline=None)
@given(_prefixed_batches, st.lists(st.sampled_from([b"a|1", b"a|22", b"b|4", b"q"]), max_size=5))
def test_get_before_all_reads_what_get_before_reads(tmp_path_factory, batches, keys):
    for session in _readers(tmp_path_factory.mktemp("before"), batches):
        assert session.get_before_all(pa.array(keys, pa.binary())).to_pylist() == session.get_before(keys)


def test_get_before_all_may_precede_get_and_put_all_and_comes_before_writes(layout):
    run(layout, 0, [b"a"], [b"1"])
    with StoreSession(layout, "s", 0, 1) as session:
        assert session.get_before_all(pa.array([b"a", b"b"])).to_pylist() == [b"1", None]
        assert session.get_and_put_all(pa.array([b"a"]), pa.array([b"2"])).to_pylist() == [b"1"]
        with pytest.raises(StoreError, match="only access"):
            session.get_before_all(pa.array([b"a"]))
    with StoreSession(layout, "s", 0, 2) as session:
        session.put([b"a"], [b"3"])
        with pytest.raises(StoreError, match="get_before_all must come before the session's writes"):
            session.get_before_all(pa.array([b"a"]))
    assert dump(layout, 3) == {b"a": b"3"}


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from([b"g1|", b"g1|a", b"g1|b", b"g1|\xff", b"g0|z", b"g2|"]),
                       st.one_of(st.none(), st.binary(min_size=1, max_size=2))), max_size=8),
    st.lists(st.tuples(st.sampled_from([b"g1|a", b"g1|c", b"g1|\xff", b"g1|\xff\x00", b"g2|a"]),
                       st.one_of(st.none(), st.binary(min_size=1, max_size=2))), max_size=6),
)
def test_prefix_items_in_descending_order_are_the_ascending_ones_reversed(tmp_path_factory, stored, written):
    """Stored keys, this batch's writes (deletes among them) not yet committed, as they
    are now and as they were before the batch: the descending walk gives exactly the
    ascending one, reversed."""
    layout = StoreLayout(tmp_path_factory.mktemp("l"), tmp_path_factory.mktemp("d"))
    keys = list(dict(stored))
    run(layout, 0, keys, [dict(stored)[k] for k in keys])
    with StoreSession(layout, "s", 0, 1) as session:
        new = dict(written)
        session.put(list(new), list(new.values()))
        for before in (False, True):
            ascending = list(session.prefix_items(b"g1|", before=before))
            assert list(session.prefix_items(b"g1|", before=before, reverse=True)) == ascending[::-1]

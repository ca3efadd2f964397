"""Stores kept open between the batches of a running query, and handed over on request."""

from __future__ import annotations

import fcntl
import multiprocessing
import os
import shutil
import threading
import time

import pytest

from tablestream.runtime.state import NEWEST, StoreLayout, StoreSession, Version, process_keeper
from tablestream.runtime.state import keeper as keeper_module
from tablestream.runtime.state import rocks as rocks_module


@pytest.fixture(autouse=True)
def _nothing_kept_after():
    yield
    process_keeper().close_all()
    assert process_keeper().kept() == []


@pytest.fixture
def opens(monkeypatch):
    """The databases opened in this process, by directory."""
    opened: list[str] = []
    real = rocks_module.RocksStore.__init__

    def counting(self, path):
        opened.append(path.name if path.name != "db" else f"{path.parent.parent.name}/{path.parent.name}")
        real(self, path)

    monkeypatch.setattr(rocks_module.RocksStore, "__init__", counting)
    return opened


def write(layout, batch, keys, values, *, keep=None, expected=NEWEST, partition=0) -> Version | None:
    with StoreSession(layout, "s", partition, batch, expected=expected, commit=f"c{batch}", keep=keep) as session:
        session.get_and_put(keys, values)
    return session.written


def read(layout, batch, keys, *, keep=None, expected=NEWEST):
    with StoreSession(layout, "s", 0, batch, expected=expected, commit=f"c{batch}", keep=keep) as session:
        return session.get(keys)


def test_a_store_stays_open_between_batches_of_one_run_and_opens_again_in_the_next(layout, opens):
    v0 = write(layout, 0, [b"a", b"b"], [b"1", b"2"], keep="run-1")
    assert process_keeper().kept() == [layout.db_dir("s", 0)]
    v1 = write(layout, 1, [b"a"], [b"3"], keep="run-1", expected=v0)
    assert read(layout, 2, [b"a", b"b"], keep="run-1", expected=v1) == [b"3", b"2"]
    assert opens == ["s/0"]
    # Another run (a restart) closes the kept database and opens the working copy again.
    assert read(layout, 2, [b"a", b"b"], keep="run-2", expected=v1) == [b"3", b"2"]
    assert opens == ["s/0", "s/0"]


def test_a_session_without_a_token_closes_its_store(layout, opens):
    v0 = write(layout, 0, [b"a"], [b"1"])
    assert process_keeper().kept() == []
    assert read(layout, 1, [b"a"], expected=v0) == [b"1"]
    assert opens == ["s/0", "s/0"]


def test_a_failed_session_closes_its_store_and_the_next_reads_the_version_before(layout, opens):
    v0 = write(layout, 0, [b"a"], [b"1"], keep="run-1")
    with pytest.raises(RuntimeError, match="kernel failed"), StoreSession(
        layout, "s", 0, 1, expected=v0, commit="c1", keep="run-1"
    ) as session:
        session.put([b"a"], [b"2"])
        raise RuntimeError("kernel failed")
    assert process_keeper().kept() == []
    assert read(layout, 1, [b"a"], keep="run-1", expected=v0) == [b"1"]
    assert opens == ["s/0", "s/0"]


def test_a_kept_store_whose_directory_was_removed_is_rebuilt_from_its_changelogs(layout, opens):
    v0 = write(layout, 0, [b"a", b"b"], [b"1", b"2"], keep="run-1")
    v1 = write(layout, 1, [b"b"], [None], keep="run-1", expected=v0)
    shutil.rmtree(layout.local_dir)
    assert read(layout, 2, [b"a", b"b"], keep="run-1", expected=v1) == [b"1", None]
    assert opens == ["s/0", "s/0"]


def test_the_least_recently_used_idle_stores_close_beyond_the_limit(layout, monkeypatch):
    monkeypatch.setattr(keeper_module, "KEPT_AT_MOST", 2)
    for partition in range(3):
        write(layout, 0, [b"a"], [b"1"], keep="run-1", partition=partition)
    assert process_keeper().kept() == [layout.db_dir("s", 1), layout.db_dir("s", 2)]


def test_a_store_no_session_used_for_a_while_closes(layout):
    write(layout, 0, [b"a"], [b"1"], keep="run-1", partition=0)
    time.sleep(0.3)
    write(layout, 0, [b"a"], [b"1"], keep="run-1", partition=1)
    process_keeper().close_idle(0.2)
    assert process_keeper().kept() == [layout.db_dir("s", 1)]
    with open(layout.lock_file("s", 0), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # its lock released
        fcntl.flock(lock, fcntl.LOCK_UN)


def test_a_kept_store_flushes_its_memtable_once_it_holds_more_than_the_limit(layout, monkeypatch):
    write(layout, 0, [b"a"], [b"1"], keep="run-1")
    assert sorted(layout.db_dir("s", 0).glob("*.sst")) == []  # the batch is in the memtable
    monkeypatch.setattr(keeper_module, "FLUSH_ABOVE", 0)
    write(layout, 1, [b"b"], [b"2"], keep="run-1")
    assert len(list(layout.db_dir("s", 0).glob("*.sst"))) == 1
    assert read(layout, 2, [b"a", b"b"], keep="run-1") == [b"1", b"2"]


def test_a_store_in_use_when_asked_for_is_handed_over_when_its_session_ends(layout):
    v0 = write(layout, 0, [b"a"], [b"1"], keep="run-1")
    found: list = []
    with StoreSession(layout, "s", 0, 1, expected=v0, commit="c1", keep="run-1") as session:
        # Another session (here a thread; in a query, another task) asks for the store.
        other = threading.Thread(target=lambda: found.append(read(layout, 2, [b"a"])))
        other.start()
        time.sleep(0.3)
        assert found == []
        session.put([b"a"], [b"2"])
    other.join(30)
    assert found == [[b"2"]]
    assert process_keeper().kept() == []


def _take_over(layout: StoreLayout, expected: Version, done) -> None:
    """In another process: batch 1 on the store the test's process keeps open."""
    done.put(write(layout, 1, [b"a", b"c"], [b"10", b"3"], expected=expected))


def test_another_process_asks_for_a_kept_store_and_gets_it(layout, opens):
    v0 = write(layout, 0, [b"a", b"b"], [b"1", b"2"], keep="run-1")
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Queue()
    other = ctx.Process(target=_take_over, args=(layout, v0, done))
    other.start()
    v1 = done.get(timeout=60)
    other.join(30)
    assert other.exitcode == 0
    assert v1 == Version(1, "c1")
    assert process_keeper().kept() == []
    assert read(layout, 2, [b"a", b"b", b"c"], keep="run-1", expected=v1) == [b"10", b"2", b"3"]
    assert opens == ["s/0", "s/0"]


def _keep_and_die(layout: StoreLayout, done) -> None:
    """In another process: two batches kept open (their writes in RocksDB's memtable
    only), then the process ends without closing the store (as a killed worker)."""
    v0 = write(layout, 0, [b"a", b"b"], [b"1", b"2"], keep="run-1")
    v1 = write(layout, 1, [b"a"], [b"3"], keep="run-1", expected=v0)
    done.put(v1)
    time.sleep(0.5)  # the queue's thread hands the version over
    os._exit(0)


def test_a_store_kept_by_a_process_that_died_is_caught_up_from_its_changelogs(layout):
    ctx = multiprocessing.get_context("spawn")
    done = ctx.Queue()
    other = ctx.Process(target=_keep_and_die, args=(layout, done))
    other.start()
    v1 = done.get(timeout=60)
    other.join(30)
    assert other.exitcode == 0
    with open(layout.lock_file("s", 0), "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # released with the process
        fcntl.flock(lock, fcntl.LOCK_UN)
    assert read(layout, 2, [b"a", b"b"], expected=v1) == [b"3", b"2"]

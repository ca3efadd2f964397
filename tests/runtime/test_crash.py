"""Crash test: an application killed with SIGKILL at random moments and restarted ends
with outputs identical to an uninterrupted run, and no output record twice."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest

from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig

pytestmark = pytest.mark.spark

APP = Path(__file__).with_name("crash_app.py")
RECORDS = 100_000
PER_APPEND = 5_000


def _produce(home: Path) -> None:
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("events", partitions=2))
    rng = random.Random(7)
    for start in range(0, RECORDS, PER_APPEND):
        n = min(PER_APPEND, RECORDS - start)
        keys = [b"k%d" % rng.randrange(20_000) for _ in range(n)]
        values = [
            None if rng.random() < 0.05 else b'{"grp": "g%d", "amount": %d}' % (rng.randrange(50), rng.randrange(100))
            for _ in range(n)
        ]
        store.append("events", pa.table({"key": keys, "value": values, "timestamp": list(range(start, start + n))}))


def _run(home: Path, kill_after: float | None = None) -> int | None:
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(home)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if kill_after is None:
        _, err = proc.communicate(timeout=1800)
        assert proc.returncode == 0, err.decode()[-3000:]
        return proc.returncode
    time.sleep(kill_after)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)  # the driver, its JVM and Python workers
    proc.wait(60)
    return proc.returncode


def _outputs(home: Path):
    store = EmbeddedStore(home)
    records = [(r.key, r.value, r.timestamp, r.partition, r.offset) for r in store.consume("sums-out")]
    from deltalake import DeltaTable

    tables = {}
    for name in ("counts", "sums"):
        changes = DeltaTable(str(home / "apps" / "crash-app" / "tables" / name)).to_pyarrow_table()
        latest: dict = {}
        for row in sorted(changes.to_pylist(), key=lambda r: (r["batch"], r["seq"])):
            latest[row["key"]] = row["value"]
        tables[name] = {k: v for k, v in latest.items() if v is not None}
        batches = changes.column("batch").to_pylist()
        keys = changes.column("key").to_pylist()
        assert len(set(zip(batches, keys, strict=True))) == len(keys), f"{name}: a key twice in one batch"
    return records, tables


def test_sigkill_at_random_moments_then_restart_gives_the_uninterrupted_outputs(tmp_path):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    _produce(reference)
    _produce(crashed)
    began = time.monotonic()
    _run(reference)
    duration = time.monotonic() - began
    rng = random.Random(11)
    for _ in range(5):
        _run(crashed, kill_after=rng.uniform(8, max(duration * 0.8, 10)))
    _run(crashed)
    expected_records, expected_tables = _outputs(reference)
    records, tables = _outputs(crashed)
    assert len(records) == len(set(records))
    assert records == expected_records
    assert tables == expected_tables
    assert len(expected_tables["counts"]) == 50 and len(expected_records) > 100

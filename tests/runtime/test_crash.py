"""Crash test: an application killed with SIGKILL during its first batch, then at random
moments, and restarted ends with outputs identical to an uninterrupted run, and no
output record twice; so does one killed or stopped while Spark writes its first offset
file."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
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


def _produce(home: Path, records: int = RECORDS, per_append: int = PER_APPEND) -> None:
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("events", partitions=2))
    rng = random.Random(7)
    for start in range(0, records, per_append):
        n = min(per_append, records - start)
        keys = [b"k%d" % rng.randrange(20_000) for _ in range(n)]
        values = [
            None if rng.random() < 0.05 else b'{"grp": "g%d", "amount": %d}' % (rng.randrange(50), rng.randrange(100))
            for _ in range(n)
        ]
        store.append("events", pa.table({"key": keys, "value": values, "timestamp": list(range(start, start + n))}))


def _run(
    home: Path, kill_after: float | None = None, *args: str, env: dict | None = None, after: Path | None = None
) -> int:
    """Run the application; with ``kill_after``, kill it then (counted from when the file
    ``after`` appears, if given) if it still runs. Its process group is killed at the end
    either way (the driver, its JVM, Python workers, and whatever else it started).
    Spark's scratch directories (its executor's copies of the jars, about 100 MB) go
    beside ``home``: a killed JVM leaves them behind."""
    proc = subprocess.Popen(
        [sys.executable, str(APP), str(home), *args],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**(os.environ if env is None else env), "SPARK_LOCAL_DIRS": str(home.parent / f"{home.name}-spark-scratch")},
    )
    try:
        if kill_after is None:
            _, err = proc.communicate(timeout=1800)
            assert proc.returncode == 0, err.decode()[-3000:]
        else:
            deadline = time.monotonic() + 600
            while after is not None and not after.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.01)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(kill_after)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
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


def test_sigkill_in_the_first_batch_and_at_random_moments_then_restart_gives_the_uninterrupted_outputs(tmp_path):
    reference, crashed = tmp_path / "reference", tmp_path / "crashed"
    _produce(reference)
    _produce(crashed)
    began = time.monotonic()
    _run(reference)
    duration = time.monotonic() - began
    rng = random.Random(11)
    checkpoint = crashed / "apps" / "crash-app" / "checkpoint"
    _run(crashed, kill_after=rng.uniform(0, 1), after=checkpoint / "offsets" / "0")
    assert not (checkpoint / "commits" / "0").exists()  # killed during the first batch
    for _ in range(5):
        _run(crashed, kill_after=rng.uniform(8, max(duration * 0.8, 10)))
    _run(crashed)
    expected_records, expected_tables = _outputs(reference)
    records, tables = _outputs(crashed)
    assert len(records) == len(set(records))
    assert records == expected_records
    assert tables == expected_tables
    assert len(expected_tables["counts"]) == 50 and len(expected_records) > 100


def _in_first_offset_file(tmp_path: Path, action: str) -> dict:
    """An environment in which Spark's writing of its first offset file is interrupted:
    Hadoop sets a checkpoint file's permissions by running ``chmod`` on the temporary
    file it writes before renaming it, so a ``chmod`` first on the PATH, given the
    temporary file of ``offsets/0``, either kills the application's process group
    (``kill``) or waits, holding the write open while the application stops (``stop``;
    its output away from the test's pipe, which would otherwise stay open as long)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    then = "kill -KILL 0" if action == "kill" else "exec sleep 600 >/dev/null 2>&1"
    chmod = bin_dir / "chmod"
    chmod.write_text(
        "#!/bin/sh\n"
        f'case "$2" in */checkpoint/offsets/.0.*.tmp) {then} ;; esac\n'
        f'exec {shutil.which("chmod")} "$@"\n'
    )
    chmod.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


@pytest.mark.parametrize("action", ["kill", "stop"])
def test_a_kill_or_stop_while_spark_writes_its_first_offset_file_then_restart_gives_the_uninterrupted_outputs(
    tmp_path, action
):
    """A first batch interrupted while Spark writes its offset file leaves that file's
    temporary copy in ``checkpoint/offsets``, and Spark refused to start from such a
    checkpoint (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY) until a start removed it."""
    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    for home in (reference, interrupted):
        _produce(home, records=2_000, per_append=250)
    two_batches = ("--records-per-batch", "1000")
    _run(reference, None, *two_batches)
    env = _in_first_offset_file(tmp_path, action)
    if action == "kill":
        assert _run(interrupted, 600, *two_batches, env=env) == -signal.SIGKILL
    else:
        _run(interrupted, None, "--stop-in-first-offsets", *two_batches, env=env)
    offsets = interrupted / "apps" / "crash-app" / "checkpoint" / "offsets"
    assert [p.name.split(".")[1] for p in offsets.iterdir() if p.name.endswith(".tmp")] == ["0"]
    assert not (offsets / "0").exists()

    _run(interrupted, None, *two_batches)
    expected_records, expected_tables = _outputs(reference)
    records, tables = _outputs(interrupted)
    assert records == expected_records
    assert tables == expected_tables
    assert len(expected_tables["counts"]) == 50 and len(expected_records) > 50

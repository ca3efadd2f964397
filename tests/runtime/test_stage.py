"""A store stage's task: its rows reach Spark before its stores commit, and the task
ends only after the commit, so a commit that fails fails the stage and leaves the
stores as they were."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tablestream.runtime.stage import StoreStage
from tablestream.runtime.state import StoreLayout, StoreSession

pytestmark = pytest.mark.spark


def _remember(fail: bool):
    def kernel(table: pa.Table, store: StoreSession) -> pa.Table:
        keys = table.column("k").combine_chunks()
        before = store.get_before_all(keys)
        store.put_all(keys, table.column("v").combine_chunks(), before)
        if fail:
            def broken() -> None:
                raise OSError("disk full")

            store.commit = broken  # the session's commit, run when the task's rows are out
        return pa.table({"k": keys, "before": before})

    return kernel


def _run(spark, layout: StoreLayout, batch_id: int, rows: list[tuple[bytes, bytes]], fail: bool = False):
    frame = spark.createDataFrame(rows, "k binary, v binary")
    stage = StoreStage(layout, "s", 1, batch_id)
    out = stage.run(frame, "k", _remember(fail), "k binary, before binary")
    return sorted((bytes(r.k), r.before and bytes(r.before)) for r in out.collect())


def test_a_failed_commit_fails_the_stage_and_writes_nothing(spark, tmp_path):
    layout = StoreLayout(tmp_path / "local", tmp_path / "durable")
    assert _run(spark, layout, 0, [(b"a", b"1"), (b"b", b"2")]) == [(b"a", None), (b"b", None)]
    with pytest.raises(Exception, match="disk full"):
        _run(spark, layout, 1, [(b"a", b"3")], fail=True)
    with StoreSession(layout, "s", 0, 1) as store:
        assert store.get([b"a", b"b"]) == [b"1", b"2"]  # nothing of batch 1 was written
    # Batch 1 again (its replay), then batch 2: batch 1 read and wrote as if it ran once.
    assert _run(spark, layout, 1, [(b"a", b"3")]) == [(b"a", b"1")]
    assert _run(spark, layout, 2, [(b"a", b"4"), (b"b", b"5")]) == [(b"a", b"3"), (b"b", b"2")]

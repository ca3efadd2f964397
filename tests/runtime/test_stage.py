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


def _placing():
    def kernel(table: pa.Table, store: StoreSession) -> pa.Table:
        """Each row's key, the state partition whose session got it, and the value the
        store held before (the second batch reads the first's)."""
        keys = table.column("k").combine_chunks()
        before = store.get_before_all(keys)
        store.put_all(keys, table.column("v").combine_chunks(), before)
        return pa.table({"k": keys, "p": pa.array([store.partition] * len(keys), pa.int32()), "before": before})

    return kernel


def test_a_spread_stage_serves_every_state_partition_in_fewer_tasks(spark, tmp_path):
    """A small batch's stage runs in as many tasks as Spark runs at once (2 here), or in
    one, each serving several of the 5 state partitions one after another: every row
    reaches the session of the partition its key hashes to, as in a stage of one task
    per partition, and the stores hold the same values after two batches."""
    rows = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(60)]
    again = [(f"k{i}".encode(), f"w{i}".encode()) for i in range(0, 60, 3)]
    expected = {
        bytes(r.k): r.p
        for r in spark.createDataFrame(rows, "k binary, v binary").selectExpr("k", "pmod(hash(k), 5) AS p").collect()
    }
    assert len(set(expected.values())) == 5
    outputs = {}
    for spread, one_task, tasks in ((True, False, 2), (False, False, 5), (True, True, 1)):
        layout = StoreLayout(tmp_path / f"local-{tasks}", tmp_path / f"durable-{tasks}")
        got = []
        for batch_id, batch in enumerate((rows, again)):
            stage = StoreStage(layout, "s", 5, batch_id, spread=spread, one_task=one_task)
            out = stage.run(spark.createDataFrame(batch, "k binary, v binary"), "k", _placing(),
                            "k binary, p int, before binary")
            assert out.rdd.getNumPartitions() == tasks
            got.append(sorted((bytes(r.k), r.p, r.before and bytes(r.before)) for r in out.collect()))
        assert [(k, p) for k, p, _ in got[0]] == sorted(expected.items())
        assert all(before is None for _, _, before in got[0])
        assert got[1] == sorted((k, expected[k], b"v" + k[1:]) for k, _ in again)
        outputs[tasks] = got
    assert outputs[2] == outputs[5] == outputs[1]


def test_a_stage_function_is_built_once_and_each_batch_tells_its_tasks_its_versions(spark, tmp_path):
    """The stages of an application share a memo: later batches reuse the first one's
    function, and their tasks open the store as of the version each batch names (read
    from its local property): batch 1 and its replay both read batch 0's value. A
    projection of the stage's output keeps every input column in the tasks."""
    from tablestream.runtime.state.files import StoreFiles

    layout = StoreLayout(tmp_path / "local", tmp_path / "durable")
    memo: dict = {}
    kernel = _remember(False)

    def run(batch_id: int, rows, versions):
        stage = StoreStage(layout, "s", 1, batch_id, versions=versions, memo=memo)
        out = stage.run(spark.createDataFrame(rows, "k binary, v binary"), "k", kernel, "k binary, before binary")
        return [(bytes(r.k), r.before and bytes(r.before)) for r in out.select("k", "before").collect()]

    assert run(0, [(b"a", b"1"), (b"b", b"2")], {}) == [(b"a", None), (b"b", None)]
    (first,) = StoreFiles(layout, "s", 0).changelogs()
    assert first.batch == 0 and first.commit
    assert run(1, [(b"a", b"3")], {"s": {0: first}}) == [(b"a", b"1")]
    assert run(1, [(b"a", b"4")], {"s": {0: first}}) == [(b"a", b"1")]  # the replay reads as batch 1 did
    assert len([key for key in memo if key[0] == "function"]) == 1


def test_a_stage_computed_in_another_thread_than_the_one_that_built_it_fails(spark, tmp_path):
    """A stage's tasks get the batch from a local property of the thread that built it:
    computed from a thread without it, the stage fails and says why."""
    import threading

    layout = StoreLayout(tmp_path / "local", tmp_path / "durable")
    out = StoreStage(layout, "s", 1, 0).run(
        spark.createDataFrame([(b"a", b"1")], "k binary, v binary"), "k", _remember(False), "k binary, before binary"
    )
    failed = []

    def compute():
        try:
            out.collect()
        except Exception as error:  # noqa: BLE001 - the test reads the error's text
            failed.append(str(error))

    thread = threading.Thread(target=compute)
    thread.start()
    thread.join()
    assert len(failed) == 1
    assert (
        "a store stage's task found no batch in the local property tablestream.stage.s: its DataFrame was "
        "computed in another thread than the one that built it"
    ) in failed[0]


def test_a_task_serving_several_partitions_serves_them_side_by_side_in_their_order():
    import threading

    from tablestream.runtime.stage import side_by_side

    both_running = threading.Barrier(2, timeout=10)  # broken if the two ran one after another

    def serve(partition: int, rows: pa.Table) -> list:
        both_running.wait()
        return [pa.record_batch({"p": [partition] * rows.num_rows})]

    served = [(3, pa.table({"k": [1, 2]})), (1, pa.table({"k": [5]}))]
    assert [b.column("p").to_pylist() for b in side_by_side(serve, served, 2)] == [[3, 3], [1]]


def test_a_failure_of_one_partition_served_side_by_side_is_raised_after_the_others_are_done():
    from tablestream.runtime.stage import side_by_side

    finished = []

    def serve(partition: int, rows: pa.Table) -> list:
        if partition == 0:
            raise OSError("disk full")
        finished.append(partition)
        return [pa.record_batch({"p": [partition]})]

    served = [(p, pa.table({"k": [p]})) for p in range(3)]
    with pytest.raises(OSError, match="disk full"):
        list(side_by_side(serve, served, 2))
    assert sorted(finished) == [1, 2]

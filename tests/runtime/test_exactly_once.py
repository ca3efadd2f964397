"""Replay, restore and locking of the keyed stores, through whole batches."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pytest
from rocksdict import Options, Rdict

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.runner import BatchRunner
from tablestream.runtime.state import StoreLayout
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

BATCHES = [
    [("u1", {"region": "eu", "score": 5}), ("u2", {"region": "us", "score": 7}), ("u3", {"region": "eu", "score": 1})],
    [("u1", {"region": "us", "score": 6}), ("u4", {"region": "apac", "score": 2})],
    [("u2", None), ("u3", {"region": "eu", "score": 9})],
    [("u5", {"region": "eu", "score": 4}), ("u1", None), ("u4", {"region": "eu", "score": 3})],
    [("u3", None), ("u6", {"region": "us", "score": 8})],
]


def topology():
    builder = StreamsBuilder()
    users = builder.table("users", value_schema="region STRING, score BIGINT")
    by_region = users.group_by(("region", "value"))
    by_region.count(materialized_as="users-per-region").to_stream().to("counts")
    by_region.max("score", materialized_as="best-score").to_stream().to("best")
    return builder.build()


def _run(spark, tmp_path, name, damage=None):
    outputs = []
    with TestDriver(topology(), spark=spark, batched=True, partitions=3, state_dir=tmp_path / name) as driver:
        users = driver.create_input_topic("users", partitions=2)
        counts, best = driver.create_output_topic("counts"), driver.create_output_topic("best")
        for number, batch in enumerate(BATCHES):
            if damage is not None:
                damage(number, driver.layout)
            for i, (key, value) in enumerate(batch):
                users.pipe_input(key, value, 100 * number + i)
            driver.advance()
            outputs.append((sorted(map(repr, counts.read_records())), sorted(map(repr, best.read_records()))))
        tables = (driver.table("users-per-region"), driver.table("best-score"))
    return outputs, tables


def test_restore_after_losing_one_store_or_every_store(spark, tmp_path):
    reference = _run(spark, tmp_path, "reference")

    def lose_one(number, layout: StoreLayout):
        if number in (2, 4):
            shutil.rmtree(layout.local_dir / "users-per-region", ignore_errors=True)

    def lose_all(number, layout: StoreLayout):
        if number == 3:
            shutil.rmtree(layout.local_dir, ignore_errors=True)

    assert _run(spark, tmp_path, "one-store-lost", lose_one) == reference
    assert _run(spark, tmp_path, "all-stores-lost", lose_all) == reference
    assert reference[1] == ({"eu": 2, "us": 1}, {"eu": 4, "us": 8})  # u4, u5 in eu; u6 in us


def _dump(layout: StoreLayout) -> dict:
    contents = {}
    for db in sorted(layout.local_dir.glob("*/*/db")):
        rdict = Rdict(str(db), Options(raw_mode=True))
        # The entries; the version (metadata under 0x00) names the attempt that wrote it.
        contents[str(db.relative_to(layout.local_dir))] = {k: v for k, v in rdict.items() if not k.startswith(b"\x00")}
        rdict.close()
    return contents


def test_running_a_batch_id_twice_gives_identical_outputs_and_stores(spark, tmp_path):
    layout = StoreLayout(tmp_path / "stores", tmp_path / "changelog")
    runner = BatchRunner(topology(), layout, partitions=3)
    from tablestream.storage.formats import get_format

    key, value = get_format("KAFKA", None), get_format("JSON", "region STRING, score BIGINT")

    def frame(batch, number):
        rows = [
            {"key": key.serialize(k), "value": value.serialize(v), "topic": "users", "partition": 0,
             "offset": 10 * number + i, "timestamp": 100 * number + i, "headers": []}
            for i, (k, v) in enumerate(batch)
        ]
        return spark.createDataFrame(pa.Table.from_pylist(rows))

    def outputs(number):
        out = runner.run(frame(BATCHES[number], number), number)
        try:
            return {t: table.to_pylist() for t, table in runner.collect(out).records.items()}
        finally:
            out.release()

    for number in range(2):
        outputs(number)
    first = outputs(2)
    stores_after_first = _dump(layout)
    replay = outputs(2)
    assert replay == first
    assert _dump(layout) == stores_after_first
    assert first["counts"]  # the batch changed something


def test_many_batches_with_more_state_partitions_than_cores(spark, tmp_path):
    builder = StreamsBuilder()
    builder.stream("clicks").group_by_key().count(materialized_as="clicks-per-user")
    with TestDriver(builder.build(), spark=spark, batched=True, partitions=16, state_dir=tmp_path / "s") as driver:
        clicks = driver.create_input_topic("clicks", partitions=4)
        for number in range(12):
            for user in range(10):
                clicks.pipe_input(f"user-{user}", {"n": number}, number)
            driver.advance()
        assert driver.table("clicks-per-user") == {f"user-{u}": 12 for u in range(10)}

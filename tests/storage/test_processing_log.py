"""A stream source's records through the runtime: the ones that decode reach the output
topic, the others the processing log with their reasons; no record is dropped."""

from __future__ import annotations

import base64
import json
from decimal import Decimal

import pyarrow as pa
import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.batch import BatchContext, BatchOutput
from tablestream.runtime.positions import read_positions
from tablestream.runtime.rules.sources import SourceRule
from tablestream.runtime.runner import BatchRunner
from tablestream.runtime.state import StoreLayout
from tablestream.storage.formats import get_format
from tablestream.storage.processing_log import ERROR_COLUMNS, processing_log_values
from tablestream.testing import TestDriver

pytestmark = pytest.mark.spark

BIGINT_42 = b"\x00\x00\x00\x00\x00\x00\x00*"


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def run(spark, topic, rows, **formats):
    """Pipe ``rows`` (key, value, partition, offset, timestamp) into a stream of ``topic``
    written to ``out`` in the same formats, as one batch. Returns the good records
    (key, value, partition, offset, timestamp), by the input's position of their unique
    timestamp, and the processing log, both in (partition, offset) order."""
    builder = StreamsBuilder()
    builder.stream(topic, **formats).to("out", **formats)
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        source = driver.create_input_topic(topic, partitions=3)
        for key, value, partition, _, ts in rows:
            source.pipe_raw(key, value, ts, partition=partition)
        driver.advance()
        out = driver.create_output_topic("out").read_records()
        log = sorted(driver.processing_log, key=lambda e: (e["partition"], e["offset"]))
    at = {ts: (p, o) for _, _, p, o, ts in rows}
    assert len(at) == len(rows)
    good = sorted(
        ((r.key, r.value, *at[r.timestamp], r.timestamp) for r in out), key=lambda g: (g[2], g[3])
    )
    # Never dropped silently: every input record is in exactly one of good / logged.
    good_ids = [(p, o) for _, _, p, o, _ in good]
    logged_ids = [(e["partition"], e["offset"]) for e in log]
    assert len(good_ids) + len(logged_ids) == len(rows)
    assert set(good_ids).isdisjoint(logged_ids)
    assert set(good_ids) | set(logged_ids) == {(p, o) for _, _, p, o, _ in rows}
    assert all(list(e) == list(ERROR_COLUMNS) and e["topic"] == topic for e in log)
    return good, log


def entries(log):
    """The processing-log JSON of the logged records."""
    return [json.loads(v.as_py()) for v in processing_log_values(pa.Table.from_pylist(log))]


def test_json_values_with_kafka_keys(spark):
    rows = [
        (BIGINT_42, b'{"id": 1, "name": "a"}', 0, 0, 1000),
        (BIGINT_42, b'{"id": 1,', 0, 1, 1001),
        (BIGINT_42, None, 0, 2, 1002),  # tombstone
        (BIGINT_42, b'{"id": "abc"}', 1, 0, 1003),
        (b"\x00\x01", b'{"id": 2}', 1, 1, 1004),  # key of the wrong length
        (None, b'{"id": 3, "name": "c"}', 1, 2, 1005),  # no key
        (b"\x01", b"[", 1, 3, 1006),  # both bad
        (BIGINT_42, b"", 2, 0, 1007),
    ]
    good, log = run(
        spark,
        "orders",
        rows,
        key_format="KAFKA",
        key_schema="BIGINT",
        value_format="JSON",
        value_schema="id BIGINT, name STRING",
    )
    assert good == [
        (42, {"id": 1, "name": "a"}, 0, 0, 1000),
        (42, None, 0, 2, 1002),
        (None, {"id": 3, "name": "c"}, 1, 2, 1005),
    ]
    assert [
        (e["partition"], e["offset"], e["timestamp"], e["error"], e["key"], e["value"]) for e in log
    ] == [
        (
            0,
            1,
            1001,
            "value: line 1 column 10: Expecting property name enclosed in double quotes",
            BIGINT_42,
            b'{"id": 1,',
        ),
        (1, 0, 1003, "value: field 'id': expected BIGINT, got 'abc'", BIGINT_42, b'{"id": "abc"}'),
        (1, 1, 1004, "key: a KAFKA BIGINT has 8 bytes, got 2", b"\x00\x01", b'{"id": 2}'),
        (
            1,
            3,
            1006,
            "key: a KAFKA BIGINT has 8 bytes, got 1; value: line 1 column 2: Expecting value",
            b"\x01",
            b"[",
        ),
        (2, 0, 1007, "value: line 1 column 1: Expecting value", BIGINT_42, b""),
    ]

    logged = entries(log)
    assert logged[0] == {
        "topic": "orders",
        "partition": 0,
        "offset": 1,
        "timestamp": 1001,
        "error": "value: line 1 column 10: Expecting property name enclosed in double quotes",
        "key": b64(BIGINT_42),
        "value": b64(b'{"id": 1,'),
    }
    assert [(d["offset"], d["partition"], d["key"], d["value"]) for d in logged] == [
        (1, 0, b64(BIGINT_42), b64(b'{"id": 1,')),
        (0, 1, b64(BIGINT_42), b64(b'{"id": "abc"}')),
        (1, 1, "AAE=", b64(b'{"id": 2}')),
        (3, 1, "AQ==", "Ww=="),
        (0, 2, b64(BIGINT_42), ""),
    ]
    assert all(list(d) == list(ERROR_COLUMNS) for d in logged)


def test_avro_and_delimited_values_with_string_keys(spark):
    schema = "id BIGINT, amount DECIMAL(6,2), at TIMESTAMP"
    good_avro = get_format("AVRO", schema).serialize({"id": 7, "amount": "12.5", "at": 86_400_000})
    rows = [
        (b"k1", good_avro, 0, 0, 1),
        (b"k2", good_avro[:3], 0, 1, 2),
        (b"\xff", good_avro, 0, 2, 3),
        (b"k4", None, 0, 3, 4),
    ]
    good, log = run(
        spark,
        "payments",
        rows,
        key_format="KAFKA",
        key_schema="STRING",
        value_format="AVRO",
        value_schema=schema,
    )
    assert [
        (k, o, None if v is None else (v["id"], str(v["amount"]))) for k, v, _, o, _ in good
    ] == [
        ("k1", 0, (7, "12.50")),
        ("k4", 3, None),
    ]
    assert isinstance(good[0][1]["amount"], Decimal)
    assert [(e["offset"], e["error"], e["key"]) for e in log] == [
        (1, "value: truncated Avro data: 3 bytes end inside the record", b"k2"),
        (
            2,
            "key: invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
            b"\xff",
        ),
    ]

    rows = [
        (None, b"1,a,true", 0, 0, 1),
        (None, b"2,b", 0, 1, 2),
        (None, b"3,c,false", 0, 2, 3),
        (None, b"x,d,true", 0, 3, 4),
    ]
    good, log = run(
        spark,
        "csv",
        rows,
        key_format="KAFKA",
        value_format="DELIMITED",
        value_schema="id BIGINT, name STRING, ok BOOLEAN",
    )
    assert [(o, v) for _, v, _, o, _ in good] == [
        (0, {"id": 1, "name": "a", "ok": True}),
        (2, {"id": 3, "name": "c", "ok": False}),
    ]
    assert [k for k, *_ in good] == [None, None]
    assert [(e["offset"], e["error"], e["key"], e["value"]) for e in log] == [
        (1, "value: expected 3 fields, got 2", None, b"2,b"),
        (3, "value: field 'id': expected BIGINT, got 'x'", None, b"x,d,true"),
    ]
    assert entries(log[:1]) == [
        {
            "topic": "csv",
            "partition": 0,
            "offset": 1,
            "timestamp": 2,
            "error": "value: expected 3 fields, got 2",
            "key": None,
            "value": b64(b"2,b"),
        }
    ]


def test_good_records_run_no_python(spark, tmp_path):
    """Checking and decoding are Spark functions; only the reasons of failed records
    are computed by Python."""
    builder = StreamsBuilder()
    builder.stream("t", key_schema="BIGINT", value_schema="id BIGINT").to("out")
    runner = BatchRunner(
        builder.build(), StoreLayout(tmp_path / "stores", tmp_path / "changelog"), 1
    )
    records = spark.createDataFrame(
        [(BIGINT_42, b'{"id": 1}', "t", 0, 0, 0, []), (BIGINT_42, b"[", "t", 0, 1, 1, [])],
        "key binary, value binary, topic string, partition int, offset bigint, timestamp bigint, "
        "headers array<struct<key string, value binary>>",
    )
    checks = runner.source_checks()
    positions = read_positions(records, checks)
    batch = BatchContext(0, positions, runner.physical, BatchOutput(), large=False)
    [(node, rule)] = [(n, r) for n, r in runner.rules if isinstance(r, SourceRule)]

    def plan(df):
        return df._jdf.queryExecution().executedPlan().toString()

    assert "EvalPython" not in plan(records.select(checks[node.name]))
    good = rule.decode(batch)
    [errors] = batch.output.errors
    assert "EvalPython" not in plan(good)
    assert "ArrowEvalPython" in plan(errors)
    assert [(r.o_off, r.key, r.value.id) for r in good.collect()] == [(0, 42, 1)]
    assert [(r.offset, r.error) for r in errors.collect()] == [
        (1, "value: line 1 column 2: Expecting value")
    ]

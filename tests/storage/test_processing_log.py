"""decode_records splits raw topic records into good ones and processing-log errors;
no record is dropped."""

from __future__ import annotations

import base64
import json

import pytest

from tablestream.storage.formats import get_format
from tablestream.storage.processing_log import (
    ERROR_COLUMNS,
    decode_records,
    processing_log_values,
)

pytestmark = pytest.mark.spark

RECORD_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset bigint, timestamp bigint, "
    "headers array<struct<key string, value binary>>"
)
BIGINT_42 = b"\x00\x00\x00\x00\x00\x00\x00*"


def records(spark, rows):
    return spark.createDataFrame(rows, RECORD_SCHEMA)


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def test_json_values_with_kafka_keys(spark):
    key_format = get_format("KAFKA", "BIGINT")
    value_format = get_format("JSON", "id BIGINT, name STRING")
    h = [("trace", b"t1")]
    rows = [
        (BIGINT_42, b'{"id": 1, "name": "a"}', "orders", 0, 0, 1000, h),
        (BIGINT_42, b'{"id": 1,', "orders", 0, 1, 1001, []),
        (BIGINT_42, None, "orders", 0, 2, 1002, []),  # tombstone
        (BIGINT_42, b'{"id": "abc"}', "orders", 1, 0, 1003, None),
        (b"\x00\x01", b'{"id": 2}', "orders", 1, 1, 1004, []),  # key of the wrong length
        (None, b'{"id": 3, "name": "c"}', "orders", 1, 2, 1005, []),  # no key
        (b"\x01", b"[", "orders", 1, 3, 1006, []),  # both bad
        (BIGINT_42, b"", "orders", 2, 0, 1007, []),
    ]
    df = records(spark, rows)
    batch = decode_records(df, key_format, value_format)

    good = [tuple(r) for r in batch.good.orderBy("partition", "offset").collect()]
    assert batch.good.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "headers",
    ]
    assert [
        (k, None if v is None else v.asDict(), t, p, o, ts, [tuple(x) for x in hs])
        for k, v, t, p, o, ts, hs in good
    ] == [
        (42, {"id": 1, "name": "a"}, "orders", 0, 0, 1000, [("trace", bytearray(b"t1"))]),
        (42, None, "orders", 0, 2, 1002, []),
        (None, {"id": 3, "name": "c"}, "orders", 1, 2, 1005, []),
    ]

    assert tuple(batch.errors.columns) == ERROR_COLUMNS
    errors = [tuple(r) for r in batch.errors.orderBy("partition", "offset").collect()]
    assert [
        (t, p, o, ts, e, None if k is None else bytes(k), None if v is None else bytes(v))
        for t, p, o, ts, e, k, v in errors
    ] == [
        (
            "orders",
            0,
            1,
            1001,
            "value: line 1 column 10: Expecting property name enclosed in double quotes",
            BIGINT_42,
            b'{"id": 1,',
        ),
        (
            "orders",
            1,
            0,
            1003,
            "value: field 'id': expected BIGINT, got 'abc'",
            BIGINT_42,
            b'{"id": "abc"}',
        ),
        ("orders", 1, 1, 1004, "key: a KAFKA BIGINT has 8 bytes, got 2", b"\x00\x01", b'{"id": 2}'),
        (
            "orders",
            1,
            3,
            1006,
            "key: a KAFKA BIGINT has 8 bytes, got 1; value: line 1 column 2: Expecting value",
            b"\x01",
            b"[",
        ),
        ("orders", 2, 0, 1007, "value: line 1 column 1: Expecting value", BIGINT_42, b""),
    ]

    # Never dropped silently: every input record is in exactly one of good / errors.
    assert batch.good.count() + batch.errors.count() == df.count() == len(rows)
    good_ids = {(r.partition, r.offset) for r in batch.good.select("partition", "offset").collect()}
    error_ids = {
        (r.partition, r.offset) for r in batch.errors.select("partition", "offset").collect()
    }
    assert good_ids.isdisjoint(error_ids)
    assert good_ids | error_ids == {(p, o) for _, _, _, p, o, _, _ in rows}

    logged = [
        json.loads(v.as_py())
        for v in processing_log_values(batch.errors.orderBy("partition", "offset").toArrow())
    ]
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
    avro = get_format("AVRO", "id BIGINT, amount DECIMAL(6,2), at TIMESTAMP")
    good_avro = avro.serialize({"id": 7, "amount": "12.5", "at": 86_400_000})
    rows = [
        (b"k1", good_avro, "payments", 0, 10, 1, []),
        (b"k2", good_avro[:3], "payments", 0, 11, 2, []),
        (b"\xff", good_avro, "payments", 0, 12, 3, []),
        (b"k4", None, "payments", 0, 13, 4, []),
    ]
    batch = decode_records(records(spark, rows), get_format("KAFKA", "STRING"), avro)
    good = batch.good.orderBy("offset").collect()
    assert [
        (r.key, r.offset, None if r.value is None else (r.value.id, str(r.value.amount)))
        for r in good
    ] == [
        ("k1", 10, (7, "12.50")),
        ("k4", 13, None),
    ]
    errors = batch.errors.orderBy("offset").collect()
    assert [(r.offset, r.error, bytes(r.key)) for r in errors] == [
        (11, "value: truncated Avro data: 3 bytes end inside the record", b"k2"),
        (
            12,
            "key: invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
            b"\xff",
        ),
    ]

    delimited = get_format("DELIMITED", "id BIGINT, name STRING, ok BOOLEAN")
    rows = [
        (None, b"1,a,true", "csv", 0, 0, 1, []),
        (None, b"2,b", "csv", 0, 1, 2, []),
        (None, b"3,c,false", "csv", 0, 2, 3, []),
        (None, b"x,d,true", "csv", 0, 3, 4, []),
    ]
    batch = decode_records(records(spark, rows), get_format("KAFKA", None), delimited)
    assert [(r.offset, r.value.asDict()) for r in batch.good.orderBy("offset").collect()] == [
        (0, {"id": 1, "name": "a", "ok": True}),
        (2, {"id": 3, "name": "c", "ok": False}),
    ]
    assert [
        (r.offset, r.error, r.key, bytes(r.value)) for r in batch.errors.orderBy("offset").collect()
    ] == [
        (1, "value: expected 3 fields, got 2", None, b"2,b"),
        (3, "value: field 'id': expected BIGINT, got 'x'", None, b"x,d,true"),
    ]
    logged = json.loads(
        processing_log_values(batch.errors.where("offset = 1").toArrow())[0].as_py()
    )
    assert logged == {
        "topic": "csv",
        "partition": 0,
        "offset": 1,
        "timestamp": 2,
        "error": "value: expected 3 fields, got 2",
        "key": None,
        "value": b64(b"2,b"),
    }


def test_good_records_run_no_python(spark):
    rows = [(BIGINT_42, b'{"id": 1}', "t", 0, 0, 0, [])]
    batch = decode_records(
        records(spark, rows), get_format("KAFKA", "BIGINT"), get_format("JSON", "id BIGINT")
    )
    assert "EvalPython" not in batch.good._jdf.queryExecution().executedPlan().toString()
    assert "ArrowEvalPython" in batch.errors._jdf.queryExecution().executedPlan().toString()

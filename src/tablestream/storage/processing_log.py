"""The processing log: records whose key or value cannot be read, kept instead of dropped.

ksqlDB writes a record it cannot deserialize to its processing log and goes on; so do
we. :func:`decode_records` splits a batch of raw topic records into the ones that
decoded (``good``) and the ones that did not (``errors``); every input record is in
exactly one of them. :func:`processing_log_values` turns error rows into the
JSON value written to the application's processing-log topic
(:func:`processing_log_topic`)::

    {"topic":"orders","partition":0,"offset":7,"timestamp":1700000000000,
     "error":"value: line 1 column 9: Expecting value","key":"AAAAAAAAACo=","value":"eyJpZCI6"}

``key`` and ``value`` are the raw bytes in base64 (null for a null key or value).
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from .formats import Format

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

PROCESSING_LOG_SUFFIX = "-processing-log"
#: Columns of ``DecodedBatch.errors``, in order.
ERROR_COLUMNS = ("topic", "partition", "offset", "timestamp", "error", "key", "value")
#: Columns of the normalized topic records ``decode_records`` reads (and ``good`` keeps).
RECORD_COLUMNS = ("key", "value", "topic", "partition", "offset", "timestamp", "headers")


def processing_log_topic(application_id: str) -> str:
    """The processing-log topic of an application.

    >>> processing_log_topic("orders-app")
    'orders-app-processing-log'
    """
    return f"{application_id}{PROCESSING_LOG_SUFFIX}"


@dataclass(frozen=True)
class DecodedBatch:
    """``good``: key, value (decoded), topic, partition, offset, timestamp, headers.
    ``errors``: topic, partition, offset, timestamp, error, key, value (raw bytes)."""

    good: DataFrame
    errors: DataFrame


def decode_records(df: DataFrame, key_format: Format, value_format: Format) -> DecodedBatch:
    """Decode the ``key`` and ``value`` of raw topic records with their formats.

    ``df`` has the normalized topic columns: key binary, value binary, topic string,
    partition int, offset bigint, timestamp bigint (ms), headers
    array<struct<key string, value binary>>. A null key or value (a tombstone) decodes
    to null and is good. A record whose key or value fails goes to ``errors`` with the
    reason, prefixed ``key: `` or ``value: `` (both, joined by ``; ``, when both fail).

    Deciding good or failed uses Spark functions only; the reason text is computed (by
    the formats' Python deserializers) for failed records only. ``good`` and ``errors``
    each read ``df``: persist it first if it is expensive to recompute.
    """
    from pyspark.sql import functions as F

    key = key_format.decode_checked(F.col("key"))
    value = value_format.decode_checked(F.col("value"))
    failed = key.failed | value.failed
    good = df.where(~failed).select(
        key.value.alias("key"),
        value.value.alias("value"),
        "topic",
        "partition",
        "offset",
        "timestamp",
        "headers",
    )
    key_error = F.when(key.failed, F.concat(F.lit("key: "), key.error))
    value_error = F.when(value.failed, F.concat(F.lit("value: "), value.error))
    errors = df.where(failed).select(
        "topic",
        "partition",
        "offset",
        "timestamp",
        F.concat_ws("; ", key_error, value_error).alias("error"),
        "key",
        "value",
    )
    return DecodedBatch(good, errors)


def processing_log_values(errors: pa.Table) -> pa.Array:
    """The processing-log JSON value (bytes) of each row of ``errors`` (columns
    :data:`ERROR_COLUMNS`), every field written, nulls included.

    >>> import pyarrow as pa
    >>> row = pa.table({"topic": ["t"], "partition": [0], "offset": [7], "timestamp": [5],
    ...                 "error": ["value: bad"], "key": [None], "value": [b"x"]})
    >>> processing_log_values(row)[0].as_py()
    b'{"topic":"t","partition":0,"offset":7,"timestamp":5,"error":"value: bad","key":null,"value":"eA=="}'
    """
    entries = []
    for row in errors.select(list(ERROR_COLUMNS)).to_pylist():
        for raw in ("key", "value"):
            data = row[raw]
            row[raw] = None if data is None else base64.b64encode(bytes(data)).decode("ascii")
        entries.append(json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    return pa.array(entries, pa.binary())

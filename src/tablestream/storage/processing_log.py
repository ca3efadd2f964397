"""The processing log: records whose key or value cannot be read, kept instead of dropped.

ksqlDB writes a record it cannot deserialize to its processing log and goes on; so do
we. A source's records are split into the ones that decode and the ones that do not in
:mod:`tablestream.runtime.rules.sources`; each record that does not becomes an entry
with the columns :data:`ERROR_COLUMNS` (the reason is prefixed ``key: `` or
``value: ``, both joined by ``; ``). A join adds an entry for a record whose key (or
foreign key) does not convert to the type of the keys it looks up
(:mod:`tablestream.runtime.keys`): the reason names the join, the key and value are the
record's as the join saw them (a string's bytes, the JSON text of anything else), and
topic, partition and offset are null for a row that is no source record (an
aggregate's, a join's). :func:`processing_log_values` turns entries into
the JSON value written to the application's processing-log topic
(:func:`processing_log_topic`)::

    {"topic":"orders","partition":0,"offset":7,"timestamp":1700000000000,
     "error":"value: line 1 column 9: Expecting value","key":"AAAAAAAAACo=","value":"eyJpZCI6"}

``key`` and ``value`` are the raw bytes in base64 (null for a null key or value).
"""

from __future__ import annotations

import base64
import json

import pyarrow as pa

PROCESSING_LOG_SUFFIX = "-processing-log"
#: Columns of a processing-log entry, in order.
ERROR_COLUMNS = ("topic", "partition", "offset", "timestamp", "error", "key", "value")


def processing_log_topic(application_id: str) -> str:
    """The processing-log topic of an application.

    >>> processing_log_topic("orders-app")
    'orders-app-processing-log'
    """
    return f"{application_id}{PROCESSING_LOG_SUFFIX}"


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

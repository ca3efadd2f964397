"""ksqlDB's serialization formats, for keys and values separately.

``get_format(name, schema, **options)`` returns a :class:`Format` that reads and writes
one key or value, from Python and from Spark:

``KAFKA``
    one primitive exactly as Kafka's serializers write it (STRING as UTF-8, INT and
    BIGINT big-endian, DOUBLE big-endian IEEE 754, BYTES as is);
``JSON``
    an object of the columns, a single JSON value, or (no schema) any JSON document;
``AVRO``
    raw Avro binary with the declared schema, or with an Avro schema given as JSON
    (its columns derived from it); ``confluent=True`` adds and strips the 5-byte
    Confluent header (``schema_id=`` gives the id);
``DELIMITED``
    one CSV line with the fields in schema order (``delimiter=``, default ``,``).

Python side: ``fmt.serialize(value) -> bytes | None`` and ``fmt.deserialize(data)``
(``None`` is a Kafka null; a record is a ``dict``); both raise
:class:`~tablestream.errors.SerializationError` saying what is wrong.

Spark side: ``fmt.spark_type()``, ``fmt.decode(col) -> (value, error)`` over a binary
Column (``error`` null when the bytes decoded; a null input is a tombstone: both null),
``fmt.decode_checked(col)`` with a boolean ``failed`` Column too, and
``fmt.encode(col)`` to binary. Only Spark's own functions run on good records; the
error text of a failed record comes from the Python deserializer, run only for the
failed rows.

>>> f = get_format("kafka", "BIGINT")
>>> f.serialize(42)
b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00*'
>>> get_format("JSON", "id BIGINT, name STRING").deserialize(b'{"id": 1}')
{'id': 1, 'name': None}
>>> get_format("XML", None)
Traceback (most recent call last):
...
tablestream.errors.SchemaError: Unknown format 'XML' (formats: KAFKA, JSON, AVRO, DELIMITED)
"""

from __future__ import annotations

import inspect
from typing import Any

from ...errors import SchemaError
from ...schema import Schema, SqlType, avro_schema_text, parse_schema_or_type
from .avro import AvroFormat
from .base import Decoded, Format
from .delimited import DelimitedFormat
from .json_format import JsonFormat
from .kafka import KafkaFormat

__all__ = [
    "AvroFormat",
    "Decoded",
    "DelimitedFormat",
    "FORMATS",
    "Format",
    "JsonFormat",
    "KafkaFormat",
    "get_format",
]

FORMATS: dict[str, type[Format]] = {
    "KAFKA": KafkaFormat,
    "JSON": JsonFormat,
    "AVRO": AvroFormat,
    "DELIMITED": DelimitedFormat,
}


def get_format(name: str, schema: str | Schema | SqlType | None = None, **options: Any) -> Format:
    """The format ``name`` (case-insensitive) for ``schema``.

    ``schema`` is a ksqlDB column list (``"id BIGINT, name STRING"``), a single type
    (``"BIGINT"``; a one-column list works too for KAFKA), for AVRO the JSON of an Avro
    schema (written and read as it is, its columns derived from it), an already parsed
    :class:`~tablestream.schema.Schema` / :class:`~tablestream.schema.SqlType`, or
    ``None`` (KAFKA and JSON only). Options: AVRO ``confluent``, ``schema_id``,
    ``record_name``, ``namespace``; DELIMITED ``delimiter``.
    """
    if not isinstance(name, str) or name.upper() not in FORMATS:
        raise SchemaError(f"Unknown format '{name}' (formats: {', '.join(FORMATS)})")
    cls = FORMATS[name.upper()]
    allowed = [
        p
        for p, spec in inspect.signature(cls.__init__).parameters.items()
        if spec.kind == spec.KEYWORD_ONLY
    ]
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        accepted = f"it takes {', '.join(allowed)}" if allowed else "it takes none"
        raise SchemaError(f"Unknown option '{unknown[0]}' for the {cls.name} format ({accepted})")
    if isinstance(schema, str) and avro_schema_text(schema) is not None:
        if cls is not AvroFormat:
            raise SchemaError(
                f"An Avro schema is the schema of the AVRO format only; {cls.name} takes a ksqlDB column list"
            )
        return AvroFormat(None, writer_schema=schema, **options)
    parsed = parse_schema_or_type(schema) if isinstance(schema, str) else schema
    if parsed is not None and not isinstance(parsed, (Schema, SqlType)):
        raise SchemaError(
            f"A schema is a string, a Schema or a SqlType, got {type(schema).__name__}"
        )
    return cls(parsed, **options)

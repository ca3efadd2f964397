"""AVRO: raw Avro binary with the schema the user declares (no Schema Registry here).

The Avro schema is derived from the ksqlDB column list as ksqlDB does
(:func:`tablestream.schema.to_avro_schema`); Spark reads and writes it with
``from_avro``/``to_avro``, Python with fastavro. ``confluent=True`` is the wire format
of Confluent's serializers: a 5-byte header (magic byte 0, then the schema id as a
4-byte big-endian integer) before the Avro body. Writing needs ``schema_id``;
reading checks the magic byte, and the id when ``schema_id`` is given.

Bytes after a complete record are ignored, as Spark's ``from_avro`` and Confluent's
deserializer do.
"""

from __future__ import annotations

import io
import json
import struct
from typing import TYPE_CHECKING, Any

import fastavro

from ...errors import SchemaError, SerializationError
from ...schema import AVRO_NAMESPACE, AVRO_RECORD_NAME, Schema, SqlType, to_avro_schema
from .base import Format
from .values import normalize

if TYPE_CHECKING:
    from pyspark.sql import Column

MAGIC = 0
HEADER_SIZE = 5
_OK = "__tablestream_ok"  # reader-only field: true when from_avro decoded the record


class AvroFormat(Format):
    """``AVRO`` with a column list (a record) or a single type.

    >>> from tablestream.schema import parse_schema
    >>> f = AvroFormat(parse_schema("id BIGINT"), confluent=True, schema_id=7)
    >>> f.serialize({"id": 42})
    b'\\x00\\x00\\x00\\x00\\x07\\x02T'
    >>> f.deserialize(b'\\x00\\x00\\x00\\x00\\x07\\x02T')
    {'id': 42}
    """

    name = "AVRO"

    def __init__(
        self,
        schema: Schema | SqlType | None,
        *,
        confluent: bool = False,
        schema_id: int | None = None,
        record_name: str = AVRO_RECORD_NAME,
        namespace: str = AVRO_NAMESPACE,
    ):
        if schema is None:
            raise SchemaError(
                "The AVRO format needs a schema (there is no Schema Registry to infer it from)"
            )
        if schema_id is not None and not (isinstance(schema_id, int) and 0 <= schema_id < 2**32):
            raise SchemaError(f"An Avro schema id is a 4-byte unsigned integer, got {schema_id!r}")
        if schema_id is not None and not confluent:
            raise SchemaError("schema_id is only used with confluent=True")
        super().__init__(schema)
        self.confluent = confluent
        self.schema_id = schema_id
        self.avro_schema = to_avro_schema(schema, name=record_name, namespace=namespace)
        self.avro_schema_json = json.dumps(self.avro_schema)
        try:
            self._parsed = fastavro.parse_schema(self.avro_schema)
        except Exception as e:  # fastavro's SchemaParseException and friends
            raise SchemaError(f"Invalid Avro schema for '{schema}': {e}") from None

    def describe(self) -> str:
        extra = ""
        if self.confluent:
            extra = (
                " (confluent"
                + (f", schema id {self.schema_id}" if self.schema_id is not None else "")
                + ")"
            )
        return super().describe() + extra

    @property
    def header(self) -> bytes:
        if self.schema_id is None:
            raise SerializationError("writing the Confluent wire format needs a schema_id")
        return struct.pack(">bI", MAGIC, self.schema_id)

    # -- Python side
    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        header = self.header if self.confluent else b""
        datum = normalize(value, self.sql_type)  # type: ignore[arg-type]
        out = io.BytesIO()
        try:
            fastavro.schemaless_writer(out, self._parsed, datum)
        except (ValueError, TypeError) as e:
            raise SerializationError(f"cannot write Avro: {e}") from None
        return header + out.getvalue()

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        body = self._strip_header(bytes(data))
        try:
            value = fastavro.schemaless_reader(io.BytesIO(body), self._parsed, None)
        except EOFError:
            raise SerializationError(
                f"truncated Avro data: {len(body)} bytes end inside the record"
            ) from None
        except UnicodeDecodeError as e:
            raise SerializationError(f"invalid UTF-8 in an Avro string: {e}") from None
        except Exception as e:
            raise SerializationError(f"invalid Avro data ({type(e).__name__}: {e})") from None
        return value

    def _strip_header(self, data: bytes) -> bytes:
        if not self.confluent:
            return data
        if len(data) < HEADER_SIZE:
            raise SerializationError(
                f"expected the 5-byte Confluent header (magic byte 0 and a schema id), got {len(data)} bytes"
            )
        magic, schema_id = struct.unpack(">bI", data[:HEADER_SIZE])
        if magic != MAGIC:
            raise SerializationError(f"unknown magic byte {magic} (expected 0)")
        if self.schema_id is not None and schema_id != self.schema_id:
            raise SerializationError(
                f"schema id {schema_id} does not match the declared schema id {self.schema_id}"
            )
        return data[HEADER_SIZE:]

    # -- Spark side
    def _decode(self, raw: Column) -> tuple[Column, Column]:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import from_avro

        header_bad = F.lit(False)
        body = raw
        if self.confluent:
            header_bad = (F.length(raw) < HEADER_SIZE) | (
                F.substring(raw, 1, 1) != F.lit(bytes([MAGIC]))
            )
            if self.schema_id is not None:
                header_bad = header_bad | (
                    F.substring(raw, 2, 4) != F.lit(struct.pack(">I", self.schema_id))
                )
            body = F.when(~header_bad, F.substring(raw, HEADER_SIZE + 1, 2**31 - 1))
        options = {"mode": "PERMISSIVE"}
        if self.wrapped:
            # PERMISSIVE gives a record of nulls for bad bytes; a reader-only field with a
            # default tells it apart from a record whose fields are all null.
            reader = dict(self.avro_schema)  # type: ignore[arg-type]
            reader["fields"] = [
                *reader["fields"],
                {"name": _OK, "type": ["boolean", "null"], "default": True},
            ]
            options["avroSchema"] = json.dumps(reader)
            decoded = from_avro(body, self.avro_schema_json, options)
            return decoded.dropFields(_OK), header_bad | decoded.getField(_OK).isNull()
        decoded = from_avro(body, self.avro_schema_json, options)
        return decoded, header_bad | decoded.isNull()

    def encode(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import to_avro

        c = F.col(col) if isinstance(col, str) else col
        body = to_avro(c.cast(self.spark_type()), self.avro_schema_json)
        if self.confluent:
            body = F.concat(F.lit(self.header), body)
        return F.when(c.isNotNull(), body)

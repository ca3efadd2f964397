"""AVRO: raw Avro binary with the schema the user declares (no Schema Registry here).

The Avro schema is derived from the ksqlDB column list as ksqlDB does
(:func:`tablestream.schema.to_avro_schema`), or given as it is (``writer_schema=``,
the JSON of an Avro schema, whose columns are then derived from it by
:func:`tablestream.schema.from_avro_schema`); Spark reads and writes it with
``from_avro``/``to_avro``, Python with fastavro. A given schema's non-null fields are
written only with a value: a null there fails the write naming the field.
``confluent=True`` is the wire format of Confluent's serializers: a 5-byte header
(magic byte 0, then the schema id as a 4-byte big-endian integer) before the Avro body. Writing needs ``schema_id``;
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
from ...schema import (
    AVRO_NAMESPACE,
    AVRO_RECORD_NAME,
    Schema,
    SqlType,
    avro_schema_text,
    from_avro_schema,
    to_avro_schema,
)
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
    >>> g = AvroFormat(None, writer_schema='{"type": "record", "name": "Order", '
    ...     '"fields": [{"name": "id", "type": "long"}, {"name": "qty", "type": "float"}]}')
    >>> str(g.schema), g.serialize({"id": 42, "qty": 1.5})
    ('id BIGINT, qty DOUBLE', b'T\\x00\\x00\\xc0?')
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
        writer_schema: str | None = None,
    ):
        given = None
        if writer_schema is not None:
            given = avro_schema_text(writer_schema) if isinstance(writer_schema, str) else None
            if given is None:
                raise SchemaError(f"writer_schema must be the JSON text of an Avro schema, got {writer_schema!r}")
            derived = from_avro_schema(given)
            if schema is not None and str(schema) != str(derived):
                raise SchemaError(f"The columns {schema} are not those of the given Avro schema ({derived})")
            schema = derived
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
        self.writer_schema = given  # the schema as given, or None when derived from the columns
        self.avro_schema = given if given is not None else to_avro_schema(schema, name=record_name, namespace=namespace)
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
            return self._as_columns(decoded.dropFields(_OK)), header_bad | decoded.getField(_OK).isNull()
        decoded = from_avro(body, self.avro_schema_json, options)
        return self._as_columns(decoded), header_bad | decoded.isNull()

    def _as_columns(self, decoded: Column) -> Column:
        """A given schema's values as the columns' types (float as DOUBLE, an enum as
        STRING, fixed as BYTES, non-null fields nullable)."""
        return decoded if self.writer_schema is None else decoded.cast(self.spark_type())

    def encode(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql.avro.functions import to_avro

        c = F.col(col) if isinstance(col, str) else col
        typed = c.cast(self.spark_type())
        missing = None
        if self.writer_schema is not None:
            typed, missing = _Conformer(self.writer_schema).conform(typed, self.writer_schema, "", top=True)
        body = to_avro(typed, self.avro_schema_json)
        if self.confluent:
            body = F.concat(F.lit(self.header), body)
        if missing is None:
            return F.when(c.isNotNull(), body)
        failure = F.raise_error(F.concat(F.lit("cannot write Avro: the non-null field '"), missing, F.lit("' of the given Avro schema is null")))
        return F.when(c.isNull(), F.lit(None)).when(missing.isNotNull(), failure).otherwise(body)


_SPARK_LEAVES = {
    "boolean": "boolean", "int": "int", "long": "bigint", "float": "float", "double": "double",
    "string": "string", "bytes": "binary", "enum": "string", "fixed": "binary",
}


class _Conformer:
    """A value of the columns' types made writable with a given Avro schema: each
    field cast to the type Spark writes that Avro type from (DOUBLE to ``float``,
    STRING to an ``enum``), and non-null where the schema's field is not a union with
    null (Spark's ``to_avro`` refuses a nullable value there); beside it, the name of
    the first non-null field that holds a null (a string Column, null when none)."""

    def __init__(self, schema: Any):
        self.named: dict[str, Any] = {}
        self._collect(schema)

    def _collect(self, t: Any) -> None:
        if isinstance(t, list):
            for branch in t:
                self._collect(branch)
        elif isinstance(t, dict):
            if t.get("type") in ("record", "enum", "fixed") and isinstance(t.get("name"), str):
                self.named[t["name"]] = t
                if t.get("namespace"):
                    self.named[f"{t['namespace']}.{t['name']}"] = t
            for f in t.get("fields", []):
                self._collect(f.get("type"))
            for key in ("items", "values"):
                if key in t:
                    self._collect(t[key])

    def _resolved(self, t: Any) -> Any:
        while isinstance(t, str) and t in self.named:
            t = self.named[t]
        return t

    def conform(self, c: Column, t: Any, path: str, *, top: bool = False) -> tuple[Column, Column | None]:
        from pyspark.sql import functions as F

        nullable = isinstance(t, list)
        if nullable:
            t = next(b for b in t if b != "null")
        t = self._resolved(t)
        kind = t.get("type") if isinstance(t, dict) else t
        missing: Column | None = None
        if kind == "record":
            fields = t["fields"]
            parts = [self.conform(c.getField(f["name"]), f["type"], f"{path}.{f['name']}" if path else f["name"]) for f in fields]
            value = F.struct(*[v.alias(f["name"]) for (v, _), f in zip(parts, fields, strict=True)])  # never null
            inner = [m for _, m in parts if m is not None]
            missing = F.coalesce(*inner) if inner else None
            if top:
                return value, missing
            if nullable:
                return F.when(c.isNotNull(), value), None if missing is None else F.when(c.isNotNull(), missing)
            null_here = F.when(c.isNull(), F.lit(path))
            return value, null_here if missing is None else F.coalesce(null_here, missing)
        if kind in ("array", "map"):
            inner_type = t["items"] if kind == "array" else t["values"]
            inner_path = f"{path}[]" if kind == "array" else f"{path}{{}}"
            members = c if kind == "array" else F.map_values(c)
            if self.conform(F.lit(None), inner_type, inner_path)[1] is not None:
                missing = F.when(
                    F.exists(members, lambda e: self.conform(e, inner_type, inner_path)[1].isNotNull()),
                    F.lit(inner_path),
                )
            if kind == "array":
                value = F.transform(c, lambda e: self.conform(e, inner_type, inner_path)[0])
            else:
                value = F.transform_values(c, lambda _, v: self.conform(v, inner_type, inner_path)[0])
        else:
            value = c.cast(self._leaf(t))
        if nullable or top:
            return value, missing
        null_here = F.when(c.isNull(), F.lit(path))
        return F.coalesce(value, self.zero(t)), null_here if missing is None else F.coalesce(null_here, missing)

    def _leaf(self, t: Any) -> str:
        if isinstance(t, dict):
            logical = t.get("logicalType")
            if logical == "decimal":
                return f"decimal({t['precision']},{t.get('scale', 0)})"
            if logical == "date":
                return "date"
            if logical == "timestamp-millis":
                return "timestamp"
            return _SPARK_LEAVES.get(t["type"], "string") if isinstance(t["type"], str) else self._leaf(t["type"])
        return _SPARK_LEAVES[t]

    def zero(self, t: Any) -> Column:
        """A non-null value of ``t``: what a non-null field holds beside a null, in a
        row whose write fails anyway."""
        from pyspark.sql import functions as F

        if isinstance(t, list):
            t = next(b for b in t if b != "null")
        t = self._resolved(t)
        kind = t.get("type") if isinstance(t, dict) else t
        if kind == "record":
            return F.struct(*[self.zero(f["type"]).alias(f["name"]) for f in t["fields"]])
        if kind == "array":
            return F.array_repeat(self.zero(t["items"]), 0)
        if kind == "map":
            return F.map_from_arrays(F.array_repeat(F.lit(""), 0), F.array_repeat(self.zero(t["values"]), 0))
        if kind == "enum":
            return F.lit(t["symbols"][0])
        leaf = self._leaf(t)
        if leaf in ("string",):
            return F.lit("")
        if leaf == "binary":
            return F.lit(bytes(t.get("size", 0) if isinstance(t, dict) else 0))
        if leaf == "boolean":
            return F.lit(False)
        if leaf in ("date", "timestamp"):
            return F.lit(0).cast("timestamp").cast(leaf)
        return F.lit(0).cast(leaf)

"""JSON, laid out as ksqlDB writes it.

With a column list the value is an object of the columns (``{"id":1,"name":"a"}``);
with a single type the value is that JSON value (ksqlDB's unwrapped keys); without a
schema any JSON document, which the Spark side keeps as its JSON text.

ksqlDB's layout: TIMESTAMP is a number of epoch milliseconds, DATE a number of epoch
days, DECIMAL a number (a string is read too), BYTES a base64 string, DOUBLE
NaN/Infinity as the strings ``"NaN"``/``"Infinity"``. Reading follows Spark's
``from_json`` rules, which the Python side mirrors: field names match exactly (case
sensitive); missing fields are null and unknown fields are ignored; a field given twice
is read both times and the last one wins; a STRING field holding another JSON value
gets its JSON text; a JSON ``null`` document is a null value; content after a complete
top-level object is ignored (as Jackson does), and without a schema content after any
complete value (as Spark's ``try_parse_json``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ...errors import SchemaError, SerializationError
from ...schema import PrimitiveType, Schema, SqlType
from .base import Format
from .spark_types import from_json_layout, json_read_type, to_json_layout, to_spark_type
from .values import emit_any_json, emit_json, from_json_value, load_json, normalize

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

CORRUPT = "__tablestream_corrupt_record"  # from_json's corrupt-record column
_WRAP = "v"  # field a single (unwrapped) value is parsed under
_NULL_DOCUMENT = r"^[ \t\n\r]*null[ \t\n\r]*$"


class JsonFormat(Format):
    """``JSON`` with a column list, a single type, or no schema.

    >>> from tablestream.schema import parse_schema
    >>> f = JsonFormat(parse_schema("id BIGINT, name STRING"))
    >>> f.serialize({"id": 1, "name": "a"})
    b'{"id":1,"name":"a"}'
    >>> f.deserialize(b'{"id": "abc"}')
    Traceback (most recent call last):
    ...
    tablestream.errors.SerializationError: field 'id': expected BIGINT, got 'abc'
    """

    name = "JSON"

    def __init__(self, schema: Schema | SqlType | None):
        if isinstance(schema, Schema) and any(n == CORRUPT for n in schema.names):
            raise SchemaError(f"The column name '{CORRUPT}' is reserved")
        super().__init__(schema)

    # -- Python side
    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        t = self.sql_type
        text = emit_any_json(value) if t is None else emit_json(normalize(value, t), t)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError as e:
            raise SerializationError(f"cannot encode the JSON text as UTF-8: {e}") from None

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SerializationError(f"invalid UTF-8: {e}") from None
        t = self.sql_type
        if t is None:
            return load_json(text, exact_numbers=False, trailing="any")
        parsed = load_json(text, exact_numbers=True, trailing="object" if self.wrapped else "none")
        return from_json_value(parsed, t)

    # -- Spark side
    def spark_type(self) -> DataType:
        from pyspark.sql import types as T

        return T.StringType() if self.schema is None else super().spark_type()

    def decode_valid(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        raw = F.col(col) if isinstance(col, str) else col
        text = raw.cast("string")
        t = self.sql_type
        null_document = text.rlike(_NULL_DOCUMENT)
        if t is None:
            return F.when(~null_document, text)
        read = to_spark_type(json_read_type(t))
        if self.wrapped:
            value = F.from_json(text, read)
        else:
            source = F.concat(F.lit('{"' + _WRAP + '":'), text, F.lit("}"))
            value = F.from_json(source, T.StructType([T.StructField(_WRAP, read)])).getField(_WRAP)
        return F.when(~null_document, from_json_layout(value, t))

    def _decode(self, raw: Column) -> tuple[Column, Column]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        text = raw.cast("string")
        bad_utf8 = ~F.is_valid_utf8(raw)
        null_document = text.rlike(_NULL_DOCUMENT)
        t = self.sql_type
        if t is None:
            # Any JSON document; the value is its text. try_parse_json is the parse check.
            return F.when(~null_document, text), bad_utf8 | F.try_parse_json(text).isNull()

        read = to_spark_type(json_read_type(t))
        if self.wrapped:
            source = text
            fields = list(read.fields)  # type: ignore[attr-defined]
        else:
            source = F.concat(F.lit('{"' + _WRAP + '":'), text, F.lit("}"))
            fields = [T.StructField(_WRAP, read)]
        schema = T.StructType([*fields, T.StructField(CORRUPT, T.StringType())])
        parsed = F.from_json(
            source, schema, {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        )
        # Parsed once: a null result reads as a corrupt record.
        unreadable = F.struct(*[F.lit(None).cast(f.dataType).alias(f.name) for f in fields], F.lit("").alias(CORRUPT))
        corrupt = ~null_document & F.coalesce(parsed, unreadable).getField(CORRUPT).isNotNull()
        compact = compact_object_pattern(self.schema) if self.wrapped else None
        if compact is not None:
            # A compact object of known fields is valid without parsing it (``&`` does
            # not evaluate its right side for such a record).
            corrupt = ~text.rlike(compact) & corrupt
        failed = bad_utf8 | corrupt
        # The "null" document parses as a corrupt record: its value is null.
        value = parsed.dropFields(CORRUPT) if self.wrapped else parsed.getField(_WRAP)
        return F.when(~null_document, from_json_layout(value, t)), failed

    def encode(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F

        c = F.col(col) if isinstance(col, str) else col
        t = self.sql_type
        if t is None:
            return c.cast("string").cast("binary")
        options = {"ignoreNullFields": "false"}  # ksqlDB writes null fields explicitly
        typed = to_json_layout(c.cast(self.spark_type()), t)
        if self.wrapped:
            text = F.to_json(typed, options)
        else:
            wrapped = F.to_json(F.struct(typed.alias(_WRAP)), options)
            prefix = len('{"' + _WRAP + '":')
            text = _substring_between(wrapped, prefix)
        return F.when(c.isNotNull(), text.cast("binary"))


# JSON values a compact object's field may hold, by the type ``from_json`` reads it as
# (:func:`json_read_type`), each one read into that type without error: integers short
# enough to fit (leading zeros and other forms are left to the parser).
_COMPACT_VALUES = {
    "STRING": r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt])*"',
    "BOOLEAN": "true|false",
    "INT": "-?(?:0|[1-9][0-9]{0,8})",
    "BIGINT": "-?(?:0|[1-9][0-9]{0,17})",
    "DOUBLE": r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?",
}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_$ -]+")


def compact_object_pattern(schema: Schema) -> str | None:
    """A Java regular expression that accepts only JSON objects ``from_json`` reads
    without error into ``schema``'s columns: no whitespace, each member one of the
    columns with a value of its type, or null. It covers how producers usually write a
    flat value (``{"id":1,"name":"a"}``), so the check skips the parse for those; other
    texts (nested types, whitespace, unknown fields) are parsed. None when a column's
    type or name has no such pattern.

    >>> import re
    >>> from tablestream.schema import parse_schema
    >>> pattern = compact_object_pattern(parse_schema("id BIGINT, ok BOOLEAN"))
    >>> [bool(re.search(pattern, text)) for text in ('{"id":1,"ok":true}', '{"ok":null}', '{"id": 1}', '{"id":"1"}')]
    [True, True, False, False]
    """
    members = []
    for column in schema.columns:
        read = json_read_type(column.type)
        value = _COMPACT_VALUES.get(read.name) if isinstance(read, PrimitiveType) else None
        if value is None or not _PLAIN_NAME.fullmatch(column.name):
            return None
        members.append(f'"{re.escape(column.name)}":(?:{value}|null)')
    member = "|".join(members)
    return rf"^\{{(?:(?:{member})(?:,(?:{member}))*)?\}}$"


def _substring_between(text: Column, prefix: int) -> Column:
    """``text`` without its first ``prefix`` characters and its last one."""
    from pyspark.sql import functions as F

    return F.substring(text, F.lit(prefix + 1), F.length(text) - F.lit(prefix + 1))

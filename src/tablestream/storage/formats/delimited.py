"""DELIMITED: one CSV line, fields in schema order (ksqlDB's DELIMITED).

The delimiter is ``,`` unless given (one character; ksqlDB's names ``TAB`` and
``SPACE`` work too). Quoting is RFC 4180: a field holding the delimiter, a quote or a
line break is quoted, and a quote inside is doubled. An empty field is null, so an
empty STRING or BYTES reads back as null (as in ksqlDB). Only primitive types: BOOLEAN
(``true``/``false``), INT, BIGINT, DOUBLE, STRING, BYTES (base64), DECIMAL (plain
digits), DATE (epoch days) and TIMESTAMP (epoch milliseconds), as ksqlDB writes them.
A single type declares a one-field line whose value is that field.
"""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from ...errors import SchemaError, SerializationError
from ...schema import Column as SchemaColumn
from ...schema import DecimalType, PrimitiveType, Schema, SqlType
from .base import Format
from .values import (
    BASE64_TEXT,
    DECIMAL_TEXT,
    DOUBLE_TEXT,
    INT_TEXT,
    from_text,
    normalize,
    to_text,
)

if TYPE_CHECKING:
    from pyspark.sql import Column

CORRUPT = "__tablestream_corrupt_record"
_NAMED_DELIMITERS = {"TAB": "\t", "SPACE": " "}


class DelimitedFormat(Format):
    """``DELIMITED`` with a column list of primitives (or one primitive type).

    >>> from tablestream.schema import parse_schema
    >>> f = DelimitedFormat(parse_schema("id BIGINT, name STRING, price DECIMAL(4,2)"))
    >>> f.serialize({"id": 1, "name": "a,b", "price": "1.5"})
    b'1,"a,b",1.50'
    >>> f.deserialize(b"1,x")
    Traceback (most recent call last):
    ...
    tablestream.errors.SerializationError: expected 3 fields, got 2
    """

    name = "DELIMITED"

    def __init__(self, schema: Schema | SqlType | None, *, delimiter: str = ","):
        if schema is None:
            raise SchemaError("The DELIMITED format needs a schema")
        delimiter = (
            _NAMED_DELIMITERS.get(delimiter.upper(), delimiter)
            if isinstance(delimiter, str)
            else delimiter
        )
        if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in ('"', "\r", "\n"):
            raise SchemaError(
                f"A DELIMITED delimiter is one character other than a quote or a line break, got {delimiter!r}"
            )
        columns = schema.columns if isinstance(schema, Schema) else (SchemaColumn("value", schema),)
        for column in columns:
            if not isinstance(column.type, (PrimitiveType, DecimalType)):
                where = f" (column '{column.name}')" if isinstance(schema, Schema) else ""
                raise SchemaError(
                    f"The DELIMITED format does not support type {column.type}{where}"
                )
            if column.name == CORRUPT:
                raise SchemaError(f"The column name '{CORRUPT}' is reserved")
        super().__init__(schema)
        self.delimiter = delimiter
        self.columns: tuple[SchemaColumn, ...] = columns

    def describe(self) -> str:
        return super().describe() + (
            f" (delimiter {self.delimiter!r})" if self.delimiter != "," else ""
        )

    # -- Python side
    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        if self.wrapped:
            record = normalize(value, self.sql_type)  # type: ignore[arg-type]
            fields = [to_text(record[c.name], c.type) for c in self.columns]
        else:
            fields = [to_text(normalize(value, self.sql_type), self.sql_type)]  # type: ignore[arg-type]
        out = io.StringIO()
        # the terminator makes the writer quote fields holding a line break; it is cut off after
        csv.writer(
            out, delimiter=self.delimiter, quotechar='"', doublequote=True, lineterminator="\r\n"
        ).writerow(fields)
        try:
            return out.getvalue()[:-2].encode("utf-8")
        except UnicodeEncodeError as e:
            raise SerializationError(f"cannot encode the line as UTF-8: {e}") from None

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        try:
            text = bytes(data).decode("utf-8")
        except UnicodeDecodeError as e:
            raise SerializationError(f"invalid UTF-8: {e}") from None
        try:
            rows = list(
                csv.reader(
                    io.StringIO(text, newline=""),
                    delimiter=self.delimiter,
                    quotechar='"',
                    strict=True,
                )
            )
        except csv.Error as e:
            raise SerializationError(f"malformed line: {e}") from None
        if len(rows) > 1:
            raise SerializationError(f"expected one line, got {len(rows)}")
        fields = rows[0] if rows and rows[0] else [""]
        if len(fields) != len(self.columns):
            raise SerializationError(f"expected {len(self.columns)} fields, got {len(fields)}")
        values = {
            c.name: None if text == "" else from_text(text, c.type, c.name if self.wrapped else "")
            for c, text in zip(self.columns, fields, strict=True)
        }
        return values if self.wrapped else values[self.columns[0].name]

    # -- Spark side
    def _options(self) -> dict[str, str]:
        return {
            "sep": self.delimiter,
            "quote": '"',
            "escape": '"',
            "ignoreLeadingWhiteSpace": "false",
            "ignoreTrailingWhiteSpace": "false",
            "nullValue": "",
        }

    def _decode(self, raw: Column) -> tuple[Column, Column]:
        from pyspark.sql import functions as F
        from pyspark.sql import types as T

        # A line break at the end closes the line (as Python's csv reads it); from_csv
        # would take it as the start of another line.
        text = F.regexp_replace(raw.cast("string"), r"(\r\n|\n|\r)\z", "")
        names = [f"f{i}" for i in range(len(self.columns))]
        schema = T.StructType(
            [T.StructField(n, T.StringType()) for n in names]
            + [T.StructField(CORRUPT, T.StringType())]
        )
        options = {**self._options(), "mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
        parsed = F.from_csv(text, schema.simpleString(), options)
        failed = ~F.is_valid_utf8(raw) | parsed.getField(CORRUPT).isNotNull()
        if len(self.columns) > 1:
            failed = failed | (text == "")  # from_csv reads "" as a line of nulls, not a short one
        typed = []
        for name, column in zip(names, self.columns, strict=True):
            field = parsed.getField(name)
            value, ok = _parse_text(field, column.type)
            failed = failed | (field.isNotNull() & ~ok)
            typed.append(value.alias(column.name))
        value = F.struct(*typed) if self.wrapped else typed[0]
        return value, failed

    def encode(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F

        c = F.col(col) if isinstance(col, str) else col
        typed = c.cast(self.spark_type())
        if self.wrapped:
            fields = [
                _format_text(typed.getField(col.name), col.type).alias(f"f{i}")
                for i, col in enumerate(self.columns)
            ]
        else:
            fields = [_format_text(typed, self.columns[0].type).alias("f0")]
        return F.when(c.isNotNull(), F.to_csv(F.struct(*fields), self._options()).cast("binary"))


def _anchored(pattern: str) -> str:
    return f"^(?:{pattern})$"


def _parse_text(field: Column, t: SqlType) -> tuple[Column, Column]:
    """(value, ok) of a non-null text field; the same rules as ``values.from_text``."""
    from pyspark.sql import functions as F

    if isinstance(t, DecimalType):
        value = F.when(
            field.rlike(_anchored(DECIMAL_TEXT)),
            F.trim(field).try_cast(f"DECIMAL({t.precision},{t.scale})"),
        )
        return value, value.isNotNull()
    name = t.name  # type: ignore[attr-defined]
    if name == "STRING":
        return field, F.lit(True)
    if name == "BOOLEAN":
        word = F.lower(F.trim(field))
        return F.when(word == "true", True).when(word == "false", False), word.isin("true", "false")
    if name in ("INT", "BIGINT"):
        value = F.when(field.rlike(_anchored(INT_TEXT)), F.trim(field).try_cast(name.lower()))
        return value, value.isNotNull()
    if name == "DOUBLE":
        value = F.when(field.rlike(_anchored(DOUBLE_TEXT)), F.trim(field).try_cast("double"))
        return value, value.isNotNull()
    if name == "BYTES":
        value = F.when(field.rlike(_anchored(BASE64_TEXT)), F.try_to_binary(field, F.lit("base64")))
        return value, value.isNotNull()
    if name == "DATE":
        days = F.when(field.rlike(_anchored(INT_TEXT)), F.trim(field).try_cast("int"))
        return F.date_from_unix_date(days), days.isNotNull()
    if name == "TIMESTAMP":
        millis = F.when(field.rlike(_anchored(INT_TEXT)), F.trim(field).try_cast("bigint"))
        return F.timestamp_millis(millis), millis.isNotNull()
    raise SchemaError(f"The DELIMITED format does not support type {t}")


def _format_text(value: Column, t: SqlType) -> Column:
    from pyspark.sql import functions as F

    if isinstance(t, DecimalType):
        return value.cast("string")
    name = t.name  # type: ignore[attr-defined]
    if name == "BYTES":
        return F.base64(value)
    if name == "DATE":
        return F.unix_date(value).cast("string")
    if name == "TIMESTAMP":
        return F.unix_millis(value).cast("string")
    return value.cast("string")

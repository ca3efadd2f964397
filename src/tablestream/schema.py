"""ksqlDB-style schemas: column lists and SQL types, without pyspark.

A *schema* is a ksqlDB column list such as::

    id BIGINT, name STRING, tags ARRAY<STRING>, address STRUCT<street STRING, zip INT>,
    price DECIMAL(10, 2), at TIMESTAMP

and a *type* is a single SQL type such as ``BIGINT`` (what a ``KAFKA`` key declares).
Both are parsed into frozen values (:class:`Schema`, :class:`Column`, :class:`SqlType`)
that the plan layer can hold and compare without a JVM, and that convert to a Spark DDL
string (the Spark side builds its ``StructType`` from it) and to an Avro schema.

Types: ``BOOLEAN``, ``INT`` (alias ``INTEGER``), ``BIGINT``, ``DOUBLE``, ``STRING``
(alias ``VARCHAR``), ``BYTES``, ``DECIMAL(p, s)``, ``DATE``, ``TIMESTAMP``,
``ARRAY<T>``, ``MAP<STRING, T>`` and ``STRUCT<name T, ...>``. ``TIME`` is not supported
yet.

Column names keep their case as written. ksqlDB upper-cases unquoted identifiers
(``id`` becomes ``ID``); we keep ``id`` because Spark resolves column names
case-insensitively, so a user writes ``id`` or ``ID`` and gets the column either way,
while the field names written into JSON and Avro are the ones the user declared.
Because of that, two names that differ only in case are rejected as duplicates.
Backticks quote a name (```My Col` STRING``) and keep it exactly.

>>> s = parse_schema("id BIGINT, tags ARRAY<STRING>, price DECIMAL(10,2)")
>>> s.names
('id', 'tags', 'price')
>>> s.to_spark_ddl()
'`id` BIGINT, `tags` ARRAY<STRING>, `price` DECIMAL(10,2)'
>>> str(s)
'id BIGINT, tags ARRAY<STRING>, price DECIMAL(10,2)'
>>> parse_type("BIGINT")
PrimitiveType(name='BIGINT')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.tokens import Token, TokenType

from .errors import SchemaError

__all__ = [
    "ArrayType",
    "BIGINT",
    "BOOLEAN",
    "BYTES",
    "Column",
    "DATE",
    "DOUBLE",
    "DecimalType",
    "INT",
    "MapType",
    "PrimitiveType",
    "STRING",
    "Schema",
    "SqlType",
    "StructType",
    "TIMESTAMP",
    "avro_schema_text",
    "from_avro_schema",
    "parse_schema",
    "parse_schema_or_type",
    "parse_type",
    "to_avro_schema",
]

MAX_DECIMAL_PRECISION = 38  # Spark's limit
AVRO_NAMESPACE = "io.confluent.ksql.avro_schemas"  # what ksqlDB writes
AVRO_RECORD_NAME = "KsqlDataSourceSchema"


class SqlType:
    """A ksqlDB SQL type. ``str(t)`` is its ksqlDB text, ``t.spark_ddl()`` its Spark DDL."""

    def spark_ddl(self) -> str:
        raise NotImplementedError

    @property
    def is_primitive(self) -> bool:
        """True for everything but ``ARRAY``, ``MAP`` and ``STRUCT``."""
        return True


@dataclass(frozen=True)
class PrimitiveType(SqlType):
    """``BOOLEAN``, ``INT``, ``BIGINT``, ``DOUBLE``, ``STRING``, ``BYTES``, ``DATE``, ``TIMESTAMP``."""

    name: str

    def __str__(self) -> str:
        return self.name

    def spark_ddl(self) -> str:
        return _SPARK_PRIMITIVES[self.name]


@dataclass(frozen=True)
class DecimalType(SqlType):
    precision: int
    scale: int

    def __str__(self) -> str:
        return f"DECIMAL({self.precision},{self.scale})"

    def spark_ddl(self) -> str:
        return str(self)


@dataclass(frozen=True)
class ArrayType(SqlType):
    element: SqlType

    def __str__(self) -> str:
        return f"ARRAY<{self.element}>"

    def spark_ddl(self) -> str:
        return f"ARRAY<{self.element.spark_ddl()}>"

    @property
    def is_primitive(self) -> bool:
        return False


@dataclass(frozen=True)
class MapType(SqlType):
    """``MAP<STRING, T>``: keys are always strings (as in ksqlDB, JSON objects and Avro maps)."""

    value: SqlType

    def __str__(self) -> str:
        return f"MAP<STRING, {self.value}>"

    def spark_ddl(self) -> str:
        return f"MAP<STRING, {self.value.spark_ddl()}>"

    @property
    def is_primitive(self) -> bool:
        return False


@dataclass(frozen=True)
class Column:
    """A named column (or struct field) of a type."""

    name: str
    type: SqlType

    def __str__(self) -> str:
        return f"{_quote_name(self.name)} {self.type}"

    def spark_ddl(self) -> str:
        return f"{_backtick(self.name)} {self.type.spark_ddl()}"


@dataclass(frozen=True)
class StructType(SqlType):
    fields: tuple[Column, ...]

    def __str__(self) -> str:
        return f"STRUCT<{', '.join(str(f) for f in self.fields)}>"

    def spark_ddl(self) -> str:
        inner = ", ".join(f"{_backtick(f.name)}: {f.type.spark_ddl()}" for f in self.fields)
        return f"STRUCT<{inner}>"

    @property
    def is_primitive(self) -> bool:
        return False

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)


BOOLEAN = PrimitiveType("BOOLEAN")
INT = PrimitiveType("INT")
BIGINT = PrimitiveType("BIGINT")
DOUBLE = PrimitiveType("DOUBLE")
STRING = PrimitiveType("STRING")
BYTES = PrimitiveType("BYTES")
DATE = PrimitiveType("DATE")
TIMESTAMP = PrimitiveType("TIMESTAMP")

_SPARK_PRIMITIVES = {
    "BOOLEAN": "BOOLEAN",
    "INT": "INT",
    "BIGINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "STRING": "STRING",
    "BYTES": "BINARY",
    "DATE": "DATE",
    "TIMESTAMP": "TIMESTAMP",
}

# Names accepted in schema text (upper-cased) -> type.
_PRIMITIVE_NAMES: dict[str, PrimitiveType] = {
    "BOOLEAN": BOOLEAN,
    "INT": INT,
    "INTEGER": INT,
    "BIGINT": BIGINT,
    "DOUBLE": DOUBLE,
    "STRING": STRING,
    "VARCHAR": STRING,
    "BYTES": BYTES,
    "DATE": DATE,
    "TIMESTAMP": TIMESTAMP,
}
_UNSUPPORTED_NAMES = {
    "TIME": "TIME is not supported yet (use INT for milliseconds since midnight)",
    "FLOAT": "FLOAT is not a ksqlDB type (use DOUBLE)",
    "REAL": "REAL is not a ksqlDB type (use DOUBLE)",
    "SMALLINT": "SMALLINT is not a ksqlDB type (use INT)",
    "TINYINT": "TINYINT is not a ksqlDB type (use INT)",
    "LONG": "LONG is not a ksqlDB type (use BIGINT)",
    "BINARY": "BINARY is not a ksqlDB type (use BYTES)",
}


@dataclass(frozen=True)
class Schema:
    """A ksqlDB column list: the columns of a key or a value, in order.

    >>> s = Schema.parse("id BIGINT, name STRING")
    >>> s["name"].type
    PrimitiveType(name='STRING')
    >>> len(s), s.names
    (2, ('id', 'name'))
    """

    columns: tuple[Column, ...]

    @staticmethod
    def parse(text: str) -> Schema:
        return parse_schema(text)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def __getitem__(self, name: str) -> Column:
        for column in self.columns:
            if column.name == name:
                return column
        raise KeyError(name)

    def __str__(self) -> str:
        return ", ".join(str(c) for c in self.columns)

    def as_struct(self) -> StructType:
        return StructType(self.columns)

    def to_spark_ddl(self) -> str:
        """The Spark DDL of the columns (``StructType.fromDDL`` / ``from_json`` accept it)."""
        return ", ".join(c.spark_ddl() for c in self.columns)

    def to_avro(
        self, name: str = AVRO_RECORD_NAME, namespace: str = AVRO_NAMESPACE
    ) -> dict[str, Any]:
        """The Avro record schema, as ksqlDB writes it (see :func:`to_avro_schema`)."""
        return to_avro_schema(self, name=name, namespace=namespace)  # type: ignore[return-value]


# --- Avro -------------------------------------------------------------------------

_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def to_avro_schema(
    schema: Schema | SqlType,
    name: str = AVRO_RECORD_NAME,
    namespace: str = AVRO_NAMESPACE,
) -> dict[str, Any] | str:
    """The Avro schema of a column list (a record) or of a single type.

    Like ksqlDB: every field is optional (a ``["null", T]`` union with default null),
    array items and map values too; ``DECIMAL`` is ``bytes`` with logical type
    ``decimal``, ``TIMESTAMP`` is ``long`` with ``timestamp-millis``, ``DATE`` is
    ``int`` with ``date``. Nested records are named ``<parent>_<field>``. The top
    level is not nullable: a null key or value is a Kafka null (tombstone), not an
    Avro null.

    >>> to_avro_schema(parse_schema("id BIGINT"), name="R", namespace="ns")
    {'type': 'record', 'name': 'R', 'namespace': 'ns', 'fields': [{'name': 'id', 'type': ['null', 'long'], 'default': None}]}
    >>> to_avro_schema(BIGINT)
    'long'
    """
    if isinstance(schema, Schema):
        record = _avro_record(schema.columns, name)
        return {"type": "record", "name": name, "namespace": namespace, "fields": record["fields"]}
    return _avro_type(schema, name)


def _avro_record(fields: tuple[Column, ...], name: str) -> dict[str, Any]:
    out = []
    for column in fields:
        if not _AVRO_NAME.fullmatch(column.name):
            raise SchemaError(
                f"Column name '{column.name}' is not a valid Avro name "
                "(letters, digits and '_', not starting with a digit)"
            )
        out.append(
            {
                "name": column.name,
                "type": ["null", _avro_type(column.type, f"{name}_{column.name}")],
                "default": None,
            }
        )
    return {"type": "record", "name": name, "fields": out}


def _avro_type(t: SqlType, name: str) -> Any:
    if isinstance(t, PrimitiveType):
        return {
            "BOOLEAN": "boolean",
            "INT": "int",
            "BIGINT": "long",
            "DOUBLE": "double",
            "STRING": "string",
            "BYTES": "bytes",
            "DATE": {"type": "int", "logicalType": "date"},
            "TIMESTAMP": {"type": "long", "logicalType": "timestamp-millis"},
        }[t.name]
    if isinstance(t, DecimalType):
        return {
            "type": "bytes",
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    if isinstance(t, ArrayType):
        return {"type": "array", "items": ["null", _avro_type(t.element, name)]}
    if isinstance(t, MapType):
        return {"type": "map", "values": ["null", _avro_type(t.value, name)]}
    if isinstance(t, StructType):
        return _avro_record(t.fields, name)
    raise SchemaError(f"No Avro type for {t}")


def avro_schema_text(text: str) -> Any | None:
    """The Avro schema ``text`` holds (parsed JSON), or ``None`` when it is not JSON
    (a ksqlDB column list or type). An Avro schema is a JSON object, a JSON array (a
    union) or a quoted name (``'"long"'``).

    >>> avro_schema_text('{"type": "record", "name": "R", "fields": []}')["name"]
    'R'
    >>> avro_schema_text("id BIGINT") is None
    True
    """
    stripped = text.strip()
    if stripped[:1] not in ('{', '[', '"'):
        return None
    try:
        return json.loads(stripped)
    except json.JSONDecodeError as e:
        raise SchemaError(f"Invalid Avro schema (not JSON: {e.msg} at line {e.lineno} column {e.colno})") from None


def from_avro_schema(schema: str | dict[str, Any] | list[Any], *, upper_case: bool = False) -> Schema | SqlType:
    """The ksqlDB columns of an Avro schema: a record's fields are the columns (a
    :class:`Schema`), any other schema one :class:`SqlType`.

    Types map as ksqlDB maps them: ``boolean``, ``int``, ``long`` (``BIGINT``),
    ``float`` and ``double`` (``DOUBLE``), ``string``, ``enum`` and ``uuid``
    (``STRING``), ``bytes`` and ``fixed`` (``BYTES``), ``decimal`` (``DECIMAL(p, s)``),
    ``date``, ``timestamp-millis`` (``TIMESTAMP``), ``array``, ``map`` (``MAP<STRING,
    T>``), a nested ``record`` (``STRUCT``); a union of ``null`` and one type is that
    type. Any other union, a recursive record, and the time and microsecond logical
    types are refused naming the field: no field is left out. ``upper_case=True``
    upper-cases field names, as ksqlDB does with a schema it infers.

    >>> str(from_avro_schema({"type": "record", "name": "Order", "fields": [
    ...     {"name": "id", "type": "long"},
    ...     {"name": "status", "type": {"type": "enum", "name": "S", "symbols": ["NEW", "PAID"]}},
    ...     {"name": "price", "type": ["null", "float"], "default": None}]}))
    'id BIGINT, status STRING, price DOUBLE'
    >>> from_avro_schema('"long"')
    PrimitiveType(name='BIGINT')
    """
    parsed = avro_schema_text(schema) if isinstance(schema, str) else schema
    if parsed is None:
        raise SchemaError(f"Invalid Avro schema: {schema!r} is not JSON")
    reader = _AvroReader(upper_case)
    if isinstance(parsed, dict) and parsed.get("type") == "record":
        return Schema(reader.fields(parsed, "", set()))
    return reader.type(parsed, "", set())


_AVRO_PRIMITIVES: dict[str, SqlType] = {
    "boolean": BOOLEAN, "int": INT, "long": BIGINT, "float": DOUBLE, "double": DOUBLE, "string": STRING, "bytes": BYTES,
}


class _AvroReader:
    """Walks an Avro schema, remembering the named types (records, enums, fixed) it
    defines so later references by name resolve."""

    def __init__(self, upper_case: bool):
        self.upper_case = upper_case
        self.named: dict[str, Any] = {}

    def fail(self, path: str, message: str) -> SchemaError:
        return SchemaError(f"Avro schema{f' field {path!r}' if path else ''}: {message}")

    def fields(self, record: dict[str, Any], path: str, open_records: set[str]) -> tuple[Column, ...]:
        name = self._define(record, path)
        fields = record.get("fields")
        if not isinstance(fields, list):
            raise self.fail(path, "a record needs a list of fields")
        out: list[Column] = []
        seen: dict[str, str] = {}
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                raise self.fail(path, f"a record field needs a name and a type, got {field!r}")
            column = field["name"].upper() if self.upper_case else field["name"]
            if column.upper() in seen:
                raise self.fail(path, f"fields {seen[column.upper()]!r} and {field['name']!r} have the same name ignoring case")
            seen[column.upper()] = field["name"]
            inner = f"{path}.{field['name']}" if path else field["name"]
            out.append(Column(column, self.type(field["type"], inner, open_records | {name})))
        return tuple(out)

    def _define(self, named: dict[str, Any], path: str) -> str:
        name = named.get("name")
        if not isinstance(name, str) or not name:
            raise self.fail(path, f"a {named.get('type')} needs a name")
        namespace = named.get("namespace")
        full = name if "." in name or not namespace else f"{namespace}.{name}"
        self.named[full] = named
        self.named.setdefault(name.rsplit(".", 1)[-1], named)
        return full

    def type(self, t: Any, path: str, open_records: set[str]) -> SqlType:
        if isinstance(t, list):
            branches = [b for b in t if b != "null"]
            if len(branches) != 1 or len(t) - len(branches) > 1:
                raise self.fail(path, f"a union is read only as null and one type, got {json.dumps(t)}")
            return self.type(branches[0], path, open_records)
        if isinstance(t, str):
            if t in _AVRO_PRIMITIVES:
                return _AVRO_PRIMITIVES[t]
            if t == "null":
                raise self.fail(path, "a field of type null holds nothing")
            if t in open_records:
                raise self.fail(path, f"the record {t} contains itself; recursive types are not supported")
            if t in self.named:
                return self.type(self.named[t], path, open_records)
            raise self.fail(path, f"unknown type {t!r}")
        if not isinstance(t, dict) or "type" not in t:
            raise self.fail(path, f"not an Avro type: {t!r}")
        kind, logical = t["type"], t.get("logicalType")
        if logical is not None and kind in ("int", "long", "bytes", "fixed", "string"):
            return self._logical(t, kind, logical, path)
        if kind == "record":
            return StructType(self.fields(t, path, open_records))
        if kind == "enum":
            self._define(t, path)
            return STRING
        if kind == "fixed":
            self._define(t, path)
            return BYTES
        if kind == "array":
            return ArrayType(self.type(t.get("items"), f"{path}[]", open_records))
        if kind == "map":
            return MapType(self.type(t.get("values"), f"{path}{{}}", open_records))
        return self.type(kind, path, open_records)

    def _logical(self, t: dict[str, Any], kind: str, logical: str, path: str) -> SqlType:
        if logical == "decimal" and kind in ("bytes", "fixed"):
            if kind == "fixed":
                self._define(t, path)
            precision, scale = t.get("precision"), t.get("scale", 0)
            if not isinstance(precision, int) or not isinstance(scale, int) or not 0 <= scale <= precision:
                raise self.fail(path, f"a decimal needs a precision and a scale from 0 to it, got {json.dumps(t)}")
            if precision > MAX_DECIMAL_PRECISION:
                raise self.fail(path, f"DECIMAL precision {precision} is above {MAX_DECIMAL_PRECISION}")
            return DecimalType(precision, scale)
        if (kind, logical) == ("int", "date"):
            return DATE
        if (kind, logical) == ("long", "timestamp-millis"):
            return TIMESTAMP
        if (kind, logical) == ("string", "uuid"):
            return STRING
        if logical in ("time-millis", "time-micros", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
            raise self.fail(path, f"the logical type {logical} is not supported (TIMESTAMP is timestamp-millis)")
        # An unknown logical type is read as its underlying type, as Avro readers do.
        return self.type(kind, path, set())


# --- parsing ----------------------------------------------------------------------

_DIALECT = Dialect.get_or_raise("spark")  # backticks quote identifiers, as in ksqlDB
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_schema(text: str) -> Schema:
    """Parse a ksqlDB column list (``"id BIGINT, name STRING"``) into a :class:`Schema`.

    Raises :class:`~tablestream.errors.SchemaError` naming the offending text on an
    unknown type, a duplicate or missing column name, or an empty list.

    >>> parse_schema("a INT, A STRING")
    Traceback (most recent call last):
    ...
    tablestream.errors.SchemaError: Invalid schema 'a INT, A STRING': duplicate column 'A' (same name as 'a'; names are case-insensitive)
    """
    return _Parser(text).columns()


def parse_type(text: str) -> SqlType:
    """Parse one type without a name (``"BIGINT"``, ``"ARRAY<STRING>"``).

    >>> parse_type("MAP<STRING, DECIMAL(4, 1)>")
    MapType(value=DecimalType(precision=4, scale=1))
    """
    return _Parser(text).single_type()


def parse_schema_or_type(text: str) -> Schema | SqlType:
    """A single type when ``text`` is just a type (``"BIGINT"``), else a column list;
    an Avro schema (JSON) gives its columns (:func:`from_avro_schema`).

    >>> parse_schema_or_type("BIGINT")
    PrimitiveType(name='BIGINT')
    >>> parse_schema_or_type("date DATE").names
    ('date',)
    """
    avro = avro_schema_text(text)
    if avro is not None:
        return from_avro_schema(avro)
    parser = _Parser(text)
    if parser.looks_like_single_type():
        return parser.single_type()
    return parser.columns()


class _Parser:
    """Recursive descent over sqlglot's tokens: sqlglot's own DDL parser rejects ksqlDB
    spellings (``BYTES``, keyword column names) with messages that name no column."""

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise SchemaError(f"A schema must be a string, got {type(text).__name__}")
        self.text = text
        try:
            self.tokens: list[Token] = _DIALECT.tokenize(text)
        except TokenError as e:
            if text.count("`") % 2:
                raise self.error(
                    f"a quoted name is not closed (character {text.rindex('`') + 1})"
                ) from None
            raise self.error(f"cannot tokenize it ({str(e).splitlines()[0]})") from None
        self.pos = 0

    # -- helpers
    def error(self, reason: str) -> SchemaError:
        return SchemaError(f"Invalid schema '{self.text}': {reason}")

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self, expected: str) -> Token:
        token = self.peek()
        if token is None:
            raise self.error(f"expected {expected} at the end")
        self.pos += 1
        return token

    def where(self, token: Token) -> str:
        return f"at character {token.start + 1}"

    def expect(self, kind: TokenType, shown: str) -> Token:
        token = self.next(f"'{shown}'")
        if token.token_type != kind:
            raise self.error(f"expected '{shown}' but found '{token.text}' {self.where(token)}")
        return token

    def at(self, kind: TokenType) -> bool:
        token = self.peek()
        return token is not None and token.token_type == kind

    # -- grammar
    def looks_like_single_type(self) -> bool:
        first = self.peek()
        if first is None or first.token_type == TokenType.IDENTIFIER:
            return False
        if first.text.upper() not in (*_PRIMITIVE_NAMES, "DECIMAL", "ARRAY", "MAP", "STRUCT"):
            return False
        saved = self.pos
        try:
            self.type_()
            return self.peek() is None
        except SchemaError:
            return False
        finally:
            self.pos = saved

    def single_type(self) -> SqlType:
        if self.peek() is None:
            raise self.error("no type")
        t = self.type_()
        extra = self.peek()
        if extra is not None:
            raise self.error(f"unexpected '{extra.text}' {self.where(extra)} after the type")
        return t

    def columns(self) -> Schema:
        if self.peek() is None:
            raise self.error("no columns")
        fields = self.field_list(end=None)
        return Schema(fields)

    def field_list(self, end: TokenType | None) -> tuple[Column, ...]:
        fields: list[Column] = []
        seen: dict[str, str] = {}
        while True:
            column = self.field(allow_colon=end is not None)
            folded = column.name.lower()
            if folded in seen:
                first = seen[folded]
                same = (
                    ""
                    if first == column.name
                    else f" (same name as '{first}'; names are case-insensitive)"
                )
                raise self.error(f"duplicate column '{column.name}'{same}")
            seen[folded] = column.name
            fields.append(column)
            token = self.peek()
            if token is None:
                if end is None:
                    return tuple(fields)
                raise self.error("expected '>' at the end")
            if token.token_type == TokenType.COMMA:
                self.pos += 1
                if self.peek() is None:
                    raise self.error("expected a column after the last ','")
                continue
            if end is not None and token.token_type == end:
                return tuple(fields)
            raise self.error(f"unexpected '{token.text}' {self.where(token)} (expected ',')")

    def field(self, allow_colon: bool) -> Column:
        token = self.next("a column name")
        if token.token_type == TokenType.IDENTIFIER:  # `quoted`
            name = token.text
            if not name:
                raise self.error(f"empty column name {self.where(token)}")
        elif _WORD.fullmatch(token.text):
            name = token.text
        else:
            raise self.error(f"expected a column name but found '{token.text}' {self.where(token)}")
        if allow_colon and self.at(TokenType.COLON):
            self.pos += 1
        if self.peek() is None:
            raise self.error(f"column '{name}' has no type")
        if self.at(TokenType.COMMA):
            raise self.error(f"column '{name}' has no type")
        return Column(name, self.type_(column=name))

    def type_(self, column: str | None = None) -> SqlType:
        token = self.next("a type")
        word = token.text.upper() if token.token_type != TokenType.IDENTIFIER else ""
        of = f" for column '{column}'" if column else ""
        if word in _PRIMITIVE_NAMES:
            return _PRIMITIVE_NAMES[word]
        if word == "DECIMAL":
            return self.decimal(token)
        if word == "ARRAY":
            self.expect(TokenType.LT, "<")
            element = self.type_()
            self.expect(TokenType.GT, ">")
            return ArrayType(element)
        if word == "MAP":
            self.expect(TokenType.LT, "<")
            key_token = self.peek()
            key = self.type_()
            if key != STRING:
                where = self.where(key_token) if key_token is not None else ""
                raise self.error(f"MAP keys must be STRING, got {key} {where}")
            self.expect(TokenType.COMMA, ",")
            value = self.type_()
            self.expect(TokenType.GT, ">")
            return MapType(value)
        if word == "STRUCT":
            if self.at(TokenType.NEQ):  # STRUCT<>
                raise self.error(f"STRUCT needs at least one field {self.where(token)}")
            self.expect(TokenType.LT, "<")
            if self.at(TokenType.GT):
                raise self.error(f"STRUCT needs at least one field {self.where(token)}")
            fields = self.field_list(end=TokenType.GT)
            self.expect(TokenType.GT, ">")
            return StructType(fields)
        if word in _UNSUPPORTED_NAMES:
            raise self.error(f"{_UNSUPPORTED_NAMES[word]}{of} {self.where(token)}")
        raise self.error(f"unknown type '{token.text}'{of} {self.where(token)}")

    def decimal(self, token: Token) -> DecimalType:
        if not self.at(TokenType.L_PAREN):
            raise self.error(
                f"DECIMAL needs a precision and a scale, as in DECIMAL(10, 2) {self.where(token)}"
            )
        self.pos += 1
        precision = self.integer("precision")
        scale = 0
        if self.at(TokenType.COMMA):
            self.pos += 1
            scale = self.integer("scale")
        self.expect(TokenType.R_PAREN, ")")
        if not 1 <= precision <= MAX_DECIMAL_PRECISION:
            raise self.error(
                f"DECIMAL precision must be between 1 and {MAX_DECIMAL_PRECISION}, got {precision} {self.where(token)}"
            )
        if not 0 <= scale <= precision:
            raise self.error(
                f"DECIMAL scale must be between 0 and the precision {precision}, got {scale} {self.where(token)}"
            )
        return DecimalType(precision, scale)

    def integer(self, what: str) -> int:
        token = self.next(f"the DECIMAL {what}")
        if token.token_type != TokenType.NUMBER or not token.text.isdigit():
            raise self.error(
                f"expected the DECIMAL {what} (an integer) but found '{token.text}' {self.where(token)}"
            )
        return int(token.text)


def _backtick(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _quote_name(name: str) -> str:
    return name if _WORD.fullmatch(name) else _backtick(name)

"""The statements of ksqlDB's SQL that tablestream reads, as frozen data.

:func:`tablestream.sql.parse` turns a script into these. Names are ksqlDB's: an
unquoted identifier is upper-cased (``clicks`` is ``CLICKS``), a quoted one
(```clicks``` or ``"clicks"``) keeps its case. Expressions stay sqlglot trees of the
ksqlDB dialect (:mod:`tablestream.sql.dialect`); the compiler types and translates them.
Every statement knows its text and where it starts in the script, so errors can name
both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sqlglot import exp

from tablestream.schema import SqlType

__all__ = [
    "ColumnElement",
    "Describe",
    "Explain",
    "ListKind",
    "ListStatement",
    "PrintTopic",
    "RunScript",
    "Terminate",
    "CreateAsSelect",
    "CreateSource",
    "DropSource",
    "InsertInto",
    "InsertValues",
    "Join",
    "Name",
    "Position",
    "Property",
    "Query",
    "Relation",
    "SelectColumn",
    "SelectItem",
    "SelectStar",
    "SelectStatement",
    "SetProperty",
    "SourceKind",
    "Statement",
    "UnsetProperty",
]

SourceKind = Literal["STREAM", "TABLE"]
JoinKind = Literal["INNER", "LEFT", "RIGHT", "FULL"]


@dataclass(frozen=True, slots=True)
class Position:
    """A place in the script: 1-based line and column, and the 0-based offset."""

    line: int
    column: int
    offset: int


@dataclass(frozen=True, slots=True)
class Name:
    """An identifier as ksqlDB reads it: ``text`` upper-cased unless ``quoted``."""

    text: str
    quoted: bool
    position: Position = field(compare=False)

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class Property:
    """One ``WITH (NAME=value)`` entry; ``name`` upper-cased, ``value`` a str, int,
    float or bool literal."""

    name: str
    value: str | int | float | bool | None
    position: Position = field(compare=False)


@dataclass(frozen=True, slots=True)
class ColumnElement:
    """A column of ``CREATE STREAM|TABLE name (...)``; ``constraint`` is ``KEY``,
    ``PRIMARY KEY``, ``HEADERS``, ``HEADER`` or ``None`` (a value column)."""

    name: Name
    type: SqlType
    constraint: str | None
    position: Position = field(compare=False)


@dataclass(frozen=True, slots=True)
class Relation:
    """A source named in ``FROM`` or ``JOIN``, with its alias (``FROM clicks c``)."""

    name: Name
    alias: Name | None

    @property
    def alias_text(self) -> str:
        """What the query calls the source: its alias, else its name."""
        return (self.alias or self.name).text


@dataclass(frozen=True, slots=True)
class Join:
    """``[INNER | LEFT | RIGHT | FULL] JOIN relation ON condition``."""

    kind: JoinKind
    relation: Relation
    on: exp.Expr
    position: Position = field(compare=False)


@dataclass(frozen=True, slots=True)
class SelectStar:
    """``*`` or ``alias.*``."""

    qualifier: Name | None
    position: Position = field(compare=False)


@dataclass(frozen=True, slots=True)
class SelectColumn:
    """One ``expression [AS alias]`` of a projection."""

    expression: exp.Expr
    alias: Name | None
    position: Position = field(compare=False)


SelectItem = SelectStar | SelectColumn


@dataclass(frozen=True, slots=True)
class Query:
    """A ``SELECT``: projection, one source or a chain of joins, ``WHERE``,
    ``GROUP BY``, ``PARTITION BY``, ``HAVING``, ``EMIT CHANGES|FINAL``, ``LIMIT``."""

    select: tuple[SelectItem, ...]
    source: Relation
    joins: tuple[Join, ...]
    where: exp.Expr | None
    group_by: tuple[exp.Expr, ...]
    partition_by: tuple[exp.Expr, ...]
    having: exp.Expr | None
    emit: Literal["CHANGES", "FINAL"] | None
    limit: int | None
    position: Position = field(compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Statement:
    """What every statement has: its text in the script, where it starts, and its
    index (0 for the first statement of the script)."""

    text: str = field(compare=False)
    position: Position = field(compare=False)
    index: int = field(compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateSource(Statement):
    """``CREATE [OR REPLACE] [SOURCE] STREAM|TABLE [IF NOT EXISTS] name [(columns)]
    [WITH (properties)]``: a stream or table over a topic."""

    kind: SourceKind
    name: Name
    elements: tuple[ColumnElement, ...]
    properties: tuple[Property, ...]
    or_replace: bool = False
    if_not_exists: bool = False
    source: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class CreateAsSelect(Statement):
    """``CREATE [OR REPLACE] STREAM|TABLE [IF NOT EXISTS] name [WITH (...)] AS SELECT``:
    a persistent query writing a new stream or table."""

    kind: SourceKind
    name: Name
    properties: tuple[Property, ...]
    query: Query
    or_replace: bool = False
    if_not_exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class InsertInto(Statement):
    """``INSERT INTO name [WITH (...)] SELECT ...``: a persistent query writing into an
    existing stream."""

    target: Name
    properties: tuple[Property, ...]
    query: Query


@dataclass(frozen=True, slots=True, kw_only=True)
class InsertValues(Statement):
    """``INSERT INTO name [(columns)] VALUES (values)``: one record."""

    target: Name
    columns: tuple[Name, ...]
    values: tuple[exp.Expr, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectStatement(Statement):
    """A query on its own: a push query (``EMIT CHANGES``) or a pull query."""

    query: Query


@dataclass(frozen=True, slots=True, kw_only=True)
class DropSource(Statement):
    """``DROP STREAM|TABLE [IF EXISTS] name [DELETE TOPIC]``."""

    kind: SourceKind
    name: Name
    if_exists: bool = False
    delete_topic: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class SetProperty(Statement):
    """``SET 'name'='value'``."""

    name: str
    value: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UnsetProperty(Statement):
    """``UNSET 'name'``."""

    name: str


ListKind = Literal["STREAMS", "TABLES", "TOPICS", "QUERIES", "PROPERTIES"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ListStatement(Statement):
    """``SHOW|LIST STREAMS|TABLES|TOPICS|QUERIES|PROPERTIES [EXTENDED]`` (``SHOW ALL
    TOPICS`` too: ``all_topics``)."""

    what: ListKind
    extended: bool = False
    all_topics: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Describe(Statement):
    """``DESCRIBE name [EXTENDED]``, or ``DESCRIBE STREAMS|TABLES [EXTENDED]``
    (``name`` ``None``, ``every`` the kind)."""

    name: Name | None
    extended: bool = False
    every: SourceKind | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Explain(Statement):
    """``EXPLAIN statement`` (``statement`` set) or ``EXPLAIN query_id``."""

    statement: Statement | None = None
    query_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Terminate(Statement):
    """``TERMINATE query_id`` or ``TERMINATE ALL`` (``query_id`` ``None``)."""

    query_id: str | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PrintTopic(Statement):
    """``PRINT topic [FROM BEGINNING] [INTERVAL | SAMPLE n] [LIMIT n]``; ``topic`` as
    written (a quoted name or an identifier, whose case Kafka topics keep)."""

    topic: str
    from_beginning: bool = False
    interval: int = 1
    limit: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunScript(Statement):
    """``RUN SCRIPT 'file.sql'``."""

    path: str

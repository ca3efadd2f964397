"""What a SQL script has declared: streams and tables (their columns, topic, formats),
the queries that write them, and how their records are laid out for the plan.

A stream or table's records are Kafka records: its key columns are the record key (one
column: the bare value; several: a struct, which needs a format such as JSON), its
value columns the record value (a struct of the columns, or the bare value of a single
column when it is not wrapped). :class:`Layout` says how each column of a relation is
read in the Spark SQL of a plan node.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from sqlglot import exp

from tablestream.plan.expr import RECORD
from tablestream.schema import Column, Schema
from tablestream.sql.expressions import PSEUDO_TYPES, Field
from tablestream.sql.statements import Position

__all__ = ["Base", "Layout", "QueryInfo", "SourceInfo", "own", "record_layout"]


def own(name: str) -> exp.Column:
    """The record's own ``key``, ``value`` or ``rowtime`` in a plan node's SQL, qualified
    (``record.key``) so that a value field of that name never stands for it."""
    return exp.column(name, table=RECORD)


@dataclass(frozen=True, slots=True)
class Base:
    """Where a struct is in a Spark row: column ``name`` (``value``, ``left``, ``right``)
    and then the fields ``path`` inside it."""

    name: str
    path: tuple[str, ...] = ()

    def whole(self) -> exp.Expr:
        """The struct (or bare value) itself."""
        if not self.path:
            return own(self.name) if self.name == "value" else exp.column(self.name)
        node: exp.Expr = exp.Column(this=exp.to_identifier(self.path[0], quoted=True), table=exp.to_identifier(self.name))
        for part in self.path[1:]:
            node = exp.Bracket(this=node, expressions=[exp.Literal.string(part)])
        return node

    def field(self, name: str) -> exp.Expr:
        """One field of the struct. At the top of a row it is ``value.NAME``."""
        if not self.path:
            return exp.Column(this=exp.to_identifier(name, quoted=True), table=exp.to_identifier(self.name))
        return exp.Bracket(this=self.whole(), expressions=[exp.Literal.string(name)])

    def child(self, name: str) -> Base:
        return Base(self.name, (*self.path, name))


@dataclass(frozen=True)
class Layout:
    """How the columns of a relation are read from a record: ``read(field, value, key)``
    with ``value`` the :class:`Base` of the record's value and ``key`` whether the record
    key can be read (it cannot in a joiner, which sees two values)."""

    fields: tuple[Field, ...]
    read: Callable[[Field, Base, bool], exp.Expr | None]

    def reader(self, value: Base, key: bool = True) -> Callable[[Field], exp.Expr | None]:
        return lambda f: self.read(f, value, key)


def record_layout(
    alias: str,
    key_columns: tuple[Column, ...],
    value_columns: tuple[Column, ...],
    wrapped: bool,
    *,
    positions: bool = False,
) -> Layout:
    """The layout of a stream or table read from its topic (a source, or the output of
    a query read by the next one). ``positions``: its records carry their topic's
    partition and offset (ROWPARTITION, ROWOFFSET)."""
    fields = tuple(
        [Field(alias, c.name, c.type, "key") for c in key_columns]
        + [Field(alias, c.name, c.type, "value") for c in value_columns]
        + [Field(alias, p, t, "pseudo") for p, t in PSEUDO_TYPES.items()]
    )
    single_key = len(key_columns) == 1

    def read(f: Field, value: Base, key: bool) -> exp.Expr | None:
        if f.role == "key":
            if not key:
                return None
            return own("key") if single_key else exp.Bracket(this=own("key"), expressions=[exp.Literal.string(f.name)])
        if f.role == "value":
            return value.field(f.name) if wrapped else value.whole()
        if f.name == "ROWTIME" and key:
            return own("rowtime")
        if positions and key:
            return own("partition" if f.name == "ROWPARTITION" else "offset")
        return None

    return Layout(fields, read)


@dataclass
class SourceInfo:
    """A stream or table the script declared or a query created.

    ``facade`` is the DSL stream or table its records come from (made on first use for
    a declared source); ``query_id`` the query that writes it (``None`` for a declared
    one); ``partitions`` its topic's partition count when known."""

    name: str
    kind: Literal["STREAM", "TABLE"]
    topic: str
    key_format: str
    value_format: str
    key_columns: tuple[Column, ...]
    value_columns: tuple[Column, ...]
    wrapped: bool
    partitions: int | None
    position: Position
    statement: str
    read_only: bool = False
    query_id: str | None = None
    facade: Any = None
    inherited_key_format: str | None = None  # what a query of it inherits (a FORMAT of a keyless stream)
    written: bool = False  # INSERT INTO queries write it (its readers read them directly)
    reread: int | None = None  # its topic's count, when its query's result has another (read through a repartition to it)
    timestamp_column: str | None = None  # WITH (TIMESTAMP=...): the column its records' timestamps come from
    timestamp_extractor: str | None = None  # that column (parsed) as the DSL's SQL over its records
    value_avro_schema: str | None = None  # WITH (VALUE_AVRO_SCHEMA=...): its records' Avro schema, field names upper-cased

    @property
    def key_schema(self) -> str | None:
        """The key's schema for the DSL: a single type, a column list, or ``None``."""
        if not self.key_columns:
            return None
        if len(self.key_columns) == 1:
            return str(self.key_columns[0].type)
        return str(Schema(self.key_columns))

    @property
    def value_schema(self) -> str | None:
        """The value's schema for the DSL: a column list, or a single type when the one
        value column is not wrapped."""
        if self.value_avro_schema is not None:
            return self.value_avro_schema
        if not self.value_columns:
            return None
        if not self.wrapped:
            return str(self.value_columns[0].type)
        return str(Schema(self.value_columns))

    def schema_text(self) -> str:
        """The columns as ksqlDB's DESCRIBE lists them (``ID BIGINT KEY, NAME STRING``)."""
        from tablestream.sql.types import ksql_text

        keys = [f"`{c.name}` {ksql_text(c.type)} {'PRIMARY KEY' if self.kind == 'TABLE' else 'KEY'}" for c in self.key_columns]
        values = [f"`{c.name}` {ksql_text(c.type)}" for c in self.value_columns]
        return ", ".join(keys + values)

    def layout(self, alias: str) -> Layout:
        # A declared stream's records are its topic's (a query's output is read from
        # the query itself, so its records keep their sources' positions).
        positions = self.kind == "STREAM" and self.query_id is None and not self.written
        return record_layout(alias, self.key_columns, self.value_columns, self.wrapped, positions=positions)


@dataclass(frozen=True)
class QueryInfo:
    """A query the script runs: its id (``CSAS_OUTPUT_0``, ``CTAS_COUNTS_1``,
    ``INSERTQUERY_2``, ``transient_CLICKS_3`` for a push query), the topic it writes,
    the stream or table it writes (``None`` for a push query), its statement, and for a
    push query the names of the columns of its rows; ``sources`` the streams and tables
    it reads."""

    id: str
    sink_topic: str
    target: str | None
    statement: str
    columns: tuple[str, ...] = ()
    limit: int | None = None
    sources: tuple[str, ...] = ()
    position: Position | None = None

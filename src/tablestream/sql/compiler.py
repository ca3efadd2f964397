"""ksqlDB statements compiled into DSL calls, so SQL and the DSL build the same plan.

Every ``CREATE STREAM|TABLE`` over a topic becomes ``builder.stream()`` /
``builder.table()`` (on first use), and every query a chain of DSL calls on it:
``WHERE`` a ``filter``, a projection a ``map_values``, ``PARTITION BY`` a ``map`` to
the new key, a join ``join``/``left_join``/``outer_join`` (with ``foreign_key`` for a
foreign-key join, after a ``select_key`` when a stream joins on another column than its
key), ``GROUP BY`` a ``group_by`` and its aggregates (COUNT, SUM and AVG of a query
in one ``agg``, as ksqlDB computes them in one aggregate step; each other aggregate in
an aggregation of its own, joined on the group key), ``HAVING`` a table ``filter``, and the result written with
``to()``. A query that reads the output of another reads that query's DSL stream or
table directly.

ksqlDB's checks and their texts come first: unknown columns, types, key columns in the
projection, join keys and orders, co-partitioning.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

from sqlglot import exp

from tablestream.dsl import StreamsBuilder, aggregates
from tablestream.errors import SchemaError, TablestreamError
from tablestream.plan.expr import SPARK
from tablestream.plan.topology import Topology
from tablestream.schema import (
    BIGINT,
    DOUBLE,
    INT,
    STRING,
    ArrayType,
    Column,
    DecimalType,
    Schema,
    SqlType,
    avro_schema_text,
    from_avro_schema,
)
from tablestream.sql import statements as st
from tablestream.sql.catalog import Base, Layout, QueryInfo, SourceInfo, own, record_layout
from tablestream.sql.datetime_patterns import PatternError, parse_pattern
from tablestream.sql.dialect import node_position, parse_script
from tablestream.sql.errors import SqlError
from tablestream.sql.expressions import (
    PSEUDO_COLUMNS,
    Field,
    Scope,
    Translator,
    Typed,
    format_expression,
    is_aggregate,
    ksql_name,
)
from tablestream.sql.functions import AGGREGATES, TABLE_AGGREGATES, UNSUPPORTED_AGGREGATES
from tablestream.sql.types import ksql_text

__all__ = ["CompiledSql", "InsertRecord", "SqlCompiler", "compile_sql"]

# WITH properties: those read here, and ksqlDB's others (refused with a clear error).
_SUPPORTED = {
    "KAFKA_TOPIC", "KEY_FORMAT", "VALUE_FORMAT", "FORMAT", "PARTITIONS", "REPLICAS",
    "VALUE_DELIMITER", "WRAP_SINGLE_VALUE", "TIMESTAMP", "TIMESTAMP_FORMAT", "VALUE_AVRO_SCHEMA",
}
_KNOWN = _SUPPORTED | {
    "KEY_DELIMITER", "RETENTION_MS", "CLEANUP_POLICY",
    "KEY_SCHEMA_ID", "VALUE_SCHEMA_ID", "KEY_SCHEMA_FULL_NAME", "VALUE_SCHEMA_FULL_NAME",
    "VALUE_AVRO_SCHEMA_FULL_NAME", "KEY_PROTOBUF_NULLABLE_REPRESENTATION",
    "VALUE_PROTOBUF_NULLABLE_REPRESENTATION", "WINDOW_TYPE", "WINDOW_SIZE", "SOURCE_CONNECTOR",
}
_KSQL_FORMATS = ("AVRO", "DELIMITED", "JSON", "JSON_SR", "KAFKA", "NONE", "PROTOBUF", "PROTOBUF_NOSR")
_READABLE_FORMATS = ("AVRO", "DELIMITED", "JSON", "KAFKA")
_KAFKA_KEY_TYPES = ("INT", "BIGINT", "DOUBLE", "STRING", "BYTES")
# SET 'tablestream.auto.repartition'='true': joins repartition instead of refusing
# sources whose partition counts differ.
AUTO_REPARTITION = "tablestream.auto.repartition"
_JOIN_TYPES = {"INNER": "[INNER] JOIN", "LEFT": "LEFT [OUTER] JOIN", "RIGHT": "RIGHT [OUTER] JOIN", "FULL": "[FULL] OUTER JOIN"}


def _upper_case_fields(schema: Any) -> Any:
    """An Avro schema with its records' field names upper-cased (enum symbols, map keys
    and type names kept)."""
    if isinstance(schema, list):
        return [_upper_case_fields(branch) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _upper_case_fields(v) if k in ("type", "items", "values") else v for k, v in schema.items()}
    if schema.get("type") == "record" and isinstance(schema.get("fields"), list):
        out["fields"] = [
            {**f, "name": f["name"].upper(), "type": _upper_case_fields(f.get("type"))}
            if isinstance(f, dict) and isinstance(f.get("name"), str) else f
            for f in schema["fields"]
        ]
    return out


@dataclass(frozen=True)
class InsertRecord:
    """A record of ``INSERT INTO ... VALUES``: the topic and the key and value as the
    topic's formats take them (a dict of the value columns, or the bare value)."""

    topic: str
    key: Any
    value: Any
    timestamp: int | None
    statement: str


@dataclass
class CompiledSql:
    """What a script compiled to: the plan and what the SQL declared.

    ``sources`` by name, ``queries`` in order, ``inserts`` the records of ``INSERT
    ... VALUES`` in order, ``topics`` every topic the script reads or writes with its
    partition count, ``properties`` what ``SET`` left set."""

    builder: StreamsBuilder
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    queries: list[QueryInfo] = field(default_factory=list)
    inserts: list[InsertRecord] = field(default_factory=list)
    topics: dict[str, int] = field(default_factory=dict)
    properties: dict[str, str] = field(default_factory=dict)

    @property
    def topology(self) -> Topology:
        """The plan of every query compiled so far."""
        return self.builder.build()

    def query(self, query_id: str) -> QueryInfo:
        for query in self.queries:
            if query.id == query_id:
                return query
        raise KeyError(f"No query {query_id!r} (queries: {', '.join(q.id for q in self.queries) or 'none'})")


def compile_sql(
    sql: str | Sequence[str],
    *,
    topic_partitions: Callable[[str], int | None] | None = None,
) -> CompiledSql:
    """Compile a ksqlDB script (one text, or a list of statements) to a plan.

    ``topic_partitions`` gives the partition count of an existing topic (``None``: it
    does not exist); without it every topic is taken to exist, with the ``PARTITIONS``
    its statement gives or 1 (the test driver's topics).

    >>> compiled = compile_sql('''
    ...     CREATE STREAM orders (id BIGINT KEY, amount DOUBLE) WITH (kafka_topic='orders', value_format='json');
    ...     CREATE STREAM big AS SELECT id, amount FROM orders WHERE amount > 100;
    ... ''')
    >>> [q.id for q in compiled.queries], compiled.queries[0].sink_topic
    (['CSAS_BIG_0'], 'BIG')
    """
    text = sql if isinstance(sql, str) else "\n".join(_terminated(s) for s in sql)
    compiler = SqlCompiler(topic_partitions=topic_partitions)
    compiler.execute(text)
    return compiler.result


def _terminated(statement: str) -> str:
    stripped = statement.strip()
    if stripped.endswith(";"):
        return stripped
    # After a trailing -- comment the semicolon goes on a line of its own.
    return stripped + ("\n;" if "--" in stripped.rsplit("\n", 1)[-1] else ";")


@dataclass
class Rel:
    """A relation being built: its DSL stream or table, its kind, how its columns read
    (:class:`Layout`), what it came from, and what its records' key is: the Spark SQL
    of each key column (``key_reads``, empty for a stream without key columns) and, for
    a struct key, the names of its fields."""

    facade: Any
    kind: str
    layout: Layout
    sources: tuple[tuple[str, SourceInfo], ...]
    qualify: bool = False
    key_reads: tuple[exp.Expr, ...] = ()
    key_names: tuple[str, ...] = ()
    partitions: int | None = None  # of a join's result (a source's: its topic's)

    def derive(self, facade: Any) -> Rel:
        """The same relation after an operation that keeps its columns and key."""
        return Rel(facade, self.kind, self.layout, self.sources, self.qualify, self.key_reads, self.key_names, self.partitions)

    def partition_count(self) -> int | None:
        return self.partitions if len(self.sources) > 1 else self.sources[0][1].partitions

    def scope(self, clause: str) -> Scope:
        return Scope(self.layout.fields, self.layout.reader(Base("value")), clause=clause, qualify=self.qualify)


@dataclass
class OutColumn:
    """A column of a query's result: its name, its translated expression, the
    projection item it comes from, whether it is a key column, and ``as_value``
    (``AS_VALUE(...)``, which keeps a key column's copy in the value)."""

    name: str
    typed: Typed
    node: exp.Expr
    key: bool = False
    as_value: bool = False
    order: int = -1  # position in the projection (-1: not projected)


class SqlCompiler:
    """Compiles statements one after another into one plan (see :func:`compile_sql`)."""

    def __init__(self, *, topic_partitions: Callable[[str], int | None] | None = None):
        self.result = CompiledSql(StreamsBuilder())
        self.topic_partitions = topic_partitions
        self._query_count = 0
        self.sql = ""
        self._statement: st.Statement | None = None

    @property
    def builder(self) -> StreamsBuilder:
        return self.result.builder

    # -- entry -------------------------------------------------------------------------

    def execute(self, sql: str) -> list[st.Statement]:
        """Parse and compile every statement of ``sql``; returns the statements."""
        statements = parse_script(sql)
        for statement in statements:
            self.compile_statement(statement, sql)
        return statements

    def compile_statement(self, statement: st.Statement, sql: str) -> None:
        """Compile ``statement``, parsed from ``sql`` (its positions are in ``sql``)."""
        self.sql = sql
        self._statement = statement
        try:
            self._execute(statement)
        except SqlError:
            raise
        except TablestreamError as error:
            # A DSL or plan error (a name, a format) still names the statement.
            raise self.error(statement.position, str(error)) from None

    def _execute(self, statement: st.Statement) -> None:
        handlers: dict[type, Callable[[Any], None]] = {
            st.CreateSource: self._create_source,
            st.CreateAsSelect: self._create_as_select,
            st.InsertInto: self._insert_into,
            st.InsertValues: self._insert_values,
            st.SelectStatement: self._select,
            st.DropSource: self._drop,
            st.SetProperty: lambda s: self.result.properties.__setitem__(s.name, s.value),
            st.UnsetProperty: lambda s: self.result.properties.pop(s.name, None),
        }
        handlers[type(statement)](statement)

    # -- errors ------------------------------------------------------------------------

    def error(self, where: st.Position | exp.Expr | None, message: str) -> SqlError:
        position = where if isinstance(where, st.Position) else None
        if isinstance(where, exp.Expr):
            position = node_position(where, self.sql)
        if position is None:
            assert self._statement is not None
            position = self._statement.position
        text = self._statement.text if self._statement is not None else None
        return SqlError(message, line=position.line, column=position.column, statement=text)

    def translator(self, scope: Scope, **kwargs: Any) -> Translator:
        assert self._statement is not None
        return Translator(scope, self.sql, self._statement.text, **kwargs)

    # -- CREATE STREAM|TABLE -----------------------------------------------------------

    def _create_source(self, s: st.CreateSource) -> None:
        name = s.name.text
        existing = self.result.sources.get(name)
        if existing is not None:
            if s.if_not_exists:
                return
            if s.or_replace and s.source:
                raise self.error(s.position, f"Cannot add {s.kind.lower()} '{name}': CREATE OR REPLACE is not supported on source {s.kind.lower()}s")
            if not s.or_replace:
                raise self.error(s.position, f"Cannot add {s.kind.lower()} '{name}': A {existing.kind.lower()} with the same name already exists")
            raise self.error(s.position, f"Cannot replace {existing.kind.lower()} '{name}': CREATE OR REPLACE of a stream or table is not supported yet")
        if s.source and s.kind == "STREAM":
            raise self.error(s.position, "CREATE SOURCE STREAM is not supported yet")
        props = self._properties(s.properties)
        topic = self._topic_name(props, s.position)
        key_columns, value_columns = [], []
        seen: dict[str, st.ColumnElement] = {}
        for element in s.elements:
            if element.name.text in seen:
                raise self.error(element.position, f"Duplicate column names: {element.name.text}")
            seen[element.name.text] = element
            if element.name.text in ("ROWTIME", "ROWPARTITION", "ROWOFFSET", "WINDOWSTART", "WINDOWEND"):
                raise self.error(element.position, f"'{element.name.text}' is a reserved column name. You cannot use it as a name for a column")
            if element.constraint in ("HEADERS", "HEADER"):
                raise self.error(element.position, f"{element.constraint} columns are not supported yet")
            if element.constraint == "PRIMARY KEY" and s.kind == "STREAM":
                raise self.error(element.position, f"Column `{element.name.text}` is a 'PRIMARY KEY' column: please use 'KEY' for streams.\nTables have PRIMARY KEYs, which are unique and NON NULL.\nStreams have KEYs, which have no uniqueness or NULL constraints.".replace("\n", " "))
            if element.constraint == "KEY" and s.kind == "TABLE":
                raise self.error(element.position, f"Column `{element.name.text}` is a 'KEY' column: please use 'PRIMARY KEY' for tables.\nTables have PRIMARY KEYs, which are unique and NON NULL.\nStreams have KEYs, which have no uniqueness or NULL constraints.".replace("\n", " "))
            column = Column(element.name.text, element.type)
            (key_columns if element.constraint else value_columns).append(column)
        avro_schema = self._given_avro_schema(props, value_columns, s.position)
        if avro_schema is not None:
            value_columns, wrapped_avro = avro_schema[1], avro_schema[2]
            clash = [c.name for c in key_columns if any(v.name == c.name for v in value_columns)]
            if clash:
                raise self.error(s.position, f"Duplicate column names: {clash[0]} is a key column and a field of the Avro schema")
            if "WRAP_SINGLE_VALUE" in props:
                raise self.error(props["WRAP_SINGLE_VALUE"][1], "WRAP_SINGLE_VALUE is not used with VALUE_AVRO_SCHEMA: a record schema gives columns, any other schema the single column ROWVAL")
        elif not s.elements:
            raise self.error(s.position, "The columns of a stream or table must be declared, or given as an Avro schema with VALUE_FORMAT='AVRO' and VALUE_AVRO_SCHEMA='{...}' (there is no Schema Registry to infer them from)")
        if s.kind == "TABLE" and not key_columns:
            raise self.error(s.position, "Tables require a PRIMARY KEY. Please define the PRIMARY KEY")
        if not key_columns and "KEY_FORMAT" in props and str(props["KEY_FORMAT"][0]).upper() != "NONE":
            raise self.error(props["KEY_FORMAT"][1], "Key format specified for stream without key columns")
        declared_key = self._format_name(props["FORMAT"]) if "FORMAT" in props else "KAFKA"
        key_format, value_format = self._formats(props, s.position, has_key=bool(key_columns), default_key="KAFKA")
        wrapped = wrapped_avro if avro_schema is not None else self._wrapped(props, value_format, value_columns, s.position)
        self._check_key_format(key_format, key_columns, s.position)
        partitions = self._partitions(props, topic, s.position, required=True)
        columns = {c.name: c for c in (*key_columns, *value_columns)}
        extractor = self._timestamp_extractor(
            props, columns, record_layout(name, tuple(key_columns), tuple(value_columns), wrapped)
        ) or (None, None)
        info = SourceInfo(
            name=name,
            kind=s.kind,
            topic=topic,
            key_format=key_format,
            value_format=value_format,
            key_columns=tuple(key_columns),
            value_columns=tuple(value_columns),
            wrapped=wrapped,
            partitions=partitions,
            position=s.position,
            statement=s.text,
            read_only=s.source,
            inherited_key_format=key_format if key_columns else declared_key,
            timestamp_column=extractor[0],
            timestamp_extractor=extractor[1],
            value_avro_schema=avro_schema[0] if avro_schema is not None else None,
        )
        self.result.sources[name] = info
        self.result.topics[topic] = partitions
        if s.source:
            # A source table is materialized (queryable), by a query of its own.
            query_id = f"CST_{name}_{self._query_count}"
            self._query_count += 1
            self._facade(info)
            info.query_id = query_id
            self.result.queries.append(QueryInfo(query_id, topic, name, s.text, sources=(name,)))

    def _given_avro_schema(
        self, props: dict[str, tuple[Any, st.Position]], value_columns: Sequence[Column], position: st.Position
    ) -> tuple[str, list[Column], bool] | None:
        """``VALUE_AVRO_SCHEMA``: the value columns come from the Avro schema given (its
        field names upper-cased, as ksqlDB names the columns it infers; Avro's binary
        encoding holds no names, so records read and write as with the schema as
        given). Returns the schema the records are read with, the columns, and whether
        the value is a record of them."""
        given = props.get("VALUE_AVRO_SCHEMA")
        if given is None:
            return None
        text, where = given
        if not isinstance(text, str):
            raise self.error(where, "VALUE_AVRO_SCHEMA must be the JSON of an Avro schema, in quotes")
        value_format = props.get("VALUE_FORMAT", props.get("FORMAT"))
        if value_format is None or str(value_format[0]).upper() != "AVRO":
            raise self.error(where, "VALUE_AVRO_SCHEMA needs VALUE_FORMAT='AVRO'")
        if value_columns:
            raise self.error(where, "Value columns are declared and VALUE_AVRO_SCHEMA is given: the value columns come from the Avro schema, declare only the key columns")
        try:
            schema = avro_schema_text(text)
            if schema is None:
                raise SchemaError("VALUE_AVRO_SCHEMA must be the JSON of an Avro schema")
            from_avro_schema(schema)  # errors name the fields as the schema does
            upper = _upper_case_fields(schema)
            derived = from_avro_schema(upper)
        except SchemaError as e:
            raise self.error(where, str(e)) from None
        if isinstance(derived, Schema):
            if not derived.columns:
                raise self.error(where, "The Avro record of VALUE_AVRO_SCHEMA has no fields")
            return json.dumps(upper), list(derived.columns), True
        return json.dumps(upper), [Column("ROWVAL", derived)], False

    def _properties(self, properties: tuple[st.Property, ...]) -> dict[str, tuple[Any, st.Position]]:
        out: dict[str, tuple[Any, st.Position]] = {}
        unknown = [p for p in properties if p.name not in _KNOWN]
        if unknown:
            raise self.error(unknown[0].position, "Invalid config variable(s) in the WITH clause: " + ",".join(p.name for p in unknown))
        for p in properties:
            if p.name not in _SUPPORTED:
                raise self.error(p.position, f"The WITH property {p.name} is not supported yet")
            if p.name == "VALUE_DELIMITER" and p.value != ",":
                raise self.error(p.position, "A VALUE_DELIMITER other than ',' is not supported yet")
            out[p.name] = (p.value, p.position)
        return out

    def _timestamp_extractor(
        self, props: dict[str, tuple[Any, st.Position]], columns: dict[str, Column], layout: Layout
    ) -> tuple[str, str] | None:
        """``WITH (TIMESTAMP='col' [, TIMESTAMP_FORMAT='pattern'])``: the column's name and
        the DSL's timestamp SQL over the record reading it (a BIGINT of epoch
        milliseconds, a TIMESTAMP, or a STRING parsed with the pattern); ksqlDB's checks
        and texts."""
        given = props.get("TIMESTAMP")
        pattern = props.get("TIMESTAMP_FORMAT")
        if given is None:
            if pattern is not None:
                # ksqlDB ignores a format without a column; a setting that does nothing is refused.
                raise self.error(pattern[1], "'TIMESTAMP_FORMAT' set in the WITH clause needs 'TIMESTAMP', the column it parses")
            return None
        text, where = given
        if not isinstance(text, str) or not text.strip():
            raise self.error(where, "TIMESTAMP must be a column name in quotes")
        name = text[1:-1] if len(text) > 1 and text[0] == text[-1] == "`" else text.upper()
        if pattern is not None:
            if not isinstance(pattern[0], str):
                raise self.error(pattern[1], "TIMESTAMP_FORMAT must be a datetime pattern in quotes")
            try:
                spark = parse_pattern(pattern[0]).text
            except PatternError as error:
                raise self.error(pattern[1], f"Invalid datetime format for config:TIMESTAMP_FORMAT, reason:{error}") from None
        column = columns.get(name)
        if column is None:
            raise self.error(where, f"The TIMESTAMP column set in the WITH clause does not exist in the schema: '{name}'")
        field = next(f for f in layout.fields if f.name == name and f.role != "pseudo")
        read = layout.read(field, Base("value"), True)
        assert read is not None
        kind = str(column.type)
        if kind == "STRING":
            if pattern is None:
                raise self.error(where, "A String timestamp field has been specified without also specifying the timestamp_format")
            read = exp.Anonymous(this="to_timestamp", expressions=[read, exp.Literal.string(spark)])
        elif pattern is not None:
            raise self.error(pattern[1], "'TIMESTAMP_FORMAT' set in the WITH clause can only be used when the timestamp column is of type STRING.")
        elif kind not in ("BIGINT", "TIMESTAMP"):
            raise self.error(where, f"Timestamp column, `{name}`, should be LONG(INT64), TIMESTAMP, or a String with a timestamp_format specified")
        return name, read.sql(dialect=SPARK)

    def _topic_name(self, props: dict[str, tuple[Any, st.Position]], position: st.Position) -> str:
        if "KAFKA_TOPIC" not in props:
            raise self.error(position, "Missing required property \"KAFKA_TOPIC\" in WITH clause")
        topic, where = props["KAFKA_TOPIC"]
        if not isinstance(topic, str) or not topic:
            raise self.error(where, "KAFKA_TOPIC must be a topic name in quotes")
        return topic

    def _formats(
        self, props: dict[str, tuple[Any, st.Position]], position: st.Position, *, has_key: bool, default_key: str,
        inherited: tuple[str, str] | None = None,
    ) -> tuple[str, str]:
        if "FORMAT" in props and ("KEY_FORMAT" in props or "VALUE_FORMAT" in props):
            raise self.error(props["FORMAT"][1], "Cannot supply both 'FORMAT' and 'KEY_FORMAT' or 'VALUE_FORMAT' properties, as 'FORMAT' sets both key and value formats. Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'")
        both = props.get("FORMAT")
        key = props.get("KEY_FORMAT", both)
        value = props.get("VALUE_FORMAT", both)
        if value is None and inherited is None:
            raise self.error(position, "Missing required property \"VALUE_FORMAT\" in WITH clause")
        key_name = self._format_name(key) if key is not None else (inherited[0] if inherited else default_key)
        value_name = self._format_name(value) if value is not None else inherited[1]  # type: ignore[index]
        if not has_key:
            key_name = "KAFKA"  # no key columns: ksqlDB's NONE; the key bytes are not read
        return key_name, value_name

    def _format_name(self, given: tuple[Any, st.Position]) -> str:
        value, where = given
        name = str(value).upper()
        if name == "NONE":
            return "KAFKA"  # no key columns: the key bytes are not read
        if name not in _KSQL_FORMATS:
            raise self.error(where, f"Unknown format: {value}")
        if name not in _READABLE_FORMATS:
            raise self.error(where, f"The {name} format is not supported yet (formats: {', '.join(_READABLE_FORMATS)})")
        return name

    def _wrapped(self, props, value_format: str, value_columns: Sequence[Column], position: st.Position) -> bool:
        given = props.get("WRAP_SINGLE_VALUE")
        if value_format == "KAFKA":
            if len(value_columns) > 1:
                raise self.error(position, f"The 'KAFKA' format only supports a single field. Got: [{', '.join(f'`{c.name}` {ksql_text(c.type)}' for c in value_columns)}]")
            return False
        if given is None:
            return True
        if not isinstance(given[0], bool):
            raise self.error(given[1], "WRAP_SINGLE_VALUE must be true or false")
        if not given[0] and len(value_columns) != 1:
            raise self.error(given[1], "'WRAP_SINGLE_VALUE' is only valid for single-field value schemas")
        return given[0]

    def _check_key_format(self, key_format: str, key_columns: Sequence[Column], position: st.Position) -> None:
        if key_format != "KAFKA" or not key_columns:
            return
        shown = ", ".join(f"`{c.name}` {ksql_text(c.type)} KEY" for c in key_columns)
        if len(key_columns) > 1:
            raise self.error(position, f"Key format does not support schema. format: KAFKA, schema: [{shown}], reason: The 'KAFKA' format only supports a single field")
        if str(key_columns[0].type) not in _KAFKA_KEY_TYPES:
            raise self.error(position, f"Key format does not support schema. format: KAFKA, schema: [{shown}], reason: The 'KAFKA' format does not support type '{ksql_text(key_columns[0].type).split('(')[0].split('<')[0]}'")

    def _partitions(self, props, topic: str, position: st.Position, *, required: bool) -> int:
        given = props.get("PARTITIONS")
        if given is not None:
            if not isinstance(given[0], int) or isinstance(given[0], bool) or given[0] < 1:
                raise self.error(given[1], "PARTITIONS must be a positive whole number")
            return given[0]
        if topic in self.result.topics:
            return self.result.topics[topic]
        if self.topic_partitions is None:
            return 1
        existing = self.topic_partitions(topic)
        if existing is None:
            if not required:
                return 1
            raise self.error(position, f"Topic '{topic}' does not exist. If you want to create a new topic for the stream/table please re-run the statement providing the required 'PARTITIONS' configuration in the WITH clause (and optionally 'REPLICAS')")
        return existing

    def _facade(self, info: SourceInfo) -> Any:
        """The DSL stream or table of a source (made on its first use)."""
        if info.reread is not None:
            # Its query's result in the partition count of its topic, as a reader of the
            # topic would have it.
            count, info.reread = info.reread, None
            info.facade = (
                info.facade.repartition(partitions=count) if info.kind == "STREAM"
                else info.facade.to_stream().repartition(partitions=count).to_table()
            )
        if info.facade is None:
            key_schema, value_schema = info.key_schema, info.value_schema
            common = {
                "key_format": info.key_format,
                "value_format": info.value_format,
                "key_schema": key_schema,
                "value_schema": value_schema,
                "timestamp_extractor": info.timestamp_extractor,
            }
            if info.kind == "STREAM":
                info.facade = self.builder.stream(info.topic, **common)
            else:
                store = info.name if info.read_only else None
                # A topic is read once per plan: a table over the topic of a declared
                # stream with the same formats and columns is that stream's to_table().
                stream = next(
                    (
                        other for other in self.result.sources.values()
                        if other.kind == "STREAM" and other.query_id is None and other.topic == info.topic
                        and (other.key_format, other.value_format, other.key_schema, other.value_schema,
                             other.timestamp_extractor)
                        == (info.key_format, info.value_format, key_schema, value_schema, info.timestamp_extractor)
                    ),
                    None,
                )
                if stream is not None:
                    info.facade = self._facade(stream).to_table(materialized_as=store)
                else:
                    info.facade = self.builder.table(info.topic, materialized_as=store, **common)
        return info.facade

    # -- statements with queries -------------------------------------------------------

    def _create_as_select(self, s: st.CreateAsSelect) -> None:
        name = s.name.text
        existing = self.result.sources.get(name)
        if existing is not None:
            if s.if_not_exists:
                return
            if not s.or_replace:
                raise self.error(s.position, f"Cannot add {s.kind.lower()} '{name}': A {existing.kind.lower()} with the same name already exists")
            raise self.error(s.position, f"Cannot replace {existing.kind.lower()} '{name}': CREATE OR REPLACE of a query is not supported yet")
        props = self._properties(s.properties)
        if s.query.emit == "FINAL":
            raise self.error(s.query.position, "EMIT FINAL is only supported for windowed aggregations, which are not supported yet")
        if s.query.limit is not None:
            raise self.error(s.query.position, "LIMIT is not supported in CREATE ... AS SELECT statements")
        prefix = "CSAS" if s.kind == "STREAM" else "CTAS"
        query_id = f"{prefix}_{name}_{self._query_count}"
        self._query_count += 1
        rel, key, values = self._query(s.query, target=name, persistent=True)
        if rel.kind != s.kind:
            wanted = "TABLE" if rel.kind == "TABLE" else "STREAM"
            raise self.error(s.position, f"Invalid result type. Your SELECT query produces a {rel.kind}. Please use CREATE {wanted} AS SELECT statement instead")
        leftmost = rel.sources[0][1]
        topic = props["KAFKA_TOPIC"][0] if "KAFKA_TOPIC" in props else name
        key_format, value_format = self._formats(
            props, s.position, has_key=bool(key), default_key="KAFKA",
            inherited=(leftmost.inherited_key_format or leftmost.key_format, leftmost.value_format),
        )
        key_columns = tuple(Column(c.name, self._declared(c)) for c in key)
        value_columns = tuple(Column(c.name, self._declared(c)) for c in values)
        self._check_key_format(key_format, key_columns, s.position)
        wrapped = self._wrapped(props, value_format, value_columns, s.position)
        produced = rel.partition_count() or 1
        partitions = self._partitions(props, topic, s.position, required=False) if "PARTITIONS" in props else produced
        # WITH (TIMESTAMP=...): the records written carry a column of the result as their
        # timestamp (ksqlDB's sink applies it), read from the output record.
        stamp = self._timestamp_extractor(
            props, {c.name: c for c in (*key_columns, *value_columns)},
            record_layout(name, key_columns, value_columns, wrapped),
        )
        info = SourceInfo(
            name=name, kind=s.kind, topic=topic, key_format=key_format, value_format=value_format,
            key_columns=key_columns, value_columns=value_columns, wrapped=wrapped, partitions=partitions,
            position=s.position, statement=s.text, query_id=query_id,
            # Its topic's records, read elsewhere, take their timestamps from the column too.
            timestamp_column=stamp and stamp[0], timestamp_extractor=stamp and stamp[1],
        )
        info.facade = self._encode(rel, key, values, wrapped)
        if stamp is not None and s.kind == "STREAM":
            info.facade = info.facade.with_timestamp(stamp[1])  # its readers see them too
        elif stamp is not None:
            self._sink(info.facade.to_stream().with_timestamp(stamp[1]), info)
        if stamp is None or s.kind == "STREAM":
            self._sink(info.facade, info)
        if partitions != produced:
            info.reread = partitions
        self.result.sources[name] = info
        self.result.topics[topic] = partitions
        self.result.queries.append(QueryInfo(query_id, topic, name, s.text, sources=_names(rel)))

    def _insert_into(self, s: st.InsertInto) -> None:
        target = self._source(s.target)
        if target.kind != "STREAM":
            raise self.error(s.target.position, f"INSERT INTO can only be used to insert into a stream. {target.name} is a table")
        if target.read_only:
            raise self.error(s.target.position, f"Cannot insert into read-only {target.kind.lower()}: {target.name}")
        if s.properties:
            raise self.error(s.properties[0].position, "INSERT INTO ... WITH (...) is not supported yet")
        if target.facade is not None and target.query_id is None:
            raise self.error(s.target.position, f"INSERT INTO {target.name} after a query that reads it is not supported yet: put INSERT INTO before the queries that read {target.name}")
        readers = [q.id for q in self.result.queries if q.target != target.name and target.name in _sources_of(q)]
        if readers:
            raise self.error(s.target.position, f"INSERT INTO {target.name} after a query that reads it ({readers[0]}) is not supported yet: put INSERT INTO before the queries that read {target.name}")
        rel, key, values = self._query(s.query, target=target.name, persistent=True)
        if rel.kind != "STREAM":
            raise self.error(s.query.position, "INSERT INTO can only be used to insert into a stream. The query produces a table")
        result = [(c.name, self._declared(c)) for c in key] + [(c.name, self._declared(c)) for c in values]
        sink = [(c.name, c.type) for c in target.key_columns] + [(c.name, c.type) for c in target.value_columns]
        if result != sink:
            shown = ", ".join(f"`{n}` {ksql_text(t)}{' KEY' if i < len(key) else ''}" for i, (n, t) in enumerate(result))
            wanted = ", ".join(f"`{n}` {ksql_text(t)}{' KEY' if i < len(target.key_columns) else ''}" for i, (n, t) in enumerate(sink))
            raise self.error(s.position, f"Incompatible schema between results and sink. Result schema is {shown}. Sink schema is {wanted}")
        query_id = f"INSERTQUERY_{self._query_count}"
        self._query_count += 1
        facade = self._encode(rel, key, values, target.wrapped)
        self._sink(facade, target)
        # Later readers see the records of every writer, timestamped as a reader of its
        # topic would have them.
        if target.timestamp_extractor is not None:
            facade = facade.with_timestamp(target.timestamp_extractor)
        target.facade = self._facade(target).merge(facade)
        target.written = True
        self.result.queries.append(QueryInfo(query_id, target.topic, target.name, s.text, sources=_names(rel)))

    def _select(self, s: st.SelectStatement) -> None:
        if s.query.emit != "CHANGES":
            raise self.error(s.query.position, "Pull queries (SELECT without EMIT CHANGES) are not supported yet")
        alias = s.query.source.alias_text
        query_id = f"transient_{alias}_{self._query_count}"
        self._query_count += 1
        rel, key, values = self._query(s.query, target=None, persistent=False)
        # A push query's rows are the projected columns, in order, keys included.
        projected = {id(c): c for c in [*key, *values] if c.order >= 0}
        columns = sorted(projected.values(), key=lambda c: c.order)
        leftmost = rel.sources[0][1]
        info = SourceInfo(
            name=query_id, kind=rel.kind, topic=query_id,  # type: ignore[arg-type]
            key_format=leftmost.key_format if key else "KAFKA", value_format="JSON",
            key_columns=tuple(Column(c.name, self._declared(c)) for c in key),
            value_columns=tuple(Column(c.name, self._declared(c)) for c in columns),
            wrapped=True, partitions=leftmost.partitions or 1, position=s.position, statement=s.text,
            query_id=query_id,
        )
        if info.key_format == "KAFKA" and len(key) > 1:
            info.key_format = "JSON"
        facade = self._encode(rel, key, columns, True, push=True)
        self._sink(facade, info)
        self.result.queries.append(
            QueryInfo(query_id, query_id, None, s.text, tuple(c.name for c in columns), s.query.limit, _names(rel), s.position)
        )

    def _drop(self, s: st.DropSource) -> None:
        info = self.result.sources.get(s.name.text)
        if info is None:
            if s.if_exists:
                return
            raise self.error(s.name.position, f"{s.kind.title()} {s.name.text} does not exist")
        if info.kind != s.kind:
            raise self.error(s.name.position, f"Incompatible data source type is {info.kind}, but statement was DROP {s.kind}")
        if info.read_only and s.delete_topic:
            raise self.error(s.position, f"Cannot delete topic for read-only source: {info.name}")
        users = [q.id for q in self.result.queries if q.target == info.name or info.name in q.sources]
        if users:
            raise self.error(s.position, f"Cannot drop {info.name}: the query {users[0]} of this script uses it (dropping what a query uses is not supported yet)")
        del self.result.sources[info.name]

    def _insert_values(self, s: st.InsertValues) -> None:
        target = self._source(s.target, what="insert values into")
        if target.read_only:
            raise self.error(s.target.position, f"Cannot insert values into read-only table: {target.name}")
        all_columns = [*target.key_columns, *target.value_columns]
        names = [c.text for c in s.columns] if s.columns else [c.name for c in all_columns]
        if len(names) != len(s.values):
            raise self.error(s.position, f"Expected number columns and values to match: {', '.join(names)}, {', '.join(format_expression(v) for v in s.values)}")
        by_name = {c.name: c for c in all_columns}
        given: dict[str, Any] = {}
        timestamp = None
        for name, node in zip(names, s.values, strict=True):
            if name == "ROWTIME":
                timestamp = self._literal(node, BIGINT)
                continue
            column = by_name.get(name)
            if column is None:
                raise self.error(node, f"Column name {name} does not exist")
            given[name] = self._literal(node, column.type)
        if target.kind == "TABLE":
            missing = [c.name for c in target.key_columns if given.get(c.name) is None]
            if missing:
                raise self.error(s.position, f"Failed to insert values into '{target.name}'. Value for primary key column(s) {', '.join(missing)} is required for tables")
        key: Any = None
        if len(target.key_columns) == 1:
            key = given.get(target.key_columns[0].name)
        elif target.key_columns:
            key = {c.name: given.get(c.name) for c in target.key_columns}
        value: Any = None
        if target.wrapped:
            value = {c.name: given.get(c.name) for c in target.value_columns}
        elif target.value_columns:
            value = given.get(target.value_columns[0].name)
        self.result.inserts.append(InsertRecord(target.topic, key, value, timestamp, s.text))

    def _literal(self, node: exp.Expr, target: SqlType) -> Any:
        """A literal of INSERT ... VALUES as a Python value of the column's type."""
        value, sign = node, ""
        if isinstance(value, exp.Neg) and isinstance(value.this, exp.Literal) and not value.this.is_string:
            value, sign = value.this, "-"
        if isinstance(value, exp.Null):
            return None
        expected = f"Expected type {ksql_text(target)} for value {format_expression(node)}"
        if isinstance(value, exp.Boolean):
            if str(target) != "BOOLEAN":
                raise self.error(node, expected)
            return bool(value.this)
        if not isinstance(value, exp.Literal):
            raise self.error(node, f"INSERT VALUES takes literal values only (for now), got {format_expression(node)}")
        if value.is_string:
            if target != STRING:
                raise self.error(node, expected)
            return value.this
        text = sign + value.this
        if str(target) in ("INT", "BIGINT") and not any(c in text for c in ".eE"):
            return int(text)
        if str(target) == "DOUBLE":
            return float(text)
        if isinstance(target, DecimalType):
            return Decimal(text)
        raise self.error(node, expected)

    def _source(self, name: st.Name, what: str = "") -> SourceInfo:
        info = self.result.sources.get(name.text)
        if info is None:
            if what:
                raise self.error(name.position, f"Cannot {what} an unknown stream/table: `{name.text}`")
            raise self.error(name.position, f"Source `{name.text}` does not exist")
        return info

    def _declared(self, column: OutColumn) -> SqlType:
        if column.typed.type is None:
            raise self.error(column.node, "Can't infer a type of null. Please explicitly cast it to a required type, e.g. CAST(null AS VARCHAR)")
        return column.typed.type

    # -- one query ---------------------------------------------------------------------

    def _query(self, q: st.Query, *, target: str | None, persistent: bool) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
        """Compile a query's FROM, joins, WHERE, GROUP BY, HAVING and projection: the
        relation before encoding, its key columns and its value columns."""
        if q.group_by and q.partition_by:
            raise self.error(q.partition_by[0], "PARTITION BY and GROUP BY in the same query are not supported")
        self._check_qualifiers(q)
        rel = self._from(q)
        if q.joins:
            if q.partition_by:
                raise self.error(q.partition_by[0], "PARTITION BY on a join is not supported yet")
            return self._joined(rel, q, target, persistent)
        return self._selected(rel, q, target, persistent, self._project)

    def _check_qualifiers(self, q: st.Query) -> None:
        """ksqlDB checks every ``source.column`` names a source of the query first."""
        aliases = {q.source.alias_text, *(j.relation.alias_text for j in q.joins)}
        nodes = [i.expression for i in q.select if isinstance(i, st.SelectColumn)]
        nodes += [j.on for j in q.joins] + list(q.group_by) + list(q.partition_by)
        nodes += [n for n in (q.where, q.having) if n is not None]
        for node in nodes:
            for column in node.find_all(exp.Column):
                table = column.args.get("table")
                if table is not None and ksql_name(table) not in aliases:
                    raise self.error(table, f"'{ksql_name(table)}' is not a valid stream/table name or alias")

    def _no_aggregates(self, q: st.Query, persistent: bool) -> None:
        for item in q.select:
            if isinstance(item, st.SelectColumn):
                for node in item.expression.walk():
                    if is_aggregate(node):
                        what = "CREATE TABLE AS SELECT statement" if persistent else "A query"
                        raise self.error(node, f"{what} does not support aggregate function [{format_expression(node)}] without a GROUP BY clause")

    def _from(self, q: st.Query) -> Rel:
        relations = (q.source, *(j.relation for j in q.joins))
        seen: list[tuple[str, str]] = []
        for relation in relations:
            name = relation.name.text
            if any(name == n or relation.alias_text == a for n, a in seen):
                if len(seen) > 1:
                    raise self.error(relation.name.position, f"N-way joins do not support multiple occurrences of the same source. Source: '{name}'")
                raise self.error(relation.name.position, f"Can not join '{name}' to '{name}': self joins are not yet supported")
            seen.append((name, relation.alias_text))
        infos = [(r.alias_text, self._source(r.name)) for r in relations]
        for _, info in infos:
            self._facade(info)
        rel = self._source_rel(*infos[0], qualify=bool(q.joins))
        return self._timed(rel, q) if q.joins else rel

    def _source_rel(self, alias: str, info: SourceInfo, *, qualify: bool) -> Rel:
        layout = info.layout(alias)
        keys = [f for f in layout.fields if f.role == "key"]
        reads = tuple(layout.read(f, Base("value"), True) for f in keys)
        return Rel(info.facade, info.kind, layout, ((alias, info),), qualify, reads, tuple(f.name for f in keys))  # type: ignore[arg-type]

    def _where(self, rel: Rel, where: exp.Expr) -> Rel:
        predicate = self.translator(rel.scope("WHERE")).boolean(where, "WHERE")
        return rel.derive(rel.facade.filter(_sql(predicate.spark)))

    # -- projection --------------------------------------------------------------------

    def _items(self, rel: Rel, q: st.Query, translate: Callable[[exp.Expr], Typed], *, join: bool, persistent: bool, star_values_first: bool = False) -> list[OutColumn]:
        """The projection's columns, named as ksqlDB names them."""
        out: list[OutColumn] = []
        generated = _AliasGenerator(rel.layout.fields)
        visible = [f for f in rel.layout.fields if f.role != "pseudo"]
        clashing = {f.name for f in rel.layout.fields if sum(1 for g in rel.layout.fields if g.name == f.name) > 1}
        sources = {f.source for f in rel.layout.fields}
        for item in q.select:
            if isinstance(item, st.SelectStar):
                qualifier = item.qualifier.text if item.qualifier else None
                if qualifier is not None and qualifier not in sources:
                    raise self.error(item.position, f"'{qualifier}' is not a valid stream/table name or alias")
                fields = [f for f in visible if qualifier is None or f.source == qualifier]
                if star_values_first:
                    fields = [f for f in fields if f.role != "key"] + [f for f in fields if f.role == "key"]
                for f in fields:
                    node = _column_node(f) if f.source else exp.column(f.name)
                    node.meta["start"] = item.position.offset
                    name = f"{f.source}_{f.name}" if join and f.source else f.name
                    out.append(OutColumn(name, translate(node), node, order=len(out)))
                continue
            node = item.expression
            as_value = _is_as_value(node)
            inner = node.expressions[0] if as_value and len(node.expressions) == 1 else node
            if as_value and len(node.expressions) != 1:
                raise self.error(node, "AS_VALUE takes 1 argument")
            for sub in inner.walk():
                if _is_as_value(sub):
                    raise self.error(sub, "AS_VALUE can only be used on a column of the projection, not inside an expression")
            if item.alias is not None:
                name = item.alias.text
            elif isinstance(inner, exp.Column) and not as_value:
                column_name = ksql_name(inner.this)
                table = inner.args.get("table")
                name = f"{ksql_name(table)}_{column_name}" if (join and table is not None and column_name in clashing) else column_name
            elif isinstance(inner, exp.Dot) and not as_value:
                name = generated.field(ksql_name(inner.expression))
            else:
                name = generated.next()
            if persistent:
                self._check_reserved(item, name)
            out.append(OutColumn(name, translate(inner), inner, as_value=as_value, order=len(out)))
        return out

    def _check_reserved(self, item: st.SelectColumn, name: str) -> None:
        """A persistent query's columns cannot take a pseudo-column's name."""
        if name not in PSEUDO_COLUMNS:
            return
        if item.alias is not None:
            raise self.error(item.alias.position, f"`{name}` is a reserved column name. You cannot use it as an alias for a column")
        raise self.error(item.expression, f"Reserved column name in select: `{name}`. Please remove or alias the column")

    def _project(self, rel: Rel, q: st.Query, target: str | None, persistent: bool) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
        translator = self.translator(rel.scope("SELECT"))
        items = self._items(rel, q, translator.typed, join=False, persistent=persistent, star_values_first=bool(q.partition_by))
        if not q.partition_by:
            scope = rel.scope("SELECT")
            key_nodes: list[exp.Expr] = [_column_node(f) for f in rel.layout.fields if f.role == "key"]
            keys = self._key_items(items, key_nodes, scope, target, persistent, what="key column", q=q, rel=rel, typed=None)
            return rel, keys, [c for c in items if not c.key or c.as_value]
        if rel.kind == "TABLE":
            raise self.error(q.partition_by[0], "PARTITION BY is not supported on tables (ksqlDB does not repartition tables)")
        scope = rel.scope("PARTITION BY")
        translator = self.translator(scope)
        partitions = [(p, translator.typed(p)) for p in q.partition_by]
        if any(isinstance(p, exp.Null) for p, _ in partitions):
            if len(partitions) > 1:
                raise self.error(q.partition_by[0], "Cannot PARTITION BY multiple columns including NULL")
            return rel, [], items
        keys = self._key_items(items, [p for p, _ in partitions], scope, target, persistent, what="partitioning expression", q=q, rel=rel, typed=[t for _, t in partitions])
        return rel, keys, [c for c in items if not c.key or c.as_value]

    def _key_items(
        self, items: list[OutColumn], key_nodes: list[exp.Expr], scope: Scope, target: str | None,
        persistent: bool, *, what: str, q: st.Query, rel: Rel, typed: list[Typed] | None,
    ) -> list[OutColumn]:
        """Mark the projection items that are the key columns (``key_nodes``, in key
        order) and return them; ksqlDB's errors for a key missing or projected twice."""
        forms = [_canonical(n, scope) for n in key_nodes]
        keys: list[OutColumn | None] = [None] * len(key_nodes)
        for item in items:
            if item.as_value:
                continue
            form = _canonical(item.node, scope)
            if form not in forms:
                continue
            index = forms.index(form)
            first = keys[index]
            if first is not None:
                raise self.error(item.node, f"The projection contains a key column (`{first.name}`) more than once, aliased as: {first.name} and {item.name}")
            item.key = True
            keys[index] = item
        missing = [i for i, k in enumerate(keys) if k is None]
        generated = _AliasGenerator(rel.layout.fields)
        star = any(isinstance(i, st.SelectStar) for i in q.select)
        if missing and persistent and not (star and typed is not None):
            # ksqlDB lists every key column (partitioning expression), not only the missing.
            shown = [_key_text(node, scope, what) for node in key_nodes]
            plural = "s" if len(shown) > 1 else ""
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
            raise self.error(q.position, f"The query used to build `{target}` must include the {what}{plural} {listed} in its projection (eg, SELECT {', '.join(shown)}...)")
        for i in missing:
            # SELECT * ... PARTITION BY <expression> adds the key column (named as an
            # unaliased projection item); a push query's rows need not carry the key.
            node = key_nodes[i]
            value = typed[i] if typed is not None else self.translator(scope).typed(node)
            if isinstance(node, exp.Column):
                name = ksql_name(node.this)
            elif isinstance(node, exp.Dot):
                name = generated.field(ksql_name(node.expression))
            else:
                name = generated.next()
            keys[i] = OutColumn(name, value, node, key=True)
        return [k for k in keys if k is not None]

    # -- encoding and sinks ------------------------------------------------------------

    def _encode(self, rel: Rel, key: list[OutColumn], values: list[OutColumn], wrapped: bool, *, push: bool = False) -> Any:
        """The DSL calls that give records the result's key and value."""
        if not values:
            raise self.error(None, "The projection contains no value columns")
        columns = list(values) if push else [*key, *(c for c in values if not any(c is k for k in key))]
        names = [c.name for c in columns]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            column = columns[len(names) - 1 - names[::-1].index(duplicate)]
            raise self.error(column.node, f"Duplicate value columns found in schema: `{duplicate}` {ksql_text(self._declared(column))}")
        value_sql = _struct(values) if wrapped else values[0].typed.spark
        if rel.kind == "STREAM":
            # A record without a value (a tombstone) stays one, as in ksqlDB.
            value_sql = exp.Case(ifs=[exp.If(this=exp.Is(this=own("value"), expression=exp.Null()), true=exp.Null())], default=value_sql)
        same_key = _same_key(key, rel)
        if rel.kind == "TABLE":
            if not same_key:
                raise self.error(key[0].node if key else None, "Renaming or reordering the key columns of a table is not supported yet")
            return rel.facade if _identity(values, rel, wrapped) else rel.facade.map_values(_sql(value_sql))
        if not same_key:
            return rel.facade.map((_sql(_key_sql(key)), _sql(value_sql)))
        return rel.facade if _identity(values, rel, wrapped) else rel.facade.map_values(_sql(value_sql))

    def _sink(self, facade: Any, info: SourceInfo) -> None:
        facade.to(
            info.topic,
            key_format=info.key_format,
            value_format=info.value_format,
            key_schema=info.key_schema,
            value_schema=info.value_schema,
        )

    # -- joins -------------------------------------------------------------------------

    def _joined(self, rel: Rel, q: st.Query, target: str | None, persistent: bool) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
        """A query with joins: ksqlDB's left-deep tree, each join adding one source to the
        result of the ones before; then WHERE, and GROUP BY or the projection."""
        left_key = _single_key(rel)
        key_nodes: list[exp.Expr] = [_column_node(left_key)] if left_key is not None else []
        key_type: SqlType | None = left_key.type if left_key is not None else None
        synthetic: Field | None = None
        # ksqlDB's analyzer checks every join condition before the joins are planned.
        fields = rel.layout.fields
        for join in q.joins:
            joined = self._source(join.relation.name).layout(join.relation.alias_text).fields
            self._condition(join, fields, joined)
            fields = (*fields, *joined)
        for join in q.joins:
            rel, key_nodes, key_type, synthetic = self._join(rel, key_nodes, join, q)

        def project(rel: Rel, q: st.Query, target: str | None, persistent: bool) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
            scope = rel.scope("SELECT")
            items = self._items(rel, q, self.translator(scope).typed, join=True, persistent=persistent)
            assert key_type is not None
            keys = self._join_key(items, key_nodes, key_type, synthetic, scope, target, persistent, q)
            return rel, keys, [c for c in items if not c.key or c.as_value]

        return self._selected(rel, q, target, persistent, project)

    def _selected(self, rel: Rel, q: st.Query, target: str | None, persistent: bool, project) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
        """WHERE, then GROUP BY and HAVING or the projection (``project``)."""
        if q.where is not None:
            rel = self._where(rel, q.where)
        if q.group_by:
            return self._aggregate(rel, q, target, persistent)
        if q.having is not None:
            raise self.error(q.having, "HAVING requires a GROUP BY clause")
        self._no_aggregates(q, persistent)
        return project(rel, q, target, persistent)

    def _join_key(self, items, key_nodes, key_type: SqlType, synthetic: Field | None, scope: Scope, target, persistent: bool, q: st.Query) -> list[OutColumn]:
        """The key column of a join's result: the first projection item that is one of
        the join expressions (``key_nodes``), or the synthetic ROWKEY of a FULL join."""
        key = Typed(own("key"), key_type)
        forms = [_canonical(n, scope) for n in key_nodes]
        chosen: OutColumn | None = None
        for item in items:
            if item.as_value:
                continue
            form = _canonical(item.node, scope)
            if form not in forms:
                continue
            if chosen is None:
                # The key column holds the join key (the left's in a LEFT join).
                item.key, item.typed, chosen = True, Typed(key.spark, item.typed.type), item
                chosen_form = form
            elif form == chosen_form:
                # ksqlDB names the key by the join's internal column (<source>_<column>).
                internal = chosen_form.replace(".", "_") if isinstance(chosen.node, exp.Column) else chosen.name
                raise self.error(item.node, f"The projection contains a key column (`{internal}`) more than once, aliased as: {chosen.name} and {item.name}")
        if chosen is not None:
            return [chosen]
        if synthetic is not None:
            star = any(isinstance(i, st.SelectStar) for i in q.select)
            if persistent and not star:
                raise self.error(q.position, f"The query used to build `{target}` must include the join expression {synthetic.name} in its projection (eg, SELECT {synthetic.name}...). {synthetic.name} was added as a synthetic key column because the join criteria did not match any source column. This expression must be included in the projection and may be aliased")
            return [OutColumn(synthetic.name, key, exp.column(synthetic.name), key=True)]
        shown = [format_expression(n, scope) for n in key_nodes]
        if persistent:
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " or " + shown[-1]
            plural = "s" if len(shown) > 1 else ""
            raise self.error(q.position, f"The query used to build `{target}` must include the join expression{plural} {listed} in its projection (eg, SELECT {shown[0]}...)")
        # A push query's rows need not carry the key; its records are keyed by the join key.
        node = key_nodes[0]
        name = ksql_name(node.this) if isinstance(node, exp.Column) else "KSQL_COL_0"
        return [OutColumn(name, Typed(key.spark, key_type), node, key=True)]

    def _join(self, left: Rel, left_keys: list[exp.Expr], join: st.Join, q: st.Query) -> tuple[Rel, list[exp.Expr], SqlType, Field | None]:
        """``left`` (a source or the result of the joins before) joined with the next
        source: the joined relation, the expressions that stand for its key (the join
        expressions; ``left_keys`` those of ``left``), the key's type, and the synthetic
        key column of a FULL join."""
        right_alias, right_info = join.relation.alias_text, self._source(join.relation.name)
        right = self._timed(self._source_rel(right_alias, right_info, qualify=True), q)
        nway = len(left.sources) > 1
        on, scope, owners = self._condition(join, left.layout.fields, right.layout.fields)
        flipped = owners[0] == right_alias
        left_expr, right_expr = (on.expression, on.this) if flipped else (on.this, on.expression)
        left_alias = owners[1] if flipped else owners[0]
        left_info = dict(left.sources)[left_alias]
        shown = f"{format_expression(on.this, scope)} = {format_expression(on.expression, scope)}"  # as written
        kinds = f"{left_info.name} {_JOIN_TYPES[join.kind]} {right_info.name}"
        right_scope = right.scope("JOIN ON")
        left_typed = self.translator(left.scope("JOIN ON")).typed(left_expr)
        right_typed = self.translator(right_scope).typed(right_expr)
        right_key = _single_key(right)
        # The join is on the left's key when its expression is one that stands for it.
        on_left_key = _canonical(left_expr, scope) in [_canonical(n, scope) for n in left_keys]
        on_right_key = isinstance(right_expr, exp.Column) and right_key is not None and self.translator(right_scope).resolve(right_expr) == right_key
        pair = (left_alias, left_info), (right_alias, right_info)

        if left.kind == "STREAM" and right.kind == "STREAM":
            raise self.error(join.position, "Stream-Stream joins must have a WITHIN clause specified. None was provided (stream-stream joins are not supported yet)")
        if left.kind == "TABLE" and right.kind == "STREAM":
            raise self.error(join.position, f"Invalid join order: table-stream joins are not supported; only stream-table joins. Got {kinds}")
        if left.kind == "STREAM":
            if join.kind == "FULL":
                raise self.error(join.position, f"Invalid join type: full-outer join not supported for stream-table join. Got {kinds}")
            if join.kind == "RIGHT":
                raise self.error(join.position, f"Invalid join type: right join not supported for stream-table join. Got {kinds}")
            if not on_right_key:
                raise self.error(on, f"Invalid join condition: stream-table joins require to join on the table's primary key. Got {shown}")
            self._join_types(on, (left_expr, left_typed), (right_expr, right_typed), flipped, scope)
            # A stream is repartitioned to its table's count: a table's partitions are
            # its state's, a stream's records only pass through.
            to, _ = self._copartitioned(join, *pair, left.partition_count(), smaller_only=False)
            assert right_key is not None
            return self._stream_table(left, left_keys, right, join, left_expr, left_typed, on_left_key, right_key, q, to)
        if not on_right_key:
            raise self.error(on, f"Invalid join condition: table-table joins require to join on the primary key of the right input table. Got {shown}")
        assert right_key is not None
        self._join_types(on, (left_expr, left_typed), (right_expr, right_typed), flipped, scope)
        if on_left_key:
            counts = self._copartitioned(join, *pair, left.partition_count(), smaller_only=True)
            return self._table_table(left, left_keys, right, join, right_key, counts)
        if join.kind == "RIGHT":
            raise self.error(join.position, "RIGHT OUTER JOIN on a foreign key is not supported")
        if join.kind == "FULL":
            raise self.error(join.position, f"Invalid join type: full-outer join not supported for foreign-key table-table join. Got {kinds}")
        if nway:
            raise self.error(on, f"Invalid join condition: foreign-key table-table joins are not supported as part of n-way joins. Got {shown}")
        left_key = _single_key(left)
        if left_key is None:
            raise self.error(join.position, "Foreign-key joins of a table with several PRIMARY KEY columns are not supported yet")
        self._left_key_projected(q, left_key, left_info, scope)
        return self._foreign_key(left, right, join, left_expr, left_typed, left_key, right_key)

    def _condition(self, join: st.Join, left_fields: Sequence[Field], right_fields: Sequence[Field]) -> tuple[exp.EQ, Scope, list[str]]:
        """A join's ON, checked as ksqlDB's analyzer does: one equality, each side naming
        one source, one of them the joined source. Returns it, its scope and the source
        of each side."""
        right_alias = join.relation.alias_text
        scope = Scope((*left_fields, *right_fields), lambda f: None, clause="JOIN ON", qualify=True)
        translator = self.translator(scope)
        on = join.on
        while isinstance(on, exp.Paren):
            on = on.this
        if isinstance(on, exp.And):
            raise self.error(on, f"Invalid join condition: joins on multiple conditions are not yet supported. Got {format_expression(on, scope)}")
        if not isinstance(on, exp.EQ):
            raise self.error(on, f"Unsupported join expression: {format_expression(on, scope)}")
        owners = []
        for side in (on.this, on.expression):
            sources = {translator.resolve(c).source for c in side.find_all(exp.Column) if not isinstance(c.this, exp.Star)}
            if len(sources) != 1:
                raise self.error(side, f"Invalid comparison expression '{format_expression(side, scope)}' in join '{format_expression(on, scope)}'. Each side of the join comparision must contain references from exactly one source")
            owners.append(sources.pop())
        if owners[0] == owners[1]:
            raise self.error(on, f"Each side of the join must reference exactly one source and not the same source. Left side references `{owners[0]}` and right references `{owners[1]}`")
        if right_alias not in owners:
            raise self.error(on, f"A join criteria is expected to reference the source (`{right_alias}`) in the FROM clause, instead the right source references `{owners[1]}` and the left source references `{owners[0]}`")
        return on, scope, owners

    def _join_types(self, on: exp.Expr, left: tuple[exp.Expr, Typed], right: tuple[exp.Expr, Typed], flipped: bool, scope: Scope) -> None:
        if left[1].type == right[1].type:
            return
        first, second = (right, left) if flipped else (left, right)
        raise self.error(
            on,
            f"Invalid join condition: types don't match. Got {format_expression(first[0], scope)}{{{ksql_text(first[1].type)}}} = "
            f"{format_expression(second[0], scope)}{{{ksql_text(second[1].type)}}}",
        )

    def _copartitioned(
        self, join: st.Join, left: tuple[str, SourceInfo], right: tuple[str, SourceInfo], left_count: int | None,
        *, smaller_only: bool,
    ) -> tuple[int | None, int | None]:
        """ksqlDB's co-partitioning check of a join's sources. With
        ``tablestream.auto.repartition`` set, the partition counts the left and the right
        are repartitioned to instead (``None``: as they are): the one with fewer
        partitions to the other's count, or (``smaller_only`` false) the left always."""
        (left_alias, _), (right_alias, right_info) = left, right
        right_count = right_info.partitions
        if left_count is None or right_count is None or left_count == right_count:
            return None, None
        if str(self.result.properties.get(AUTO_REPARTITION, "false")).strip().lower() == "true":
            if smaller_only and left_count > right_count:
                return None, left_count
            return right_count, None
        raise self.error(
            join.position,
            f"Can't join `{left_alias}` with `{right_alias}` since the number of partitions don't match. "
            f"`{left_alias}` partitions = {left_count}; `{right_alias}` partitions = {right_count}. "
            "Please repartition either one so that the number of partitions match",
        )

    def _left_key_projected(self, q: st.Query, left_key: Field, left_info: SourceInfo, scope: Scope) -> None:
        wanted = _canonical(_column_node(left_key), scope)
        for item in q.select:
            if isinstance(item, st.SelectStar) and (item.qualifier is None or item.qualifier.text == left_key.source):
                return
            if isinstance(item, st.SelectColumn) and not _is_as_value(item.expression) and _canonical(item.expression, scope) == wanted:
                return
        raise self.error(q.position, f"Primary key column missing in projection. For foreign-key table-table joins, the projection must include all primary key columns from the left input table (`{left_info.name}`). Missing column: `{left_key.name}`")

    def _joined_layout(self, left: Rel, right: Rel, key_reads: dict[Field, exp.Expr], optional: set[str], *, left_keyed: bool) -> Layout:
        """The layout after a join whose joiner is ``struct(left AS L, right AS R)``:
        each side's columns under ``value.L`` / ``value.R``; the columns equal to the key
        in ``key_reads``; null where their side (in ``optional``) is missing.
        ``left_keyed``: the records keep the key they had on the left, so what the left
        read from the key (and, for a stream, its timestamp) reads the same."""
        fields = (*left.layout.fields, *right.layout.fields)
        left_fields = set(left.layout.fields)

        def guarded(side: str, value: Base, read: exp.Expr) -> exp.Expr:
            if side not in optional:
                return read
            present = exp.Not(this=exp.Is(this=value.child(side).whole(), expression=exp.Null()))
            return exp.Case(ifs=[exp.If(this=present, true=read)])

        def read(f: Field, value: Base, key: bool) -> exp.Expr | None:
            side = "L" if f in left_fields else "R"
            if f in key_reads:
                return guarded(side, value, key_reads[f]) if key else None
            if side == "R":
                return right.layout.read(f, value.child("R"), False)
            through = key and left_keyed and (f.role == "key" or left.kind == "STREAM")
            inner = left.layout.read(f, value.child("L"), through)
            return guarded(side, value, inner) if inner is not None and through else inner

        return Layout(fields, read)

    def _stream_table(self, left: Rel, left_keys: list[exp.Expr], right: Rel, join: st.Join, left_expr: exp.Expr, left_typed: Typed, on_left_key: bool, right_key: Field, q: st.Query, to: int | None):
        key = own("key")
        key_reads: dict[Field, exp.Expr] = {right_key: key}
        keys = [f for f in left.layout.fields if f.role == "key"]
        if on_left_key:
            stream, left_keyed = left.facade, True
            key_nodes = [*left_keys, _column_node(right_key)]
        else:
            if len(left.sources) > 1 or (keys and self._uses(q, keys, left)):
                # Re-keyed for the join, the stream keeps every column in its value.
                left = self._carried(left, left_typed.spark)
                stream, left_keyed = left.facade, True
            else:
                stream, left_keyed = left.facade.select_key(_sql(left_typed.spark)), False
            if isinstance(left_expr, exp.Column):
                key_reads[self.translator(left.scope("JOIN ON")).resolve(left_expr)] = key
            key_nodes = [left_expr, _column_node(right_key)]
        if to is not None:
            stream = stream.repartition(partitions=to)
        method = stream.join if join.kind == "INNER" else stream.left_join
        joined = method(right.facade, _JOINER, strict=True)
        # A stream-table join's result has the stream record's timestamp.
        streams = {alias for alias, info in left.sources if info.kind == "STREAM"}
        key_reads.update({f: own("rowtime") for f in left.layout.fields if f.role == "pseudo" and f.name == "ROWTIME" and f.source in streams})
        optional = {"R"} if join.kind == "LEFT" else set()
        layout = self._joined_layout(left, right, key_reads, optional, left_keyed=left_keyed)
        rel = Rel(joined, "STREAM", layout, (*left.sources, *right.sources), True, (key,), partitions=to or left.partition_count())
        return rel, key_nodes, right_key.type, None

    def _uses(self, q: st.Query, fields: list[Field], rel: Rel) -> bool:
        """Whether the projection or WHERE of ``q`` reads one of ``fields``."""
        if any(isinstance(i, st.SelectStar) and (i.qualifier is None or i.qualifier.text == fields[0].source) for i in q.select):
            return True
        nodes = [i.expression for i in q.select if isinstance(i, st.SelectColumn)] + ([q.where] if q.where is not None else [])
        wanted = set(fields)
        for node in nodes:
            for column in node.find_all(exp.Column):
                name, table = ksql_name(column.this), column.args.get("table")
                source = ksql_name(table) if table is not None else None
                if any(f.name == name and (source is None or f.source == source) for f in wanted):
                    return True
        return False

    def _timed(self, rel: Rel, q: st.Query) -> Rel:
        """A table about to be joined whose ROWTIME the query reads, with its row's
        timestamp carried in its value beside its columns (``V_<source>_<name>``,
        ``ROWTIME``): a join's joiner sees the two values only, and the result's own
        timestamp is the larger of the two rows'. Other relations as they are."""
        if rel.kind != "TABLE" or not self._reads_rowtime(q, rel.sources[0][0]):
            return rel
        read = rel.layout.reader(Base("value"))
        carried = [f for f in rel.layout.fields if f.role == "value" and read(f) is not None]
        names = {f: f"V_{f.source}_{f.name}" for f in carried}
        fields = [exp.Alias(this=read(f), alias=exp.to_identifier(names[f], quoted=True)) for f in carried]
        fields.append(exp.Alias(this=own("rowtime"), alias=exp.to_identifier("ROWTIME", quoted=True)))
        value_sql = exp.Anonymous(this="struct", expressions=fields)

        def reads(f: Field, value: Base, key: bool) -> exp.Expr | None:
            if f in names:
                return value.field(names[f])
            if f.role == "pseudo" and f.name == "ROWTIME":
                return value.field("ROWTIME")
            return rel.layout.read(f, value, key)

        return replace(rel, facade=rel.facade.map_values(_sql(value_sql)), layout=Layout(rel.layout.fields, reads))

    @staticmethod
    def _reads_rowtime(q: st.Query, alias: str) -> bool:
        """Whether ``q`` names ``alias``'s ROWTIME (qualified, or not: then ksqlDB's
        rules decide which source it is)."""
        nodes = [i.expression for i in q.select if isinstance(i, st.SelectColumn)]
        nodes += [n for n in (q.where, q.having) if n is not None] + [*q.group_by, *q.partition_by]
        for node in nodes:
            for column in node.find_all(exp.Column):
                table = column.args.get("table")
                if ksql_name(column.this) == "ROWTIME" and (table is None or ksql_name(table) == alias):
                    return True
        return False

    def _carried(self, rel: Rel, key_sql: exp.Expr) -> Rel:
        """The stream re-keyed by ``key_sql``, its value a struct of every column it can
        read (``V_<source>_<name>``, ``K_<source>_<name>`` for key columns), so that a
        join still reads them all."""
        read = rel.layout.reader(Base("value"))
        carried = [f for f in rel.layout.fields if f.role != "pseudo" and read(f) is not None]
        names = {f: f"{'K' if f.role == 'key' else 'V'}_{f.source}_{f.name}" for f in carried}
        struct = exp.Anonymous(this="struct", expressions=[exp.Alias(this=read(f), alias=exp.to_identifier(names[f], quoted=True)) for f in carried])
        # A record without a value stays one (the join drops it).
        value_sql = exp.Case(ifs=[exp.If(this=exp.Is(this=own("value"), expression=exp.Null()), true=exp.Null())], default=struct)
        facade = rel.facade.map((_sql(key_sql), _sql(value_sql)))

        def reads(f: Field, value: Base, key: bool) -> exp.Expr | None:
            if f in names:
                return value.field(names[f])
            # A pseudo-column: the re-keying keeps the record's timestamp and position.
            return rel.layout.read(f, Base("value"), True) if f.role == "pseudo" and key else None

        return Rel(facade, rel.kind, Layout(rel.layout.fields, reads), rel.sources, rel.qualify, partitions=rel.partition_count())

    def _table_table(self, left: Rel, left_keys: list[exp.Expr], right: Rel, join: st.Join, right_key: Field, counts: tuple[int | None, int | None]):
        # A table repartitioned for the join: its changes through a repartition topic
        # of the other's count, read back as a table.
        facades = [
            rel.facade if to is None else rel.facade.to_stream().repartition(partitions=to).to_table()
            for rel, to in zip((left, right), counts, strict=True)
        ]
        if join.kind == "INNER":
            joined = facades[0].join(facades[1], _JOINER)
        elif join.kind == "LEFT":
            joined = facades[0].left_join(facades[1], _JOINER)
        elif join.kind == "RIGHT":
            joined = facades[1].left_join(facades[0], "struct(right AS L, left AS R)")
        else:
            joined = facades[0].outer_join(facades[1], _JOINER)
        count = max((c for c in (left.partition_count(), right.partition_count()) if c is not None), default=None)
        optional = {"INNER": set(), "LEFT": {"R"}, "RIGHT": {"L"}, "FULL": {"L", "R"}}[join.kind]
        key = own("key")
        layout = self._joined_layout(left, right, {right_key: key}, optional, left_keyed=True)
        key_type = right_key.type
        if join.kind == "FULL":
            # Either side's key may be missing: the key is a column of its own, ROWKEY.
            rowkey = Field("", _synthetic_name(layout.fields), key_type, "key")
            sides = layout
            layout = Layout((rowkey, *sides.fields), lambda f, v, k: (key if k else None) if f == rowkey else sides.read(f, v, k))
            rel = Rel(joined, "TABLE", layout, (*left.sources, *right.sources), True, (key,), partitions=count)
            return rel, [exp.column(rowkey.name)], key_type, rowkey
        rel = Rel(joined, "TABLE", layout, (*left.sources, *right.sources), True, (key,), partitions=count)
        right_node = _column_node(right_key)
        return rel, [right_node, *left_keys] if join.kind == "RIGHT" else [*left_keys, right_node], key_type, None

    def _foreign_key(self, left: Rel, right: Rel, join: st.Join, left_expr: exp.Expr, left_typed: Typed, left_key: Field, right_key: Field):
        method = left.facade.join if join.kind == "INNER" else left.facade.left_join
        joined = method(right.facade, _JOINER, foreign_key=_sql(left_typed.spark))
        # The right key is the foreign key: computed from the left value (the left key is
        # the record key).
        fk_scope = Scope(left.layout.fields, left.layout.reader(Base("value", ("L",))), clause="SELECT", qualify=True)
        fk_read = self.translator(fk_scope).typed(left_expr).spark
        optional = {"R"} if join.kind == "LEFT" else set()
        layout = self._joined_layout(left, right, {right_key: fk_read}, optional, left_keyed=True)
        rel = Rel(joined, "TABLE", layout, (*left.sources, *right.sources), True, (own("key"),), partitions=left.partition_count())
        return rel, [_column_node(left_key)], left_key.type, None

    # -- aggregation -------------------------------------------------------------------

    def _aggregate(self, rel: Rel, q: st.Query, target: str | None, persistent: bool) -> tuple[Rel, list[OutColumn], list[OutColumn]]:
        select = self._stars_expanded(rel, q)
        scope = rel.scope("GROUP BY")
        translator = self.translator(scope)
        groups: list[tuple[exp.Expr, Typed, str]] = []
        for node in q.group_by:
            for sub in node.walk():
                if is_aggregate(sub):
                    raise self.error(sub, f"GROUP BY does not support aggregate functions: {str(sub.this).upper()} is an aggregate function")
            form = _canonical(node, scope)
            if any(form == f for _, _, f in groups):
                raise self.error(node, f"Duplicate GROUP BY expression: {form}")
            groups.append((node, translator.typed(node), form))
        calls = self._aggregate_calls(rel, q, scope)
        agg_translator = self.translator(rel.scope("SELECT"))
        specs = [self._aggregate_spec(call, agg_translator) for call, _ in calls]
        # Names of the projection items; the ones that are GROUP BY expressions are the key.
        generated = _AliasGenerator(rel.layout.fields)
        group_forms = [f for _, _, f in groups]
        named: list[tuple[st.SelectColumn, exp.Expr, bool, str, int | None]] = []
        key_names: list[str | None] = [None] * len(groups)
        for item in select:
            as_value = _is_as_value(item.expression)
            inner = item.expression.expressions[0] if as_value and len(item.expression.expressions) == 1 else item.expression
            if item.alias is not None:
                name = item.alias.text
            elif isinstance(inner, exp.Column) and not as_value:
                name = ksql_name(inner.this)
            elif isinstance(inner, exp.Dot) and not as_value:
                name = generated.field(ksql_name(inner.expression))
            else:
                name = generated.next()
            if persistent:
                self._check_reserved(item, name)
            form = _canonical(inner, scope)
            index = group_forms.index(form) if not as_value and form in group_forms else None
            if index is not None:
                if key_names[index] is not None:
                    raise self.error(inner, f"The projection contains a key column more than once: `{key_names[index]}` and `{name}`")
                key_names[index] = name
            named.append((item, inner, as_value, name, index))
        # The reads of the aggregates and of the group key after the aggregation.
        members = any(_has_members(spec) for spec in specs)
        wrapped = len(specs) + (0 if members else 1) > 1
        names = [n if n is not None else (ksql_name(g[0].this) if isinstance(g[0], exp.Column) else f"KSQL_COL_{i}") for i, (n, g) in enumerate(zip(key_names, groups, strict=True))]
        agg_reads = [Typed(Base("value").field(f"A{i}") if wrapped else own("value"), spec[2]) for i, spec in enumerate(specs)]
        agg_reads = [
            Typed(_decimal_sum(read.spark, read.type), read.type) if spec[0] == "sum" and isinstance(read.type, DecimalType) else read
            for read, spec in zip(agg_reads, specs, strict=True)
        ]
        group_reads = [
            Typed(own("key") if len(groups) == 1 else exp.Bracket(this=own("key"), expressions=[exp.Literal.string(n)]), g[1].type)
            for n, g in zip(names, groups, strict=True)
        ]
        call_forms = [f for _, f in calls]

        def replace(clause: str) -> Callable[[exp.Expr], Typed | None]:
            post = rel.scope(clause)

            def read(node: exp.Expr) -> Typed | None:
                form = _canonical(node, post)
                if form in call_forms:
                    return agg_reads[call_forms.index(form)]
                if form in group_forms:
                    return group_reads[group_forms.index(form)]
                if isinstance(node, exp.Column):
                    raise _NotGrouped(node)
                return None

            return read

        post = self.translator(rel.scope("SELECT"), replace=replace("SELECT"))
        items: list[OutColumn] = []
        ungrouped: list[str] = []
        for order, (item, inner, as_value, name, index) in enumerate(named):
            try:
                typed = post.typed(inner)
            except _NotGrouped:
                ungrouped.append(format_expression(item.expression))
                continue
            if index is not None:
                typed = group_reads[index]  # the key column is the group key
            items.append(OutColumn(name, typed, inner, key=index is not None, as_value=as_value, order=order))
        if ungrouped:
            raise self.error(q.position, f"Non-aggregate SELECT expression(s) not part of GROUP BY: {', '.join(ungrouped)}")
        having = None
        if q.having is not None:
            try:
                having = self.translator(rel.scope("HAVING"), replace=replace("HAVING")).boolean(q.having, "HAVING")
            except _NotGrouped as missing_column:
                raise self.error(missing_column.node, f"Non-aggregate HAVING expression not part of GROUP BY: {format_expression(missing_column.node)}") from None
        missing = [i for i, n in enumerate(key_names) if n is None]
        if missing and persistent:
            shown = [format_expression(groups[i][0]) for i in missing]
            plural = "s" if len(shown) > 1 else ""
            listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
            raise self.error(q.position, f"The query used to build `{target}` must include the grouping expression{plural} {listed} in its projection (eg, SELECT {', '.join(shown)}...)")
        table = self._aggregations(rel, groups, names, specs, target or "QUERY")
        if having is not None:
            table = table.filter(_sql(having.spark))
        keys = [next((c for c in items if c.key and c.name == n), None) or OutColumn(n, group_reads[i], groups[i][0], key=True) for i, n in enumerate(names)]
        out = Rel(table, "TABLE", Layout((), lambda f, v, k: None), rel.sources, False, tuple(g.spark for g in group_reads), tuple(names))
        return out, keys, [c for c in items if not c.key or c.as_value]

    def _stars_expanded(self, rel: Rel, q: st.Query) -> list[st.SelectColumn]:
        """The projection with ``*`` and ``source.*`` as the columns they stand for (key
        columns, then value columns; a join's named ``<source>_<name>``): with GROUP BY
        each must be a grouping expression, as in ksqlDB."""
        out: list[st.SelectColumn] = []
        sources = {f.source for f in rel.layout.fields}
        join = len(rel.sources) > 1
        for item in q.select:
            if isinstance(item, st.SelectColumn):
                out.append(item)
                continue
            qualifier = item.qualifier.text if item.qualifier else None
            if qualifier is not None and qualifier not in sources:
                raise self.error(item.position, f"'{qualifier}' is not a valid stream/table name or alias")
            for f in rel.layout.fields:
                if f.role == "pseudo" or qualifier not in (None, f.source):
                    continue
                node = _column_node(f) if join else exp.column(exp.to_identifier(f.name, quoted=True))
                node.meta["start"] = item.position.offset
                alias = st.Name(f"{f.source}_{f.name}", True, item.position) if join else None
                out.append(st.SelectColumn(node, alias, item.position))
        return out

    def _aggregate_calls(self, rel: Rel, q: st.Query, scope: Scope) -> list[tuple[exp.Anonymous, str]]:
        """Every aggregate call of SELECT and HAVING, once each, checked."""
        calls: list[tuple[exp.Anonymous, str]] = []
        nodes = [item.expression for item in q.select if isinstance(item, st.SelectColumn)]
        if q.having is not None:
            nodes.append(q.having)
        for node in nodes:
            for sub in node.walk():
                if not is_aggregate(sub):
                    continue
                inner = [n for a in sub.expressions for n in a.walk() if is_aggregate(n)]
                if inner:
                    raise self.error(sub, f"Aggregate functions can not be nested: {str(sub.this).upper()}({str(inner[0].this).upper()}())")
                form = _canonical(sub, scope)
                if not any(form == f for _, f in calls):
                    calls.append((sub, form))
        if not calls:
            raise self.error(q.group_by[0], "GROUP BY requires aggregate functions in either the SELECT or HAVING clause")
        for call, _ in calls:
            name = str(call.this).upper()
            if name in UNSUPPORTED_AGGREGATES:
                raise self.error(call, f"The aggregate function {name} is not supported yet (supported: {', '.join(AGGREGATES)})")
        if rel.kind == "TABLE":
            bad = [c for c, _ in calls if str(c.this).upper() not in TABLE_AGGREGATES]
            if bad:
                names = list(dict.fromkeys(str(c.this).upper() for c in bad))
                listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
                plural = "s" if len(names) > 1 else ""
                raise self.error(bad[0], f"The aggregation function{plural} {listed} cannot be applied to a table source, only to a stream source")
        return calls

    def _aggregate_spec(self, call: exp.Anonymous, translator: Translator) -> tuple[str, exp.Expr | None, SqlType, dict[str, Any]]:
        """An aggregate call as (DSL aggregation, its argument's Spark SQL, its ksqlDB
        result type, the DSL aggregation's options)."""
        name = str(call.this).upper()
        args = call.expressions
        if name == "COUNT" and (not args or isinstance(args[0], (exp.Star, exp.Literal, exp.Boolean))) and len(args) <= 1:
            return "count", None, BIGINT, {}  # COUNT(), COUNT(*), COUNT(1): rows
        if name in ("LATEST_BY_OFFSET", "EARLIEST_BY_OFFSET"):
            return self._by_offset_spec(call, translator)
        if len(args) != 1:
            raise self.error(call, f"Function '{name}' takes one argument, got {len(args)}")
        arg = args[0]
        if name == "COUNT":
            # COUNT(x): the rows whose x is not null (a group of nulls counts 0).
            return "count", translator.typed(arg).spark, BIGINT, {}
        if isinstance(arg, exp.Star):
            raise self.error(call, f"'*' is not an argument of {name}")
        typed = translator.typed(arg)
        t = typed.type
        if t is None:
            raise self.error(call, "Can't infer a type of null. Please explicitly cast it to a required type, e.g. CAST(null AS VARCHAR)")
        if name in ("SUM", "AVG"):
            if name == "SUM" and isinstance(t, DecimalType):
                return "sum", typed.spark, t, {}  # exact, read back through _decimal_sum
            if t not in (INT, BIGINT, DOUBLE):
                raise self.error(call, f"Function '{name}' does not accept parameters ({ksql_text(t)})")
            return name.lower(), typed.spark, (DOUBLE if name == "AVG" else t), {}
        if name in ("COLLECT_LIST", "COLLECT_SET", "COUNT_DISTINCT"):
            self._kept_by_text(call, t)
            if name == "COUNT_DISTINCT":
                return "count_distinct", typed.spark, BIGINT, {}
            return name.lower(), typed.spark, ArrayType(t), {"limit": self._collect_limit(name)}
        if str(t) not in _ORDERED and not isinstance(t, DecimalType):
            raise self.error(call, f"Function '{name}' does not accept parameters ({ksql_text(t)})")
        return name.lower(), typed.spark, t, {}

    def _by_offset_spec(self, call: exp.Anonymous, translator: Translator) -> tuple[str, exp.Expr, SqlType, dict[str, Any]]:
        """``LATEST_BY_OFFSET(col[, N][, ignoreNulls])`` (and EARLIEST): N a literal INT
        (then the result is an array of N values), ignoreNulls a literal BOOLEAN."""
        name = str(call.this).upper()
        args = call.expressions
        if not 1 <= len(args) <= 3:
            raise self.error(call, f"Function '{name}' takes 1 to 3 arguments, got {len(args)}")
        if isinstance(args[0], exp.Star):
            raise self.error(call, f"'*' is not an argument of {name}")
        rest = args[1:]
        n: int | None = None
        if rest and isinstance(rest[0], exp.Literal) and not rest[0].is_string:
            if not rest[0].is_int:
                raise self.error(rest[0], f"Function '{name}' takes N as a literal INT, got {rest[0].sql()}")
            n = int(rest[0].this)
            rest = rest[1:]
        ignore_nulls = True
        if rest and isinstance(rest[0], exp.Boolean):
            ignore_nulls = bool(rest[0].this)
            rest = rest[1:]
        if rest:
            raise self.error(rest[0], f"Function '{name}' takes {name}(col[, N][, ignoreNulls]) with N a literal INT and ignoreNulls a literal BOOLEAN, got {format_expression(rest[0])}")
        if n is not None and n < 1:
            raise self.error(args[1], f"{'latestN' if name == 'LATEST_BY_OFFSET' else 'earliestN'} must be 1 or greater")
        typed = translator.typed(args[0])
        t = typed.type
        if t is None:
            raise self.error(call, "Can't infer a type of null. Please explicitly cast it to a required type, e.g. CAST(null AS VARCHAR)")
        self._kept_by_text(call, t)
        return name.lower(), typed.spark, (t if n is None else ArrayType(t)), {"n": n, "ignore_nulls": ignore_nulls}

    def _kept_by_text(self, call: exp.Anonymous, t: SqlType) -> None:
        """The by-offset and collecting aggregates keep and compare values by their JSON
        text: any type but BYTES."""
        if str(t) == "BYTES":
            raise self.error(call, f"Function '{str(call.this).upper()}' does not accept parameters ({ksql_text(t)})")

    def _collect_limit(self, name: str) -> int | None:
        """ksqlDB's ``ksql.functions.collect_list.limit`` (``collect_set.limit``) as SET
        for the script (default 1000; a negative limit: none)."""
        prop = f"ksql.functions.{name.lower()}.limit"
        text = self.result.properties.get(prop)
        if text is None:
            return 1000
        try:
            limit = int(str(text).strip())
        except ValueError:
            raise self.error(None, f"The property '{prop}' must be an integer, got '{text}': SET '{prop}'='1000' (a negative value: no limit)") from None
        return None if limit < 0 else limit

    def _aggregations(self, rel: Rel, groups, names: list[str], specs, target: str) -> Any:
        """The DSL aggregations of the aggregate functions, grouped by the GROUP BY key:
        with several, a struct (``A<i>``: aggregate i) of one ``agg`` of the COUNTs, SUMs
        and AVGs (one store) left-joined on the key with one aggregation per other
        aggregate. Several aggregations share one grouping (named ``<target>-GroupBy``:
        one repartition)."""
        # An argument that reads the key must be computed before the grouping changes it.
        keys_in_args = any(
            isinstance(node, exp.Column) and node.name == "key"
            for _, arg, *_ in specs if arg is not None for node in arg.walk()
        )
        if len(groups) == 1:
            key_sql: exp.Expr = groups[0][1].spark
        else:
            key_sql = exp.Anonymous(this="struct", expressions=[exp.Alias(this=g[1].spark, alias=exp.to_identifier(n, quoted=True)) for g, n in zip(groups, names, strict=True)])
        carried = keys_in_args or rel.kind == "TABLE"
        if carried:
            # The arguments are computed before grouping (the key changes, and a table's
            # grouping maps each row to its group key and a value).
            fields = [exp.Alias(this=arg, alias=exp.to_identifier(f"V{i}", quoted=True)) for i, (_, arg, *_) in enumerate(specs) if arg is not None]
            value_sql = _sql(exp.Anonymous(this="struct", expressions=fields or [exp.Alias(this=exp.Literal.number(1), alias=exp.to_identifier("V", quoted=True))]))
        # A member-counting aggregate (COUNT, SUM, the collections, COUNT_DISTINCT) has a
        # row for every group with rows; it comes first and the others (null for a group
        # of nulls, so no row) join it. COUNT, SUM and AVG of a struct of several results
        # are one aggregation (one store, as ksqlDB's aggregate step), which has a row for
        # every group with rows.
        members = [i for i, spec in enumerate(specs) if _has_members(spec)]
        shared = len(specs) + (0 if members else 1) > 1
        numeric = [i for i, spec in enumerate(specs) if spec[0] in _NUMERIC_KINDS] if shared else []
        name = f"{target}-GroupBy" if shared else None
        if rel.kind == "TABLE":
            grouped = rel.facade.group_by((_sql(key_sql), value_sql), name=name)
        elif keys_in_args:
            grouped = rel.facade.map((_sql(key_sql), value_sql)).group_by_key(name=name)
        elif len(rel.key_reads) == 1 and len(groups) == 1 and groups[0][1].spark == rel.key_reads[0]:
            grouped = rel.facade.group_by_key(name=name)
        else:
            grouped = rel.facade.group_by(_sql(key_sql), name=name)

        def argument(i: int) -> exp.Expr | None:
            arg = specs[i][1]
            if arg is None:
                return None
            return Base("value").field(f"V{i}") if carried else arg

        # The first table, the struct fields its value has (None: its value is aggregate
        # ``bare``'s own).
        fields_of: list[int]
        bare: int | None = None
        if numeric:
            result = grouped.agg({
                f"A{i}": getattr(aggregates, specs[i][0])(*[_sql(a) for a in (argument(i),) if a is not None])
                for i in numeric
            })
            fields_of = list(numeric)
        elif members:
            result, bare, fields_of = None, None, []
        else:
            result, fields_of = grouped.count(), []
        for i in members + [i for i in range(len(specs)) if i not in members]:
            if i in numeric:
                continue
            kind, _, _, options = specs[i]
            arg = argument(i)
            if arg is None:
                table = grouped.count()
            elif kind == "count":
                # A single COUNT(x) sums 1 for each row whose x is not null, keeping every
                # group with rows (a group of nulls counts 0).
                table = grouped.sum(_sql(exp.Case(ifs=[exp.If(this=exp.Is(this=arg, expression=exp.Null()), true=exp.Literal.number(0))], default=exp.Literal.number(1))))
            else:
                table = getattr(grouped, kind)(_sql(arg), **options)
            if result is None:
                result, bare = table, i
                continue
            if bare is not None:
                fields = [exp.Alias(this=exp.column("left"), alias=exp.to_identifier(f"A{bare}", quoted=True))]
                fields_of, bare = [bare], None
            else:
                fields = [exp.Alias(this=exp.Column(this=exp.to_identifier(f"A{s}", quoted=True), table=exp.to_identifier("left")), alias=exp.to_identifier(f"A{s}", quoted=True)) for s in fields_of]
            fields.append(exp.Alias(this=exp.column("right"), alias=exp.to_identifier(f"A{i}", quoted=True)))
            result = result.left_join(table, _sql(exp.Anonymous(this="struct", expressions=fields)))
            fields_of.append(i)
        return result


# The types MIN and MAX take (and DECIMAL).
_ORDERED = ("INT", "BIGINT", "DOUBLE", "STRING", "BOOLEAN", "DATE", "TIMESTAMP")
# Aggregates that have a row for every group with rows (a group of nulls included).
_MEMBER_KINDS = ("count", "sum", "collect_list", "collect_set", "count_distinct")
# Aggregates of one grouping computed together (DSL ``agg``).
_NUMERIC_KINDS = ("count", "sum", "avg")


def _has_members(spec: tuple[str, exp.Expr | None, SqlType, dict[str, Any]]) -> bool:
    kind, _, _, options = spec
    return kind in _MEMBER_KINDS or options.get("n") is not None


class _NotGrouped(Exception):
    """A column after GROUP BY that is neither grouped nor inside an aggregate."""

    def __init__(self, node: exp.Expr):
        super().__init__(node.sql())
        self.node = node


_JOINER = "struct(left AS L, right AS R)"


def _is_as_value(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and str(node.this).upper() == "AS_VALUE"


def _sql(node: exp.Expr | str) -> str:
    return node if isinstance(node, str) else node.sql(dialect=SPARK)


def _struct(values: list[OutColumn]) -> exp.Expr:
    return exp.Anonymous(
        this="struct",
        expressions=[exp.Alias(this=c.typed.spark, alias=exp.to_identifier(c.name, quoted=True)) for c in values],
    )


def _key_sql(key: list[OutColumn]) -> exp.Expr:
    if not key:
        return exp.Null()
    if len(key) == 1:
        return key[0].typed.spark
    return _struct(key)


def _same_key(key: list[OutColumn], rel: Rel) -> bool:
    """Whether the result's key is the records' key as it is (a stream without key
    columns writes null keys, whatever its records' keys were)."""
    if not key or len(key) != len(rel.key_reads):
        return False
    if any(k.typed.spark != r for k, r in zip(key, rel.key_reads, strict=True)):
        return False
    return len(key) == 1 or tuple(k.name for k in key) == rel.key_names


def _identity(values: list[OutColumn], rel: Rel, wrapped: bool) -> bool:
    """Whether the value columns are a source's value columns as they are."""
    if len(rel.sources) != 1:
        return False
    alias, source = rel.sources[0]
    current = [f for f in rel.layout.fields if f.role == "value"]
    if source.wrapped != wrapped or len(values) != len(current) or rel.layout.fields != source.layout(alias).fields:
        return False
    return all(
        c.name == f.name and c.typed.type == f.type and c.typed.spark == rel.layout.read(f, Base("value"), True)
        for c, f in zip(values, current, strict=True)
    )


def _single_key(rel: Rel) -> Field | None:
    keys = [f for f in rel.layout.fields if f.role == "key"]
    return keys[0] if len(keys) == 1 else None


def _column_node(f: Field) -> exp.Column:
    return exp.Column(this=exp.to_identifier(f.name, quoted=True), table=exp.to_identifier(f.source, quoted=True))


def _decimal_sum(total: exp.Expr, t: DecimalType) -> exp.Expr:
    """A SUM of ``DECIMAL(p, s)`` values as ksqlDB gives it: a ``DECIMAL(p, s)``, and a
    total of ``p - s`` integer digits or more an error with ksqlDB's text (the runtime's
    total is exact, a ``DECIMAL(38, s)``; a CAST alone would make it null)."""
    digits = t.precision - t.scale
    narrowed = exp.Cast(this=total.copy(), to=exp.DataType.build(t.spark_ddl(), dialect="spark"))
    if digits >= 38:
        return narrowed  # the runtime's own bound
    limit = exp.Cast(this=exp.Literal.string(str(10**digits)), to=exp.DataType.build("DECIMAL(38, 0)", dialect="spark"))
    message = exp.Anonymous(this="CONCAT", expressions=[
        exp.Literal.string(
            f"Numeric field overflow: A field with precision {t.precision} and scale {t.scale} "
            f"must round to an absolute value less than 10^{digits}. Got "
        ),
        exp.Cast(this=total.copy(), to=exp.DataType.build("STRING")),
    ])
    overflow = exp.GTE(this=exp.Anonymous(this="ABS", expressions=[total.copy()]), expression=limit)
    return exp.Case(ifs=[exp.If(this=overflow, true=exp.Anonymous(this="RAISE_ERROR", expressions=[message]))], default=narrowed)


def _canonical(node: exp.Expr, scope: Scope) -> str:
    """A form of an expression that equal expressions share (columns qualified with
    their source, names as ksqlDB reads them)."""
    return format_expression(node, Scope(scope.fields, scope.reader, clause=scope.clause, qualify=True))


def _key_text(node: exp.Expr, scope: Scope, what: str) -> str:
    if what == "key column" and isinstance(node, exp.Column):
        return ksql_name(node.this)
    return _canonical(node, scope)


def _synthetic_name(fields: Sequence[Field]) -> str:
    """ksqlDB's synthetic key column: ROWKEY, numbered when a column has that name."""
    names = {f.name for f in fields}
    index = 0
    while (name := "ROWKEY" if index == 0 else f"ROWKEY_{index}") in names:
        index += 1
    return name


def _names(rel: Rel) -> tuple[str, ...]:
    return tuple(info.name for _, info in rel.sources)


def _sources_of(query: QueryInfo) -> tuple[str, ...]:
    return query.sources


class _AliasGenerator:
    """ksqlDB's names for unaliased projection items: ``KSQL_COL_<n>`` for expressions,
    the field name for ``a->b`` (numbered when a column already has it)."""

    def __init__(self, fields: Sequence[Field]):
        self.used = {f.name for f in fields}
        self.counter = 0
        self.fields: dict[str, int] = {}

    def next(self) -> str:
        while f"KSQL_COL_{self.counter}" in self.used:
            self.counter += 1
        name = f"KSQL_COL_{self.counter}"
        self.counter += 1
        return name

    def field(self, name: str) -> str:
        index = self.fields.get(name, 0)
        while True:
            candidate = name if index == 0 else f"{name}_{index}"
            index += 1
            if candidate not in self.used:
                self.fields[name] = index
                self.used.add(candidate)
                return candidate

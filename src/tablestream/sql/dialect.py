"""ksqlDB's SQL as a sqlglot dialect, and the statement parser built on it.

sqlglot parses the queries and expressions (``SELECT``, ``FROM``, joins, ``WHERE``,
``GROUP BY``, ``HAVING``, ``CASE``, ``CAST``, function calls, types); the dialect adds
what ksqlDB spells its own way: backticks and double quotes quote identifiers, ``->``
reads a struct field (``address->street``), ``STRUCT<...>``, ``ARRAY<...>`` and
``MAP<...>`` types. The statement shapes sqlglot has no parser for are read here from
its tokens: ``CREATE [OR REPLACE] [SOURCE] STREAM|TABLE ... (col TYPE [KEY | PRIMARY
KEY], ...) WITH (...)``, ``... AS SELECT``, ``PARTITION BY`` and ``EMIT CHANGES``
after a query, ``INSERT INTO ... VALUES``, ``DROP``, ``SET``, ``UNSET``, ``SHOW|LIST``,
``DESCRIBE``, ``EXPLAIN``, ``TERMINATE``, ``PRINT`` and ``RUN SCRIPT``.

Every failure is a :class:`~tablestream.sql.errors.SqlError` naming the line and
column in the script and the statement.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, NoReturn

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, TokenError
from sqlglot.parser import Parser
from sqlglot.tokens import Token, Tokenizer, TokenType

from tablestream.errors import SchemaError
from tablestream.schema import (
    BIGINT,
    BOOLEAN,
    BYTES,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    ArrayType,
    Column,
    DecimalType,
    MapType,
    SqlType,
    StructType,
)
from tablestream.sql import statements as st
from tablestream.sql.errors import SqlError

__all__ = ["Ksql", "node_position", "parse_script", "sql_type_of"]

_WORD = re.compile(r"[A-Za-z_0-9][A-Za-z0-9_@$]*")

# Statements ksqlDB has that this front end does not read yet.
_NOT_YET = ("ALTER", "ASSERT", "DEFINE", "PAUSE", "RESUME", "UNDEFINE")

# SHOW|LIST <what>: those read here, and ksqlDB's others.
_LISTS = ("STREAMS", "TABLES", "TOPICS", "QUERIES", "PROPERTIES")
_OTHER_LISTS = ("FUNCTIONS", "CONNECTORS", "SOURCE", "SINK", "CONNECTOR", "TYPES", "VARIABLES")

# Words that start a clause after FROM (never a source's alias).
_CLAUSES = frozenset({"EMIT", "WINDOW", "WITHIN", "PARTITION"})

_TYPES: dict[exp.DataType.Type, SqlType] = {
    exp.DataType.Type.BOOLEAN: BOOLEAN,
    exp.DataType.Type.INT: INT,
    exp.DataType.Type.BIGINT: BIGINT,
    exp.DataType.Type.DOUBLE: DOUBLE,
    exp.DataType.Type.TEXT: STRING,
    exp.DataType.Type.VARCHAR: STRING,
    exp.DataType.Type.DATE: DATE,
    exp.DataType.Type.TIMESTAMP: TIMESTAMP,
    exp.DataType.Type.VARBINARY: BYTES,
}


class _Failure(ParseError):
    """A syntax error at a token (a ParseError, so sqlglot's backtracking still works)."""

    def __init__(self, message: str, token: Token | None):
        where = {"line": token.line, "col": token.col} if token is not None else {}
        super().__init__(message, errors=[{"description": message, **where}])
        self.token = token


def _deref(parser: Parser, this: exp.Expr, field: exp.Expr | None) -> exp.Expr:
    """``base->field``: a struct field (ksqlDB's dereference), kept as a :class:`exp.Dot`."""
    if not isinstance(field, exp.Column) or field.table:
        parser.raise_error("Expecting a field name after '->'")
    assert isinstance(field, exp.Column)
    return exp.Dot(this=this, expression=field.this)


class KsqlParser(Parser):
    """sqlglot's parser with ksqlDB's ``->`` and the statement shapes sqlglot lacks."""

    COLUMN_OPERATORS = {**Parser.COLUMN_OPERATORS, TokenType.ARROW: _deref}
    # In ksqlDB ``f(x->y)`` reads field y of x; it is never a lambda.
    LAMBDAS = {k: v for k, v in Parser.LAMBDAS.items() if k != TokenType.ARROW}
    # Every call is a plain ``name(args)`` (ksqlDB has no SUBSTRING(x FROM 1) or
    # TRIM(BOTH ...) forms); the compiler knows the functions, not sqlglot.
    FUNCTIONS: dict[str, Any] = {}
    FUNCTION_PARSERS = {"CAST": Parser.FUNCTION_PARSERS["CAST"]}
    QUERY_MODIFIER_PARSERS = {
        **Parser.QUERY_MODIFIER_PARSERS,
        TokenType.WINDOW: lambda self: self.raise_error(
            "WINDOW (windowed aggregation) is not supported yet"
        ),
    }

    def raise_error(self, message: str, token: Token | None = None) -> NoReturn:  # type: ignore[override]
        raise _Failure(message, token or self._curr or self._prev)

    def _parse_table_alias(self, alias_tokens: Any = None) -> exp.TableAlias | None:
        # ksqlDB's clause words after a source are never its alias (FROM t EMIT CHANGES).
        if self._curr and self._curr.token_type != TokenType.IDENTIFIER and self._curr.text.upper() in _CLAUSES:
            return None
        return super()._parse_table_alias(alias_tokens)

    # -- script ----------------------------------------------------------------------

    def statements(self, tokens: list[Token], sql: str) -> list[Any]:
        """The statements of ``sql`` (tokenized as ``tokens``)."""
        self.error_level = ErrorLevel.IMMEDIATE
        return [s for s in self._parse(KsqlParser._statement, tokens, sql) if s is not None]

    def _statement(self) -> Any:
        # sqlglot gives a semicolon followed by a comment a chunk of its own.
        while self._curr and self._curr.token_type == TokenType.SEMICOLON:
            self._advance()
        if not self._curr:
            return None
        self._ordinal = getattr(self, "_ordinal", -1) + 1
        return self._dispatch(self._ordinal)

    def _dispatch(self, ordinal: int) -> Any:
        first, last = self._curr, self._tokens[-1]
        common = {
            "text": self.sql[first.start : last.end + 1],
            "position": self._position(first),
            "index": ordinal,
        }
        word = first.text.upper() if first.token_type != TokenType.IDENTIFIER else ""
        if word == "CREATE":
            self._advance()
            return self._create(common)
        if word == "INSERT":
            self._advance()
            return self._insert(common)
        if word == "DROP":
            self._advance()
            return self._drop(common)
        if word == "SET":
            self._advance()
            name = self._string("a property name in quotes")
            self._expect(TokenType.EQ, "'='")
            return st.SetProperty(name=name, value=self._string("a value in quotes"), **common)
        if word == "UNSET":
            self._advance()
            return st.UnsetProperty(name=self._string("a property name in quotes"), **common)
        if word == "SELECT":
            return st.SelectStatement(query=self._query(), **common)
        if word in ("SHOW", "LIST"):
            self._advance()
            return self._list(common)
        if word == "DESCRIBE":
            self._advance()
            return self._describe(common)
        if word == "EXPLAIN":
            self._advance()
            return self._explain(common, ordinal)
        if word == "TERMINATE":
            self._advance()
            if self._match_text_seq("ALL"):
                return st.Terminate(query_id=None, **common)
            return st.Terminate(query_id=self._identifier_text("a query id"), **common)
        if word == "PRINT":
            self._advance()
            return self._print(common)
        if word == "RUN":
            self._advance()
            if not self._match_text_seq("SCRIPT"):
                self.raise_error("Expecting SCRIPT after RUN")
            return st.RunScript(path=self._string("a file name in quotes"), **common)
        if word in _NOT_YET:
            self.raise_error(f"{word} statements are not supported yet", first)
        self.raise_error(f"Syntax error at or near '{first.text}'", first)

    # -- statements -------------------------------------------------------------------

    def _create(self, common: dict[str, Any]) -> Any:
        or_replace = self._match_text_seq("OR", "REPLACE")
        source = self._match_text_seq("SOURCE")
        kind = self._kind()
        if_not_exists = self._match_text_seq("IF", "NOT", "EXISTS")
        name = self._name("a stream or table name")
        elements: tuple[st.ColumnElement, ...] = ()
        if self._match(TokenType.L_PAREN, advance=False):
            elements = self._elements()
        properties = self._properties() if self._match(TokenType.WITH) else ()
        if self._match(TokenType.ALIAS):
            if elements:
                self.raise_error("A CREATE ... AS SELECT statement declares no columns", self._prev)
            if source:
                self.raise_error("CREATE SOURCE is not allowed with AS SELECT", self._prev)
            if not self._match_text_seq("SELECT", advance=False):
                self.raise_error("Expecting SELECT after AS")
            return st.CreateAsSelect(
                kind=kind,
                name=name,
                properties=properties,
                query=self._query(),
                or_replace=or_replace,
                if_not_exists=if_not_exists,
                **common,
            )
        return st.CreateSource(
            kind=kind,
            name=name,
            elements=elements,
            properties=properties,
            or_replace=or_replace,
            if_not_exists=if_not_exists,
            source=source,
            **common,
        )

    def _insert(self, common: dict[str, Any]) -> Any:
        if not self._match(TokenType.INTO):
            self.raise_error("Expecting INTO after INSERT")
        target = self._name("a stream or table name")
        if self._match(TokenType.WITH):
            properties = self._properties()
            return st.InsertInto(target=target, properties=properties, query=self._query(), **common)
        if self._match_text_seq("SELECT", advance=False):
            return st.InsertInto(target=target, properties=(), query=self._query(), **common)
        columns: tuple[st.Name, ...] = ()
        if self._match(TokenType.L_PAREN):
            columns = tuple(self._csv(lambda: self._name("a column name")))
            self._expect(TokenType.R_PAREN, "')'")
        if not self._match(TokenType.VALUES):
            self.raise_error("Expecting SELECT or VALUES")
        self._expect(TokenType.L_PAREN, "'('")
        values: list[exp.Expr] = []
        if not self._match(TokenType.R_PAREN):
            values = self._csv(self._value_expression)
            self._expect(TokenType.R_PAREN, "')'")
        return st.InsertValues(target=target, columns=columns, values=tuple(values), **common)

    def _drop(self, common: dict[str, Any]) -> Any:
        kind = self._kind()
        if_exists = self._match_text_seq("IF", "EXISTS")
        name = self._name("a stream or table name")
        delete_topic = self._match_text_seq("DELETE", "TOPIC")
        return st.DropSource(kind=kind, name=name, if_exists=if_exists, delete_topic=delete_topic, **common)

    def _list(self, common: dict[str, Any]) -> Any:
        all_topics = self._match_text_seq("ALL")
        token = self._curr
        what = token.text.upper() if token is not None and token.token_type != TokenType.IDENTIFIER else ""
        if what not in _LISTS or (all_topics and what != "TOPICS"):
            if what in _OTHER_LISTS:
                self.raise_error(f"SHOW {what} is not supported yet", token)
            self.raise_error("Expecting STREAMS, TABLES, TOPICS, QUERIES or PROPERTIES", token)
        self._advance()
        extended = what != "PROPERTIES" and self._match_text_seq("EXTENDED")
        return st.ListStatement(what=what, extended=extended, all_topics=all_topics, **common)

    def _describe(self, common: dict[str, Any]) -> Any:
        token = self._curr
        word = token.text.upper() if token is not None and token.token_type != TokenType.IDENTIFIER else ""
        if word in ("FUNCTION", "CONNECTOR") and not self._last(self._next):
            self.raise_error(f"DESCRIBE {word} is not supported yet", token)
        if word in ("STREAMS", "TABLES") and (self._last(self._next) or self._next.text.upper() == "EXTENDED"):
            self._advance()
            every: st.SourceKind = "STREAM" if word == "STREAMS" else "TABLE"
            return st.Describe(name=None, every=every, extended=self._match_text_seq("EXTENDED"), **common)
        name = self._name("a stream or table name")
        return st.Describe(name=name, extended=self._match_text_seq("EXTENDED"), **common)

    def _explain(self, common: dict[str, Any], ordinal: int) -> Any:
        token = self._curr
        if token is None:
            self.raise_error("Expecting a statement or a query id after EXPLAIN")
        word = token.text.upper() if token.token_type != TokenType.IDENTIFIER else ""
        if self._last(self._next) and word not in ("SELECT", "SHOW", "LIST"):
            return st.Explain(query_id=self._identifier_text("a query id"), **common)
        if word == "EXPLAIN":
            self.raise_error("Syntax error", token)
        return st.Explain(statement=self._dispatch(ordinal), **common)

    def _print(self, common: dict[str, Any]) -> Any:
        if self._match(TokenType.STRING):
            topic = self._prev.text
        else:
            topic = self._identifier_text("a topic name", keep_case=True)
        from_beginning = self._match_text_seq("FROM", "BEGINNING")
        interval = 1
        if self._match_text_seq("INTERVAL") or self._match_text_seq("SAMPLE"):
            interval = self._whole_number("INTERVAL")
        limit = None
        if self._match(TokenType.LIMIT):
            limit = self._whole_number("LIMIT")
        return st.PrintTopic(topic=topic, from_beginning=from_beginning, interval=interval, limit=limit, **common)

    @staticmethod
    def _last(token: Token | None) -> bool:
        """Whether ``token`` is past the statement's end."""
        return token is None or token.token_type in (TokenType.SEMICOLON, TokenType.SENTINEL)

    def _whole_number(self, what: str) -> int:
        if not self._match(TokenType.NUMBER) or not self._prev.text.isdigit():
            self.raise_error(f"{what} takes a whole number", self._prev if self._prev else None)
        return int(self._prev.text)

    def _identifier_text(self, what: str, *, keep_case: bool = False) -> str:
        """A name as written: quoted, or a word (upper-cased unless ``keep_case``)."""
        token = self._curr
        if token and token.token_type == TokenType.IDENTIFIER:
            self._advance()
            return token.text
        if token and token.token_type not in (TokenType.STRING, TokenType.NUMBER) and re.fullmatch(r"[A-Za-z_0-9][A-Za-z0-9_@$.-]*", token.text):
            self._advance()
            text = token.text
            # A topic name may have dashes and dots, which the tokenizer splits.
            while keep_case and self._curr is not None and self._curr.start == self._prev.end + 1 and not self._last(self._curr) and self._curr.token_type != TokenType.STRING:
                text += self._curr.text
                self._advance()
            return text if keep_case else text.upper()
        self.raise_error(f"Expecting {what}")

    # -- parts -------------------------------------------------------------------------

    def _kind(self) -> st.SourceKind:
        if self._match_text_seq("STREAM"):
            return "STREAM"
        if self._match_text_seq("TABLE"):
            return "TABLE"
        self.raise_error("Expecting STREAM or TABLE")

    def _elements(self) -> tuple[st.ColumnElement, ...]:
        self._expect(TokenType.L_PAREN, "'('")
        elements = self._csv(self._element)
        self._expect(TokenType.R_PAREN, "')'")
        return tuple(elements)

    def _element(self) -> st.ColumnElement:
        name = self._name("a column name")
        start = self._curr
        dtype = self._parse_types(check_func=False, schema=True, allow_identifiers=True)
        if not isinstance(dtype, exp.DataType):
            self.raise_error(f"Expecting a type for column {name.text}", start)
        sql_type = self._sql_type(dtype, start)
        constraint = None
        if self._match(TokenType.PRIMARY_KEY):
            constraint = "PRIMARY KEY"
        elif self._match_text_seq("KEY"):
            constraint = "KEY"
        elif self._match_text_seq("HEADERS"):
            constraint = "HEADERS"
        elif self._match_text_seq("HEADER"):
            self._expect(TokenType.L_PAREN, "'('")
            self._string("a header key in quotes")
            self._expect(TokenType.R_PAREN, "')'")
            constraint = "HEADER"
        return st.ColumnElement(name, sql_type, constraint, name.position)

    def _properties(self) -> tuple[st.Property, ...]:
        self._expect(TokenType.L_PAREN, "'('")
        properties = self._csv(self._property)
        self._expect(TokenType.R_PAREN, "')'")
        return tuple(properties)

    def _property(self) -> st.Property:
        token = self._curr
        if self._match(TokenType.STRING):
            key = self._prev.text.upper()
        else:
            key = self._name("a property name").text.upper()
        self._expect(TokenType.EQ, "'='")
        value_token = self._curr
        literal = self._parse_primary()
        value: str | int | float | bool | None
        if isinstance(literal, exp.Literal):
            value = literal.this if literal.is_string else _number(literal.this)
        elif isinstance(literal, exp.Boolean):
            value = bool(literal.this)
        elif isinstance(literal, exp.Null):
            value = None
        else:
            self.raise_error(f"Expecting a literal value for property {key}", value_token)
        return st.Property(key, value, self._position(token))

    def _query(self) -> st.Query:
        start = self._curr
        select = self._parse_select(nested=False, parse_set_operation=False, consume_pipe=False)
        if not isinstance(select, exp.Select):
            self.raise_error("Expecting a SELECT query", start)
        partition_by: tuple[exp.Expr, ...] = ()
        if self._match(TokenType.PARTITION_BY):
            if self._match(TokenType.L_PAREN):
                partition_by = tuple(self._csv(self._value_expression)) if not self._match(TokenType.R_PAREN, advance=False) else ()
                self._expect(TokenType.R_PAREN, "')'")
            else:
                partition_by = tuple(self._csv(self._value_expression))
        having = select.args.get("having")
        if self._match(TokenType.HAVING):
            if having is not None:
                self.raise_error("Found multiple 'HAVING' clauses", self._prev)
            having = exp.Having(this=self._parse_disjunction())
        emit: Any = None
        if self._match_text_seq("EMIT"):
            if self._match_text_seq("CHANGES"):
                emit = "CHANGES"
            elif self._match_text_seq("FINAL"):
                emit = "FINAL"
            else:
                self.raise_error("Expecting CHANGES or FINAL after EMIT")
        limit_node = select.args.get("limit")
        if self._match(TokenType.LIMIT):
            if limit_node is not None:
                self.raise_error("Found multiple 'LIMIT' clauses", self._prev)
            limit_node = exp.Limit(expression=self._parse_primary())
        return self._query_of(select, partition_by, having, emit, limit_node, start)

    def _query_of(self, select, partition_by, having, emit, limit_node, start: Token) -> st.Query:
        for arg in ("distinct", "order", "offset", "qualify", "windows", "laterals", "with_", "into",
                    "settings", "format", "options", "kind", "hint", "sample", "connect", "match",
                    "prewhere", "locks", "cluster", "distribute", "sort", "operation_modifiers", "top"):
            node = select.args.get(arg)
            if node:
                what = arg.rstrip("_").upper().replace("WINDOWS", "WINDOW").replace("ORDER", "ORDER BY")
                self.raise_error(f"{what} is not supported in ksqlDB's SQL", _token_near(node, start))
        source = select.args.get("from_")
        if source is None:
            self.raise_error("Expecting FROM", start)
        relation = self._relation(source.this, start)
        joins = tuple(self._join(j, start) for j in select.args.get("joins") or ())
        group = select.args.get("group")
        group_by: tuple[exp.Expr, ...] = ()
        if group is not None:
            for arg in ("grouping_sets", "cube", "rollup", "totals", "all"):
                if group.args.get(arg):
                    self.raise_error("GROUP BY supports a list of expressions only", _token_near(group, start))
            group_by = tuple(group.expressions)
            if len(group_by) == 1 and isinstance(group_by[0], exp.Tuple):
                group_by = tuple(group_by[0].expressions)  # GROUP BY (a, b)
        limit = None
        if limit_node is not None:
            value = limit_node.expression
            if not (isinstance(value, exp.Literal) and value.is_int):
                self.raise_error("LIMIT takes a whole number", _token_near(limit_node, start))
            limit = int(value.this)
        items = tuple(self._select_item(e, start) for e in select.expressions)
        for node in select.walk():
            if isinstance(node, (exp.Query, exp.Subquery)) and node is not select:
                self.raise_error("Subqueries are not supported in ksqlDB's SQL", _token_near(node, start))
        where = select.args.get("where")
        return st.Query(
            select=items,
            source=relation,
            joins=joins,
            where=where.this if where is not None else None,
            group_by=group_by,
            partition_by=partition_by,
            having=having.this if having is not None else None,
            emit=emit,
            limit=limit,
            position=self._position(start),
        )

    def _relation(self, table: exp.Expr, start: Token) -> st.Relation:
        if not isinstance(table, exp.Table) or table.args.get("db") or table.args.get("catalog"):
            self.raise_error("Expecting a stream or table name", _token_near(table, start))
        if not isinstance(table.this, exp.Identifier):
            self.raise_error("Expecting a stream or table name", _token_near(table, start))
        alias = table.args.get("alias")
        alias_name = None
        if alias is not None:
            if alias.columns:
                self.raise_error("Column aliases are not supported", _token_near(alias, start))
            alias_name = self._name_of(alias.this)
        return st.Relation(self._name_of(table.this), alias_name)

    def _join(self, join: exp.Join, start: Token) -> st.Join:
        side = (join.side or "").upper()
        kind = (join.kind or "").upper()
        if join.args.get("using") or join.args.get("method") or kind in ("CROSS", "SEMI", "ANTI"):
            self.raise_error("Only [INNER | LEFT | RIGHT | FULL] JOIN ... ON is supported", _token_near(join, start))
        on = join.args.get("on")
        if on is None and self._curr and self._curr.text.upper() == "WITHIN":
            self.raise_error("WITHIN (a stream-stream join) is not supported yet", self._curr)
        if on is None:
            self.raise_error("Expecting ON after the joined source", _token_near(join, start))
        kinds = {"": "INNER", "LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}
        relation = self._relation(join.this, start)
        return st.Join(kinds[side], relation, on, relation.name.position)  # type: ignore[arg-type]

    def _select_item(self, node: exp.Expr, start: Token) -> st.SelectItem:
        position = node_position(node, self.sql) or self._position(start)
        if isinstance(node, exp.Star):
            return st.SelectStar(None, position)
        if isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            if node.args.get("db"):
                self.raise_error("Expecting a source name before '.*'", _token_near(node, start))
            return st.SelectStar(self._name_of(node.args["table"]), position)
        if isinstance(node, exp.Alias):
            return st.SelectColumn(node.this, self._name_of(node.args["alias"]), position)
        return st.SelectColumn(node, None, position)

    # -- tokens ------------------------------------------------------------------------

    def _value_expression(self) -> exp.Expr:
        token = self._curr
        value = self._parse_disjunction()
        if value is None:
            self.raise_error("Expecting an expression", token)
        return value

    def _csv(self, item: Callable[[], Any]) -> list[Any]:
        items = [item()]
        while self._match(TokenType.COMMA):
            items.append(item())
        return items

    def _expect(self, kind: TokenType, shown: str) -> None:
        if not self._match(kind):
            self.raise_error(f"Expecting {shown}")

    def _string(self, what: str) -> str:
        if not self._match(TokenType.STRING):
            self.raise_error(f"Expecting {what}")
        return self._prev.text

    def _name(self, what: str) -> st.Name:
        token = self._curr
        if token and token.token_type == TokenType.IDENTIFIER:
            self._advance()
            return st.Name(token.text, True, self._position(token))
        if token and token.token_type not in (TokenType.STRING, TokenType.NUMBER) and _WORD.fullmatch(token.text):
            self._advance()
            return st.Name(token.text.upper(), False, self._position(token))
        self.raise_error(f"Expecting {what}")

    def _name_of(self, identifier: exp.Expr) -> st.Name:
        position = node_position(identifier, self.sql) or st.Position(1, 1, 0)
        quoted = bool(identifier.args.get("quoted"))
        text = identifier.name
        return st.Name(text if quoted else text.upper(), quoted, position)

    def _position(self, token: Token) -> st.Position:
        return position_of(self.sql, token.start)

    def _sql_type(self, dtype: exp.DataType, token: Token) -> SqlType:
        try:
            return sql_type_of(dtype)
        except SchemaError as error:
            self.raise_error(str(error), token)


class Ksql(Dialect):
    """ksqlDB's dialect: ``'strings'``, ```identifiers``` and ``"identifiers"``,
    ``->`` for struct fields."""

    class Tokenizer(Tokenizer):
        QUOTES = ["'"]
        IDENTIFIERS = ["`", '"']
        STRING_ESCAPES = ["'"]
        KEYWORDS = {**Tokenizer.KEYWORDS, "BYTES": TokenType.VARBINARY, "EXPLAIN": TokenType.VAR}
        # sqlglot reads the rest of a SHOW statement as one string; ksqlDB's are words.
        COMMANDS = Tokenizer.COMMANDS - {TokenType.SHOW}

    Parser = KsqlParser


_KSQL = Ksql()


def position_of(sql: str, offset: int) -> st.Position:
    """The line and column of a 0-based character offset."""
    line = sql.count("\n", 0, offset) + 1
    column = offset - (sql.rfind("\n", 0, offset) + 1) + 1
    return st.Position(line, column, offset)


def node_position(node: exp.Expr, sql: str) -> st.Position | None:
    """Where an expression starts: the first token of it that carries a position."""
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return position_of(sql, min(starts)) if starts else None


def _token_near(node: exp.Expr, fallback: Token) -> Token:
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    if not starts:
        return fallback
    return Token(TokenType.VAR, "", start=min(starts), end=min(starts))


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def sql_type_of(dtype: exp.DataType) -> SqlType:
    """A sqlglot type read in the ksqlDB dialect as a tablestream type; struct field
    names follow ksqlDB (upper-cased unless quoted)."""
    kind = dtype.this
    if kind in _TYPES:
        return _TYPES[kind]
    if kind == exp.DataType.Type.USERDEFINED:
        name = str(dtype.args.get("kind") or "").upper()
        if name == "BYTES":
            return BYTES
        raise SchemaError(f"Unknown type: {name or dtype.sql()}")
    if kind == exp.DataType.Type.DECIMAL:
        params = [p.this.this if isinstance(p.this, exp.Literal) else p.this for p in dtype.expressions]
        if len(params) != 2:
            raise SchemaError("DECIMAL needs a precision and a scale: DECIMAL(p, s)")
        precision, scale = int(str(params[0])), int(str(params[1]))
        if not 1 <= precision <= 38 or not 0 <= scale <= precision:
            raise SchemaError(f"Invalid DECIMAL({precision}, {scale}): precision 1 to 38, scale 0 to precision")
        return DecimalType(precision, scale)
    if kind == exp.DataType.Type.ARRAY and len(dtype.expressions) == 1:
        return ArrayType(sql_type_of(dtype.expressions[0]))
    if kind == exp.DataType.Type.MAP and len(dtype.expressions) == 2:
        if sql_type_of(dtype.expressions[0]) != STRING:
            raise SchemaError("MAP keys must be STRING")
        return MapType(sql_type_of(dtype.expressions[1]))
    if kind == exp.DataType.Type.STRUCT:
        fields = []
        for item in dtype.expressions:
            if not isinstance(item, exp.ColumnDef) or not isinstance(item.args.get("kind"), exp.DataType):
                raise SchemaError("STRUCT fields are written STRUCT<name TYPE, ...>")
            identifier = item.this
            name = identifier.name if identifier.args.get("quoted") else identifier.name.upper()
            if any(f.name == name for f in fields):
                raise SchemaError(f"Duplicate field {name} in STRUCT")
            fields.append(Column(name, sql_type_of(item.args["kind"])))
        return StructType(tuple(fields))
    names = {
        exp.DataType.Type.TIME: "TIME is not supported yet (use INT for milliseconds since midnight)",
        exp.DataType.Type.FLOAT: "FLOAT is not a ksqlDB type (use DOUBLE)",
        exp.DataType.Type.SMALLINT: "SMALLINT is not a ksqlDB type (use INT)",
        exp.DataType.Type.TINYINT: "TINYINT is not a ksqlDB type (use INT)",
    }
    raise SchemaError(names.get(kind, f"Unknown type: {dtype.sql()}"))


def parse_script(sql: str) -> list[st.Statement]:
    """The statements of a ksqlDB script, in order.

    >>> [type(s).__name__ for s in parse_script("CREATE STREAM s (id INT KEY) WITH (kafka_topic='s'); SELECT * FROM s EMIT CHANGES;")]
    ['CreateSource', 'SelectStatement']
    """
    if not isinstance(sql, str):
        raise TypeError(f"SQL must be a str, got {type(sql).__name__}")
    try:
        tokens = _KSQL.tokenize(sql)
    except TokenError as error:
        raise _token_error(sql, error) from None
    parser = KsqlParser(dialect=_KSQL, error_level=ErrorLevel.IMMEDIATE)
    try:
        return parser.statements(tokens, sql)
    except _Failure as failure:
        raise _syntax_error(sql, tokens, failure.token, str(failure)) from None
    except ParseError as error:
        raise _syntax_error(sql, tokens, None, _description(error)) from None
    except SqlglotError as error:
        raise _syntax_error(sql, tokens, None, str(error).splitlines()[0]) from None


def _description(error: ParseError) -> str:
    if error.errors:
        return str(error.errors[0].get("description") or "Syntax error")
    return str(error).splitlines()[0]


def _syntax_error(sql: str, tokens: list[Token], token: Token | None, message: str) -> SqlError:
    offset = token.start if token is not None else len(sql.rstrip())
    position = position_of(sql, min(offset, len(sql)))
    near = next((t for t in tokens if t.start == offset), None)
    if message == "Invalid expression / Unexpected token" or message.startswith("Required keyword"):
        message = "Syntax error"
    syntax = message == "Syntax error" or message.startswith("Expecting")
    if syntax and near is not None and near.text:
        shown = near.text.encode("unicode_escape").decode("ascii")
        message = f"{message} at or near '{shown}'"
    elif syntax and near is None:
        message = f"{message} at the end of the statement"
    return SqlError(message, line=position.line, column=position.column, statement=_statement_at(sql, tokens, offset))


def _statement_at(sql: str, tokens: list[Token], offset: int) -> str:
    """The text of the statement around ``offset`` (between semicolons)."""
    start, end = 0, len(sql)
    for token in tokens:
        if token.token_type != TokenType.SEMICOLON:
            continue
        if token.start < offset:
            start = token.end + 1
        elif token.start >= offset:
            end = token.start  # without its semicolon, as statements keep their text
            break
    return sql[start:end].strip()


def _token_error(sql: str, error: TokenError) -> SqlError:
    text = str(error).splitlines()[0]
    match = re.search(r"line (\d+), col(?:umn)? (\d+)", text, re.IGNORECASE)
    if match:
        line, column = int(match.group(1)), int(match.group(2))
    else:
        position = position_of(sql, len(sql.rstrip()))
        line, column = position.line, position.column
    for quote, what in (("'", "string"), ("`", "quoted identifier"), ('"', "quoted identifier")):
        if _unclosed(sql, quote):
            offset = _unclosed(sql, quote)
            position = position_of(sql, offset - 1)
            return SqlError(
                f"Unterminated {what} starting with {quote}",
                line=position.line,
                column=position.column,
                statement=sql[sql.rfind(";", 0, offset - 1) + 1 :].strip(),
            )
    return SqlError(f"Cannot read the script: {text}", line=line, column=column, statement=None)


def _unclosed(sql: str, quote: str) -> int:
    """1 + the offset of a quote that is never closed, or 0 (quotes inside comments and
    other quotes are skipped)."""
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c in "'`\"":
            j = i + 1
            while j < n:
                if sql[j] == c:
                    if j + 1 < n and sql[j + 1] == c:
                        j += 2
                        continue
                    break
                j += 1
            if j >= n:
                return i + 1 if c == quote else 0
            i = j + 1
            continue
        i += 1
    return 0

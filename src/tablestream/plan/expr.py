"""Expressions held by plan nodes.

A node never holds a Python object it cannot print: SQL text is parsed and kept as data
(:class:`SqlExpr`); a Spark Column or a Python callable is kept by the builder in a registry
and the node holds only an :class:`ExprRef` naming it, so plans compare and print as data.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.dialects.spark import Spark
from sqlglot.errors import ParseError, SqlglotError

from tablestream.plan.errors import InvalidExpressionError

__all__ = ["RECORD", "Expr", "ExprRef", "KeyValueExpr", "SqlExpr", "record_column"]

#: The qualifier of the record's own columns in SQL: ``record.key``, ``record.value`` and
#: ``record.rowtime`` name the record key, value and timestamp even where the value has
#: a field called ``key``, ``value`` or ``rowtime`` (which the bare names then read);
#: ``record.partition`` and ``record.offset`` a stream record's source partition and offset.
RECORD = "record"


def record_column(tree: exp.Expr) -> str | None:
    """``key``, ``value`` or ``rowtime`` when ``tree`` names that column of the record
    (``record.key``, or the bare ``key``), else ``None``. A bare name may also be a field
    of the value: only the runtime, which knows the value's fields, can tell."""
    if not isinstance(tree, exp.Column) or tree.args.get("db") is not None:
        return None
    name = tree.name.lower()
    if name not in ("key", "value", "rowtime") or tree.table.lower() not in ("", RECORD):
        return None
    return name

class SparkSql(Spark):
    """Spark's dialect with datetime patterns kept as written. sqlglot's Spark dialect
    reads a pattern into strftime codes and writes it back, which changes what Spark
    reads (``'y'`` comes back as ``'yyyy'``, which refuses a two-digit year); every
    expression is parsed and rendered with this one instead."""

    TIME_MAPPING: dict[str, str] = {}


SPARK = SparkSql
"""The dialect every expression is parsed and rendered with."""

_SQLGLOT_CLASS = re.compile(r"<class '(?:[\w.]+\.)?(\w+)'>")

# sqlglot groups statements (DROP, SHOW, USE, INSERT, SELECT, a;b, ...) in these modules;
# none of them is a scalar expression over one record.
_STATEMENT_MODULES = ("ddl", "dml", "query")


def _is_statement(tree: exp.Expr) -> bool:
    return isinstance(tree, (exp.Selectable, exp.DML)) or (
        type(tree).__module__.rpartition(".")[2] in _STATEMENT_MODULES
    )


def _parse(text: str) -> exp.Expr:
    try:
        tree = sqlglot.parse_one(text, dialect=SPARK)
    except ParseError as error:
        if error.errors:
            first = error.errors[0]
            detail = _SQLGLOT_CLASS.sub(r"\1", str(first.get("description")))
            where = f" (line {first.get('line')}, column {first.get('col')})"
        else:
            detail, where = "it is empty", ""
        raise InvalidExpressionError(f"Invalid SQL expression {text!r}: {detail}{where}") from None
    except SqlglotError as error:
        raise InvalidExpressionError(f"Invalid SQL expression {text!r}: {error}") from None
    if _is_statement(tree):
        raise InvalidExpressionError(
            f"Invalid SQL expression {text!r}: a query or statement is not an expression"
        )
    if isinstance(tree, exp.Alias):
        raise InvalidExpressionError(
            f"Invalid SQL expression {text!r}: an alias is not an expression "
            "(name struct fields inside struct(..., x AS name))"
        )
    if isinstance(tree, exp.Star):
        raise InvalidExpressionError(f"Invalid SQL expression {text!r}: '*' is not an expression")
    if tree.find(exp.Query) is not None:
        raise InvalidExpressionError(
            f"Invalid SQL expression {text!r}: subqueries are not supported"
        )
    return tree


@dataclass(frozen=True, slots=True)
class SqlExpr:
    """A Spark SQL expression, parsed and validated with sqlglot when it is made.

    ``sql`` is sqlglot's normalized Spark rendering and is what equality compares, so the
    DSL and the SQL front end give equal plans for the same expression however it was
    spelled. Columns name the record's ``key``, ``value`` and the value's fields.

    >>> SqlExpr("amount>10")
    SqlExpr(sql='amount > 10')
    >>> SqlExpr("amount >")
    Traceback (most recent call last):
    ...
    tablestream.plan.errors.InvalidExpressionError: Invalid SQL expression 'amount >': Required keyword: 'expression' missing for GT (line 1, column 8)
    """

    text: str = field(compare=False, repr=False)
    sql: str = field(init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise InvalidExpressionError(
                f"A SQL expression must be a str, got {type(self.text).__name__}"
            )
        object.__setattr__(self, "sql", _parse(self.text).sql(dialect=SPARK))

    def tree(self) -> exp.Expr:
        """The sqlglot syntax tree of the expression (parsed again; nodes keep only text)."""
        return sqlglot.parse_one(self.sql, dialect=SPARK)

    def __str__(self) -> str:
        return self.sql


@dataclass(frozen=True, slots=True)
class ExprRef:
    """An opaque expression: a Spark Column or a Python callable kept in the topology's
    function registry under ``ref``.

    ``kind`` is ``"column"`` or ``"callable"``; ``arity`` is the number of arguments a
    callable is called with (``None`` for a Column), chosen from its signature when the
    DSL received it; ``description`` is for people (``<lambda>(k, v)``).
    """

    ref: str
    kind: Literal["column", "callable"]
    arity: int | None
    description: str

    def __str__(self) -> str:
        return f"{self.kind} {self.description}"


Expr = SqlExpr | ExprRef
"""An expression a node holds: SQL text or a reference to a Column or callable."""


@dataclass(frozen=True, slots=True)
class KeyValueExpr:
    """A key-value mapper given as two expressions: the new key and the new value."""

    key: Expr
    value: Expr

    def __str__(self) -> str:
        return f"({self.key}, {self.value})"

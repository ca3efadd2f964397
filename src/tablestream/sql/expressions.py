"""ksqlDB expressions, typed by ksqlDB's rules and translated to Spark SQL.

A query names columns of its sources; a :class:`Scope` says which columns a clause can
name and how each is read in the Spark SQL of the plan node that evaluates it (a value
field ``value.NAME``, the record ``key``, ``left.NAME`` in a joiner, ...). A
:class:`Translator` walks a sqlglot tree of the ksqlDB dialect, checks every column,
operator and function, and builds the Spark SQL tree with its ksqlDB type; every
mistake is a :class:`~tablestream.sql.errors.SqlError` at the position of the part
that is wrong, with ksqlDB's own text where it has one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from tablestream.schema import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    INT,
    STRING,
    ArrayType,
    DecimalType,
    MapType,
    SqlType,
    StructType,
)
from tablestream.sql import functions
from tablestream.sql.dialect import node_position, sql_type_of
from tablestream.sql.errors import SqlError
from tablestream.sql.types import arithmetic_type, castable, common_type, is_numeric, ksql_text

__all__ = [
    "PSEUDO_COLUMNS",
    "PSEUDO_TYPES",
    "Field",
    "Scope",
    "Translator",
    "Typed",
    "cast_to",
    "format_expression",
    "is_aggregate",
    "ksql_name",
]

PSEUDO_COLUMNS = ("ROWTIME", "ROWPARTITION", "ROWOFFSET")
PSEUDO_TYPES: dict[str, SqlType] = {"ROWTIME": BIGINT, "ROWPARTITION": INT, "ROWOFFSET": BIGINT}
_INT_RANGE = (-(2**31), 2**31 - 1)
_BIGINT_RANGE = (-(2**63), 2**63 - 1)

_COMPARISONS: dict[type, tuple[str, str]] = {
    exp.EQ: ("=", "EQUAL"),
    exp.NEQ: ("<>", "NOT_EQUAL"),
    exp.GT: (">", "GREATER_THAN"),
    exp.GTE: (">=", "GREATER_THAN_OR_EQUAL"),
    exp.LT: ("<", "LESS_THAN"),
    exp.LTE: ("<=", "LESS_THAN_OR_EQUAL"),
    exp.NullSafeNEQ: ("IS DISTINCT FROM", "IS_DISTINCT_FROM"),
    exp.NullSafeEQ: ("IS NOT DISTINCT FROM", "IS_NOT_DISTINCT_FROM"),
}
_ARITHMETIC: dict[type, str] = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/", exp.Mod: "%"}


@dataclass(frozen=True, slots=True)
class Field:
    """A column a query can name: of the source called ``source`` in the query (its
    alias), a key column (``key``), a value column or a pseudo-column (``pseudo``)."""

    source: str
    name: str
    type: SqlType
    role: Literal["key", "value", "pseudo"]

    @property
    def qualified(self) -> str:
        return f"{self.source}.{self.name}" if self.source else self.name


@dataclass(frozen=True, slots=True)
class Typed:
    """A translated expression: its Spark SQL tree and its ksqlDB type (``None`` for a
    NULL literal, which fits any type)."""

    spark: exp.Expr
    type: SqlType | None


class Scope:
    """The columns one clause of a query can name, and how each reads in Spark SQL.

    ``fields`` in order (a source's key columns, value columns, pseudo-columns);
    ``reader`` gives the Spark SQL of a field in this clause, or ``None`` where it
    cannot be read (the clause's error names it); ``clause`` names the clause in
    messages (``SELECT``, ``WHERE``, ``JOIN ON``, ...); ``qualify`` prints columns with
    their source in messages (ksqlDB does in joins)."""

    def __init__(
        self,
        fields: Sequence[Field],
        reader: Callable[[Field], exp.Expr | None],
        *,
        clause: str,
        qualify: bool = False,
    ):
        self.fields = tuple(fields)
        self.reader = reader
        self.clause = clause
        self.qualify = qualify
        self.sources = tuple(dict.fromkeys(f.source for f in self.fields))

    def lookup(self, name: str, source: str | None) -> list[Field]:
        return [f for f in self.fields if f.name == name and (source is None or f.source == source)]


def ksql_name(identifier: exp.Expr) -> str:
    """An identifier as ksqlDB reads it: upper-cased unless quoted."""
    return identifier.name if identifier.args.get("quoted") else identifier.name.upper()


def is_aggregate(node: exp.Expr) -> bool:
    """Whether ``node`` is a call of an aggregate function (``COUNT(*)``, ``SUM(x)``)."""
    return isinstance(node, exp.Anonymous) and functions.is_aggregate(str(node.this).upper())


def format_expression(node: exp.Expr, scope: Scope | None = None) -> str:
    """An expression as ksqlDB prints it in messages: names upper-cased, columns
    qualified with their source in joins, binary operations in parentheses.

    >>> import sqlglot
    >>> format_expression(sqlglot.parse_one("f1 - f2"))
    '(F1 - F2)'
    """

    def fmt(n: exp.Expr) -> str:
        if isinstance(n, exp.Column):
            name = ksql_name(n.this) if not isinstance(n.this, exp.Star) else "*"
            table = n.args.get("table")
            if table is not None:
                return f"{ksql_name(table)}.{name}"
            if scope is not None and scope.qualify:
                found = scope.lookup(name, None)
                if len(found) == 1 and found[0].source:
                    return f"{found[0].source}.{name}"
            return name
        if isinstance(n, exp.Dot):
            return f"{fmt(n.this)}->{ksql_name(n.expression)}"
        if isinstance(n, exp.Literal):
            return f"'{n.this}'" if n.is_string else n.this
        if isinstance(n, exp.Boolean):
            return "true" if n.this else "false"
        if isinstance(n, exp.Null):
            return "null"
        if isinstance(n, exp.Star):
            return "*"
        if isinstance(n, exp.Paren):
            return fmt(n.this)
        if isinstance(n, exp.Neg):
            return f"-{fmt(n.this)}"
        if isinstance(n, exp.Not):
            inner = n.this
            if isinstance(inner, exp.Is):
                return f"({fmt(inner.this)} IS NOT NULL)"
            return f"(NOT {fmt(inner)})"
        if isinstance(n, exp.Is):
            return f"({fmt(n.this)} IS NULL)"
        if type(n) in _ARITHMETIC:
            return f"({fmt(n.this)} {_ARITHMETIC[type(n)]} {fmt(n.expression)})"
        if type(n) in _COMPARISONS:
            return f"({fmt(n.this)} {_COMPARISONS[type(n)][0]} {fmt(n.expression)})"
        if isinstance(n, exp.And):
            return f"({fmt(n.this)} AND {fmt(n.expression)})"
        if isinstance(n, exp.Or):
            return f"({fmt(n.this)} OR {fmt(n.expression)})"
        if isinstance(n, exp.DPipe):
            return f"({fmt(n.this)} || {fmt(n.expression)})"
        if isinstance(n, exp.Cast):
            try:
                target = ksql_text(sql_type_of(n.args["to"]))
            except Exception:  # an unknown type prints as written
                target = n.args["to"].sql().upper()
            return f"CAST({fmt(n.this)} AS {target})"
        if isinstance(n, exp.Anonymous):
            return f"{str(n.this).upper()}({', '.join(fmt(a) for a in n.expressions)})"
        if isinstance(n, exp.Bracket):
            return f"{fmt(n.this)}[{', '.join(fmt(a) for a in n.expressions)}]"
        return n.sql().upper()

    return fmt(node)


class Translator:
    """Types and translates the expressions of one clause.

    ``replace`` is asked first for every node: an aggregate's or a GROUP BY
    expression's result in the clauses after an aggregation, or ``None`` to translate
    the node itself. ``sql`` is the whole script (for positions), ``statement`` the
    statement's text (for messages)."""

    def __init__(
        self,
        scope: Scope,
        sql: str,
        statement: str,
        *,
        replace: Callable[[exp.Expr], Typed | None] | None = None,
    ):
        self.scope = scope
        self.sql = sql
        self.statement = statement
        self.replace = replace

    # -- errors ------------------------------------------------------------------------

    def error(self, node: exp.Expr | None, message: str) -> SqlError:
        position = node_position(node, self.sql) if node is not None else None
        line, column = (position.line, position.column) if position else (1, 1)
        return SqlError(message, line=line, column=column, statement=self.statement)

    def fmt(self, node: exp.Expr) -> str:
        return format_expression(node, self.scope)

    # -- columns -----------------------------------------------------------------------

    def resolve(self, column: exp.Column) -> Field:
        """The field a column reference names (ksqlDB's resolution and messages)."""
        name = ksql_name(column.this)
        table = column.args.get("table")
        if column.args.get("db") is not None:
            raise self.error(column, f"{self.scope.clause} column '{self.fmt(column)}' cannot be resolved")
        if table is not None:
            source = ksql_name(table)
            if source not in self.scope.sources:
                raise self.error(table, f"'{source}' is not a valid stream/table name or alias")
            found = self.scope.lookup(name, source)
            if not found:
                raise self.error(column, f"{self.scope.clause} column '{source}.{name}' cannot be resolved")
            return found[0]
        found = self.scope.lookup(name, None)
        if not found:
            extra = ""
            if self.scope.clause == "PARTITION BY":
                extra = f". '{name}' must be a column in the source schema since PARTITION BY is applied on the input"
            raise self.error(column, f"{self.scope.clause} column '{name}' cannot be resolved{extra}")
        if len(found) > 1:
            options = " or ".join(f.qualified for f in found)
            raise self.error(column, f"Column '{name}' is ambiguous. Could be {options}")
        return found[0]

    def column(self, node: exp.Column) -> Typed:
        if isinstance(node.this, exp.Star):
            raise self.error(node, "'*' is only allowed in SELECT or COUNT(*)")
        field = self.resolve(node)
        spark = self.scope.reader(field)
        if spark is None:
            what = "pseudo-column" if field.role == "pseudo" else "column"
            raise self.error(node, f"The {what} {field.qualified} cannot be used in {self.scope.clause} yet")
        return Typed(spark, field.type)

    # -- expressions -------------------------------------------------------------------

    def typed(self, node: exp.Expr) -> Typed:
        """The Spark SQL and ksqlDB type of ``node``."""
        if self.replace is not None:
            replaced = self.replace(node)
            if replaced is not None:
                return replaced
        method = getattr(self, f"_{type(node).__name__.lower()}", None)
        if method is None:
            if type(node) in _ARITHMETIC:
                return self._arithmetic(node)
            if type(node) in _COMPARISONS:
                return self._comparison(node)
            raise self.error(node, f"Unsupported expression: {self.fmt(node)}")
        return method(node)

    def boolean(self, node: exp.Expr, what: str) -> Typed:
        """A condition (``WHERE``, ``HAVING``, ``ON``): must be BOOLEAN."""
        typed = self.typed(node)
        if typed.type not in (BOOLEAN, None):
            raise self.error(node, f"Type error in {what}: expression must be of type BOOLEAN: {self.fmt(node)}")
        return typed

    def _column(self, node: exp.Column) -> Typed:
        return self.column(node)

    def _dot(self, node: exp.Dot) -> Typed:
        base = self.typed(node.this)
        name = ksql_name(node.expression)
        if not isinstance(base.type, StructType):
            raise self.error(node, f"Can't dereference {name} of {self.fmt(node.this)}: it is {ksql_text(base.type)}, not a STRUCT")
        for field in base.type.fields:
            if field.name == name:
                return Typed(exp.Bracket(this=base.spark, expressions=[exp.Literal.string(name)]), field.type)
        raise self.error(node.expression, f"Could not find field '{name}' in '{self.fmt(node.this)}'")

    def _paren(self, node: exp.Paren) -> Typed:
        inner = self.typed(node.this)
        return Typed(exp.Paren(this=inner.spark), inner.type)

    def _literal(self, node: exp.Literal, sign: str = "") -> Typed:
        text = sign + node.this
        if node.is_string:
            return Typed(exp.Literal.string(text), STRING)
        if "e" in text.lower():
            return Typed(exp.Literal.number(text), DOUBLE)
        if "." in text:
            digits = node.this.replace(".", "").lstrip("0") or "0"
            scale = len(node.this) - node.this.index(".") - 1
            precision = max(len(digits), scale, 1)
            return Typed(exp.Literal.number(text), DecimalType(precision, scale))
        value = int(text)
        if _INT_RANGE[0] <= value <= _INT_RANGE[1]:
            return Typed(exp.Literal.number(text), INT)
        if _BIGINT_RANGE[0] <= value <= _BIGINT_RANGE[1]:
            return Typed(exp.Literal.number(text), BIGINT)  # Spark types it BIGINT too
        raise self.error(node, f"Invalid numeric literal: {text}")

    def _boolean(self, node: exp.Boolean) -> Typed:
        return Typed(exp.Boolean(this=bool(node.this)), BOOLEAN)

    def _null(self, node: exp.Null) -> Typed:
        return Typed(exp.Null(), None)

    def _neg(self, node: exp.Neg) -> Typed:
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return self._literal(inner, "-")
        value = self.typed(inner)
        if value.type is not None and not is_numeric(value.type):
            raise self.error(node, f"Unsupported arithmetic types. -{ksql_text(value.type)}")
        return Typed(exp.Neg(this=value.spark), value.type)

    def _not(self, node: exp.Not) -> Typed:
        value = self.boolean(node.this, "NOT")
        return Typed(exp.Not(this=value.spark), BOOLEAN)

    def _and(self, node: exp.And) -> Typed:
        return self._logical(node, exp.And)

    def _or(self, node: exp.Or) -> Typed:
        return self._logical(node, exp.Or)

    def _logical(self, node: exp.Expr, kind: type[exp.Expr]) -> Typed:
        left = self.boolean(node.this, kind.__name__.upper())
        right = self.boolean(node.expression, kind.__name__.upper())
        return Typed(kind(this=left.spark, expression=right.spark), BOOLEAN)

    def _is(self, node: exp.Is) -> Typed:
        if not isinstance(node.expression, exp.Null):
            raise self.error(node, f"Unsupported expression: {self.fmt(node)}")
        value = self.typed(node.this)
        return Typed(exp.Is(this=value.spark, expression=exp.Null()), BOOLEAN)

    def _arithmetic(self, node: exp.Expr) -> Typed:
        op = _ARITHMETIC[type(node)]
        left, right = self.typed(node.this), self.typed(node.expression)
        if op == "+" and STRING in (left.type, right.type) and {left.type, right.type} <= {STRING, None}:
            return Typed(_call("concat", left.spark, right.spark), STRING)
        lt, rt = left.type, right.type
        if (lt is not None and not is_numeric(lt)) or (rt is not None and not is_numeric(rt)):
            raise self.error(node, f"Error processing expression: {self.fmt(node)}. Unsupported arithmetic types. {ksql_text(lt)} {ksql_text(rt)}")
        if lt is None or rt is None:
            result_type = lt or rt
            return Typed(exp.Null(), result_type)
        result_type = arithmetic_type(op, lt, rt)
        spark_kind = type(node)
        if op == "/" and result_type in (INT, BIGINT):
            # Java's integer division (truncated toward zero); Spark's '/' gives a DOUBLE.
            spark = exp.IntDiv(this=_paren(left.spark), expression=_paren(right.spark))
            return Typed(_cast(spark, result_type), result_type)
        spark = spark_kind(this=_paren(left.spark), expression=_paren(right.spark))
        if isinstance(result_type, DecimalType) or result_type == INT:
            spark = _cast(spark, result_type)
        return Typed(spark, result_type)

    def _dpipe(self, node: exp.DPipe) -> Typed:
        left, right = self.typed(node.this), self.typed(node.expression)
        for side, value in ((node.this, left), (node.expression, right)):
            if value.type not in (STRING, None):
                raise self.error(side, f"Unsupported type for ||: {ksql_text(value.type)} (use CONCAT or CAST)")
        return Typed(_call("concat", left.spark, right.spark), STRING)

    def comparable(self, node: exp.Expr, left: Typed, right: Typed, op_name: str, sides: tuple[exp.Expr, exp.Expr]) -> None:
        lt, rt = left.type, right.type
        if lt is None or rt is None or common_type([lt, rt]) is not None:
            return
        clause = self.scope.clause
        raise self.error(
            node,
            f"Error in {clause} expression: Cannot compare {self.fmt(sides[0])} ({ksql_text(lt)}) "
            f"to {self.fmt(sides[1])} ({ksql_text(rt)}) with {op_name}",
        )

    def _comparison(self, node: exp.Expr) -> Typed:
        _, op_name = _COMPARISONS[type(node)]
        left, right = self.typed(node.this), self.typed(node.expression)
        self.comparable(node, left, right, op_name, (node.this, node.expression))
        if isinstance(left.type, (MapType,)) or isinstance(right.type, MapType):
            raise self.error(node, f"Cannot compare MAP values: {self.fmt(node)}")
        # ksqlDB's comparisons are two-valued: with a null on either side they are false
        # (so NOT (a = b) holds there), where Spark's give null.
        compared = type(node)(this=left.spark, expression=right.spark)
        return Typed(exp.Coalesce(this=compared, expressions=[exp.false()]), BOOLEAN)

    def _in(self, node: exp.In) -> Typed:
        value = self.typed(node.this)
        options = [self.typed(e) for e in node.expressions]
        if node.args.get("query") or not options:
            raise self.error(node, f"Unsupported expression: {self.fmt(node)}")
        for option, raw in zip(options, node.expressions, strict=True):
            self.comparable(node, value, option, "EQUAL", (node.this, raw))
        return Typed(exp.In(this=value.spark, expressions=[o.spark for o in options]), BOOLEAN)

    def _between(self, node: exp.Between) -> Typed:
        value, low, high = self.typed(node.this), self.typed(node.args["low"]), self.typed(node.args["high"])
        self.comparable(node, value, low, "GREATER_THAN_OR_EQUAL", (node.this, node.args["low"]))
        self.comparable(node, value, high, "LESS_THAN_OR_EQUAL", (node.this, node.args["high"]))
        return Typed(exp.Between(this=value.spark, low=low.spark, high=high.spark), BOOLEAN)

    def _like(self, node: exp.Like) -> Typed:
        value, pattern = self.typed(node.this), self.typed(node.expression)
        for side, typed in ((node.this, value), (node.expression, pattern)):
            if typed.type not in (STRING, None):
                raise self.error(side, f"LIKE takes STRING operands, got {ksql_text(typed.type)}")
        return Typed(exp.Like(this=value.spark, expression=pattern.spark), BOOLEAN)

    def _cast(self, node: exp.Cast) -> Typed:
        value = self.typed(node.this)
        try:
            target = sql_type_of(node.args["to"])
        except Exception as error:  # SchemaError: an unknown or unsupported type
            raise self.error(node, str(error)) from None
        if not castable(value.type, target):
            raise self.error(node, f"Cast of {ksql_text(value.type)} to {ksql_text(target)} is not supported")
        return Typed(_cast(value.spark, target), target)

    def _case(self, node: exp.Case) -> Typed:
        subject = self.typed(node.this) if node.this is not None else None
        conditions, results = [], []
        for branch in node.args.get("ifs") or []:
            if subject is not None:
                when = self.typed(branch.this)
                self.comparable(branch, subject, when, "EQUAL", (node.this, branch.this))
                conditions.append(when.spark)
            else:
                conditions.append(self.boolean(branch.this, "CASE").spark)
            results.append((branch.args["true"], self.typed(branch.args["true"])))
        default = node.args.get("default")
        if default is not None:
            results.append((default, self.typed(default)))
        result_type = common_type([t.type for _, t in results])
        if result_type is None and any(t.type is not None for _, t in results):
            raise self.error(node, "Invalid Case expression. Type for all 'THEN' clauses should be the same")
        ifs = [
            exp.If(this=condition, true=_widen(typed, result_type))
            for condition, (_, typed) in zip(conditions, results, strict=False)
        ]
        spark_default = _widen(results[-1][1], result_type) if default is not None else None
        spark = exp.Case(this=subject.spark if subject else None, ifs=ifs, default=spark_default)
        return Typed(spark, result_type)

    def _bracket(self, node: exp.Bracket) -> Typed:
        base = self.typed(node.this)
        if len(node.expressions) != 1:
            raise self.error(node, f"Unsupported expression: {self.fmt(node)}")
        index = self.typed(node.expressions[0])
        if isinstance(base.type, ArrayType):
            if index.type not in (INT, BIGINT, None):
                raise self.error(node.expressions[0], f"Array index must be INTEGER, got {ksql_text(index.type)}")
            # ksqlDB's arrays count from 1 (and from -1 at the end); a missing element is null.
            return Typed(_call("try_element_at", base.spark, index.spark), base.type.element)
        if isinstance(base.type, MapType):
            if index.type not in (STRING, None):
                raise self.error(node.expressions[0], f"Map key must be STRING, got {ksql_text(index.type)}")
            return Typed(_call("try_element_at", base.spark, index.spark), base.type.value)
        raise self.error(node, f"Subscript needs an ARRAY or a MAP, got {ksql_text(base.type)}")

    def _anonymous(self, node: exp.Anonymous) -> Typed:
        name = str(node.this).upper()
        if functions.is_aggregate(name):
            raise self.error(node, f"Aggregate functions are not allowed in {self.scope.clause}: {self.fmt(node)}")
        function = functions.SCALAR.get(name)
        if function is None:
            raise self.error(node, f"Can't find any functions with the name '{name}'")
        if any(isinstance(a, exp.Star) for a in node.expressions):
            raise self.error(node, f"'*' is not an argument of {name}")
        args = [
            self._unit(a) if i == 0 and name in functions.UNIT_FUNCTIONS else self.typed(a)
            for i, a in enumerate(node.expressions)
        ]
        try:
            spark, result = function(args)
        except functions.ArgumentError as error:
            raise self.error(node, str(error) if error.whole else f"{name}: {error}") from None
        return Typed(spark, result)

    def _unit(self, node: exp.Expr) -> Typed:
        """A time unit (``DAYS``, ``HOUR``, ...) where a function takes one, as an
        ``exp.Var`` holding its name; anything else is typed as usual."""
        if isinstance(node, exp.Column) and not node.table and not node.this.quoted:
            unit = node.name.upper()
            if unit in functions.TIME_UNITS:
                return Typed(exp.Var(this=unit), None)
        return self.typed(node)


def _paren(node: exp.Expr) -> exp.Expr:
    return node if isinstance(node, (exp.Column, exp.Literal, exp.Paren, exp.Bracket, exp.Anonymous, exp.Cast)) else exp.Paren(this=node)


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _cast(node: exp.Expr, target: SqlType) -> exp.Expr:
    return exp.Cast(this=node, to=exp.DataType.build(target.spark_ddl(), dialect="spark"))


def _widen(typed: Typed, target: SqlType | None) -> exp.Expr:
    if target is None or typed.type is None or typed.type == target:
        return typed.spark
    return _cast(typed.spark, target)


def cast_to(typed: Typed, target: SqlType) -> exp.Expr:
    """``typed`` as a value of ``target`` (a CAST when its type differs)."""
    return _widen(typed, target)

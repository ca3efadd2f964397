"""Turning what users pass to the DSL into plan expressions.

A SQL string becomes a :class:`~tablestream.plan.SqlExpr`; a Spark Column or a Python
callable is kept in the builder's registry and the node gets an
:class:`~tablestream.plan.ExprRef` naming it (``<node name>.<argument>``). Callables follow
Kafka Streams' functional interfaces (the :data:`ROLES` below); their parameters are read
with :func:`inspect.signature`, and a callable is later called with as many arguments as
it declares positional parameters, up to the most its interface allows (``*args`` counts
as that most). Spark Columns are recognized by their class's module, without importing
pyspark.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from tablestream.plan import PlanBuilder
from tablestream.plan.errors import ArityError, InvalidExpressionError, InvalidTypeError
from tablestream.plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr

__all__ = [
    "ACTION",
    "ADDER",
    "AGGREGATOR",
    "COLUMN",
    "FLAT_MAPPER",
    "FLAT_VALUE_MAPPER",
    "FOREIGN_KEY_EXTRACTOR",
    "INITIALIZER",
    "JOINER",
    "KEY_SELECTOR",
    "KEY_VALUE_MAPPER",
    "PREDICATE",
    "REDUCER",
    "REDUCE_ADDER",
    "REDUCE_SUBTRACTOR",
    "ROLES",
    "SUBTRACTOR",
    "VALUE_MAPPER",
    "Prepared",
    "Role",
    "is_spark_column",
    "prepare",
    "prepare_key_value",
]


@dataclass(frozen=True, slots=True)
class Role:
    """A functional interface: how a callable in this place is called."""

    name: str
    signature: str
    arities: tuple[int, ...]
    sql: bool = True  # SQL text and Spark Columns accepted
    python: bool = True  # callables accepted
    hint: str = ""  # what to use instead of a refused SQL text or Spark Column

    def accepts(self) -> str:
        kinds = []
        if self.sql:
            kinds += ["a SQL expression (str)", "a Spark Column"]
        if self.python:
            kinds.append(f"a callable {self.signature}")
        return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]


PREDICATE = Role("predicate", "(key, value) -> bool", (2,))
VALUE_MAPPER = Role("value mapper", "(value) or (key, value) -> new value", (1, 2))
KEY_VALUE_MAPPER = Role("key-value mapper", "(key, value) -> (new key, new value)", (2,))
FLAT_MAPPER = Role("flat mapper", "(key, value) -> iterable of (key, value)", (2,))
FLAT_VALUE_MAPPER = Role("value mapper", "(value) or (key, value) -> iterable of values", (1, 2))
KEY_SELECTOR = Role("key selector", "(key, value) -> new key", (2,))
ACTION = Role("action", "(key, value) -> None", (2,), sql=False)
# reduce and aggregate run Python callables only.
_FOLD_HINT = (
    "reduce and aggregate take Python callables; for a SQL expression or a Spark Column "
    "use count(), sum(), avg(), min() or max()"
)
INITIALIZER = Role("initializer", "() -> initial aggregate", (0,), sql=False, hint=_FOLD_HINT)
AGGREGATOR = Role(
    "aggregator",
    "(key, value, aggregate[, source_key]) -> new aggregate",
    (3, 4),
    sql=False,
    hint=_FOLD_HINT,
)
ADDER = Role(
    "adder",
    "(key, value, aggregate[, source_key]) -> new aggregate",
    (3, 4),
    sql=False,
    hint=_FOLD_HINT,
)
SUBTRACTOR = Role(
    "subtractor",
    "(key, value, aggregate[, source_key]) -> new aggregate",
    (3, 4),
    sql=False,
    hint=_FOLD_HINT,
)
REDUCER = Role("reducer", "(aggregate, value) -> new aggregate", (2,), sql=False, hint=_FOLD_HINT)
REDUCE_ADDER = Role(
    "adder", "(aggregate, value) -> new aggregate", (2,), sql=False, hint=_FOLD_HINT
)
REDUCE_SUBTRACTOR = Role(
    "subtractor", "(aggregate, old value) -> new aggregate", (2,), sql=False, hint=_FOLD_HINT
)
JOINER = Role("joiner", "(left value, right value) -> joined value", (2,))
FOREIGN_KEY_EXTRACTOR = Role(
    "foreign-key extractor", "(value) or (key, value) -> foreign key", (1, 2)
)
COLUMN = Role("column", "", (), python=False)

ROLES = (
    PREDICATE,
    VALUE_MAPPER,
    KEY_VALUE_MAPPER,
    FLAT_MAPPER,
    FLAT_VALUE_MAPPER,
    KEY_SELECTOR,
    ACTION,
    INITIALIZER,
    AGGREGATOR,
    ADDER,
    SUBTRACTOR,
    REDUCER,
    REDUCE_ADDER,
    REDUCE_SUBTRACTOR,
    JOINER,
    FOREIGN_KEY_EXTRACTOR,
    COLUMN,
)


def is_spark_column(obj: object) -> bool:
    """Whether ``obj`` is a pyspark ``Column`` (classic or Spark Connect)."""
    return any(
        cls.__name__ == "Column" and cls.__module__.startswith("pyspark.sql")
        for cls in type(obj).__mro__
    )


@dataclass(frozen=True, slots=True)
class Prepared:
    """A validated argument, not yet registered: SQL is ready; an object waits for the
    node name that names its reference."""

    sql: SqlExpr | None = None
    obj: Any = None
    kind: str = ""
    arity: int | None = None
    description: str = ""

    def bind(self, plan: PlanBuilder, ref: str) -> Expr:
        if self.sql is not None:
            return self.sql
        plan.register(ref, self.obj)
        return ExprRef(
            ref, "column" if self.kind == "column" else "callable", self.arity, self.description
        )


@dataclass(frozen=True, slots=True)
class PreparedPair:
    """A key-value mapper: one callable, or a (key, value) pair of expressions."""

    whole: Prepared | None
    key: Prepared | None = None
    value: Prepared | None = None

    def bind(self, plan: PlanBuilder, ref: str) -> KeyValueExpr | ExprRef:
        if self.whole is not None:
            bound = self.whole.bind(plan, ref)
            assert isinstance(bound, ExprRef)
            return bound
        assert self.key is not None and self.value is not None
        return KeyValueExpr(
            self.key.bind(plan, f"{ref}.key"), self.value.bind(plan, f"{ref}.value")
        )


def prepare(value: Any, role: Role, method: str) -> Prepared:
    """Validate ``value`` as an argument of ``method`` playing ``role``."""
    if value is None:
        raise InvalidTypeError(f"{method}: {role.name} can't be None")
    hint = f" ({role.hint})" if role.hint else ""
    if isinstance(value, str):
        if not role.sql:
            raise InvalidTypeError(
                f"{method}: {role.name} must be {role.accepts()}; got a str{hint}"
            )
        try:
            return Prepared(sql=SqlExpr(value))
        except InvalidExpressionError as error:
            raise InvalidExpressionError(f"{method}: {role.name}: {error}") from None
    if is_spark_column(value):
        if not role.sql:
            raise InvalidTypeError(
                f"{method}: {role.name} must be {role.accepts()}; got a Spark Column{hint}"
            )
        return Prepared(obj=value, kind="column", description=_column_description(value))
    if callable(value) and role.python:
        arity, description = _arity(value, role, method)
        return Prepared(obj=value, kind="callable", arity=arity, description=description)
    raise InvalidTypeError(
        f"{method}: {role.name} must be {role.accepts()}; got {type(value).__name__}"
    )


def prepare_key_value(value: Any, role: Role, method: str) -> PreparedPair:
    """A key-value mapper: a callable ``(key, value) -> (key, value)`` or a pair
    ``(key expression, value expression)`` of SQL text or Columns."""
    if isinstance(value, tuple) and len(value) == 2:
        key, val = (
            prepare(v, Role(f"{part} expression", "", (), python=False), method)
            for v, part in zip(value, ("key", "value"), strict=True)
        )
        return PreparedPair(None, key, val)
    if callable(value) and not is_spark_column(value):
        return PreparedPair(prepare(value, role, method))
    if value is None:
        raise InvalidTypeError(f"{method}: {role.name} can't be None")
    raise InvalidTypeError(
        f"{method}: {role.name} must be a callable {role.signature} or a pair "
        f"(key expression, value expression); got {type(value).__name__}"
    )


def _column_description(column: object) -> str:
    try:
        return str(column)
    except Exception:  # a Column whose session is gone still names its class
        return type(column).__name__


def _arity(fn: Any, role: Role, method: str) -> tuple[int, str]:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        raise ArityError(
            f"{method}: cannot read the parameters of {role.name} {name}; "
            f"pass a lambda or def taking {role.signature}"
        ) from None
    params = list(signature.parameters.values())
    description = f"{name}({_parameter_list(params)})"
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
    for p in params:
        if p.kind is p.KEYWORD_ONLY and p.default is p.empty:
            raise ArityError(
                f"{method}: {role.name} {description} has a required keyword-only parameter "
                f"'{p.name}'; it must take {role.signature}"
            )
    most = max(role.arities) if varargs else len(positional)
    fits = [a for a in role.arities if len(required) <= a <= most]
    if not fits:
        if varargs:
            takes = f"at least {len(required)}"
        elif len(required) == len(positional):
            takes = str(len(positional))
        else:
            takes = f"{len(required)} to {len(positional)}"
        plural = "" if takes == "1" else "s"
        raise ArityError(
            f"{method}: {role.name} {description} takes {takes} parameter{plural}; "
            f"it must take {role.signature}"
        )
    return max(fits), description


def _parameter_list(params: list[inspect.Parameter]) -> str:
    """Parameter names as written (``k, v``, ``*args``, ``*, x``), without defaults or
    annotations."""
    shown: list[str] = []
    for p in params:
        if p.kind is p.VAR_POSITIONAL:
            shown.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            shown.append(f"**{p.name}")
        else:
            if p.kind is p.KEYWORD_ONLY and not any(s.startswith("*") for s in shown):
                shown.append("*")
            shown.append(p.name)
    return ", ".join(shown)

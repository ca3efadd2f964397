"""SQL expressions as a careful run of a batch evaluates them.

Spark evaluates SQL in ANSI mode: a cast of bad text, a division by zero or an integer
overflow raises, and the batch's job fails. When a batch fails so, the runner runs it
again carefully (:meth:`~tablestream.runtime.runner.BatchRunner.process`): each SQL
expression that can raise is evaluated in its non-raising form (``CAST`` as ``TRY_CAST``,
``/`` as ``try_divide``, ``%`` as ``try_mod``, ``+ - *`` as ``try_add``,
``try_subtract``, ``try_multiply``, ``DIV`` and ``pmod`` by zero as null, ``to_date`` and
``to_timestamp`` as their ``try_`` forms), beside a string expression giving, on each
row, why the strict form would have raised (null where it would not).

The reason follows Spark's evaluation: a ``CASE`` or ``IF`` branch, a ``COALESCE`` or
``NVL2`` argument and the right side of ``AND``/``OR`` count only on the rows where Spark
evaluates them, so ``CASE WHEN qty = 0 THEN 0 ELSE 100 / qty END`` never fails. Inside a
lambda (``transform(xs, x -> ...)``) nothing is rewritten, nor are the forms listed in
the docs (array subscripts, implicit casts): they still raise in a careful run.

Pure sqlglot (no Spark): the trees are turned into Columns by
:func:`tablestream.runtime.expressions.sql_column`.

>>> form = careful_form("CAST(code AS INT) + 1")
>>> form.value.sql("spark")
'TRY_ADD(TRY_CAST(code AS INT), 1)'
>>> careful_form("amount > 10") is None
True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from ..plan.expr import SPARK


@dataclass(frozen=True)
class CarefulForm:
    """An expression's non-raising form (``value``) and the reason its strict form
    raises on a row (``reason``: a string, null where it does not raise). Shared: copy
    before changing either tree."""

    value: exp.Expression
    reason: exp.Expression


@functools.lru_cache(maxsize=256)
def careful_form(sql: str) -> CarefulForm | None:
    """The careful form of a Spark SQL expression, or None when no part of it can raise
    at run time in a form this module rewrites (it is then evaluated as it is)."""
    value, reason = _careful(sqlglot.parse_one(sql, dialect=SPARK))
    return None if reason is None else CarefulForm(value, reason)


def may_fail(sql: str) -> bool:
    """Whether a SQL expression has a part that can raise at run time (see
    :func:`careful_form`).

    >>> may_fail("100 / qty"), may_fail("coalesce(code, 'none')")
    (True, False)
    """
    return careful_form(sql) is not None


# ---------------------------------------------------------------- templates
def _template(sql: str) -> Callable[..., exp.Expression]:
    """A SQL template with ``:name`` placeholders, filled with (copies of) expressions;
    each one is parenthesized, so that precedence never changes its meaning."""
    tree = sqlglot.parse_one(sql, dialect=SPARK)

    def fill(**parts: exp.Expression) -> exp.Expression:
        def replace(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Placeholder):
                part = parts[node.this].copy()
                return part if isinstance(part, (exp.Literal, exp.Column, exp.Paren, exp.Null)) else exp.paren(part)
            return node

        return tree.transform(replace)

    return fill


_NOT_NULL = _template(":a IS NOT NULL")
_FAILED = _template("CASE WHEN :failed THEN :message END")
_MESSAGE = _template("concat(:before, CAST(:arg AS STRING), :after)")
_ZERO = _template(":b = 0")
_DIVIDE_MESSAGE = _template("CASE WHEN :b = 0 THEN :zero ELSE :overflow END")
_NULL_IF_ZERO = _template("CASE WHEN :b = 0 THEN NULL ELSE :value END")
_CASE = _template("CASE WHEN :taken THEN :yes ELSE :no END")
_EQUAL = _template(":a = :b")
_IS_NULL = _template(":a IS NULL")
_NOT_FALSE = _template(":a IS NULL OR :a")
_NOT_TRUE = _template(":a IS NULL OR NOT :a")


def _all(*conditions: exp.Expression) -> exp.Expression:
    return exp.and_(*conditions, copy=True)


def _literal(text: str) -> exp.Expression:
    return exp.Literal.string(text)


def _first(reasons: list[exp.Expression | None]) -> exp.Expression | None:
    """The first reason that is not null (None when there is none)."""
    present = [r for r in reasons if r is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return exp.Coalesce(this=present[0], expressions=present[1:])


def _when(taken: exp.Expression, then: exp.Expression | None, otherwise: exp.Expression | None) -> exp.Expression | None:
    """``then`` where ``taken`` holds, else ``otherwise`` (a null condition is not taken)."""
    if then is None and otherwise is None:
        return None
    return _CASE(taken=taken, yes=then or exp.null(), no=otherwise or exp.null())


# ---------------------------------------------------------------- the rewrite
def _careful(node: exp.Expression) -> tuple[exp.Expression, exp.Expression | None]:
    """``node``'s non-raising form and its reason (None: nothing in it raises)."""
    if isinstance(node, (exp.Lambda, exp.DataType, exp.Identifier, exp.Literal, exp.Column)):
        return node.copy(), None
    special = _CONDITIONAL.get(type(node))
    if special is not None:
        return special(node)
    new = node.copy()
    reasons = []
    for name, arg in node.args.items():
        if isinstance(arg, exp.Expression):
            value, reason = _careful(arg)
            new.set(name, value)
            reasons.append(reason)
        elif isinstance(arg, list) and any(isinstance(a, exp.Expression) for a in arg):
            parts = [_careful(a) if isinstance(a, exp.Expression) else (a, None) for a in arg]
            new.set(name, [value for value, _ in parts])
            reasons.extend(reason for _, reason in parts)
    own = _own(node, new)
    if own is None:
        return new, _first(reasons)
    value, reason = own
    return value, _first([*reasons, reason])


def _own(node: exp.Expression, new: exp.Expression) -> tuple[exp.Expression, exp.Expression] | None:
    """The non-raising form of ``new`` (``node`` with its parts rewritten) and why its
    strict form raises, when ``node`` is a form Spark raises on."""
    text = node.sql(dialect=SPARK)
    if isinstance(node, exp.Cast) and not node.args.get("safe"):
        target = node.args["to"]
        if target.is_type(*exp.DataType.TEXT_TYPES):
            return None
        value = exp.TryCast(this=new.this.copy(), to=target.copy(), safe=True)
        return value, _unreadable(new.this, value, f"{text}: cannot cast '", f"' to {target.sql(dialect=SPARK)}")
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)):
        a, b = new.this, new.expression
        value = exp.Anonymous(this=_TRY_ARITHMETIC[type(node)], expressions=[a.copy(), b.copy()])
        failed = _all(_NOT_NULL(a=a), _NOT_NULL(a=b), _IS_NULL(a=value))
        if isinstance(node, exp.Div):
            message = _DIVIDE_MESSAGE(b=b, zero=_literal(f"{text}: division by zero"),
                                      overflow=_literal(f"{text}: arithmetic overflow"))
        else:
            message = _literal(f"{text}: {'division by zero' if isinstance(node, exp.Mod) else 'arithmetic overflow'}")
        return value, _FAILED(failed=failed, message=message)
    if isinstance(node, exp.IntDiv) or (isinstance(node, exp.Anonymous) and node.name.lower() == "pmod"):
        a, b = (new.this, new.expression) if isinstance(node, exp.IntDiv) else new.expressions[:2]
        value = _NULL_IF_ZERO(b=b, value=new)
        return value, _FAILED(failed=_all(_NOT_NULL(a=a), _ZERO(b=b)), message=_literal(f"{text}: division by zero"))
    if isinstance(node, (exp.TsOrDsToDate, exp.StrToTime)):
        rendered = new.sql(dialect=SPARK)
        for prefix, what in (("TO_DATE(", "a date"), ("TO_TIMESTAMP(", "a timestamp")):
            if rendered.upper().startswith(prefix):
                value = sqlglot.parse_one("TRY_" + rendered, dialect=SPARK)
                return value, _unreadable(new.this, value, f"{text}: cannot parse '", f"' as {what}")
    return None


def _unreadable(arg: exp.Expression, value: exp.Expression, before: str, after: str) -> exp.Expression:
    """The reason of a conversion of ``arg`` whose non-raising form ``value`` is null:
    ``before``, the text of ``arg``, ``after``."""
    message = _MESSAGE(before=_literal(before), arg=arg, after=_literal(after))
    return _FAILED(failed=_all(_NOT_NULL(a=arg), _IS_NULL(a=value)), message=message)


_TRY_ARITHMETIC = {
    exp.Add: "try_add", exp.Sub: "try_subtract", exp.Mul: "try_multiply", exp.Div: "try_divide", exp.Mod: "try_mod",
}


# ------------------------------------------------ parts Spark evaluates on some rows
def _case(node: exp.Case) -> tuple[exp.Expression, exp.Expression | None]:
    """``CASE [subject] WHEN c THEN v ... ELSE d END``: the subject is always evaluated;
    each condition until one is taken; then the taken branch (or the default)."""
    new = node.copy()
    subject = node.args.get("this")
    subject_value, subject_reason = _careful(subject) if subject is not None else (None, None)
    branches, ifs = [], []
    for branch in node.args.get("ifs") or []:
        condition, condition_reason = _careful(branch.this)
        value, value_reason = _careful(branch.args["true"])
        ifs.append(exp.If(this=condition, true=value))
        taken = condition if subject_value is None else _EQUAL(a=subject_value, b=condition)
        branches.append((taken, condition_reason, value_reason))
    default = node.args.get("default")
    default_value, chain = _careful(default) if default is not None else (None, None)
    new.set("this", subject_value)
    new.set("ifs", ifs)
    new.set("default", default_value)
    for taken, condition_reason, value_reason in reversed(branches):
        chain = _first([condition_reason, _when(taken, value_reason, chain)])
    return new, _first([subject_reason, chain])


def _if(node: exp.If) -> tuple[exp.Expression, exp.Expression | None]:
    condition, condition_reason = _careful(node.this)
    then, then_reason = _careful(node.args["true"])
    otherwise = node.args.get("false")
    otherwise_value, otherwise_reason = _careful(otherwise) if otherwise is not None else (None, None)
    new = exp.If(this=condition, true=then, false=otherwise_value)
    return new, _first([condition_reason, _when(condition, then_reason, otherwise_reason)])


def _nvl2(node: exp.Nvl2) -> tuple[exp.Expression, exp.Expression | None]:
    subject, subject_reason = _careful(node.this)
    then, then_reason = _careful(node.args["true"])
    otherwise, otherwise_reason = _careful(node.args["false"])
    new = exp.Nvl2(this=subject, true=then, false=otherwise)
    return new, _first([subject_reason, _when(_NOT_NULL(a=subject), then_reason, otherwise_reason)])


def _coalesce(node: exp.Coalesce) -> tuple[exp.Expression, exp.Expression | None]:
    """Each argument is evaluated while those before it are null."""
    parts = [_careful(a) for a in [node.this, *node.expressions]]
    chain = parts[-1][1]
    for value, reason in reversed(parts[:-1]):
        chain = _first([reason, _when(_IS_NULL(a=value), chain, None)])
    new = node.copy()
    new.set("this", parts[0][0])
    new.set("expressions", [value for value, _ in parts[1:]])
    return new, chain


def _connective(node: exp.Connector) -> tuple[exp.Expression, exp.Expression | None]:
    """``a AND b`` evaluates ``b`` unless ``a`` is false; ``a OR b`` unless it is true."""
    left, left_reason = _careful(node.this)
    right, right_reason = _careful(node.expression)
    new = type(node)(this=left, expression=right)
    evaluated = (_NOT_FALSE if isinstance(node, exp.And) else _NOT_TRUE)(a=left)
    return new, _first([left_reason, _when(evaluated, right_reason, None)])


_CONDITIONAL: dict[type, Callable[..., tuple[exp.Expression, exp.Expression | None]]] = {
    exp.Case: _case, exp.If: _if, exp.Nvl2: _nvl2, exp.Coalesce: _coalesce, exp.And: _connective, exp.Or: _connective,
}

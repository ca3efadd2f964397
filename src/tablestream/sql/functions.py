"""The functions ksqlDB's SQL can call here: scalar functions (their ksqlDB types and
their Spark SQL, with ksqlDB's null and index rules) and the names of aggregates.

Each scalar function takes the translated arguments (:class:`~tablestream.sql.expressions.Typed`)
and returns its Spark SQL tree and result type, or raises :class:`ArgumentError`
saying what it accepts.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from sqlglot import exp

from tablestream.schema import (
    BIGINT,
    BYTES,
    DATE,
    DOUBLE,
    INT,
    STRING,
    TIMESTAMP,
    ArrayType,
    DecimalType,
    SqlType,
)
from tablestream.sql.datetime_patterns import (
    OFFSET_LETTERS,
    TIME_LETTERS,
    ZERO_OFFSET_ZONES,
    ZONE_LETTERS,
    ZONE_NAME_LETTERS,
    Pattern,
    PatternError,
    check_zone,
    letter_name,
    parse_pattern,
    read_pattern,
)
from tablestream.sql.types import common_type, decimal_of, ksql_text

if TYPE_CHECKING:
    from tablestream.sql.expressions import Typed

__all__ = [
    "AGGREGATES", "SCALAR", "TABLE_AGGREGATES", "TIME_UNITS", "UNIT_FUNCTIONS", "UNSUPPORTED_AGGREGATES",
    "ArgumentError", "is_aggregate",
]


class ArgumentError(Exception):
    """Arguments a function does not take; the message says what it takes (after the
    function's name, unless ``whole``: ksqlDB's own text, which names the function)."""

    def __init__(self, message: str, *, whole: bool = False):
        super().__init__(message)
        self.whole = whole


# Aggregates the compiler turns into the DSL's aggregations.
AGGREGATES = (
    "AVG", "COLLECT_LIST", "COLLECT_SET", "COUNT", "COUNT_DISTINCT", "EARLIEST_BY_OFFSET",
    "LATEST_BY_OFFSET", "MAX", "MIN", "SUM",
)
# Those a table source takes: the ones ksqlDB can undo (its TableUdafs).
TABLE_AGGREGATES = ("AVG", "COLLECT_LIST", "COUNT", "SUM")
# ksqlDB aggregates the DSL has no built-in aggregation for yet.
UNSUPPORTED_AGGREGATES = ("CORRELATION", "HISTOGRAM", "STDDEV_SAMP", "STDDEV_SAMPLE", "TOPK", "TOPKDISTINCT")


def is_aggregate(name: str) -> bool:
    """Whether ``name`` (upper-case) is one of ksqlDB's aggregate functions."""
    return name in AGGREGATES or name in UNSUPPORTED_AGGREGATES


def _call(name: str, *args: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=name, expressions=list(args))


def _arity(args: list[Typed], low: int, high: int | None = None) -> None:
    high = low if high is None else high
    if not low <= len(args) <= high:
        takes = str(low) if low == high else f"{low} to {high}"
        raise ArgumentError(f"takes {takes} argument{'s' if high != 1 else ''}, got {len(args)}")


def _types(args: list[Typed], allowed: tuple[SqlType, ...], what: str) -> None:
    for arg in args:
        if arg.type is not None and arg.type not in allowed:
            raise ArgumentError(f"takes {what}, got {ksql_text(arg.type)}")


def _case_change(spark: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        _arity(args, 1)
        _types(args, (STRING,), "a STRING")
        return _call(spark, args[0].spark), STRING

    return fn


def _len(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (STRING, BYTES), "a STRING or BYTES")
    return _call("length", args[0].spark), INT


def _concat(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    if not args:
        raise ArgumentError("takes at least 1 argument, got 0")
    _types(args, (STRING,), "STRING arguments")
    # ksqlDB skips null arguments (and concatenates nothing to '').
    return _call("concat_ws", exp.Literal.string(""), *(a.spark for a in args)), STRING


def _substring(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 2, 3)
    _types(args[:1], (STRING,), "a STRING")
    _types(args[1:], (INT, BIGINT), "INTEGER positions and lengths")
    text, pos = args[0].spark, args[1].spark
    length = _call("char_length", text)
    # ksqlDB's start: from 1, or from the end when negative, clamped to the string.
    start = exp.Case(
        ifs=[exp.If(this=exp.LT(this=pos, expression=exp.Literal.number(0)),
                    true=_call("greatest", exp.Add(this=length, expression=pos), exp.Literal.number(0)))],
        default=_call("greatest", _call("least", exp.Sub(this=pos, expression=exp.Literal.number(1)), length),
                      exp.Literal.number(0)),
    )
    first = exp.Add(this=exp.Paren(this=start), expression=exp.Literal.number(1))
    # A null position or length gives null, as in ksqlDB (Spark's least and greatest
    # would skip it).
    missing = exp.Or(this=exp.Is(this=pos, expression=exp.Null()), expression=exp.Is(this=args[-1].spark, expression=exp.Null()))
    if len(args) == 2:
        result = _call("substring", text, first)
    else:
        end = _call("greatest", _call("least", exp.Add(this=exp.Paren(this=start), expression=args[2].spark), length),
                    exp.Paren(this=start))
        result = _call("substring", text, first, exp.Sub(this=end, expression=exp.Paren(this=start)))
    return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=result), STRING


def _abs(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    t = args[0].type
    if t is not None and t not in (INT, BIGINT, DOUBLE) and not isinstance(t, DecimalType):
        raise ArgumentError(f"takes a number, got {ksql_text(t)}")
    return _call("abs", args[0].spark), t or DOUBLE


def _coalesce(args: list[Typed], name: str = "COALESCE") -> tuple[exp.Expr, SqlType | None]:
    result = common_type([a.type for a in args])
    if result is None and any(a.type is not None for a in args):
        shown = ", ".join(ksql_text(a.type) for a in args)
        raise ArgumentError(f"the arguments have no common type ({shown})")
    from tablestream.sql.expressions import cast_to

    return _call("coalesce", *(cast_to(a, result) if result else a.spark for a in args)), result


def _coalesce_fn(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    if not args:
        raise ArgumentError("takes at least 1 argument, got 0")
    return _coalesce(args)


def _ifnull(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    _arity(args, 2)
    return _coalesce(args, "IFNULL")


# -- numbers ------------------------------------------------------------------------

_NUMBERS = (INT, BIGINT, DOUBLE)


def _number(args: list[Typed], decimals: bool = False) -> None:
    for arg in args:
        t = arg.type
        if t is not None and t not in _NUMBERS and not (decimals and isinstance(t, DecimalType)):
            raise ArgumentError(f"takes {'a number' if decimals else 'an INT, BIGINT or DOUBLE'}, got {ksql_text(t)}")


def _double(node: exp.Expr) -> exp.Expr:
    return exp.Cast(this=node, to=exp.DataType.build("DOUBLE"))


def _typed_cast(node: exp.Expr, t: SqlType) -> exp.Expr:
    return exp.Cast(this=node, to=exp.DataType.build(t.spark_ddl(), dialect="spark"))


def _special(name: str) -> exp.Expr:
    """A DOUBLE that SQL has no literal for: NaN, Infinity, -Infinity."""
    return _double(exp.Literal.string(name))


def _java_math(method: str, *args: exp.Expr) -> exp.Expr:
    """``java.lang.Math.<method>`` of DOUBLEs, as ksqlDB's functions call it (Spark's own
    EXP, LN, POW, ... use StrictMath, whose results can differ in the last digit; and
    its LN is null where Java's is NaN or -Infinity). Null for a null argument."""
    call = _double(_call("reflect", exp.Literal.string("java.lang.Math"), exp.Literal.string(method), *args))
    missing: exp.Expr | None = None
    for arg in args:
        test = exp.Is(this=arg, expression=exp.Null())
        missing = test if missing is None else exp.Or(this=missing, expression=test)
    assert missing is not None
    return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=call)


def _of_double(method: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """A function of one number whose result is a DOUBLE: Java's ``Math.<method>``."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        _arity(args, 1)
        _number(args)
        return _java_math(method, _double(args[0].spark)), DOUBLE

    return fn


def _log(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """LOG(value): the natural logarithm (as ksqlDB's LOG computes it); LOG(base, value):
    NaN for a base that is not positive or is 1."""
    _arity(args, 1, 2)
    _number(args)
    if len(args) == 1:
        return _java_math("log", _double(args[0].spark)), DOUBLE
    base, value = _double(args[0].spark), _double(args[1].spark)
    bad_base = exp.Or(this=exp.LTE(this=base, expression=exp.Literal.number(0)), expression=exp.EQ(this=base, expression=exp.Literal.number(1)))
    spark = exp.Case(
        ifs=[
            exp.If(this=exp.Or(this=exp.Is(this=base, expression=exp.Null()), expression=exp.Is(this=value, expression=exp.Null())), true=exp.Null()),
            exp.If(this=bad_base, true=_special("NaN")),
        ],
        default=exp.Div(this=_java_math("log", value), expression=_java_math("log", base)),
    )
    return spark, DOUBLE


def _power(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 2)
    _number(args)
    return _java_math("pow", _double(args[0].spark), _double(args[1].spark)), DOUBLE


def _pi(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 0)
    return _call("pi"), DOUBLE


def _sign(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _number(args, decimals=True)
    return _typed_cast(_call("signum", args[0].spark), INT), INT


def _whole(spark: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType | None]]:
    """CEIL and FLOOR: the type of their argument (a DOUBLE stays a DOUBLE, a DECIMAL
    keeps its precision and scale)."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
        _arity(args, 1)
        _number(args, decimals=True)
        x, t = args[0].spark, args[0].type
        if t in (INT, BIGINT, None):
            return x, t
        if t == DOUBLE:
            # Spark's CEIL/FLOOR of a DOUBLE is a BIGINT: a DOUBLE that large, NaN or
            # infinite is whole already (Java's Math.ceil returns it as it is).
            whole = exp.Or(
                this=_call("isnan", x),
                expression=exp.GTE(this=_call("abs", x), expression=exp.Literal.number("4503599627370496")),
            )
            return exp.Case(ifs=[exp.If(this=whole, true=x)], default=_double(_call(spark, x))), DOUBLE
        return _typed_cast(_call(spark, x), t), t

    return fn


def _places(node: Typed, name: str) -> int:
    """A literal INT number of decimal places."""
    spark = node.spark
    sign = 1
    if isinstance(spark, exp.Neg):
        spark, sign = spark.this, -1
    if node.type != INT or not isinstance(spark, exp.Literal) or spark.is_string:
        raise ArgumentError(f"takes the decimal places as a literal INT, got {ksql_text(node.type)}")
    return sign * int(spark.this)


def _half_up(x: exp.Expr, places: int) -> exp.Expr:
    """``x`` (a DECIMAL) rounded to ``places`` with ties toward positive infinity, as
    ksqlDB rounds: floor(x + 0.5 units of the last place)."""
    half = exp.Literal.number(f"{5 * 10 ** max(0, -places - 1)}" if places < 0 else f"0.{'0' * places}5")
    return _call("floor", exp.Add(this=x, expression=half), exp.Literal.number(places))


def _round(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    """ROUND(x): an INT or BIGINT as a BIGINT, a DOUBLE to a BIGINT (Java's Math.round),
    a DECIMAL to a DECIMAL of scale 0; ROUND(x, places): a DOUBLE or a DECIMAL of the
    same type, ties toward positive infinity as ksqlDB rounds (places a literal INT)."""
    _arity(args, 1, 2)
    _number(args[:1], decimals=True)
    x, t = args[0].spark, args[0].type
    if len(args) == 1:
        if t in (INT, BIGINT, None):
            return _typed_cast(x, BIGINT), BIGINT
        if t == DOUBLE:
            return _typed_cast(_call("floor", exp.Add(this=x, expression=exp.Literal.number("0.5"))), BIGINT), BIGINT
        assert isinstance(t, DecimalType)
        result = DecimalType(max(1, t.precision - t.scale), 0)
        return _typed_cast(_half_up(x, 0), result), result
    places = _places(args[1], "ROUND")
    if t == DOUBLE:
        # BigDecimal.valueOf(double): the decimal the DOUBLE prints as.
        exact = _typed_cast(_typed_cast(x, STRING), DecimalType(38, 18))
        large = exp.GTE(this=_call("abs", x), expression=exp.Literal.number("1E20"))
        return exp.Case(ifs=[exp.If(this=large, true=x)], default=_double(_half_up(exact, places))), DOUBLE
    decimal = t if isinstance(t, DecimalType) else decimal_of(t) if t is not None else DecimalType(10, 0)
    return _typed_cast(_half_up(_typed_cast(x, decimal), places), decimal), decimal


def _extreme(spark: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType | None]]:
    """GREATEST and LEAST: the largest (smallest) value that is not null, of the type
    every argument widens to."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
        if not args:
            raise ArgumentError("takes at least 1 argument, got 0")
        result = common_type([a.type for a in args])
        if result is None and any(a.type is not None for a in args):
            raise ArgumentError(f"the arguments have no common type ({', '.join(ksql_text(a.type) for a in args)})")
        from tablestream.sql.expressions import cast_to

        values = [cast_to(a, result) if result else a.spark for a in args]
        return (values[0] if len(values) == 1 else _call(spark, *values)), result

    return fn


def _nullif(args: list[Typed]) -> tuple[exp.Expr, SqlType | None]:
    _arity(args, 2)
    if common_type([args[0].type, args[1].type]) is None and None not in (args[0].type, args[1].type):
        raise ArgumentError(f"the arguments have no common type ({ksql_text(args[0].type)}, {ksql_text(args[1].type)})")
    return _call("nullif", args[0].spark, args[1].spark), args[0].type


# -- strings ------------------------------------------------------------------------


def _trim(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (STRING,), "a STRING")
    # Java's String.trim: every character up to U+0020 (Spark's TRIM takes spaces only).
    return _call("regexp_replace", args[0].spark, exp.Literal.string("^[\\x00-\\x20]+|[\\x00-\\x20]+$"), exp.Literal.string("")), STRING


def _pad(spark: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """LPAD and RPAD: null for a negative length or an empty padding, as in ksqlDB."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        _arity(args, 3)
        _types([args[0], args[2]], (STRING,), "STRING input and padding")
        _types(args[1:2], (INT,), "an INT length")
        text, length, padding = (a.spark for a in args)
        bad = exp.Or(
            this=exp.LT(this=length, expression=exp.Literal.number(0)),
            expression=exp.EQ(this=padding, expression=exp.Literal.string("")),
        )
        return exp.Case(ifs=[exp.If(this=bad, true=exp.Null())], default=_call(spark, text, length, padding)), STRING

    return fn


def _initcap(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (STRING,), "a STRING")
    return _call("initcap", args[0].spark), STRING


def _instr(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """INSTR(string, substring): the position of the first occurrence, from 1; 0 if none."""
    _arity(args, 2)
    _types(args, (STRING,), "STRING arguments")
    return _call("instr", args[0].spark, args[1].spark), INT


def _replace(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 3)
    _types(args, (STRING,), "STRING arguments")
    # A null argument gives null, as in ksqlDB (Spark's REPLACE ignores a null search).
    missing = exp.Or(this=exp.Is(this=args[1].spark, expression=exp.Null()), expression=exp.Is(this=args[2].spark, expression=exp.Null()))
    return exp.Case(ifs=[exp.If(this=missing, true=exp.Null())], default=_call("replace", *(a.spark for a in args))), STRING


def _regexp_replace(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 3)
    _types(args, (STRING,), "STRING arguments")
    return _call("regexp_replace", *(a.spark for a in args)), STRING


def _regexp_extract(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """REGEXP_EXTRACT(pattern, string[, group]): the first match (or its group), null
    when there is none (Spark's is '')."""
    _arity(args, 2, 3)
    _types(args[:2], (STRING,), "a STRING pattern and string")
    _types(args[2:], (INT,), "an INT group")
    pattern, text = args[0].spark, args[1].spark
    group = args[2].spark if len(args) == 3 else exp.Literal.number(0)
    found = exp.RegexpLike(this=text, expression=pattern)
    return exp.Case(ifs=[exp.If(this=found, true=_call("regexp_extract", text, pattern, group))]), STRING


def _split(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """SPLIT(string, delimiter): the parts between the occurrences of the delimiter (a
    literal STRING, not a pattern), empty parts kept; '' splits into characters."""
    _arity(args, 2)
    _types(args, (STRING,), "STRING arguments")
    delimiter = args[1].spark
    if not (isinstance(delimiter, exp.Literal) and delimiter.is_string):
        raise ArgumentError("takes the delimiter as a literal STRING")
    pattern = exp.Literal.string(re.escape(delimiter.this))
    return _call("split", args[0].spark, pattern, exp.Literal.number(-1)), ArrayType(STRING)


def _concat_ws(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """CONCAT_WS(separator, ...): null arguments skipped; a null separator gives null."""
    if len(args) < 2:
        raise ArgumentError(f"takes at least 2 arguments, got {len(args)}")
    _types(args, (STRING,), "STRING arguments")
    return _call("concat_ws", *(a.spark for a in args)), STRING


# -- dates and times ----------------------------------------------------------------
# A TIMESTAMP is Spark's TIMESTAMP (an instant; the session zone is UTC), a DATE Spark's
# DATE. Patterns and zones are literals, checked here (datetime_patterns): a pattern or
# zone in a column cannot be checked against what Spark does exactly.

# The units DATEADD, DATESUB, TIMESTAMPADD and TIMESTAMPSUB take (ksqlDB's window
# units), in milliseconds.
TIME_UNITS = {
    "DAY": 86_400_000, "DAYS": 86_400_000, "HOUR": 3_600_000, "HOURS": 3_600_000, "MINUTE": 60_000,
    "MINUTES": 60_000, "SECOND": 1_000, "SECONDS": 1_000, "MILLISECOND": 1, "MILLISECONDS": 1,
}
# Functions whose first argument is a unit (a bare word such as DAYS, read as an
# exp.Var by the translator).
UNIT_FUNCTIONS = ("DATEADD", "DATESUB", "TIMESTAMPADD", "TIMESTAMPSUB")
_MS_PER_DAY = 86_400_000


def _literal_text(arg: Typed, what: str) -> str | None:
    """A literal STRING argument's text (None for NULL)."""
    if isinstance(arg.spark, exp.Null):
        return None
    if arg.type != STRING or not (isinstance(arg.spark, exp.Literal) and arg.spark.is_string):
        raise ArgumentError(f"takes the {what} as a literal STRING (one read from a column cannot be checked), got {ksql_text(arg.type)}")
    return arg.spark.this


def _pattern(arg: Typed) -> Pattern | None:
    text = _literal_text(arg, "format pattern")
    if text is None:
        return None
    if "%" in text:
        # sqlglot reads it as a strftime directive when the plan's SQL text is parsed again.
        raise ArgumentError(f"a '%' is not taken in a pattern here (in the pattern '{text}')")
    try:
        return read_pattern(text)
    except PatternError as error:
        raise ArgumentError(f"{error} (in the pattern '{text}')") from None


def _zone(args: list[Typed], index: int, default: str) -> str | None:
    """The literal time zone at ``index`` (``default`` when absent; None for NULL)."""
    if len(args) <= index:
        return default
    zone = _literal_text(args[index], "time zone")
    if zone is not None:
        try:
            check_zone(zone)
        except PatternError as error:
            raise ArgumentError(str(error)) from None
    return zone


def _refuse(pattern: Pattern, letters: str, why: str) -> None:
    letter = pattern.first(letters)
    if letter is not None:
        raise ArgumentError(f"the pattern letter '{letter}' ({letter_name(letter)}) {why} (in the pattern '{pattern.text}')")


def _pattern_literal(text: str) -> exp.Expr:
    # Inside a CAST: sqlglot reads a pattern literal of DATE_FORMAT, TO_TIMESTAMP and
    # TO_DATE into its own time format when the plan's SQL text is parsed again, and
    # writes some back otherwise ('y' as 'yyyy', 'E' as 'EEE').
    return exp.Cast(this=exp.Literal.string(text), to=exp.DataType.build("STRING"))


def _format_instant(instant: exp.Expr, pattern: Pattern, zone: str) -> exp.Expr:
    """``instant`` as text in ``zone``: Spark formats in UTC, so the instant moves to the
    zone's wall time first; a zone's name would then print UTC's, so ``z`` and ``VV``
    are taken only in UTC, and its offset is computed (each offset field between the
    parts of the pattern Spark formats)."""
    if zone != "UTC":
        _refuse(pattern, ZONE_NAME_LETTERS, f"would print the name of '{zone}', which Spark prints only for 'UTC'")
    if zone in ZERO_OFFSET_ZONES:
        return _call("date_format", instant, _pattern_literal(pattern.text))
    wall = _call("from_utc_timestamp", instant, exp.Literal.string(zone))
    offset = exp.Sub(this=_call("unix_seconds", wall), expression=_call("unix_seconds", instant))
    parts: list[exp.Expr] = []
    done = 0
    for (letter, count, optional), start in zip(pattern.letters, pattern.starts, strict=True):
        if letter not in OFFSET_LETTERS:
            continue
        if optional:
            raise ArgumentError(f"an offset in an optional section is printed only in UTC here, not in '{zone}' (in the pattern '{pattern.text}')")
        if start > done:
            parts.append(_call("date_format", wall, _pattern_literal(pattern.text[done:start])))
        parts.append(_offset_text(offset, letter, count))
        done = start + count
    if done < len(pattern.text):
        parts.append(_call("date_format", wall, _pattern_literal(pattern.text[done:])))
    return parts[0] if len(parts) == 1 else _call("concat", *parts)


# Java's offset fields (DateTimeFormatterBuilder.appendOffset and appendLocalizedOffset):
# (the text of a zero offset, whether minutes are printed only when not 0, ':' between
# the parts, whether seconds are printed when not 0).
_OFFSET_STYLES: dict[tuple[str, int], tuple[str, bool, bool, bool]] = {
    ("X", 1): ("Z", True, False, False), ("X", 2): ("Z", False, False, False), ("X", 3): ("Z", False, True, False),
    ("X", 4): ("Z", False, False, True), ("X", 5): ("Z", False, True, True),
    ("x", 1): ("+00", True, False, False), ("x", 2): ("+0000", False, False, False),
    ("x", 3): ("+00:00", False, True, False), ("x", 4): ("+0000", False, False, True),
    ("x", 5): ("+00:00", False, True, True),
    ("Z", 1): ("+0000", False, False, False), ("Z", 2): ("+0000", False, False, False),
    ("Z", 3): ("+0000", False, False, False), ("Z", 5): ("Z", False, True, True),
}


def _offset_text(offset: exp.Expr, letter: str, count: int) -> exp.Expr:
    """An offset of ``offset`` seconds as Java's pattern letter ``letter`` prints it."""
    size = _call("abs", offset)
    hours = exp.IntDiv(this=size, expression=exp.Literal.number(3600))
    minutes = exp.Mod(this=exp.Paren(this=exp.IntDiv(this=size, expression=exp.Literal.number(60))), expression=exp.Literal.number(60))
    seconds = exp.Mod(this=size, expression=exp.Literal.number(60))
    sign = exp.If(this=exp.LT(this=offset, expression=exp.Literal.number(0)), true=exp.Literal.string("-"), false=exp.Literal.string("+"))

    def two(n: exp.Expr) -> exp.Expr:
        return _call("lpad", _typed_cast(n, STRING), exp.Literal.number(2), exp.Literal.string("0"))

    def unless_zero(n: exp.Expr, text: exp.Expr) -> exp.Expr:
        return exp.If(this=exp.EQ(this=n, expression=exp.Literal.number(0)), true=exp.Literal.string(""), false=text)

    zero_text: str
    if letter == "O" or (letter == "Z" and count == 4):
        # Localized: GMT+8, GMT+8:30 (O); GMT+08:00 (OOOO, ZZZZ); seconds when not 0.
        zero_text = "GMT"
        if count == 1:
            body = _call("concat", sign, _typed_cast(hours, STRING),
                         unless_zero(exp.Add(this=minutes, expression=seconds), _call("concat", exp.Literal.string(":"), two(minutes))),
                         unless_zero(seconds, _call("concat", exp.Literal.string(":"), two(seconds))))
        else:
            body = _call("concat", sign, two(hours), exp.Literal.string(":"), two(minutes),
                         unless_zero(seconds, _call("concat", exp.Literal.string(":"), two(seconds))))
        text = _call("concat", exp.Literal.string("GMT"), body)
    else:
        zero_text, minutes_optional, colon, with_seconds = _OFFSET_STYLES[(letter, count)]
        separator = exp.Literal.string(":" if colon else "")
        minute_part = _call("concat", separator, two(minutes))
        parts = [sign, two(hours), unless_zero(minutes, minute_part) if minutes_optional else minute_part]
        if with_seconds:
            parts.append(unless_zero(seconds, _call("concat", separator, two(seconds))))
        text = _call("concat", *parts)
    zero = exp.EQ(this=offset, expression=exp.Literal.number(0))
    return exp.If(this=zero, true=exp.Literal.string(zero_text), false=text)


def _parse_instant(text: exp.Expr, pattern: Pattern, zone: str) -> exp.Expr:
    """The instant ``text`` stands for: at the zone the text gives, else at ``zone``
    (missing fields are 1970-01-01 00:00:00, as in ksqlDB)."""
    try:
        parse_pattern(pattern.text)
    except PatternError as error:
        raise ArgumentError(f"{error} (in the pattern '{pattern.text}')") from None
    parsed = _call("to_timestamp", text, _pattern_literal(pattern.text))
    zoned = any(letter in ZONE_LETTERS for letter, _, _ in pattern.letters)
    if zoned and zone not in ZERO_OFFSET_ZONES and any(optional and letter in ZONE_LETTERS for letter, _, optional in pattern.letters):
        raise ArgumentError(f"a zone in an optional section is taken only with a UTC default zone, not '{zone}' (in the pattern '{pattern.text}')")
    if zoned or zone in ZERO_OFFSET_ZONES:
        return parsed
    return _call("to_utc_timestamp", parsed, exp.Literal.string(zone))


def _pattern_args(args: list[Typed], low: int, high: int, first: tuple[SqlType, ...], what: str) -> Pattern | None:
    _arity(args, low, high)
    _types(args[:1], first, what)
    return _pattern(args[1])


def _instant_to_text(epoch_ms: bool, default_zone: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """TIMESTAMPTOSTRING(epoch ms, pattern[, zone]), in the system zone (UTC) by default,
    and FORMAT_TIMESTAMP(timestamp, pattern[, zone]), in GMT by default."""
    first, what = ((INT, BIGINT), "a BIGINT number of milliseconds") if epoch_ms else ((TIMESTAMP,), "a TIMESTAMP")

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        pattern = _pattern_args(args, 2, 3, first, what)
        zone = _zone(args, 2, default_zone)
        if pattern is None or zone is None:
            return exp.Null(), STRING
        instant = _call("timestamp_millis", args[0].spark) if epoch_ms else args[0].spark
        return _format_instant(instant, pattern, zone), STRING

    return fn


def _text_to_instant(epoch_ms: bool, default_zone: str) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """STRINGTOTIMESTAMP(text, pattern[, zone]), epoch ms at the system zone (UTC) by
    default, and PARSE_TIMESTAMP(text, pattern[, zone]), a TIMESTAMP at GMT by default."""
    result = BIGINT if epoch_ms else TIMESTAMP

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        pattern = _pattern_args(args, 2, 3, (STRING,), "a STRING")
        zone = _zone(args, 2, default_zone)
        if pattern is None or zone is None:
            return exp.Null(), result
        instant = _parse_instant(args[0].spark, pattern, zone)
        return (_call("unix_millis", instant) if epoch_ms else instant), result

    return fn


def _date_pattern(pattern: Pattern) -> None:
    _refuse(pattern, TIME_LETTERS, "is not a field of a DATE")
    _refuse(pattern, ZONE_LETTERS, "is not a field of a DATE")


def _datetostring(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """DATETOSTRING(epoch days, pattern)."""
    pattern = _pattern_args(args, 2, 2, (INT,), "an INT number of days")
    if pattern is None:
        return exp.Null(), STRING
    _date_pattern(pattern)
    return _call("date_format", _call("date_from_unix_date", args[0].spark), _pattern_literal(pattern.text)), STRING


def _format_date(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """FORMAT_DATE(date, pattern)."""
    pattern = _pattern_args(args, 2, 2, (DATE,), "a DATE")
    if pattern is None:
        return exp.Null(), STRING
    _date_pattern(pattern)
    return _call("date_format", args[0].spark, _pattern_literal(pattern.text)), STRING


def _stringtodate(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """STRINGTODATE(text, pattern): epoch days. ksqlDB reads a whole date (Java's
    LocalDate.parse): a pattern without one fails on every row there, so it is refused."""
    pattern = _pattern_args(args, 2, 2, (STRING,), "a STRING")
    if pattern is None:
        return exp.Null(), INT
    _refuse(pattern, ZONE_LETTERS, "is not read into a DATE")
    _refuse(pattern, "EFqQ", "is not read by Spark's parser")
    if not (pattern.has("y") and (pattern.has("D") or (pattern.has("ML") and pattern.has("d")))):
        raise ArgumentError(f"the pattern '{pattern.text}' has no whole date (year, month and day, or year and day of year)")
    return _call("unix_date", _call("to_date", args[0].spark, _pattern_literal(pattern.text))), INT


def _parse_date(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """PARSE_DATE(text, pattern): ksqlDB reads it with a SimpleDateFormat pattern, whose
    date letters y (three or more), M, L, d and D read as Java's do; other letters and
    optional sections (literal brackets there) are refused."""
    pattern = _pattern_args(args, 2, 2, (STRING,), "a STRING")
    if pattern is None:
        return exp.Null(), DATE
    for letter, count, _ in pattern.letters:
        if letter not in "yMLdD":
            raise ArgumentError(f"the pattern letter '{letter}' ({letter_name(letter)}) is not taken here: ksqlDB reads PARSE_DATE's pattern as a SimpleDateFormat (in the pattern '{pattern.text}')")
        if letter == "y" and count < 3:
            raise ArgumentError(f"the year '{'y' * count}' reads two digits in a sliding century in ksqlDB's PARSE_DATE: write 'yyyy' (in the pattern '{pattern.text}')")
    if pattern.optional:
        raise ArgumentError(f"'[' is literal text in ksqlDB's PARSE_DATE, not an optional section (in the pattern '{pattern.text}')")
    return _call("to_date", args[0].spark, _pattern_literal(pattern.text)), DATE


def _unix_timestamp(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """UNIX_TIMESTAMP(): now, in epoch ms (one value per batch); UNIX_TIMESTAMP(ts)."""
    _arity(args, 0, 1)
    _types(args, (TIMESTAMP,), "a TIMESTAMP")
    return _call("unix_millis", args[0].spark if args else _call("current_timestamp")), BIGINT


def _unix_date(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """UNIX_DATE(): today (UTC), in epoch days; UNIX_DATE(date)."""
    _arity(args, 0, 1)
    _types(args, (DATE,), "a DATE")
    return _call("unix_date", args[0].spark if args else _call("current_date")), INT


def _from_unixtime(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (INT, BIGINT), "a BIGINT number of milliseconds")
    return _call("timestamp_millis", _typed_cast(args[0].spark, BIGINT)), TIMESTAMP


def _from_days(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    _arity(args, 1)
    _types(args, (INT,), "an INT number of days")
    return _call("date_from_unix_date", args[0].spark), DATE


def _unit_step(args: list[Typed], name: str, target: SqlType) -> exp.Expr:
    """The interval of DATEADD and its kin in ms (a BIGINT); ksqlDB's error for
    arguments it does not take."""
    unit, interval = (args[0].spark if args else None), (args[1].type if len(args) > 1 else None)
    fits = (
        len(args) == 3 and isinstance(unit, exp.Var) and interval in (INT, None)
        and args[2].type in (target, None)
    )
    if not fits:
        shown = ", ".join("INTERVAL UNIT" if isinstance(a.spark, exp.Var) else ksql_text(a.type) for a in args)
        raise ArgumentError(f"Function '{name.lower()}' does not accept parameters ({shown}).", whole=True)
    assert isinstance(unit, exp.Var)
    return exp.Mul(this=_typed_cast(args[1].spark, BIGINT), expression=exp.Literal.number(TIME_UNITS[unit.name]))


def _date_shift(name: str, sign: int) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """DATEADD and DATESUB: the date's midnight moved by the interval, then the day it
    falls in counted toward 1970-01-01 (as ksqlDB's TimeUnit.toDays truncates)."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        step = _unit_step(args, name, DATE)
        midnight = exp.Mul(this=_typed_cast(_call("unix_date", args[2].spark), BIGINT), expression=exp.Literal.number(_MS_PER_DAY))
        moved = (exp.Add if sign > 0 else exp.Sub)(this=midnight, expression=step)
        days = exp.IntDiv(this=exp.Paren(this=moved), expression=exp.Literal.number(_MS_PER_DAY))
        return _call("date_from_unix_date", _typed_cast(days, INT)), DATE

    return fn


def _timestamp_shift(name: str, sign: int) -> Callable[[list[Typed]], tuple[exp.Expr, SqlType]]:
    """TIMESTAMPADD and TIMESTAMPSUB: the instant moved by a fixed number of ms."""

    def fn(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
        step = _unit_step(args, name, TIMESTAMP)
        moved = (exp.Add if sign > 0 else exp.Sub)(this=_call("unix_millis", args[2].spark), expression=step)
        return _call("timestamp_millis", moved), TIMESTAMP

    return fn


def _convert_tz(args: list[Typed]) -> tuple[exp.Expr, SqlType]:
    """CONVERT_TZ(ts, from, to): ts moved by the difference of the two zones' offsets at
    ts (as ksqlDB computes it)."""
    _arity(args, 3)
    _types(args[:1], (TIMESTAMP,), "a TIMESTAMP")
    zones = [_zone(args, 1, "UTC"), _zone(args, 2, "UTC")]
    if None in zones:
        return exp.Null(), TIMESTAMP
    ts = args[0].spark

    def wall(zone: str | None) -> exp.Expr:
        local = ts if zone in ZERO_OFFSET_ZONES else _call("from_utc_timestamp", ts, exp.Literal.string(zone or ""))
        return _call("unix_micros", local)

    micros = exp.Add(this=exp.Sub(this=wall(zones[1]), expression=wall(zones[0])), expression=_call("unix_micros", ts))
    return _call("timestamp_micros", micros), TIMESTAMP


SCALAR: dict[str, Callable[[list[Typed]], tuple[exp.Expr, SqlType | None]]] = {
    "ABS": _abs,
    "CBRT": _of_double("cbrt"),
    "CEIL": _whole("ceil"),
    "COALESCE": _coalesce_fn,
    "CONCAT": _concat,
    "CONCAT_WS": _concat_ws,
    "CONVERT_TZ": _convert_tz,
    "DATEADD": _date_shift("DATEADD", 1),
    "DATESUB": _date_shift("DATESUB", -1),
    "DATETOSTRING": _datetostring,
    "EXP": _of_double("exp"),
    "FLOOR": _whole("floor"),
    "FORMAT_DATE": _format_date,
    "FORMAT_TIMESTAMP": _instant_to_text(epoch_ms=False, default_zone="GMT"),
    "FROM_DAYS": _from_days,
    "FROM_UNIXTIME": _from_unixtime,
    "GREATEST": _extreme("greatest"),
    "IFNULL": _ifnull,
    "INITCAP": _initcap,
    "INSTR": _instr,
    "LCASE": _case_change("lower"),
    "LEAST": _extreme("least"),
    "LEN": _len,
    "LN": _of_double("log"),
    "LOG": _log,
    "LPAD": _pad("lpad"),
    "NULLIF": _nullif,
    "PARSE_DATE": _parse_date,
    "PARSE_TIMESTAMP": _text_to_instant(epoch_ms=False, default_zone="GMT"),
    "PI": _pi,
    "POWER": _power,
    "REGEXP_EXTRACT": _regexp_extract,
    "REGEXP_REPLACE": _regexp_replace,
    "REPLACE": _replace,
    "ROUND": _round,
    "RPAD": _pad("rpad"),
    "SIGN": _sign,
    "SPLIT": _split,
    "SQRT": _of_double("sqrt"),
    "STRINGTODATE": _stringtodate,
    "STRINGTOTIMESTAMP": _text_to_instant(epoch_ms=True, default_zone="UTC"),
    "SUBSTRING": _substring,
    "TIMESTAMPADD": _timestamp_shift("TIMESTAMPADD", 1),
    "TIMESTAMPSUB": _timestamp_shift("TIMESTAMPSUB", -1),
    "TIMESTAMPTOSTRING": _instant_to_text(epoch_ms=True, default_zone="UTC"),
    "TRIM": _trim,
    "UCASE": _case_change("upper"),
    "UNIX_DATE": _unix_date,
    "UNIX_TIMESTAMP": _unix_timestamp,
}

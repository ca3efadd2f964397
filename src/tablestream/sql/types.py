"""ksqlDB's type rules over tablestream's types (:mod:`tablestream.schema`): how a type
is printed in ksqlDB's messages, which numeric types widen to which, and the result
types of arithmetic."""

from __future__ import annotations

from tablestream.schema import (
    BIGINT,
    BOOLEAN,
    DOUBLE,
    INT,
    STRING,
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    SqlType,
    StructType,
)

__all__ = [
    "arithmetic_type",
    "castable",
    "common_type",
    "decimal_of",
    "is_numeric",
    "ksql_text",
    "widens",
]

_NUMERIC_ORDER = {"INT": 0, "BIGINT": 1, "DECIMAL": 2, "DOUBLE": 3}
_MAX_PRECISION = 38


def ksql_text(t: SqlType | None) -> str:
    """A type as ksqlDB prints it in messages (``INTEGER``, ``STRUCT<`F1` INTEGER>``).

    >>> ksql_text(INT), ksql_text(StructType((__import__("tablestream.schema").schema.Column("F1", INT),)))
    ('INTEGER', 'STRUCT<`F1` INTEGER>')
    """
    if t is None:
        return "NULL"
    if isinstance(t, PrimitiveType):
        return "INTEGER" if t.name == "INT" else t.name
    if isinstance(t, DecimalType):
        return f"DECIMAL({t.precision}, {t.scale})"
    if isinstance(t, ArrayType):
        return f"ARRAY<{ksql_text(t.element)}>"
    if isinstance(t, MapType):
        return f"MAP<STRING, {ksql_text(t.value)}>"
    if isinstance(t, StructType):
        return "STRUCT<" + ", ".join(f"`{f.name}` {ksql_text(f.type)}" for f in t.fields) + ">"
    return str(t)


def _rank(t: SqlType) -> int | None:
    if isinstance(t, DecimalType):
        return _NUMERIC_ORDER["DECIMAL"]
    if isinstance(t, PrimitiveType):
        return _NUMERIC_ORDER.get(t.name)
    return None


def is_numeric(t: SqlType | None) -> bool:
    """INT, BIGINT, DECIMAL or DOUBLE."""
    return t is not None and _rank(t) is not None


def decimal_of(t: SqlType) -> DecimalType:
    """The DECIMAL an integer widens to (ksqlDB: INT is DECIMAL(10, 0), BIGINT DECIMAL(19, 0))."""
    if isinstance(t, DecimalType):
        return t
    assert isinstance(t, PrimitiveType)
    return DecimalType(10 if t.name == "INT" else 19, 0)


def widens(source: SqlType, target: SqlType) -> bool:
    """Whether ksqlDB converts a ``source`` value to ``target`` implicitly: the same
    type, or a number to a wider number (INT -> BIGINT -> DECIMAL -> DOUBLE)."""
    if source == target:
        return True
    a, b = _rank(source), _rank(target)
    if a is None or b is None or a > b:
        return False
    if isinstance(target, DecimalType) and not isinstance(source, DecimalType):
        wide = decimal_of(source)
        return wide.precision - wide.scale <= target.precision - target.scale
    if isinstance(target, DecimalType) and isinstance(source, DecimalType):
        return (
            source.scale <= target.scale
            and source.precision - source.scale <= target.precision - target.scale
        )
    return True


def common_type(types: list[SqlType | None]) -> SqlType | None:
    """The one type all ``types`` widen to (``None`` stands for NULL, which fits any
    type), or ``None`` when they have none (or are all NULL)."""
    known = [t for t in types if t is not None]
    if not known:
        return None
    if all(t == known[0] for t in known):
        return known[0]
    if not all(is_numeric(t) for t in known):
        return None
    top = max(known, key=lambda t: _rank(t) or 0)
    if isinstance(top, DecimalType):
        decimals = [decimal_of(t) for t in known if not (isinstance(t, PrimitiveType) and t.name == "DOUBLE")]
        scale = max(d.scale for d in decimals)
        digits = max(d.precision - d.scale for d in decimals)
        return DecimalType(min(_MAX_PRECISION, digits + scale), scale)
    return top


def arithmetic_type(op: str, left: SqlType, right: SqlType) -> SqlType:
    """The type of ``left op right`` for numbers (``op`` one of ``+ - * / %``):
    the wider of two integers or doubles; DECIMAL results by ksqlDB's rules."""
    if DOUBLE in (left, right):
        return DOUBLE
    if not isinstance(left, DecimalType) and not isinstance(right, DecimalType):
        return BIGINT if BIGINT in (left, right) else INT
    a, b = decimal_of(left), decimal_of(right)
    p1, s1, p2, s2 = a.precision, a.scale, b.precision, b.scale
    if op in "+-":
        scale = max(s1, s2)
        precision = max(p1 - s1, p2 - s2) + scale + 1
    elif op == "*":
        precision, scale = p1 + p2 + 1, s1 + s2
    elif op == "/":
        scale = max(6, s1 + p2 + 1)
        precision = p1 - s1 + s2 + scale
    else:
        scale = max(s1, s2)
        precision = min(p1 - s1, p2 - s2) + scale
    if precision > _MAX_PRECISION:
        scale = max(0, scale - (precision - _MAX_PRECISION))
        precision = _MAX_PRECISION
    return DecimalType(precision, min(scale, precision))


# Types a CAST converts between (ksqlDB's CastEvaluator): anything to STRING, numbers
# among themselves and from STRING, BOOLEAN from STRING, arrays/maps/structs by element.
def castable(source: SqlType | None, target: SqlType) -> bool:
    """Whether ``CAST(<source> AS <target>)`` is allowed."""
    if source is None or source == target or target == STRING:
        return True
    if is_numeric(target):
        return is_numeric(source) or source == STRING
    if target == BOOLEAN:
        return source == STRING
    if isinstance(target, PrimitiveType) and target.name in ("DATE", "TIMESTAMP"):
        return source == STRING or (isinstance(source, PrimitiveType) and source.name in ("DATE", "TIMESTAMP"))
    if isinstance(target, ArrayType) and isinstance(source, ArrayType):
        return castable(source.element, target.element)
    if isinstance(target, MapType) and isinstance(source, MapType):
        return castable(source.value, target.value)
    if isinstance(target, StructType) and isinstance(source, StructType):
        names = {f.name: f.type for f in source.fields}
        return all(names.get(f.name) is None or castable(names[f.name], f.type) for f in target.fields)
    return False

"""ksqlDB's scalar functions on Spark: each expression is typed and translated as a
query's would be, then evaluated by Spark over a few rows, with ksqlDB's results (its
UDFs' Java semantics: NaN and -Infinity of a logarithm, rounding ties toward positive
infinity, a null for an empty padding, ...)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
import sqlglot

from tablestream.schema import BIGINT, DOUBLE, INT, STRING, ArrayType, DecimalType
from tablestream.sql.catalog import Base
from tablestream.sql.dialect import Ksql
from tablestream.sql.errors import SqlError
from tablestream.sql.expressions import Field, Scope, Translator

NAN, NEG_INF = float("nan"), float("-inf")
FIELDS = [
    Field("", "I", INT, "value"), Field("", "L", BIGINT, "value"), Field("", "D", DOUBLE, "value"),
    Field("", "B", DecimalType(4, 2), "value"), Field("", "S", STRING, "value"), Field("", "T", STRING, "value"),
]
SCHEMA = "value struct<I: int, L: bigint, D: double, B: decimal(4,2), S: string, T: string>"
ROWS = [
    (-1, -2, -1.5, Decimal("-1.55"), " \t a b \t", "or"),
    (0, 0, 0.0, Decimal("0.00"), "corporate floor", "fo"),
    (1, 2, 12345.678, Decimal("2.45"), "the   Quick br0wn fOx", None),
    (None, None, None, None, None, None),
]

# (ksqlDB expression, its type, the result on each row)
CASES = [
    ("EXP(I)", DOUBLE, [0.36787944117144233, 1.0, 2.718281828459045, None]),
    ("SQRT(L)", DOUBLE, [NAN, 0.0, 1.4142135623730951, None]),
    ("CBRT(I * 8)", DOUBLE, [-2.0, 0.0, 2.0, None]),
    ("LN(L)", DOUBLE, [NAN, NEG_INF, 0.6931471805599453, None]),
    ("LOG(I * 13)", DOUBLE, [NAN, NEG_INF, 2.5649493574615367, None]),
    ("LOG(15, I * 13)", DOUBLE, [NAN, NEG_INF, 0.9471572411831843, None]),
    ("LOG(I, 13)", DOUBLE, [NAN, NAN, NAN, None]),
    ("POWER(L, 2)", DOUBLE, [4.0, 0.0, 4.0, None]),
    ("PI()", DOUBLE, [math.pi] * 4),
    ("SIGN(D)", INT, [-1, 0, 1, None]),
    ("CEIL(D)", DOUBLE, [-1.0, 0.0, 12346.0, None]),
    ("FLOOR(D)", DOUBLE, [-2.0, 0.0, 12345.0, None]),
    ("CEIL(B)", DecimalType(4, 2), [Decimal("-1.00"), Decimal("0.00"), Decimal("3.00"), None]),
    ("FLOOR(B)", DecimalType(4, 2), [Decimal("-2.00"), Decimal("0.00"), Decimal("2.00"), None]),
    ("FLOOR(I)", INT, [-1, 0, 1, None]),
    ("ROUND(D)", BIGINT, [-1, 0, 12346, None]),
    ("ROUND(I)", BIGINT, [-1, 0, 1, None]),
    ("ROUND(D, 2)", DOUBLE, [-1.5, 0.0, 12345.68, None]),
    ("ROUND(D, -1)", DOUBLE, [0.0, 0.0, 12350.0, None]),
    ("ROUND(D, -2)", DOUBLE, [0.0, 0.0, 12300.0, None]),
    ("ROUND(B)", DecimalType(2, 0), [Decimal("-2"), Decimal("0"), Decimal("2"), None]),
    ("ROUND(B, 1)", DecimalType(4, 2), [Decimal("-1.50"), Decimal("0.00"), Decimal("2.50"), None]),
    ("GREATEST(I, L, 5)", BIGINT, [5, 5, 5, 5]),
    ("GREATEST(I * 10, L)", BIGINT, [-2, 0, 10, None]),
    ("LEAST(S, T)", STRING, [" \t a b \t", "corporate floor", "the   Quick br0wn fOx", None]),
    ("NULLIF(I, 0)", INT, [-1, None, 1, None]),
    ("TRIM(S)", STRING, ["a b", "corporate floor", "the   Quick br0wn fOx", None]),
    ("LPAD(T, 5, 'ab')", STRING, ["abaor", "abafo", None, None]),
    ("LPAD(T, 1, 'ab')", STRING, ["o", "f", None, None]),
    ("LPAD(T, -1, 'ab')", STRING, [None, None, None, None]),
    ("LPAD(T, 5, '')", STRING, [None, None, None, None]),
    ("RPAD(T, 4, 'xy')", STRING, ["orxy", "foxy", None, None]),
    ("INITCAP(S)", STRING, [" \t A B \t", "Corporate Floor", "The   Quick Br0wn Fox", None]),
    ("INSTR(S, T)", INT, [0, 0, None, None]),
    ("INSTR(S, 'or')", INT, [0, 2, 0, None]),
    ("REPLACE(S, 'o', '0')", STRING, [" \t a b \t", "c0rp0rate fl00r", "the   Quick br0wn fOx", None]),
    ("REPLACE(S, T, 'X')", STRING, [" \t a b \t", "corporate floor", None, None]),
    ("REGEXP_REPLACE(S, '(or)+', 'X')", STRING, [" \t a b \t", "cXpXate floX", "the   Quick br0wn fOx", None]),
    ("REGEXP_EXTRACT('o.', S)", STRING, [None, "or", None, None]),
    ("REGEXP_EXTRACT('(\\w+) (\\w+)', S, 2)", STRING, ["b", "floor", "br0wn", None]),
    ("SPLIT(S, ' ')", ArrayType(STRING), [["", "\t", "a", "b", "\t"], ["corporate", "floor"], ["the", "", "", "Quick", "br0wn", "fOx"], None]),
    ("SPLIT(T, '')", ArrayType(STRING), [["o", "r"], ["f", "o"], None, None]),
    ("SPLIT('a.b.', '.')", ArrayType(STRING), [["a", "b", ""]] * 4),
    ("CONCAT_WS('-', S, T)", STRING, [" \t a b \t-or", "corporate floor-fo", "the   Quick br0wn fOx", ""]),
    ("CONCAT_WS(T, 'a', 'b')", STRING, ["aorb", "afob", None, None]),
]


def translate(text: str):
    scope = Scope(FIELDS, lambda f: Base("value").field(f.name), clause="SELECT")
    node = sqlglot.parse_one(text, dialect=Ksql)
    return Translator(scope, text, text).typed(node)


def same(got, expected) -> bool:
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(got, float) and math.isnan(got)
    return got == expected and type(got) is type(expected)


@pytest.mark.spark
def test_functions_on_spark(spark):
    typed = [translate(text) for text, _, _ in CASES]
    assert [t.type for t in typed] == [t for _, t, _ in CASES]
    df = spark.createDataFrame([(r,) for r in ROWS], SCHEMA)
    selected = df.selectExpr(*(f"{t.spark.sql(dialect='spark')} AS c{i}" for i, t in enumerate(typed)))
    rows = selected.collect()
    wrong = []
    for i, (text, _, expected) in enumerate(CASES):
        got = [row[i] for row in rows]
        if not all(same(g, e) for g, e in zip(got, expected, strict=True)):
            wrong.append(f"{text}: {got} != {expected}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ROUND(D, I)", "ROUND: takes the decimal places as a literal INT, got INTEGER"),
        ("SPLIT(S, T)", "SPLIT: takes the delimiter as a literal STRING"),
        ("LPAD(S, L, 'x')", "LPAD: takes an INT length, got BIGINT"),
        ("SQRT(S)", "SQRT: takes an INT, BIGINT or DOUBLE, got STRING"),
        ("GREATEST(I, S)", "GREATEST: the arguments have no common type (INTEGER, STRING)"),
        ("PI(1)", "PI: takes 0 arguments, got 1"),
    ],
)
def test_arguments_a_function_does_not_take(text, message):
    with pytest.raises(SqlError, match=message.replace("(", r"\(").replace(")", r"\)")):
        translate(text)

"""The careful form of SQL expressions: the non-raising form and the reason the strict
form raises, exact as text (no Spark), and in agreement with Spark's strict evaluation
row by row."""

from __future__ import annotations

import pytest

from tablestream.runtime.careful import careful_form, may_fail


def forms(sql: str) -> tuple[str, str]:
    form = careful_form(sql)
    assert form is not None
    return form.value.sql(dialect="spark"), form.reason.sql(dialect="spark")


def test_a_cast_becomes_try_cast_and_names_the_text_it_cannot_cast():
    assert forms("CAST(code AS INT)") == (
        "TRY_CAST(code AS INT)",
        "CASE WHEN (NOT code IS NULL AND (TRY_CAST(code AS INT)) IS NULL) "
        "THEN (CONCAT('CAST(code AS INT): cannot cast \\'', CAST(code AS STRING), '\\' to INT')) END",
    )


def test_a_division_tells_a_zero_divisor_from_an_overflow():
    assert forms("100 / qty") == (
        "TRY_DIVIDE(100, qty)",
        "CASE WHEN (NOT 100 IS NULL AND NOT qty IS NULL AND (TRY_DIVIDE(100, qty)) IS NULL) "
        "THEN (CASE WHEN qty = 0 THEN '100 / qty: division by zero' ELSE '100 / qty: arithmetic overflow' END) END",
    )


def test_integral_division_by_zero_is_null():
    assert forms("100 DIV qty") == (
        "CASE WHEN qty = 0 THEN NULL ELSE (100 DIV qty) END",
        "CASE WHEN (NOT 100 IS NULL AND qty = 0) THEN '100 DIV qty: division by zero' END",
    )


def test_an_inner_failure_is_reported_before_the_outer_one():
    value, reason = forms("CAST(code AS INT) + 1")
    assert value == "TRY_ADD(TRY_CAST(code AS INT), 1)"
    assert reason.startswith("COALESCE(CASE WHEN (NOT code IS NULL AND (TRY_CAST(code AS INT)) IS NULL)")


def test_a_case_branch_counts_only_where_it_is_taken():
    assert forms("CASE WHEN qty = 0 THEN 0 ELSE 100 / qty END") == (
        "CASE WHEN qty = 0 THEN 0 ELSE TRY_DIVIDE(100, qty) END",
        "CASE WHEN (qty = 0) THEN NULL ELSE (CASE WHEN (NOT 100 IS NULL AND NOT qty IS NULL AND "
        "(TRY_DIVIDE(100, qty)) IS NULL) THEN (CASE WHEN qty = 0 THEN '100 / qty: division by zero' "
        "ELSE '100 / qty: arithmetic overflow' END) END) END",
    )


def test_the_right_side_of_and_counts_only_where_the_left_is_not_false():
    assert forms("qty > 0 AND 100 DIV qty > 3")[1] == (
        "CASE WHEN ((qty > 0) IS NULL OR (qty > 0)) THEN (CASE WHEN (NOT 100 IS NULL AND qty = 0) "
        "THEN '100 DIV qty: division by zero' END) ELSE NULL END"
    )


@pytest.mark.parametrize("sql", ["amount > 10", "CAST(code AS STRING)", "try_cast(code AS INT)", "upper(name)",
                                 "transform(xs, x -> x DIV 0)"])
def test_expressions_without_a_raising_form_are_left_as_they_are(sql):
    assert careful_form(sql) is None
    assert not may_fail(sql)


# ------------------------------------------------------------------ against Spark
ROWS = [
    ("abc", 0, 5, None, "2020-01-02", 2147483647, "1.5"),
    ("12", 2, 7, 1, "02/01/2020", 1, "x"),
    (None, None, None, None, None, None, None),
]
SCHEMA = "code STRING, qty INT, n BIGINT, a INT, d STRING, big INT, dec STRING"
EXPRESSIONS = [
    "CAST(code AS INT) + 1", "CAST(code AS BOOLEAN)", "CAST(dec AS DECIMAL(3, 1)) * 100", "CAST(dec AS DOUBLE) / qty",
    "100 DIV qty", "pmod(100, qty)", "big * 2", "'1' + qty", "CAST(d AS DATE) - CAST(d AS DATE)",
    "to_date(d, 'dd/MM/yyyy')", "to_timestamp(d)", "CASE qty WHEN 0 THEN 0 ELSE 100 / qty END",
    "qty = 0 OR 100 / qty > 3", "coalesce(a, 100 % qty)", "nvl2(a, 100 / qty, 0)",
]


@pytest.mark.spark
def test_the_careful_form_fails_exactly_where_spark_raises_and_agrees_elsewhere(spark):
    from pyspark.errors import PySparkException
    from pyspark.sql import functions as F

    rows = spark.createDataFrame(ROWS, SCHEMA)
    each = [spark.createDataFrame([row], SCHEMA) for row in ROWS]
    disagreements = []
    for sql in EXPRESSIONS:
        form = careful_form(sql)
        careful = rows.select(
            F.expr(form.value.sql(dialect="spark")).alias("value"), F.expr(form.reason.sql(dialect="spark")).alias("why")
        )
        strict_type = rows.select(F.expr(sql).alias("value")).schema["value"].dataType
        if careful.schema["value"].dataType != strict_type:
            disagreements.append((sql, "type", careful.schema["value"].dataType, strict_type))
        for row, one, got in zip(ROWS, each, careful.collect(), strict=True):
            try:
                expected = one.select(F.expr(sql).alias("value")).first().value
            except PySparkException as error:
                if not (error.getSqlState() or "").startswith("22") or got.why is None:
                    disagreements.append((sql, row, error.getSqlState(), got.why))
                continue
            if got.why is not None or got.value != expected:
                disagreements.append((sql, row, expected, tuple(got)))
    assert disagreements == []

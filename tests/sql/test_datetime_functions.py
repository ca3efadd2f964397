"""ksqlDB's date and time functions: their types, the patterns and zones they take (Java
``DateTimeFormatter`` patterns, refused where Spark would print or read otherwise), and
ksqlDB's query-validation cases for them run through TestDriver.from_sql.

Ported cases come from confluentinc/ksql, ``ksqldb-functional-tests/src/test/resources/
query-validation-tests/<file>.json``; each names its file and test.
"""

from __future__ import annotations

import datetime as dt

import pytest
import sqlglot

from tablestream.runtime.careful import careful_form
from tablestream.schema import BIGINT, DATE, INT, STRING, TIMESTAMP
from tablestream.sql.catalog import Base
from tablestream.sql.compiler import compile_sql
from tablestream.sql.datetime_patterns import EXACT_COUNTS, PatternError, check_zone, read_pattern
from tablestream.sql.dialect import Ksql
from tablestream.sql.errors import SqlError
from tablestream.sql.expressions import Field, Scope, Translator

UTC = dt.timezone.utc
FIELDS = [
    Field("", "I", INT, "value"), Field("", "L", BIGINT, "value"), Field("", "S", STRING, "value"),
    Field("", "TIME", TIMESTAMP, "value"), Field("", "DT", DATE, "value"),
]


def translate(text: str):
    scope = Scope(FIELDS, lambda f: Base("value").field(f.name), clause="SELECT")
    return Translator(scope, text, text).typed(sqlglot.parse_one(text, dialect=Ksql))


@pytest.mark.parametrize(
    ("text", "result"),
    [
        ("UNIX_TIMESTAMP()", BIGINT), ("UNIX_TIMESTAMP(TIME)", BIGINT), ("UNIX_DATE()", INT), ("UNIX_DATE(DT)", INT),
        ("FROM_UNIXTIME(L)", TIMESTAMP), ("FROM_UNIXTIME(I)", TIMESTAMP),
        ("TIMESTAMPTOSTRING(L, 'yyyy')", STRING), ("TIMESTAMPTOSTRING(L, 'HH', 'Europe/London')", STRING),
        ("STRINGTOTIMESTAMP(S, 'yyyy')", BIGINT), ("STRINGTOTIMESTAMP(S, 'yyyy', 'UTC')", BIGINT),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy')", STRING), ("FORMAT_TIMESTAMP(TIME, 'yyyy', '+02:00')", STRING),
        ("PARSE_TIMESTAMP(S, 'yyyy')", TIMESTAMP), ("PARSE_TIMESTAMP(S, 'yyyy', 'GMT-3')", TIMESTAMP),
        ("DATETOSTRING(I, 'yyyy')", STRING), ("STRINGTODATE(S, 'yyyy-MM-dd')", INT),
        ("FORMAT_DATE(DT, 'yyyy')", STRING), ("PARSE_DATE(S, 'yyyy')", DATE),
        ("DATEADD(DAYS, 1, DT)", DATE), ("DATESUB(hour, I, DT)", DATE),
        ("TIMESTAMPADD(MILLISECOND, 1, TIME)", TIMESTAMP), ("TIMESTAMPSUB(MINUTES, NULL, TIME)", TIMESTAMP),
        ("CONVERT_TZ(TIME, 'UTC', 'Asia/Tokyo')", TIMESTAMP),
        ("FORMAT_TIMESTAMP(TIME, NULL)", STRING), ("PARSE_TIMESTAMP(S, 'yyyy', NULL)", TIMESTAMP),
    ],
)
def test_result_types(text, result):
    assert translate(text).type == result


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("DATEADD(DAY, 5, TIME)", "Function 'dateadd' does not accept parameters (INTERVAL UNIT, INTEGER, TIMESTAMP)."),
        ("DATESUB(DAYS, 5)", "Function 'datesub' does not accept parameters (INTERVAL UNIT, INTEGER)."),
        ("TIMESTAMPADD(WEEKS, 5, TIME)", "SELECT column 'WEEKS' cannot be resolved"),
        ("TIMESTAMPADD(SECONDS, L, TIME)", "Function 'timestampadd' does not accept parameters (INTERVAL UNIT, BIGINT, TIMESTAMP)."),
        ("TIMESTAMPADD(SECONDS, 1)", "Function 'timestampadd' does not accept parameters (INTERVAL UNIT, INTEGER)."),
        # patterns
        ("TIMESTAMPTOSTRING(L, 'YYYY-ww')", "TIMESTAMPTOSTRING: the pattern letter 'Y' (week-based year) has no exact equivalent in Spark (in the pattern 'YYYY-ww')"),
        ("FORMAT_TIMESTAMP(TIME, 'uuuu')", "FORMAT_TIMESTAMP: the pattern letter 'u' (year) has no exact equivalent in Spark (in the pattern 'uuuu')"),
        ("FORMAT_TIMESTAMP(TIME, 'HHH')", "FORMAT_TIMESTAMP: the pattern letter 'H' (hour of day) cannot be repeated 3 times here (in the pattern 'HHH')"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy-bb')", "FORMAT_TIMESTAMP: Unknown pattern letter: b (in the pattern 'yyyy-bb')"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy''T')", "FORMAT_TIMESTAMP: Pattern ends with an incomplete string literal: yyyy'T (in the pattern 'yyyy'T')"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy]')", "FORMAT_TIMESTAMP: Pattern invalid as it contains ] without previous [ (in the pattern 'yyyy]')"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy#')", "FORMAT_TIMESTAMP: Pattern includes reserved character: '#' (in the pattern 'yyyy#')"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy''%''')", "FORMAT_TIMESTAMP: a '%' is not taken in a pattern here (in the pattern 'yyyy'%'')"),
        ("FORMAT_TIMESTAMP(TIME, S)", "FORMAT_TIMESTAMP: takes the format pattern as a literal STRING (one read from a column cannot be checked), got STRING"),
        ("FORMAT_TIMESTAMP(TIME, 'yyyy', S)", "FORMAT_TIMESTAMP: takes the time zone as a literal STRING (one read from a column cannot be checked), got STRING"),
        ("FORMAT_TIMESTAMP(L, 'yyyy')", "FORMAT_TIMESTAMP: takes a TIMESTAMP, got BIGINT"),
        ("TIMESTAMPTOSTRING(TIME, 'yyyy')", "TIMESTAMPTOSTRING: takes a BIGINT number of milliseconds, got TIMESTAMP"),
        ("TIMESTAMPTOSTRING(L)", "TIMESTAMPTOSTRING: takes 2 to 3 arguments, got 1"),
        # zone letters print the session zone's (UTC) text
        ("FORMAT_TIMESTAMP(TIME, 'HH:mm zzz')", "FORMAT_TIMESTAMP: the pattern letter 'z' (time zone name) would print the name of 'GMT', which Spark prints only for 'UTC' (in the pattern 'HH:mm zzz')"),
        # timestamp-to-string.json: "millis to string with valid zone" (refused here)
        ("TIMESTAMPTOSTRING(L, 'yyyy-MM-dd HH:mm:ss zzz','America/Los_Angeles')", "TIMESTAMPTOSTRING: the pattern letter 'z' (time zone name) would print the name of 'America/Los_Angeles', which Spark prints only for 'UTC' (in the pattern 'yyyy-MM-dd HH:mm:ss zzz')"),
        ("FORMAT_TIMESTAMP(TIME, 'HH:mmX', 'Europe/Paris')", "FORMAT_TIMESTAMP: the pattern letter 'X' (zone offset) would print the offset of 'Europe/Paris', which Spark prints only for UTC (in the pattern 'HH:mmX')"),
        ("PARSE_TIMESTAMP(S, 'yyyy[ X]', 'Europe/Paris')", "PARSE_TIMESTAMP: a zone in an optional section is taken only with a UTC default zone, not 'Europe/Paris' (in the pattern 'yyyy[ X]')"),
        ("PARSE_TIMESTAMP(S, 'EEE yyyy')", "PARSE_TIMESTAMP: the pattern letter 'E' (day of week) is not read by Spark's parser (in the pattern 'EEE yyyy')"),
        # zones: Java's ZoneId.of, which takes no three-letter ids
        ("FORMAT_TIMESTAMP(TIME, 'yyyy', 'PST')", "FORMAT_TIMESTAMP: Unknown time-zone ID: PST"),
        ("CONVERT_TZ(TIME, '+25:00', 'UTC')", "CONVERT_TZ: Invalid ID for ZoneOffset, invalid format: +25:00"),
        ("CONVERT_TZ(TIME, 'UTC', 'Mars/Olympus')", "CONVERT_TZ: Unknown time-zone ID: Mars/Olympus"),
        ("CONVERT_TZ(TIME, 'UTC', S)", "CONVERT_TZ: takes the time zone as a literal STRING (one read from a column cannot be checked), got STRING"),
        # dates
        ("FORMAT_DATE(DT, 'yyyy-MM-dd HH')", "FORMAT_DATE: the pattern letter 'H' (hour of day) is not a field of a DATE (in the pattern 'yyyy-MM-dd HH')"),
        ("DATETOSTRING(I, 'yyyy X')", "DATETOSTRING: the pattern letter 'X' (zone offset) is not a field of a DATE (in the pattern 'yyyy X')"),
        ("DATETOSTRING(L, 'yyyy')", "DATETOSTRING: takes an INT number of days, got BIGINT"),
        ("STRINGTODATE(S, 'MMM-yyyy')", "STRINGTODATE: the pattern 'MMM-yyyy' has no whole date (year, month and day, or year and day of year)"),
        ("STRINGTODATE(S, 'yyyy-MM-dd XXX')", "STRINGTODATE: the pattern letter 'X' (zone offset) is not read into a DATE (in the pattern 'yyyy-MM-dd XXX')"),
        ("PARSE_DATE(S, 'dd-MM-yy')", "PARSE_DATE: the year 'yy' reads two digits in a sliding century in ksqlDB's PARSE_DATE: write 'yyyy' (in the pattern 'dd-MM-yy')"),
        ("PARSE_DATE(S, 'yyyy-MM-dd HH')", "PARSE_DATE: the pattern letter 'H' (hour of day) is not taken here: ksqlDB reads PARSE_DATE's pattern as a SimpleDateFormat (in the pattern 'yyyy-MM-dd HH')"),
        ("PARSE_DATE(S, 'yyyy[-MM]')", "PARSE_DATE: '[' is literal text in ksqlDB's PARSE_DATE, not an optional section (in the pattern 'yyyy[-MM]')"),
        ("UNIX_DATE(TIME)", "UNIX_DATE: takes a DATE, got TIMESTAMP"),
        ("UNIX_TIMESTAMP(L)", "UNIX_TIMESTAMP: takes a TIMESTAMP, got BIGINT"),
        ("FROM_UNIXTIME(S)", "FROM_UNIXTIME: takes a BIGINT number of milliseconds, got STRING"),
    ],
)
def test_arguments_a_function_does_not_take(text, message):
    with pytest.raises(SqlError) as error:
        translate(text)
    assert error.value.detail == message.removesuffix(".")


@pytest.mark.parametrize(
    ("file", "function", "source_type"),
    [("dateadd", "dateadd", "date DATE"), ("datesub", "datesub", "date DATE"),
     ("timestampadd", "timestampadd", "time TIMESTAMP"), ("timestampsub", "timestampsub", "time TIMESTAMP")],
)
def test_ported_throws_on_incorrect_type(file, function, source_type):
    """<file>.json: "throws on incorrect type"."""
    column, type_name = source_type.split()
    statements = [
        f"CREATE STREAM TEST (ID STRING KEY, {source_type}) WITH (kafka_topic='test', value_format='DELIMITED');",
        f"CREATE STREAM TEST2 AS SELECT id, {function}({column}, 5, {column}) FROM TEST;",
    ]
    with pytest.raises(SqlError) as error:
        compile_sql(statements)
    detail = f"Function '{function}' does not accept parameters ({type_name}, INTEGER, {type_name})"
    assert str(error.value) == f"Line: 2, Col: 35: {detail}. Statement: {statements[1].removesuffix(';')}"


def test_a_unit_is_a_word_not_a_string_nor_a_quoted_column():
    with pytest.raises(SqlError, match=r"Function 'dateadd' does not accept parameters \(STRING, INTEGER, DATE\)\."):
        translate("DATEADD('DAYS', 1, DT)")
    with pytest.raises(SqlError, match="SELECT column 'DAYS' cannot be resolved"):
        translate('DATEADD("DAYS", 1, DT)')


def test_a_pattern_is_read_as_java_reads_it():
    pattern = read_pattern("yyyy-MM-dd'T'HH:mm[:ss[.SSS]]''X")
    assert pattern.letters == (
        ("y", 4, False), ("M", 2, False), ("d", 2, False), ("H", 2, False), ("m", 2, False), ("s", 2, True),
        ("S", 3, True), ("X", 1, False),
    )
    assert pattern.optional
    assert read_pattern("'o''clock' h").letters == (("h", 1, False),)
    with pytest.raises(PatternError, match="the pattern letter 'e' \\(localized day of week\\) has no exact equivalent in Spark"):
        read_pattern("yyyy-ee")


@pytest.mark.parametrize("zone", ["Z", "UTC", "GMT", "UT", "+2", "-02", "+02:30", "+0230", "+02:30:15", "UTC+5", "GMT-03:00", "Europe/London", "EST"])
def test_zones_java_takes(zone):
    check_zone(zone)


@pytest.mark.parametrize(
    ("zone", "message"),
    [
        ("PST", "Unknown time-zone ID: PST"), ("Europe/Atlantis", "Unknown time-zone ID: Europe/Atlantis"),
        ("+19", "Invalid ID for ZoneOffset, invalid format: +19"), ("+02:60", "Invalid ID for ZoneOffset, invalid format: +02:60"),
        ("UTC+99", "Invalid ID for offset-based ZoneId: UTC+99"), ("9/x", "Invalid ID for region-based ZoneId, invalid format: 9/x"),
    ],
)
def test_zones_java_refuses(zone, message):
    with pytest.raises(PatternError) as error:
        check_zone(zone)
    assert str(error.value) == message


def _spark_sql(text: str) -> str:
    return translate(text).spark.sql(dialect="spark")


def test_patterns_survive_the_plan_text_being_parsed_again():
    """The runtime parses a plan's SQL text with sqlglot (and rewrites it for a careful
    run): every letter count taken here keeps its pattern, quotes and brackets included."""
    patterns = [letter * n for letter, counts in EXACT_COUNTS.items() for n in counts if letter not in "VzOXxZ"]
    patterns += ["yyyy-MM-dd'T'HH:mm:ss.SSS", "h 'o''clock' a", "yyyy[-MM[-dd]]", "y"]
    for pattern in patterns:
        quoted = pattern.replace("'", "''")
        for text in (f"FORMAT_TIMESTAMP(TIME, '{quoted}')", f"PARSE_TIMESTAMP(S, '{quoted}')"):
            if "PARSE" in text and any(c in pattern for c in "EFqQ"):
                continue
            sql = _spark_sql(text)
            assert sqlglot.parse_one(sql, dialect="spark").sql(dialect="spark") == sql
            literal = sqlglot.parse_one(sql, dialect="spark").find(sqlglot.exp.Cast).this.this
            assert literal == pattern
    careful = careful_form(_spark_sql("PARSE_TIMESTAMP(S, 'y')"))
    assert careful is not None
    assert careful.value.sql(dialect="spark") == "TRY_TO_TIMESTAMP(value.`S`, CAST('y' AS STRING))"


def test_non_literal_patterns_and_null_literals():
    assert _spark_sql("FORMAT_TIMESTAMP(TIME, NULL)") == "NULL"
    assert _spark_sql("TIMESTAMPTOSTRING(L, 'yyyy', NULL)") == "NULL"
    assert _spark_sql("CONVERT_TZ(TIME, NULL, 'UTC')") == "NULL"


# ----------------------------------------------------------------------------- Spark
def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.spark
def test_every_pattern_letter_taken_formats_as_java_does(spark):
    """Each letter count read_pattern takes, formatted by Spark and by Java's
    DateTimeFormatter (through the JVM) over instants from year 2 to 9999, in UTC."""
    from pyspark.sql import functions as F

    jvm = spark._jvm
    formatter, instant, utc = jvm.java.time.format.DateTimeFormatter, jvm.java.time.Instant, jvm.java.time.ZoneId.of("UTC")
    instants = [0, -1, 1526075913123, 951782400000, 1609459199999, 1000, -62104060800000, 253402300799999, 1234567]
    patterns = [letter * n for letter, counts in EXACT_COUNTS.items() for n in counts]
    patterns.append("yyyy-MM-dd'T'HH:mm:ss.SSSXXX G QQQ EEEE a [D]")
    frame = spark.createDataFrame([(i,) for i in instants], "ms long").select(F.timestamp_millis("ms").alias("t"))
    rows = frame.select(*(F.date_format("t", p).alias(f"c{i}") for i, p in enumerate(patterns))).collect()
    wrong = []
    for i, pattern in enumerate(patterns):
        java = [instant.ofEpochMilli(ms).atZone(utc).format(formatter.ofPattern(pattern)) for ms in instants]
        got = [row[i] for row in rows]
        if got != java:
            wrong.append(f"{pattern}: {got} != {java}")
    assert not wrong, "\n".join(wrong)

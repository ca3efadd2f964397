"""ksqlDB's date and time functions: their types, the patterns and zones they take (Java
``DateTimeFormatter`` patterns, refused where Spark would print or read otherwise), and
ksqlDB's query-validation cases for them run through TestDriver.from_sql.

Ported cases come from confluentinc/ksql, ``ksqldb-functional-tests/src/test/resources/
query-validation-tests/<file>.json``; each names its file and test.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

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
        ("FROM_UNIXTIME(L)", TIMESTAMP), ("FROM_UNIXTIME(I)", TIMESTAMP), ("FROM_DAYS(I)", DATE),
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
        ("FORMAT_TIMESTAMP(TIME, 'HH:mm[X]', 'Europe/Paris')", "FORMAT_TIMESTAMP: an offset in an optional section is printed only in UTC here, not in 'Europe/Paris' (in the pattern 'HH:mm[X]')"),
        ("PARSE_TIMESTAMP(S, 'yyyy[ X]', 'Europe/Paris')", "PARSE_TIMESTAMP: a zone in an optional section is taken only with a UTC default zone, not 'Europe/Paris' (in the pattern 'yyyy[ X]')"),
        ("STRINGTOTIMESTAMP(S, 'dd MMMM yyyy')", "STRINGTOTIMESTAMP: the pattern letter 'M' (month) 4 times reads a full name, which ksqlDB's parser (in Locale.ROOT) does not read (in the pattern 'dd MMMM yyyy')"),
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
        ("FROM_DAYS(L)", "FROM_DAYS: takes an INT number of days, got BIGINT"),
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
            if "PARSE" in text and (any(c in pattern for c in "EFqQ") or pattern in ("GGGG", "MMMM", "LLLL")):
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
    zoned = [instant.ofEpochMilli(ms).atZone(utc) for ms in instants]
    for i, pattern in enumerate(patterns):
        java_format = formatter.ofPattern(pattern)
        java = [z.format(java_format) for z in zoned]
        got = [row[i] for row in rows]
        if got != java:
            wrong.append(f"{pattern}: {got} != {java}")
    assert not wrong, "\n".join(wrong)


# ----------------------------------------------------------- ported cases, one query
def _q(pattern: str) -> str:
    return "'" + pattern.replace("'", "''") + "'"


@dataclass(frozen=True)
class Port:
    """A ported case as one column of one query: ``expression`` over its own input
    columns (``{0}``, ``{1}``: of the types ``inputs`` names), fed ``rows`` (the case's
    input values and the value ksqlDB expects); ``result``: how that value reads back
    (``ms`` a TIMESTAMP, ``days`` a DATE)."""

    case: str
    expression: str
    inputs: tuple[str, ...]
    rows: list[tuple[tuple, Any]]
    result: str = ""


_NULL_PAIRS = [((None, 5), None), ((5, None), None), ((None, None), None)]
_DATESTRING = [
    (17662, "yyyy-MM-dd", "2018-05-11"), (18027, "dd/MM/yyyy", "11/05/2019"), (18993, "dd-MMM-yyyy", "01-Jan-2022"),
    (0, "dd-MM-yyyy", "01-01-1970"), (-1, "dd-MM-yyyy'Sophia'", "31-12-1969Sophia"),
]
_STRINGDATE = [
    ("2018-05-11Lit", "yyyy-MM-dd'Lit'", 17662), ("11/05/2019", "dd/MM/yyyy", 18027),
    ("01-Jan-2022", "dd-MMM-yyyy", 18993), ("01-01-1970", "dd-MM-yyyy", 0),
]
_PARSE_DATE = [*_STRINGDATE, ("01-JAN-2022", "dd-MMM-yyyy", 18993), ("JAN-2022", "MMM-yyyy", 18993)]
_PATTERN_IN_A_COLUMN = "(the pattern, a column in ksqlDB's test, is a literal here)"
PORTS = [
    Port("timestamp-to-string.json: timestamp to string without a time zone",
         "FORMAT_TIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss')", ("TIMESTAMP",),
         [((1526075913000,), "2018-05-11 21:58:33"), ((None,), None)]),
    Port("timestamp-to-string.json: millis to string with valid zone (without 'zzz', refused here)",
         "TIMESTAMPTOSTRING(ROWTIME, 'yyyy-MM-dd HH:mm:ss', 'America/Los_Angeles')", (), [((), "2018-05-11 14:58:33")]),
    Port("timestamp-to-string.json: millis to string in join (its zone, without 'zzz')",
         "TIMESTAMPTOSTRING(ROWTIME, 'yyyy-MM-dd HH:mm:ss', 'Europe/London')", (), [((), "2018-05-11 22:58:33")]),
    Port("stringtimestamp.json: string to timestamp", "STRINGTOTIMESTAMP({0}, 'yyyy-MM-dd''T''HH:mm:ssX')", ("STRING",),
         [(("2018-05-11T21:58:33Z",), 1526075913000), (("2019-05-11T21:58:33Z",), 1557611913000),
          (("2020-05-11T21:58:33Z",), 1589234313000), (("2020-05-11T21:58:33z",), 1589234313000)]),
    Port("stringtimestamp.json: format timestamp", "PARSE_TIMESTAMP({0}, 'yyyy-MM-dd''T''HH:mm:ss')", ("STRING",),
         [(("2018-05-11T21:58:33",), 1526075913000), (("2019-05-11T21:58:33",), 1557611913000),
          (("2020-05-11T21:58:33",), 1589234313000)], "ms"),
    Port("stringtimestamp.json: format timestamp with time zone", "PARSE_TIMESTAMP({0}, 'yyyy-MM-dd''T''HH:mm:ss zzz')",
         ("STRING",),
         [(("2018-05-11T21:58:33 PST",), 1526101113000), (("2019-05-11T21:58:33 PST",), 1557637113000),
          (("2020-05-11T21:58:33 PST",), 1589259513000)], "ms"),
    # ksqlDB's unit tests of the UDFs (ksqldb-engine/src/test/java/.../udf/datetime/).
    Port("FormatTimestampTest.java: testUTCTimeZone", "FORMAT_TIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss', 'UTC')",
         ("TIMESTAMP",), [((1534353043000,), "2018-08-15 17:10:43")]),
    Port("FormatTimestampTest.java: testPSTTimeZone", "FORMAT_TIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss', 'America/Los_Angeles')",
         ("TIMESTAMP",), [((1534353043000,), "2018-08-15 10:10:43")]),
    Port("FormatTimestampTest.java: testTimeZoneInUniversalTime", "FORMAT_TIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss zz', 'UTC')",
         ("TIMESTAMP",), [((1534353043000,), "2018-08-15 17:10:43 UTC")]),
    Port("ParseTimestampTest.java: shouldSupportPSTTimeZone",
         "PARSE_TIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss', 'America/Los_Angeles')", ("STRING",),
         [(("2018-08-15 10:10:43",), 1534353043000)], "ms"),
    Port("ParseTimestampTest.java: shouldSupportEmbeddedChars",
         "PARSE_TIMESTAMP({0}, " + _q("yyyy-MM-dd'T'HH:mm:ss.SSS'Fred'") + ")", ("STRING",),
         [(("2021-12-01T12:10:11.123Fred",), 1638360611123)], "ms"),
    Port("StringToTimestampTest.java: shouldSupportUTCTimeZone", "STRINGTOTIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss', 'UTC')",
         ("STRING",), [(("2018-08-15 17:10:43",), 1534353043000)]),
    # The last two rows: a wall time in the spring gap moves forward by the gap, one in
    # the autumn overlap takes the earlier offset (Java's ZonedDateTime.of).
    Port("StringToTimestampTest.java: shouldSupportPSTTimeZone, and Los Angeles' DST gap and overlap",
         "STRINGTOTIMESTAMP({0}, 'yyyy-MM-dd HH:mm:ss', 'America/Los_Angeles')", ("STRING",),
         [(("2018-08-15 10:10:43",), 1534353043000), (("2021-03-14 02:30:00",), 1615717800000),
          (("2021-11-07 01:30:00",), 1636273800000)]),
    # Not query-validation cases: texts read by STRINGTOTIMESTAMP's letters, each value
    # the one ksqlDB's parser gives (Java 17's DateTimeFormatter, fields missing from the
    # text taken from 1970-01-01T00:00:00Z).
    *(Port(f"StringToTimestamp.java: the pattern {_q(p)}", f"STRINGTOTIMESTAMP({{0}}, {_q(p)})", ("STRING",), [((t,), ms)])
      for t, p, ms in [
          ("21-03-04", "yy-MM-dd", 1614816000000), ("2021-063", "yyyy-DDD", 1614816000000),
          ("04 mar 2021", "dd MMM yyyy", 1614816000000), ("3/4/2021", "M/d/yyyy", 1614816000000),
          ("2021-03-04 5:07 PM", "yyyy-MM-dd h:mm a", 1614877620000), ("2021-03-04 12:07 am", "yyyy-MM-dd hh:mm a", 1614816420000),
          ("2021-03-04 24:00", "yyyy-MM-dd kk:mm", 1614816000000), ("2021-03-04 11:07", "yyyy-MM-dd KK:mm", 1614856020000),
          ("12:00:00.123456", "HH:mm:ss.SSSSSS", 43200123), ("2021-03-04T10:00:00+0530", "yyyy-MM-dd'T'HH:mm:ssZ", 1614832200000),
          ("2021-03-04T10:00:00 GMT+5", "yyyy-MM-dd'T'HH:mm:ss O", 1614834000000),
          ("2021-03-04T10:00 Europe/Paris", "yyyy-MM-dd'T'HH:mm VV", 1614848400000),
          ("2021-03-04T10:00 CET", "yyyy-MM-dd'T'HH:mm z", 1614848400000), ("2021-03", "yyyy-MM", 1614556800000),
          ("15", "mm", 900000), ("AD 2021", "G yyyy", 1609459200000), ("2021-03-04", "yyyy-MM-dd[ HH:mm]", 1614816000000),
          ("2021-03-04 10:11", "yyyy-MM-dd[ HH:mm]", 1614852660000), ("0021-03-04", "yyyy-MM-dd", -61499088000000),
      ]),
    Port("unix-timestamp.json: returns the current timestamp", "UNIX_TIMESTAMP() > 100", (), [((), True)]),
    Port("unix-timestamp.json: convert timezone to milliseconds", "UNIX_TIMESTAMP({0})", ("TIMESTAMP",),
         [((100,), 100), ((1589234313000,), 1589234313000), ((None,), None)]),
    Port("unix-date.json: returns the current date", "UNIX_DATE() > 100", (), [((), True)]),
    Port("unix-date.json: convert date to days", "UNIX_DATE({0})", ("DATE",), [((10,), 10), ((100,), 100), ((None,), None)]),
    Port("from-unixtime.json: convert milliseconds to timezone", "FROM_UNIXTIME({0})", ("BIGINT",),
         [((100,), 100), ((1589234313000,), 1589234313000), ((None,), None)], "ms"),
    *(Port(f"datestring.json: date to string, row {i + 1} {_PATTERN_IN_A_COLUMN}", f"DATETOSTRING({{0}}, {_q(p)})",
           ("INT",), [((days,), text)]) for i, (days, p, text) in enumerate(_DATESTRING)),
    *(Port(f"format-date.json: date to string, row {i + 1} {_PATTERN_IN_A_COLUMN}", f"FORMAT_DATE({{0}}, {_q(p)})",
           ("DATE",), [((days,), text)]) for i, (days, p, text) in enumerate(_DATESTRING)),
    *(Port(f"stringdate.json: string to date, row {i + 1} {_PATTERN_IN_A_COLUMN}", f"STRINGTODATE({{0}}, {_q(p)})",
           ("STRING",), [((text,), days)]) for i, (text, p, days) in enumerate(_STRINGDATE)),
    *(Port(f"parse-date.json: string to date, row {i + 1} {_PATTERN_IN_A_COLUMN}", f"PARSE_DATE({{0}}, {_q(p)})",
           ("STRING",), [((text,), days)], "days") for i, (text, p, days) in enumerate(_PARSE_DATE)),
    # Not a query-validation case: FromDays.java, days since 1970-01-01 as a DATE.
    Port("FromDays.java: a number of days as a DATE", "FROM_DAYS({0})", ("INT",), [((18993,), 18993), ((-1,), -1)], "days"),
    Port("dateadd.json: adds", "DATEADD(DAYS, 10, {0})", ("DATE",), [((10,), 20)], "days"),
    Port("dateadd.json: adds negative intervals", "DATEADD(DAYS, -5, {0})", ("DATE",),
         [((5,), 0), ((10,), 5), ((2,), -3)], "days"),
    Port("dateadd.json: handles null values", "DATEADD(MILLISECONDS, {1}, {0})", ("DATE", "INT"), _NULL_PAIRS, "days"),
    Port("datesub.json: subtracts", "DATESUB(DAYS, 10, {0})", ("DATE",), [((40,), 30), ((5,), -5)], "days"),
    Port("datesub.json: subtracts negative intervals", "DATESUB(DAYS, -5, {0})", ("DATE",), [((5,), 10), ((-5,), 0)], "days"),
    Port("datesub.json: handles null values", "DATESUB(MILLISECONDS, {1}, {0})", ("DATE", "INT"), _NULL_PAIRS, "days"),
    # Not a query-validation case: DateAdd.java counts days with TimeUnit.toDays, which
    # truncates toward 1970-01-01 (an hour before day 5 is day 4, before day 0 day 0).
    Port("DateAdd.java: the day an instant before 1970 falls in", "DATEADD(HOURS, -1, {0})", ("DATE",),
         [((5,), 4), ((0,), 0), ((-1,), -1)], "days"),
    Port("timestampadd.json: adds", "TIMESTAMPADD(MILLISECONDS, 10, {0})", ("TIMESTAMP",), [((10,), 20)], "ms"),
    Port("timestampadd.json: adds negative intervals", "TIMESTAMPADD(MILLISECONDS, -5, {0})", ("TIMESTAMP",),
         [((5,), 0), ((10,), 5), ((2,), -3)], "ms"),
    Port("timestampadd.json: handles null values", "TIMESTAMPADD(MILLISECONDS, {1}, {0})", ("TIMESTAMP", "INT"),
         _NULL_PAIRS, "ms"),
    Port("timestampsub.json: subtracts", "TIMESTAMPSUB(MILLISECONDS, 10, {0})", ("TIMESTAMP",), [((20,), 10)], "ms"),
    Port("timestampsub.json: subtracts negative intervals", "TIMESTAMPSUB(MILLISECONDS, -5, {0})", ("TIMESTAMP",),
         [((5,), 10), ((0,), 5), ((-100,), -95)], "ms"),
    Port("timestampsub.json: handles null values", "TIMESTAMPSUB(MILLISECONDS, {1}, {0})", ("TIMESTAMP", "INT"),
         _NULL_PAIRS, "ms"),
    Port("convert-tz.json: convert timezones defined by offset", "CONVERT_TZ({0}, '+0200', '+0500')", ("TIMESTAMP",),
         [((100,), 10800100), ((1589234313000,), 1589245113000), ((None,), None)], "ms"),
    Port("convert-tz.json: convert timezones defined by name", "CONVERT_TZ({0}, 'America/Los_Angeles', 'America/New_York')",
         ("TIMESTAMP",), [((100,), 10800100), ((1589234313000,), 1589245113000), ((None,), None)], "ms"),
]
ROWTIME = 1526075913000


def _read(value: Any, result: str) -> Any:
    if value is None:
        return None
    if result == "ms":
        return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=value)
    if result == "days":
        return dt.date(1970, 1, 1) + dt.timedelta(days=value)
    return value


@pytest.mark.spark
def test_ported_cases_in_one_query(spark):
    """Each port is a column of one query over one stream (JSON here, whatever the
    case's format); a case with fewer input records than the longest repeats its own.
    UNIX_TIMESTAMP() and UNIX_DATE() are also checked against the wall clock."""
    from tablestream.testing.driver import TestDriver

    columns, names = [], []
    for c, port in enumerate(PORTS):
        names.append([f"P{c}_{i}" for i in range(len(port.inputs))])
        columns += [f"{name} {type_}" for name, type_ in zip(names[-1], port.inputs, strict=True)]
    selected = [f"{p.expression.format(*n)} AS C{c}" for c, (p, n) in enumerate(zip(PORTS, names, strict=True))]
    statements = [
        f"CREATE STREAM INPUT (K STRING KEY, {', '.join(columns)}) WITH (kafka_topic='input', value_format='JSON');",
        f"CREATE STREAM OUTPUT AS SELECT K, {', '.join(selected)}, UNIX_TIMESTAMP() AS NOW_MS, UNIX_DATE() AS TODAY FROM INPUT;",
    ]
    count = max(len(p.rows) for p in PORTS)
    before = int(time.time() * 1000)
    with TestDriver.from_sql(statements, spark=spark, batched=True) as driver:
        source = driver.create_input_topic("input")
        for r in range(count):
            value = {}
            for port, port_names in zip(PORTS, names, strict=True):
                inputs, _ = port.rows[r % len(port.rows)]
                value.update(zip(port_names, inputs, strict=True))
            source.pipe_input(str(r), value, timestamp=ROWTIME)
        driver.advance()
        records = driver.create_output_topic("OUTPUT").read_records()
    after = int(time.time() * 1000)
    assert [(r.key, r.timestamp) for r in records] == [(str(r), ROWTIME) for r in range(count)]
    wrong = []
    for c, port in enumerate(PORTS):
        expected = [_read(port.rows[r % len(port.rows)][1], port.result) for r in range(count)]
        got = [record.value[f"C{c}"] for record in records]
        if got != expected:
            wrong.append(f"{port.case}: {port.expression}: {got} != {expected}")
    assert not wrong, "\n".join(wrong)
    for record in records:
        assert before <= record.value["NOW_MS"] <= after
        assert before // 86_400_000 <= record.value["TODAY"] <= after // 86_400_000


@pytest.mark.spark
def test_text_that_does_not_parse_goes_to_the_processing_log(spark):
    """ksqlDB's PARSE_TIMESTAMP and STRINGTODATE throw on text that does not parse (a
    processing-log entry); here the record is logged and leaves the query's output, as
    every SQL expression that fails on a record does."""
    from tablestream.testing.driver import TestDriver

    statements = [
        "CREATE STREAM INPUT (K STRING KEY, S STRING) WITH (kafka_topic='input', value_format='JSON');",
        "CREATE STREAM OUTPUT AS SELECT K, PARSE_TIMESTAMP(S, 'yyyy-MM-dd') AS T, STRINGTODATE(S, 'yyyy-MM-dd') AS D FROM INPUT;",
    ]
    with TestDriver.from_sql(statements, spark=spark, batched=True) as driver:
        source = driver.create_input_topic("input")
        for key, text, ts in [("a", "2021-03-04", 1), ("b", "04/03/2021", 2), ("c", None, 3)]:
            source.pipe_input(key, {"S": text}, timestamp=ts)
        driver.advance()
        records = [(r.key, r.value, r.timestamp) for r in driver.create_output_topic("OUTPUT").read_records()]
        log = [(e["offset"], e["error"], e["key"], e["value"]) for e in driver.processing_log]
    assert records == [
        ("a", {"T": dt.datetime(2021, 3, 4, tzinfo=UTC), "D": 18690}, 1),
        ("c", {"T": None, "D": None}, 3),
    ]
    assert log == [(
        1,
        "KSTREAM-MAPVALUES-0000000001: TO_TIMESTAMP(value.`S`, CAST('yyyy-MM-dd' AS STRING)): "
        "cannot parse '04/03/2021' as a timestamp",
        b"b",
        b'{"S":"04/03/2021"}',
    )]


@pytest.mark.spark
def test_offsets_in_other_zones_format_as_java_does(spark):
    """An offset field formatted in a zone other than UTC is computed from the zone's
    offset at the instant: as Java prints it, for offsets of whole hours, half and
    three-quarter hours, with seconds, negative, and zero (London in winter)."""
    jvm = spark._jvm
    formatter, instant, zone_id = jvm.java.time.format.DateTimeFormatter, jvm.java.time.Instant, jvm.java.time.ZoneId
    instants = [0, 1526075913123, 1609459199999, -1, 951782400000]
    zones = ["America/Los_Angeles", "Asia/Kolkata", "America/St_Johns", "Asia/Kathmandu", "Europe/London", "+02:30:15", "-00:30"]
    patterns = [letter * n for letter in "OXxZ" for n in EXACT_COUNTS[letter]]
    patterns += ["yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "EEE, d MMM yyyy HH:mm:ss Z", "X'X'xx"]
    cases = [(p, z) for p in patterns for z in zones]
    typed = [translate(f"FORMAT_TIMESTAMP(TIME, '{p.replace(chr(39), chr(39) * 2)}', '{z}')") for p, z in cases]
    frame = spark.createDataFrame([((dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms),),) for ms in instants],
                                  "value struct<TIME: timestamp>")
    rows = frame.selectExpr(*(f"{t.spark.sql(dialect='spark')} AS c{i}" for i, t in enumerate(typed))).collect()
    wrong = []
    zoned = {zone: [instant.ofEpochMilli(ms).atZone(zone_id.of(zone)) for ms in instants] for zone in zones}
    java_formats = {pattern: formatter.ofPattern(pattern) for pattern in patterns}
    for i, (pattern, zone) in enumerate(cases):
        java = [z.format(java_formats[pattern]) for z in zoned[zone]]
        got = [row[i] for row in rows]
        if got != java:
            wrong.append(f"{pattern} in {zone}: {got} != {java}")
    assert not wrong, "\n".join(wrong)

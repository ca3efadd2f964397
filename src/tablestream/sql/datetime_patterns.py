"""ksqlDB's datetime patterns (Java's ``DateTimeFormatter``) for Spark's ``to_timestamp``.

Spark parses timestamps with Java's ``DateTimeFormatter`` too, so a pattern made of the
letters both read alike passes unchanged. Spark refuses some letters Java has (the
week-based fields, and for parsing the day of week, week of month and quarter) and
some letters Java has not: such a pattern is refused here, naming the letter, rather
than read differently. A pattern Java itself refuses gets ksqlDB's error text.

>>> spark_pattern("yyyy-MM-dd'T'HH:mm:ssX")
"yyyy-MM-dd'T'HH:mm:ssX"
>>> spark_pattern("YYYY-ww")
Traceback (most recent call last):
...
tablestream.sql.datetime_patterns.PatternError: the pattern letter 'Y' (week-based year) is not supported: Spark's parser has no week-based fields
"""

from __future__ import annotations

__all__ = ["PatternError", "spark_pattern"]


class PatternError(ValueError):
    """A datetime pattern that Java refuses or that Spark would not read as Java does."""


# Letters Spark's parser reads as Java's DateTimeFormatter does.
_SPARK = set("GyDMLdahKkHmsSVzOXxZ")
# Java's letters Spark does not read, with what they stand for.
_WEEK_BASED = {"Y": "week-based year", "w": "week of week-based year", "W": "week of month",
               "e": "localized day of week", "c": "localized day of week"}
_FORMAT_ONLY = {"E": "day of week", "F": "aligned week of month", "q": "quarter", "Q": "quarter"}
_OTHER = {"u": "proleptic year", "A": "milli of day", "n": "nano of second", "N": "nano of day", "p": "pad next",
          "g": "modified Julian day", "B": "day period", "v": "generic time-zone name"}
_RESERVED = "#{}"


def spark_pattern(pattern: str) -> str:
    """The Spark ``to_timestamp`` pattern of a Java ``DateTimeFormatter`` pattern (the
    same text when every letter reads alike); raises :class:`PatternError` naming the
    first letter that does not."""
    i, depth = 0, 0
    while i < len(pattern):
        char = pattern[i]
        if char == "'":
            end = pattern.find("'", i + 1)
            while end != -1 and end + 1 < len(pattern) and pattern[end + 1] == "'":
                end = pattern.find("'", end + 2)  # '' inside a quoted text is one quote
            if end == -1:
                raise PatternError(f"Pattern ends with an incomplete string literal: {pattern}")
            i = end + 1
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                raise PatternError(f"Pattern invalid as it contains ] without previous [: {pattern}")
            depth -= 1
        elif char in _RESERVED:
            raise PatternError(f"Pattern includes reserved character: '{char}'")
        elif char.isascii() and char.isalpha() and char not in _SPARK:
            _refuse(char)
        i += 1
    return pattern


def _refuse(letter: str) -> None:
    if letter in _WEEK_BASED:
        raise PatternError(
            f"the pattern letter '{letter}' ({_WEEK_BASED[letter]}) is not supported: Spark's parser has no week-based fields"
        )
    if letter in _FORMAT_ONLY:
        raise PatternError(
            f"the pattern letter '{letter}' ({_FORMAT_ONLY[letter]}) is not supported: Spark only formats it, never parses it"
        )
    if letter in _OTHER:
        raise PatternError(f"the pattern letter '{letter}' ({_OTHER[letter]}) is not supported by Spark's parser")
    raise PatternError(f"Unknown pattern letter: {letter}")

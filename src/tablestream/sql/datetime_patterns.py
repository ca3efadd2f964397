"""ksqlDB's date and time patterns (Java ``DateTimeFormatter`` patterns) checked against
Spark's, and the time zone ids ksqlDB's functions take (Java ``ZoneId.of``).

Spark formats and parses with ``java.time`` too, but refuses some pattern letters
(week-based fields, nano and milli of day, day periods) and some letter counts. A
pattern here is read as Java reads it (letters, quoted text, optional sections); every
letter Spark does not handle exactly as Java does is refused, naming the letter, so a
pattern never gives a different string than ksqlDB's. What each function accepts on
top (no time letters for a DATE, no zone names outside UTC, ...) is checked by
:mod:`tablestream.sql.functions`.

>>> read_pattern("yyyy-MM-dd'T'HH:mm").letters
(('y', 4, False), ('M', 2, False), ('d', 2, False), ('H', 2, False), ('m', 2, False))
>>> read_pattern("YYYY")
Traceback (most recent call last):
...
tablestream.sql.datetime_patterns.PatternError: the pattern letter 'Y' (week-based year) has no exact equivalent in Spark
"""

from __future__ import annotations

import functools
import re
import zoneinfo
from dataclasses import dataclass

__all__ = [
    "EXACT_COUNTS",
    "OFFSET_LETTERS",
    "TIME_LETTERS",
    "ZERO_OFFSET_ZONES",
    "ZONE_LETTERS",
    "ZONE_NAME_LETTERS",
    "Pattern",
    "PatternError",
    "check_zone",
    "parse_pattern",
    "read_pattern",
]


class PatternError(ValueError):
    """A pattern or a time zone id that ksqlDB rejects or that Spark cannot follow exactly."""


# The letter counts Spark formats exactly as Java does (checked against
# java.time.format.DateTimeFormatter over instants from year 2 to 9999).
EXACT_COUNTS: dict[str, tuple[int, ...]] = {
    "G": (1, 2, 3, 4), "y": (1, 2, 3, 4, 5), "D": (1, 2, 3), "M": (1, 2, 3, 4), "L": (1, 2, 3, 4),
    "d": (1, 2), "Q": (1, 2, 3, 4), "q": (1, 2, 3, 4), "E": (1, 2, 3, 4), "F": (1,), "a": (1,),
    "h": (1, 2), "K": (1, 2), "k": (1, 2), "H": (1, 2), "m": (1, 2), "s": (1, 2), "S": tuple(range(1, 10)),
    "V": (2,), "z": (1, 2, 3, 4), "O": (1, 4), "X": (1, 2, 3, 4, 5), "x": (1, 2, 3, 4, 5), "Z": (1, 2, 3, 4, 5),
}
# Letters Java takes and Spark refuses (or reads otherwise).
_NO_SPARK = {
    "u": "year", "Y": "week-based year", "w": "week of week-based year", "W": "week of month",
    "e": "localized day of week", "c": "localized day of week", "n": "nano of second", "N": "nano of day",
    "A": "milli of day", "B": "day period", "g": "modified Julian day", "v": "generic time zone name",
    "p": "pad modifier",
}
_NAMES = {
    "G": "era", "y": "year of era", "D": "day of year", "M": "month", "L": "month", "d": "day of month",
    "Q": "quarter", "q": "quarter", "E": "day of week", "F": "aligned week of month", "a": "am-pm",
    "h": "clock hour of am-pm", "K": "hour of am-pm", "k": "clock hour of day", "H": "hour of day",
    "m": "minute of hour", "s": "second of minute", "S": "fraction of second", "V": "time zone id",
    "z": "time zone name", "O": "localized zone offset", "X": "zone offset", "x": "zone offset",
    "Z": "zone offset",
}
TIME_LETTERS = "ahKkHmsS"
ZONE_NAME_LETTERS = "Vz"
OFFSET_LETTERS = "OXxZ"
ZONE_LETTERS = ZONE_NAME_LETTERS + OFFSET_LETTERS
# Zones whose offset is always zero: Spark (whose session zone is UTC) prints their
# offsets as Java does.
ZERO_OFFSET_ZONES = ("UTC", "GMT", "UT", "Z", "Etc/UTC", "Etc/GMT")


def letter_name(letter: str) -> str:
    """What a pattern letter stands for, as messages name it."""
    return _NAMES.get(letter) or _NO_SPARK[letter]


@dataclass(frozen=True)
class Pattern:
    """A pattern as Java reads it: its text and its fields, each (letter, count, whether
    it is inside an optional section), with where each field starts in the text."""

    text: str
    letters: tuple[tuple[str, int, bool], ...]
    optional: bool
    starts: tuple[int, ...] = ()

    def has(self, letters: str) -> bool:
        """Whether a field of one of ``letters`` is in the pattern."""
        return any(letter in letters for letter, _, _ in self.letters)

    def first(self, letters: str) -> str | None:
        """The first field letter of the pattern among ``letters``."""
        return next((letter for letter, _, _ in self.letters if letter in letters), None)


@functools.lru_cache(maxsize=256)
def read_pattern(text: str) -> Pattern:
    """A pattern read as Java's ``DateTimeFormatterBuilder.appendPattern`` reads it;
    :class:`PatternError` with Java's text for a pattern Java rejects, or naming the
    letter Spark cannot follow exactly."""
    letters: list[tuple[str, int, bool]] = []
    starts: list[int] = []
    depth, i, optional = 0, 0, False
    while i < len(text):
        c = text[i]
        if "A" <= c <= "Z" or "a" <= c <= "z":
            count = 1
            while i + count < len(text) and text[i + count] == c:
                count += 1
            if c in _NO_SPARK:
                raise PatternError(f"the pattern letter '{c}' ({_NO_SPARK[c]}) has no exact equivalent in Spark")
            if c not in EXACT_COUNTS:
                raise PatternError(f"Unknown pattern letter: {c}")
            if count not in EXACT_COUNTS[c]:
                raise PatternError(f"the pattern letter '{c}' ({_NAMES[c]}) cannot be repeated {count} times here")
            letters.append((c, count, depth > 0))
            starts.append(i)
            i += count
        elif c == "'":
            end = i + 1
            while True:
                end = text.find("'", end)
                if end < 0:
                    raise PatternError(f"Pattern ends with an incomplete string literal: {text}")
                if end + 1 < len(text) and text[end + 1] == "'":
                    end += 2
                    continue
                break
            i = end + 1
        elif c == "[":
            depth, optional = depth + 1, True
            i += 1
        elif c == "]":
            if depth == 0:
                raise PatternError("Pattern invalid as it contains ] without previous [")
            depth -= 1
            i += 1
        elif c in "{}#":
            raise PatternError(f"Pattern includes reserved character: '{c}'")
        else:
            i += 1
    return Pattern(text, tuple(letters), optional, tuple(starts))


def parse_pattern(text: str) -> Pattern:
    """A pattern Spark's ``to_timestamp`` parses as ksqlDB's parser does: a readable
    pattern (:func:`read_pattern`) without the fields Spark only formats (day of week,
    aligned week of month, quarter) or full names (``GGGG``, ``MMMM``, ``LLLL``), which
    ksqlDB's parser (in ``Locale.ROOT``) does not read.

    >>> parse_pattern("yyyy-MM-dd HH:mm").text
    'yyyy-MM-dd HH:mm'
    >>> parse_pattern("EEE yyyy")
    Traceback (most recent call last):
    ...
    tablestream.sql.datetime_patterns.PatternError: the pattern letter 'E' (day of week) is not read by Spark's parser
    """
    pattern = read_pattern(text)
    letter = pattern.first("EFqQ")
    if letter is not None:
        raise PatternError(f"the pattern letter '{letter}' ({letter_name(letter)}) is not read by Spark's parser")
    for letter, count, _ in pattern.letters:
        if letter in "GML" and count == 4:
            raise PatternError(
                f"the pattern letter '{letter}' ({letter_name(letter)}) 4 times reads a full name, which ksqlDB's "
                "parser (in Locale.ROOT) does not read"
            )
    return pattern


_OFFSET = re.compile(r"^[+-](\d{1,2}|\d{2}:\d{2}|\d{4}|\d{2}:\d{2}:\d{2}|\d{6})$")
_REGION = re.compile(r"^[A-Za-z][A-Za-z0-9~/._+-]+$")


def _offset_ok(text: str) -> bool:
    if not _OFFSET.match(text):
        return False
    digits = text[1:].replace(":", "")
    hours = int(digits[:2]) if len(digits) >= 2 else int(digits)
    minutes = int(digits[2:4]) if len(digits) >= 4 else 0
    seconds = int(digits[4:6]) if len(digits) >= 6 else 0
    return minutes < 60 and seconds < 60 and (hours, minutes, seconds) <= (18, 0, 0)


@functools.lru_cache(maxsize=256)
def _regions() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def check_zone(zone: str) -> None:
    """A time zone id as Java's ``ZoneId.of`` takes it (``Z``, an offset such as
    ``+02:00``, ``UTC``/``GMT``/``UT`` with or without an offset, or a region such as
    ``Europe/London``); :class:`PatternError` with Java's text otherwise (ksqlDB's
    functions fail on every row with it). Three-letter ids such as ``PST`` are not
    regions for ``ZoneId.of``.

    >>> check_zone("America/Los_Angeles"), check_zone("+0200"), check_zone("UTC-3")
    (None, None, None)
    >>> check_zone("PST")
    Traceback (most recent call last):
    ...
    tablestream.sql.datetime_patterns.PatternError: Unknown time-zone ID: PST
    """
    if zone == "Z":
        return
    if zone[:1] in ("+", "-"):
        if not _offset_ok(zone):
            raise PatternError(f"Invalid ID for ZoneOffset, invalid format: {zone}")
        return
    for prefix in ("UTC", "GMT", "UT"):
        if zone == prefix:
            return
        if zone.startswith(prefix) and zone[len(prefix)] in "+-":
            if not _offset_ok(zone[len(prefix):]):
                raise PatternError(f"Invalid ID for offset-based ZoneId: {zone}")
            return
    if not _REGION.match(zone):
        raise PatternError(f"Invalid ID for region-based ZoneId, invalid format: {zone}")
    if zone not in _regions():
        raise PatternError(f"Unknown time-zone ID: {zone}")

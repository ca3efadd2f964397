"""Kafka Streams' generated names.

Every generated name is a prefix plus a per-builder counter, zero-padded to ten digits
(``KSTREAM-FILTER-0000000002``). A user-given name replaces the generated one but still
uses up a counter value, as Kafka Streams does, so naming one operator never renumbers the
others. The prefixes are Kafka's (``kstream/internals/KStreamImpl.java``, ``KTableImpl``,
``KGroupedStreamImpl``, ``KGroupedTableImpl``, ``BranchedKStreamImpl``).
"""

from __future__ import annotations

import re

from tablestream.plan.errors import InvalidNameError

__all__ = ["NameProvider", "validate_name"]

# KStreamImpl
KSTREAM_SOURCE = "KSTREAM-SOURCE-"
KSTREAM_SINK = "KSTREAM-SINK-"
KSTREAM_FILTER = "KSTREAM-FILTER-"
KSTREAM_PEEK = "KSTREAM-PEEK-"
KSTREAM_FLATMAP = "KSTREAM-FLATMAP-"
KSTREAM_FLATMAPVALUES = "KSTREAM-FLATMAPVALUES-"
KSTREAM_MAP = "KSTREAM-MAP-"
KSTREAM_MAPVALUES = "KSTREAM-MAPVALUES-"
KSTREAM_PROCESSOR = "KSTREAM-PROCESSOR-"
KSTREAM_KEY_SELECT = "KSTREAM-KEY-SELECT-"
KSTREAM_MERGE = "KSTREAM-MERGE-"
KSTREAM_TOTABLE = "KSTREAM-TOTABLE-"
KSTREAM_REPARTITION = "KSTREAM-REPARTITION-"
KSTREAM_BRANCH = "KSTREAM-BRANCH-"
# KGroupedStreamImpl
KSTREAM_AGGREGATE = "KSTREAM-AGGREGATE-"
KSTREAM_REDUCE = "KSTREAM-REDUCE-"
# KTableImpl
KTABLE_SOURCE = "KTABLE-SOURCE-"
KTABLE_FILTER = "KTABLE-FILTER-"
KTABLE_MAPVALUES = "KTABLE-MAPVALUES-"
KTABLE_SELECT = "KTABLE-SELECT-"
KTABLE_TOSTREAM = "KTABLE-TOSTREAM-"
# KGroupedTableImpl
KTABLE_AGGREGATE = "KTABLE-AGGREGATE-"
KTABLE_REDUCE = "KTABLE-REDUCE-"
KSTREAM_JOIN = "KSTREAM-JOIN-"
KSTREAM_LEFTJOIN = "KSTREAM-LEFTJOIN-"
KTABLE_JOINTHIS = "KTABLE-JOINTHIS-"
KTABLE_JOINOTHER = "KTABLE-JOINOTHER-"
KTABLE_LEFTTHIS = "KTABLE-LEFTTHIS-"
KTABLE_LEFTOTHER = "KTABLE-LEFTOTHER-"
KTABLE_OUTERTHIS = "KTABLE-OUTERTHIS-"
KTABLE_OUTEROTHER = "KTABLE-OUTEROTHER-"
KTABLE_MERGE = "KTABLE-MERGE-"
KTABLE_FK_JOIN_OUTPUT = "KTABLE-FK-JOIN-OUTPUT-"
KTABLE_FK_JOIN_SUBSCRIPTION = "KTABLE-FK-JOIN-SUBSCRIPTION-"

STATE_STORE = "STATE-STORE-"
REPARTITION_TOPIC_SUFFIX = "-repartition"
TABLE_SOURCE_SUFFIX = "-source"

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_NAME_LENGTH = 249


def validate_name(name: object, what: str = "Name") -> str:
    """Check a user-given processor, store or topic name the way Kafka's ``Named`` does."""
    if not isinstance(name, str):
        raise InvalidNameError(f"{what} must be a str, got {type(name).__name__}")
    if not name:
        raise InvalidNameError(f"{what} is illegal: it is empty")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"{what} '{name[:40]}...' is illegal: longer than {MAX_NAME_LENGTH} characters"
        )
    if not _LEGAL.match(name):
        raise InvalidNameError(
            f"{what} '{name}' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
        )
    return name


class NameProvider:
    """The per-builder counter behind every generated name (Kafka's ``InternalNameProvider``)."""

    __slots__ = ("_index",)

    def __init__(self) -> None:
        self._index = 0

    def _next(self) -> str:
        index = self._index
        self._index += 1
        return f"{index:010d}"

    def new_processor_name(self, prefix: str) -> str:
        """``KSTREAM-FILTER-`` -> ``KSTREAM-FILTER-0000000003``."""
        return prefix + self._next()

    def new_store_name(self, prefix: str) -> str:
        """``KSTREAM-AGGREGATE-`` -> ``KSTREAM-AGGREGATE-STATE-STORE-0000000004``."""
        return prefix + STATE_STORE + self._next()

    def or_generate(self, name: str | None, prefix: str) -> str:
        """The given name, else a generated one; the counter advances either way."""
        generated = self.new_processor_name(prefix)
        return generated if name is None else name

    def suffix_or_generate(self, name: str | None, suffix: str, prefix: str) -> str:
        """``name + suffix`` if a name was given, else a generated one; the counter advances
        either way (Kafka's ``NamedInternal.suffixWithOrElseGet``)."""
        generated = self.new_processor_name(prefix)
        return generated if name is None else validate_name(name + suffix)

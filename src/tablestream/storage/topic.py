"""Topics and records with Kafka's semantics, shared by every storage backend.

A topic has a name, a partition count, a cleanup policy (``delete`` or ``compact``),
retention settings, and the formats its keys and values are written in. A record has
a key, a value (``None`` is a tombstone), a timestamp in milliseconds, a partition,
an offset and headers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..errors import InvalidTopicError

CLEANUP_POLICIES = ("delete", "compact")
DEFAULT_RETENTION_MS = 7 * 24 * 3600 * 1000  # Kafka's retention.ms default
DEFAULT_DELETE_RETENTION_MS = 24 * 3600 * 1000  # Kafka's delete.retention.ms default

#: The columns (and their Spark SQL types) every backend reads a topic's records as,
#: and a batch's records have.
RECORD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("key", "binary"),
    ("value", "binary"),
    ("topic", "string"),
    ("partition", "int"),
    ("offset", "bigint"),
    ("timestamp", "bigint"),
    ("headers", "array<struct<key:string,value:binary>>"),
)

_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")


def validate_topic_name(name: str) -> None:
    """Reject names Kafka rejects (same rules as Kafka's ``Topic.validate``)."""
    if not name or name in (".", ".."):
        raise InvalidTopicError(f"Topic name '{name}' is illegal: it cannot be empty, '.' or '..'")
    if len(name) > 249:
        raise InvalidTopicError(f"Topic name '{name[:40]}...' is illegal: longer than 249 characters")
    if not _LEGAL_NAME.match(name):
        raise InvalidTopicError(
            f"Topic name '{name}' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
        )


@dataclass(frozen=True)
class TopicConfig:
    """A topic's settings.

    ``key_format``/``value_format`` use ksqlDB's names (``KAFKA``, ``JSON``, ``AVRO``,
    ``DELIMITED``); ``key_schema``/``value_schema`` are ksqlDB-style column lists such as
    ``"id BIGINT, name STRING"`` (for ``KAFKA`` a single type such as ``"BIGINT"``).

    >>> TopicConfig("orders", partitions=3).cleanup_policy
    'delete'
    """

    name: str
    partitions: int = 1
    cleanup_policy: str = "delete"
    retention_ms: int = DEFAULT_RETENTION_MS
    delete_retention_ms: int = DEFAULT_DELETE_RETENTION_MS
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    key_schema: str | None = None
    value_schema: str | None = None

    def __post_init__(self) -> None:
        validate_topic_name(self.name)
        if not isinstance(self.partitions, int) or self.partitions < 1:
            raise InvalidTopicError(
                f"Topic '{self.name}': the number of partitions must be at least 1, got {self.partitions}"
            )
        if self.cleanup_policy not in CLEANUP_POLICIES:
            raise InvalidTopicError(
                f"Topic '{self.name}': cleanup policy must be 'delete' or 'compact', got '{self.cleanup_policy}'"
            )
        for setting in ("retention_ms", "delete_retention_ms"):
            value = getattr(self, setting)
            if value < -1:
                raise InvalidTopicError(
                    f"Topic '{self.name}': {setting.replace('_', '.')} must be -1 (unlimited) or >= 0, got {value}"
                )
        object.__setattr__(self, "key_format", self.key_format.upper())
        object.__setattr__(self, "value_format", self.value_format.upper())

    @property
    def compacted(self) -> bool:
        return self.cleanup_policy == "compact"


@dataclass(frozen=True)
class Record:
    """One Kafka record. ``value=None`` is a tombstone; ``key=None`` has no key."""

    key: bytes | None
    value: bytes | None
    timestamp: int | None = None
    partition: int | None = None
    offset: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = field(default=())


@dataclass(frozen=True)
class TopicDescription:
    """What ``describe`` reports: the config plus, per partition, the end offset
    (the offset the next record gets), the start offset and the number of records held."""

    config: TopicConfig
    end_offsets: dict[int, int]
    start_offsets: dict[int, int]
    record_counts: dict[int, int]

    @property
    def record_count(self) -> int:
        return sum(self.record_counts.values())


class TopicStore(Protocol):
    """The Topic API every backend implements (embedded Delta log, Kafka)."""

    def create_topic(self, config: TopicConfig) -> TopicConfig: ...

    def list_topics(self) -> list[str]: ...

    def topic_config(self, name: str) -> TopicConfig: ...

    def describe_topic(self, name: str) -> TopicDescription: ...

    def delete_topic(self, name: str) -> None: ...

    def produce(self, name: str, records: Sequence[Record]) -> list[Record]:
        """Append records atomically; returns them with partition, offset and timestamp set."""
        ...

    def consume(
        self, name: str, *, max_records: int | None = None, timeout: float = 10.0
    ) -> list[Record]:
        """Read a topic from the beginning, ordered by partition then offset."""
        ...

    def follow(
        self, name: str, *, from_beginning: bool = True, timeout: float | None = None
    ) -> Iterator[list[Record]]:
        """Yield chunks of new records (each ordered by partition then offset) until no
        record has arrived for ``timeout`` seconds (``None``: until interrupted)."""
        ...

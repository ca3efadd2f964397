"""Where records enter: streams, tables and global tables read from topics."""

from __future__ import annotations

from dataclasses import dataclass

from tablestream.plan.base import PlanNode, check_format, check_store
from tablestream.plan.errors import InvalidArgumentError
from tablestream.plan.expr import SqlExpr

__all__ = ["GlobalTableSource", "StreamSource", "TableSource"]


def _check_formats(node: PlanNode) -> None:
    for attr in ("key_format", "value_format"):
        value = check_format(getattr(node, attr), attr.replace("_", " "))
        if value is None:
            raise InvalidArgumentError(f"{node.name}: {attr} is required")
        object.__setattr__(node, attr, value)


def _check_topics(node: StreamSource | TableSource | GlobalTableSource) -> None:
    if isinstance(node.topics, str):
        raise InvalidArgumentError(f"{node.name}: topics must be a tuple of topic names")


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamSource(PlanNode):
    """A record stream read from one or more topics (``KSTREAM-SOURCE-``).

    Formats are ksqlDB names (``KAFKA``, ``JSON``, ``AVRO``, ``DELIMITED``, ...); schemas are
    ksqlDB column lists (``"id BIGINT, name STRING"``; a single type for a ``KAFKA`` key)
    or ``None``. ``timestamp_extractor``: the SQL expression over the record (``key``,
    ``value``, its fields, ``rowtime``) giving each record's timestamp (epoch
    milliseconds or a ``TIMESTAMP``), as Kafka Streams' ``TimestampExtractor`` does;
    without it records keep the timestamps they were written with.
    """

    topics: tuple[str, ...]
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    key_schema: str | None = None
    value_schema: str | None = None
    timestamp_extractor: SqlExpr | None = None

    def __post_init__(self) -> None:
        _check_topics(self)
        _check_extractor(self)
        if not self.topics:
            raise InvalidArgumentError(f"{self.name}: a stream source needs at least one topic")
        _check_formats(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableSource(PlanNode):
    """A table materialized from a changelog topic: the latest value per key, a ``null``
    value deleting the key (``KTABLE-SOURCE-``).

    Kafka describes it as two nodes: the topic's source ``source_name``
    (``KSTREAM-SOURCE-``) and this processor. ``topics`` is the one changelog topic.
    ``store`` is the table's store name (``<topic>-STATE-STORE-<n>`` unless
    ``materialized_as`` named it, then ``queryable``); the topology lists it when Kafka
    would materialize it: when named, or when an operator downstream needs the table's
    old values (``group_by``). ``timestamp_extractor`` as for :class:`StreamSource`.
    """

    source_name: str
    topics: tuple[str, ...]
    store: str | None = None
    queryable: bool = False
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    key_schema: str | None = None
    value_schema: str | None = None
    timestamp_extractor: SqlExpr | None = None

    def __post_init__(self) -> None:
        _check_table_topics(self)
        _check_extractor(self)
        check_store(self, required=True)
        _check_formats(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class GlobalTableSource(PlanNode):
    """A table replicated in full to every task (``GlobalKTable``), read from the one topic
    of ``topics``. Its store is always materialized; Kafka describes it as a sub-topology
    "for global store"."""

    source_name: str
    topics: tuple[str, ...]
    store: str | None = None
    queryable: bool = False
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    key_schema: str | None = None
    value_schema: str | None = None
    timestamp_extractor: SqlExpr | None = None

    def __post_init__(self) -> None:
        _check_table_topics(self)
        _check_extractor(self)
        check_store(self, required=True)
        _check_formats(self)


def _check_extractor(node: StreamSource | TableSource | GlobalTableSource) -> None:
    extractor = node.timestamp_extractor
    if extractor is not None and not isinstance(extractor, SqlExpr):
        raise InvalidArgumentError(
            f"{node.name}: timestamp_extractor must be a SqlExpr, got {type(extractor).__name__}"
        )


def _check_table_topics(node: TableSource | GlobalTableSource) -> None:
    _check_topics(node)
    if len(node.topics) != 1:
        raise InvalidArgumentError(
            f"{node.name}: a table is read from exactly one topic, got {list(node.topics)}"
        )

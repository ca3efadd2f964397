"""Errors raised by tablestream. Every message is one line a user can act on."""

from __future__ import annotations


class TablestreamError(Exception):
    """Base class of every error tablestream raises on bad input or state."""


class UnknownTopicError(TablestreamError):
    def __init__(self, name: str):
        super().__init__(f"Unknown topic '{name}'")
        self.name = name


class TopicExistsError(TablestreamError):
    def __init__(self, name: str):
        super().__init__(f"Topic '{name}' already exists")
        self.name = name


class InvalidTopicError(TablestreamError):
    """A topic name or configuration Kafka would reject."""


class InvalidPartitionError(TablestreamError):
    def __init__(self, topic: str, partition: int, partitions: int):
        super().__init__(
            f"Partition {partition} does not exist in topic '{topic}' "
            f"(it has {partitions} partition{'s' if partitions != 1 else ''}: 0..{partitions - 1})"
        )


class SerializationError(TablestreamError):
    """A value that cannot be written in, or read from, the declared format."""


class SchemaError(TablestreamError):
    """A schema (ksqlDB column list) that cannot be parsed or does not fit its format."""


class CoPartitioningError(TablestreamError):
    """A join that requires co-partitioned inputs (``strict``) over topics with different
    partition counts (ksqlDB's rule and message)."""

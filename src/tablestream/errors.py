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


class InvalidHomeError(TablestreamError):
    """A tablestream home (``--home``, ``$TABLESTREAM_HOME``) that is not a directory."""


class InvalidLocationError(TablestreamError):
    """A durable location (a home, a table's root) given as a URI tablestream cannot
    open: an unknown scheme, no bucket; or unreadable storage options. ``problem`` and
    ``fix`` are the message's parts: ``<location> <problem> (<fix>)``."""

    def __init__(self, location: str, problem: str, fix: str):
        super().__init__(f"{location} {problem} ({fix})")
        self.problem = problem
        self.fix = fix


class DamagedTopicError(TablestreamError):
    """An embedded topic whose settings or Delta log cannot be read.

    >>> str(DamagedTopicError("orders", "/h/topics/orders/topic.json", "not valid JSON"))
    "Topic 'orders' is damaged: /h/topics/orders/topic.json: not valid JSON (delete it with 'tablestream topics delete orders')"
    """

    def __init__(self, name: str, path: object, problem: str):
        super().__init__(
            f"Topic '{name}' is damaged: {path}: {problem} "
            f"(delete it with 'tablestream topics delete {name}')"
        )
        self.name = name


class DamagedStateError(TablestreamError):
    """A file an application keeps (a store's changelog or snapshot, its checkpoint)
    that is damaged or missing. The message is self-contained, since it may be raised
    inside a Spark task and reach the user as text: it names the file and the way out
    (:func:`reset_hint`)."""


def reset_hint(application_id: str | None) -> str:
    """How to start an application over, for error messages."""
    command = f"tablestream app reset {application_id or 'APP_ID'}"
    return f"reset the application to rebuild it from its source topics: '{command}' or Application.reset()"


def first_line(error: BaseException) -> str:
    """An exception's message as one line: its first non-empty line (libraries such as
    delta-rs add backtraces after it)."""
    for line in str(error).splitlines():
        if line.strip():
            return line.strip()
    return type(error).__name__

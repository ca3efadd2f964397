"""Pick the topic backend: Kafka when bootstrap servers are given, else the embedded store."""

from __future__ import annotations

import os

from .embedded import EmbeddedStore
from .topic import TopicStore


def open_store(
    bootstrap_servers: str | None = None, home: str | os.PathLike[str] | None = None
) -> TopicStore:
    """``KafkaStore(bootstrap_servers)`` if given, else ``EmbeddedStore(home)``.

    >>> open_store(home="/tmp/ts")                   # doctest: +ELLIPSIS
    <tablestream.storage.embedded.EmbeddedStore object at ...>
    """
    if bootstrap_servers:
        from .kafka import KafkaStore

        return KafkaStore(bootstrap_servers)
    return EmbeddedStore(home)

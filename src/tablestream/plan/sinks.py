"""Where records leave: topics."""

from __future__ import annotations

from dataclasses import dataclass

from tablestream.plan.base import UnaryNode, check_format

__all__ = ["ToTopic"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToTopic(UnaryNode):
    """Write a stream's records to a topic (``KSTREAM-SINK-``). A format or schema left
    ``None`` is the topic's own (or the defaults, ``KAFKA`` keys and ``JSON`` values)."""

    topic: str
    key_format: str | None = None
    value_format: str | None = None
    key_schema: str | None = None
    value_schema: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "key_format", check_format(self.key_format, "key format"))
        object.__setattr__(self, "value_format", check_format(self.value_format, "value format"))

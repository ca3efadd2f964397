"""What every plan node shares: a name, and the names of the nodes it reads from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from tablestream.plan.errors import InvalidArgumentError

__all__ = ["FORMATS", "InputKind", "PlanNode", "UnaryNode"]

InputKind = Literal["stream", "table"]

# ksqlDB's KEY_FORMAT / VALUE_FORMAT names.
FORMATS = ("AVRO", "DELIMITED", "JSON", "JSON_SR", "KAFKA", "NONE", "PROTOBUF", "PROTOBUF_NOSR")


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanNode:
    """A node of the logical plan. ``name`` is unique in its topology."""

    name: str

    @property
    def parents(self) -> tuple[str, ...]:
        """Names of the nodes this one reads from, in order."""
        return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UnaryNode(PlanNode):
    """A node with one parent."""

    parent: str

    @property
    def parents(self) -> tuple[str, ...]:
        return (self.parent,)


def check_format(value: str | None, what: str) -> str | None:
    """Upper-case a ksqlDB format name and check it is one."""
    if value is None:
        return None
    if not isinstance(value, str) or value.upper() not in FORMATS:
        raise InvalidArgumentError(
            f"Unknown {what} {value!r}; ksqlDB formats are {', '.join(FORMATS)}"
        )
    return value.upper()


def check_store(node: Any, *, required: bool = False) -> None:
    """Check a table node's ``store`` and ``queryable``: a queryable node names its store;
    ``required``: the node always keeps a store."""
    if node.store is None and node.queryable:
        raise InvalidArgumentError(f"{node.name}: a queryable table needs a store name")
    if node.store is None and required:
        raise InvalidArgumentError(f"{node.name}: {type(node).__name__} needs a store name")


def check_input_kind(kind: str, node: str) -> None:
    if kind not in ("stream", "table"):
        raise InvalidArgumentError(f"{node}: input_kind must be 'stream' or 'table', got {kind!r}")

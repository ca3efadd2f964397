"""Joins of streams and tables.

- :class:`StreamTableJoin`: each stream record looks its key up in a table, as of the
  record's time (``KSTREAM-JOIN-`` / ``KSTREAM-LEFTJOIN-``); only stream records produce
  output.
- :class:`StreamGlobalTableJoin`: the same against a global table, looked up by a key
  selected from the stream record; no co-partitioning.
- :class:`TableTableJoin`: two tables joined on their primary keys; updates of either
  side update the result (Kafka's ``KTABLE-JOINTHIS-`` / ``-JOINOTHER-`` / ``-MERGE-``).
- :class:`ForeignKeyJoin`: each left row joins the right row its foreign key names
  (KIP-213); the result is keyed by the left key.

The joiner is SQL text in which ``left`` and ``right`` name the two values, a Spark
Column over the same two columns, or a callable ``(left, right)``. A missing side is
null (left and outer joins).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tablestream.plan.base import PlanNode, UnaryNode, check_store
from tablestream.plan.errors import InvalidArgumentError
from tablestream.plan.expr import Expr

__all__ = [
    "ForeignKeyJoin",
    "JoinKind",
    "StreamGlobalTableJoin",
    "StreamTableJoin",
    "TableTableJoin",
]

JoinKind = Literal["inner", "left", "outer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamTableJoin(UnaryNode):
    """``parent`` (a stream) joined with ``table`` on the stream's key. ``strict``: reject
    inputs whose topics have different partition counts (ksqlDB's co-partitioning rule)
    instead of letting the shuffle align them."""

    table: str
    joiner: Expr
    kind: JoinKind = "inner"
    strict: bool = False

    @property
    def parents(self) -> tuple[str, ...]:
        return (self.parent, self.table)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamGlobalTableJoin(UnaryNode):
    """``parent`` (a stream) joined with the global table ``table`` on
    ``key_selector(key, value)``; the output keeps the stream record's key."""

    table: str
    key_selector: Expr
    joiner: Expr
    kind: JoinKind = "inner"

    @property
    def parents(self) -> tuple[str, ...]:
        return (self.parent, self.table)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableTableJoin(PlanNode):
    """``left`` and ``right`` joined on their keys; ``name`` is the merge processor's,
    ``this_name`` / ``other_name`` the two sides' processors. ``store``: the result is
    materialized under that name (``materialized_as``, then ``queryable``)."""

    left: str
    right: str
    joiner: Expr
    kind: JoinKind
    this_name: str
    other_name: str
    store: str | None = None
    queryable: bool = False

    def __post_init__(self) -> None:
        check_store(self)

    @property
    def parents(self) -> tuple[str, ...]:
        return (self.left, self.right)


@dataclass(frozen=True, slots=True, kw_only=True)
class ForeignKeyJoin(PlanNode):
    """Each row of ``left`` joined with the row of ``right`` whose key is
    ``foreign_key(value)`` (or ``(key, value)``); ``kind`` is inner or left.
    ``subscriptions`` is the store of (foreign key, left key) subscriptions with the
    left values; ``store`` the result's store when it is materialized (``queryable``).
    ``replicate_right``: every state partition keeps the whole right table beside its
    left rows (one stage per batch, for a right table small enough to hold once per
    partition); ``False``: Kafka's layout (subscriptions by foreign key); ``None``:
    chosen by the application at its first start, by the right table's size."""

    left: str
    right: str
    foreign_key: Expr
    joiner: Expr
    kind: JoinKind
    subscriptions: str
    store: str | None = None
    queryable: bool = False
    replicate_right: bool | None = None

    def __post_init__(self) -> None:
        check_store(self)
        if not (self.replicate_right is None or isinstance(self.replicate_right, bool)):
            raise InvalidArgumentError(f"{self.name}: replicate_right must be True, False or None, got {self.replicate_right!r}")

    @property
    def parents(self) -> tuple[str, ...]:
        return (self.left, self.right)

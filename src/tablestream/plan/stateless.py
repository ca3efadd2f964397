"""Record-at-a-time operators on streams and tables.

Stream and table variants are separate nodes because their rules differ: a stream filter
drops records, a table filter turns a row that stops passing into a tombstone and needs
the old value as well as the new one.
"""

from __future__ import annotations

from dataclasses import dataclass

from tablestream.plan.base import PlanNode, UnaryNode, check_store
from tablestream.plan.errors import InvalidArgumentError
from tablestream.plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr

__all__ = [
    "Branch",
    "Filter",
    "FlatMap",
    "FlatMapValues",
    "Map",
    "MapValues",
    "Merge",
    "Peek",
    "Repartition",
    "SelectKey",
    "Split",
    "TableFilter",
    "TableMapValues",
    "ToStream",
    "ToTable",
    "WithTimestamp",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Filter(UnaryNode):
    """Keep the records the predicate accepts; with ``negate`` the ones it rejects
    (``filter_not``). ``KSTREAM-FILTER-``."""

    predicate: Expr
    negate: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class MapValues(UnaryNode):
    """A new value per record; the key is unchanged. ``KSTREAM-MAPVALUES-``."""

    mapper: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class WithTimestamp(UnaryNode):
    """Each record forwarded with the timestamp ``timestamp`` gives (SQL over the record:
    epoch milliseconds or a ``TIMESTAMP``), as a Kafka Streams processor forwarding
    ``record.withTimestamp(...)`` does; key and value unchanged. ``KSTREAM-PROCESSOR-``."""

    timestamp: SqlExpr


@dataclass(frozen=True, slots=True, kw_only=True)
class Map(UnaryNode):
    """A new key and value per record; marks the stream for repartitioning. ``KSTREAM-MAP-``.

    ``mapper`` is a callable ``(key, value) -> (key, value)`` or a pair of expressions."""

    mapper: KeyValueExpr | ExprRef


@dataclass(frozen=True, slots=True, kw_only=True)
class FlatMap(UnaryNode):
    """Zero or more ``(key, value)`` records per record; marks the stream for
    repartitioning. ``KSTREAM-FLATMAP-``. As SQL, an expression giving an array of
    ``struct<key, value>``."""

    mapper: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class FlatMapValues(UnaryNode):
    """Zero or more values per record, each with the record's key. As SQL, an array
    expression. ``KSTREAM-FLATMAPVALUES-``."""

    mapper: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectKey(UnaryNode):
    """A new key computed from key and value; marks the stream for repartitioning.
    ``KSTREAM-KEY-SELECT-``. Stream ``group_by`` makes one too, as Kafka Streams does."""

    selector: Expr


@dataclass(frozen=True, slots=True, kw_only=True)
class Peek(UnaryNode):
    """Call an action on every record and pass the record on unchanged.
    ``KSTREAM-PEEK-``."""

    action: ExprRef


@dataclass(frozen=True, slots=True, kw_only=True)
class Merge(PlanNode):
    """The union of several streams, each record kept. ``KSTREAM-MERGE-``."""

    parents: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.parents) < 2:
            raise InvalidArgumentError(f"{self.name}: a merge needs at least two parents")


@dataclass(frozen=True, slots=True, kw_only=True)
class Split(UnaryNode):
    """The point where a stream splits into branches (``KSTREAM-BRANCH-``). Records pass
    through unchanged; each :class:`Branch` child selects its records."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Branch(UnaryNode):
    """One branch of a split: the records for which no ``preceding`` predicate (those of the
    earlier branches, in order) holds and ``predicate`` does. ``predicate=None`` is the
    default branch, which takes every record no predicate matched. Named as Kafka does:
    the split's name plus the branch name, or plus its position (1, 2, ...; 0 for the
    default branch)."""

    predicate: Expr | None
    preceding: tuple[Expr, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Repartition(UnaryNode):
    """Records written to an internal topic and read back, so that all records with one key
    meet in one task (seed 001; Kafka's repartition nodes).

    ``name`` is the source that reads the topic back (what downstream nodes name as their
    parent); ``sink_name`` writes it; ``filter_name`` is Kafka's processor in front of the
    sink (``None`` for a table ``group_by``, which has none). ``explicit`` marks a
    user-asked ``repartition()``; ``partitions`` is its partition count, ``None`` for the
    default. Describe splits sub-topologies here.
    """

    topic: str
    sink_name: str
    filter_name: str | None
    partitions: int | None = None
    explicit: bool = False

    def __post_init__(self) -> None:
        if self.partitions is not None and (
            not isinstance(self.partitions, int) or self.partitions < 1
        ):
            raise InvalidArgumentError(
                f"{self.name}: partitions must be a positive int, got {self.partitions!r}"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ToTable(UnaryNode):
    """A table made from a stream: each record upserts its key, a ``null`` value deletes it
    (``KSTREAM-TOTABLE-``). ``store`` and ``queryable`` as for a table source."""

    store: str | None = None
    queryable: bool = False

    def __post_init__(self) -> None:
        check_store(self, required=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToStream(UnaryNode):
    """A table's changes as a stream of records, a deletion as a tombstone.
    ``KTABLE-TOSTREAM-``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TableFilter(UnaryNode):
    """A table of the rows the predicate accepts (``negate``: rejects); a row that stops
    passing is deleted. ``store`` is set when the result is materialized under that name
    (``materialized_as``, then ``queryable``). ``KTABLE-FILTER-``."""

    predicate: Expr
    negate: bool = False
    store: str | None = None
    queryable: bool = False

    def __post_init__(self) -> None:
        check_store(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class TableMapValues(UnaryNode):
    """A table with a new value per row. ``store`` as for :class:`TableFilter`.
    ``KTABLE-MAPVALUES-``."""

    mapper: Expr
    store: str | None = None
    queryable: bool = False

    def __post_init__(self) -> None:
        check_store(self)

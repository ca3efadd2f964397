"""The built plan: nodes in creation order, their stores, and the registry of the Columns
and callables their :class:`~tablestream.plan.expr.ExprRef` s name."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from tablestream.plan.base import PlanNode
from tablestream.plan.describe import TopologyDescription, describe
from tablestream.plan.errors import TopologyError
from tablestream.plan.expr import ExprRef
from tablestream.plan.joins import ForeignKeyJoin, TableTableJoin
from tablestream.plan.sinks import ToTopic
from tablestream.plan.sources import GlobalTableSource, StreamSource, TableSource
from tablestream.plan.stateless import Repartition, TableFilter, TableMapValues

__all__ = ["Store", "StoreKind", "Topology"]

StoreKind = Literal["table", "aggregate", "global", "subscriptions"]


@dataclass(frozen=True, slots=True)
class Store:
    """A state store: ``table`` (latest value per key of a table), ``aggregate`` (an
    aggregate per group key), ``global`` (a global table, replicated to every task) or
    ``subscriptions`` (a foreign-key join's left rows by foreign key).
    ``owner`` is the node that writes it; ``readers`` are other nodes that read it (as
    Kafka's join processors read the other side's store); ``queryable`` when the user
    named it."""

    name: str
    kind: StoreKind
    owner: str
    queryable: bool
    readers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Topology:
    """A logical plan: pure data, printable, equal to another plan with the same nodes.

    ``nodes`` are in creation order, every parent before its children; ``stores`` are the
    stores Kafka Streams would create for this program, in the order of their owners;
    ``functions`` maps each :class:`ExprRef` name to its Spark Column or callable (it is
    not part of equality: two builds of one program are equal).
    """

    nodes: tuple[PlanNode, ...]
    stores: tuple[Store, ...] = ()
    functions: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    _by_name: Mapping[str, PlanNode] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        by_name: dict[str, PlanNode] = {}
        for node in self.nodes:
            if node.name in by_name:
                raise TopologyError(f"Processor {node.name} is already added.")
            for parent in node.parents:
                if parent not in by_name:
                    raise TopologyError(
                        f"Parent processor {parent} of {node.name} is not added yet."
                    )
            by_name[node.name] = node
        # A table-table join is three Kafka processors; its sides read the stores.
        helpers = {h for n in self.nodes if isinstance(n, TableTableJoin) for h in (n.this_name, n.other_name)}
        for store in self.stores:
            for user in (store.owner, *store.readers):
                if user not in by_name and user not in helpers:
                    raise TopologyError(
                        f"StateStore {store.name} is used by unknown processor {user}."
                    )
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "stores", tuple(self.stores))
        object.__setattr__(self, "functions", MappingProxyType(dict(self.functions)))
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    def __reduce__(self) -> tuple[Any, ...]:
        # The read-only mappings do not pickle; a Topology is rebuilt from its fields.
        return (Topology, (self.nodes, self.stores, dict(self.functions)))

    def node(self, name: str) -> PlanNode:
        """The node called ``name``."""
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"No node named {name!r} in this topology") from None

    def children(self, name: str) -> tuple[PlanNode, ...]:
        """The nodes that read from ``name``, in creation order."""
        return tuple(n for n in self.nodes if name in n.parents)

    def store(self, name: str) -> Store:
        """The store called ``name``."""
        for store in self.stores:
            if store.name == name:
                return store
        raise KeyError(f"No store named {name!r} in this topology")

    def resolve(self, ref: ExprRef) -> Any:
        """The Spark Column or callable an :class:`ExprRef` stands for."""
        return self.functions[ref.ref]

    @property
    def sources(self) -> tuple[StreamSource | TableSource | GlobalTableSource, ...]:
        """Nodes that read user topics."""
        return tuple(
            n for n in self.nodes if isinstance(n, (StreamSource, TableSource, GlobalTableSource))
        )

    @property
    def sinks(self) -> tuple[ToTopic, ...]:
        """Nodes that write user topics."""
        return tuple(n for n in self.nodes if isinstance(n, ToTopic))

    @property
    def repartitions(self) -> tuple[Repartition, ...]:
        """Nodes that go through an internal ``-repartition`` topic."""
        return tuple(n for n in self.nodes if isinstance(n, Repartition))

    def table_topic(self, name: str) -> str | None:
        """The topic the table ``name`` holds at most one row per record of: its
        changelog topic, through filters and value mappings; None for a table computed
        otherwise (an aggregation, a join, a stream made a table)."""
        node = self.node(name)
        while isinstance(node, (TableFilter, TableMapValues)):
            node = self.node(node.parent)
        return node.topics[0] if isinstance(node, TableSource) else None

    @property
    def unchosen_layouts(self) -> tuple[ForeignKeyJoin, ...]:
        """The foreign-key joins whose layout is left to the application
        (``replicate_right=None``)."""
        return tuple(n for n in self.nodes if isinstance(n, ForeignKeyJoin) and n.replicate_right is None)

    def with_layouts(self, replicated: Collection[str]) -> Topology:
        """This plan with every foreign-key join whose layout is left to the
        application given one: replicated when its name is in ``replicated``, else
        Kafka's layout."""
        nodes = tuple(
            dataclasses.replace(n, replicate_right=n.name in replicated)
            if isinstance(n, ForeignKeyJoin) and n.replicate_right is None else n
            for n in self.nodes
        )
        return Topology(nodes, self.stores, self.functions)

    def describe(self) -> TopologyDescription:
        """Kafka Streams' description of this topology; ``str()`` of it is the text
        ``Topology.describe().toString()`` prints for the same program.

        >>> from tablestream.dsl import StreamsBuilder
        >>> builder = StreamsBuilder()
        >>> builder.stream("input-topic").group_by_key().count()  # doctest: +ELLIPSIS
        <KTable KSTREAM-AGGREGATE-0000000002>
        >>> print(builder.build().describe())
        Topologies:
           Sub-topology: 0
            Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])
              --> KSTREAM-AGGREGATE-0000000002
            Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])
              --> none
              <-- KSTREAM-SOURCE-0000000000
        <BLANKLINE>
        <BLANKLINE>
        """
        return describe(self)

"""Facts about a plan that hold for the life of an application, computed once: the
source topics in order, which stores exist and who keeps them, how often a batch reads
each node's rows, which tables must keep every version of a batch, and the partition
counts that co-partitioning is checked against."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..plan import sources, stateless
from ..plan.base import PlanNode
from ..plan.topology import Topology
from .state import StoreLayout

if TYPE_CHECKING:
    from .rules.base import Rule, StoreUse


class PhysicalPlan:
    """A topology placed on ``partitions`` state partitions under ``layout``.

    ``topic_partitions``: partition counts of the source topics (for joins that require
    co-partitioned inputs; None skips that check). ``rule_of`` gives each node's rule
    class, whose class methods state the facts about its node.
    """

    def __init__(
        self,
        topology: Topology,
        layout: StoreLayout,
        partitions: int,
        topic_partitions: dict[str, int] | None,
        rule_of: Callable[[PlanNode], type[Rule]],
    ):
        self.topology = topology
        self.layout = layout
        self.partitions = partitions
        self.topic_partitions = topic_partitions
        self._rule_of = rule_of
        self.stage_memo: dict[Any, Any] = {}
        # The running query's token, under which its tasks keep their stores open
        # between batches (None: each task closes them).
        self.keep: str | None = None
        topics: list[str] = []
        for node in topology.sources:
            for topic in node.topics:
                if topic not in topics:
                    topics.append(topic)
        # A topic's position is its records' ``o_src`` in the ordering key.
        self.topics = tuple(topics)
        kept = {
            parent: node.name
            for node in topology.nodes
            for parent in rule_of(node).keeps(node)
        }
        self._kept = kept
        every = {t for node in topology.nodes for t in rule_of(node).reads_every_version(node)}
        # Through a table filter or value mapper, a reader's need reaches the table before it.
        for node in reversed(topology.nodes):
            if node.name in every and rule_of(node).passes_versions:
                every.update(node.parents)
        self._every_version = every
        self.stores: tuple[StoreUse, ...] = tuple(
            store for node in topology.nodes for store in rule_of(node).stores(node, self)
        )

    def kept_by_consumer(self, node: Any) -> bool:
        """Whether a table source's only reader keeps the table itself, so the source
        needs no store of its own (and is not queried, not read by anything else)."""
        if type(node) is not sources.TableSource or node.queryable:
            return False
        readers = self.topology.children(node.name)
        return len(readers) == 1 and self._kept.get(node.name) == readers[0].name

    def needs_every_version(self, name: str) -> bool:
        """Whether a reader of the table ``name`` needs every record of a batch (a
        stream record meets the table as of its own time), not only the last per key."""
        return name in self._every_version

    @functools.cache  # noqa: B019 - one plan per instance, kept for its life
    def uses(self, name: str) -> int:
        """How many times one batch reads a node's rows: once per materialized table
        output, once per read by a consuming rule (a store stage, a sink, an action), and
        through the children of rules that pass the rows on."""
        node = self.topology.node(name)
        uses = 1 if getattr(node, "queryable", False) else 0
        for child in self.topology.children(name):
            child_rule = self._rule_of(child)
            uses += child_rule.reads(child, name) if child_rule.consumer else self.uses(child.name)
        return uses

    def input_partitions(self, name: str) -> tuple[str, int]:
        """The topic a node's records were last partitioned by, and its partition count
        (a repartition topic has its own count, else its upstream's)."""
        node = self.topology.node(name)
        if isinstance(node, stateless.Repartition):
            upstream = self.input_partitions(node.parent)
            return node.topic, node.partitions or upstream[1]
        if isinstance(node, (sources.StreamSource, sources.TableSource, sources.GlobalTableSource)):
            return node.topics[0], max(self.topic_partitions.get(t, 1) for t in node.topics)
        return self.input_partitions(node.parents[0])

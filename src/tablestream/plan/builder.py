"""Accumulates a plan: names nodes, checks what Kafka Streams checks, builds a Topology.

Both front ends (the DSL and the SQL statements) write through this class, so the same
program gets the same names, repartitions and stores whichever front end built it.
"""

from __future__ import annotations

import re
from typing import Any

from tablestream.plan import naming
from tablestream.plan.aggregate import AggregateNode
from tablestream.plan.base import PlanNode
from tablestream.plan.errors import TopologyError
from tablestream.plan.joins import (
    ForeignKeyJoin,
    StreamGlobalTableJoin,
    StreamTableJoin,
    TableTableJoin,
)
from tablestream.plan.keys import check_join
from tablestream.plan.naming import NameProvider
from tablestream.plan.sources import GlobalTableSource, StreamSource, TableSource
from tablestream.plan.stateless import Repartition, TableFilter, TableMapValues, ToTable
from tablestream.plan.topology import Store, Topology

__all__ = ["PlanBuilder"]

# KStreamImpl.createRepartitionedSource keeps generated sink/source names only for
# generated prefixes; a user-named prefix names them after the topic.
_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")


class PlanBuilder:
    """The mutable side of a plan (Kafka's ``InternalStreamsBuilder``)."""

    def __init__(self) -> None:
        self.names = NameProvider()
        self._nodes: dict[str, PlanNode] = {}
        self._taken: set[str] = set()  # every Kafka processor name, incl. a node's helpers
        self._stores: set[str] = set()
        self._source_topics: dict[str, str] = {}  # topic -> the source node reading it
        self._old_values_needed: set[str] = set()  # table nodes Kafka materializes for old values
        self._functions: dict[str, Any] = {}
        self._readers: dict[str, list[str]] = {}  # table node -> processors reading its store

    # -- nodes ------------------------------------------------------------------------

    def add(self, node: PlanNode) -> PlanNode:
        """Append ``node``; its parents must already be in the plan."""
        for parent in node.parents:
            if parent not in self._nodes:
                raise TopologyError(f"Parent processor {parent} of {node.name} is not added yet.")
        # Kafka's processor names for this node, in the order Kafka adds them.
        names = [node.name]
        if isinstance(node, (TableSource, GlobalTableSource)):
            names = [node.source_name, node.name]
        if isinstance(node, Repartition):
            names = [n for n in (node.filter_name, node.sink_name, node.name) if n is not None]
        for name in names:
            if name in self._taken:
                raise TopologyError(f"Processor {name} is already added.")
        topics: tuple[str, ...] = ()
        if isinstance(node, (StreamSource, TableSource, GlobalTableSource)):
            topics = node.topics
        elif isinstance(node, Repartition):
            topics = (node.topic,)
        for topic in topics:
            reader = self._source_topics.get(topic)
            if reader is None:
                continue
            if isinstance(node, StreamSource) and isinstance(self._nodes[reader], StreamSource):
                raise TopologyError(
                    "Two source nodes are subscribed to overlapping but not equal input topics"
                )
            raise TopologyError(f"Topic {topic} has already been registered by another source.")
        if isinstance(node, (StreamTableJoin, StreamGlobalTableJoin, TableTableJoin, ForeignKeyJoin)):
            check_join(node, self._nodes.__getitem__)
        self._taken.update(names)
        for topic in topics:
            self._source_topics[topic] = node.name
        self._nodes[node.name] = node
        return node

    def add_stream_source(self, node: StreamSource) -> StreamSource:
        """Add a stream source, or return the existing one reading exactly these topics
        (Kafka merges such sources; the second one's name is spent but unused)."""
        readers = {self._source_topics.get(t) for t in node.topics}
        existing = next(iter(readers)) if len(readers) == 1 else None
        if existing is not None:
            same = self._nodes[existing]
            if isinstance(same, StreamSource) and set(same.topics) == set(node.topics):
                settings = ("key_format", "value_format", "key_schema", "value_schema", "timestamp_extractor")
                if any(getattr(same, s) != getattr(node, s) for s in settings):
                    raise TopologyError(
                        f"Topics {list(node.topics)} are already read by {existing} "
                        "with other formats, schemas or timestamp extractor."
                    )
                return same
        self.add(node)
        return node

    def node(self, name: str) -> PlanNode:
        return self._nodes[name]

    def claim_store(self, name: str) -> str:
        """Reserve a store name; each store belongs to one node."""
        if name in self._stores:
            raise TopologyError(f"StateStore {name} is already added.")
        self._stores.add(name)
        return name

    def register(self, ref: str, obj: Any) -> None:
        """Keep a Spark Column or callable under ``ref`` (named by an ``ExprRef``)."""
        if ref in self._functions:
            raise TopologyError(f"Function reference {ref} is already registered.")
        self._functions[ref] = obj

    # -- Kafka's shared building blocks -------------------------------------------------

    def repartition_names(self, prefix: str) -> tuple[str, str, str, str]:
        """Topic, sink, filter and source names of a repartition named after ``prefix``
        (``KStreamImpl.createRepartitionedSource``): the three names are spent in that
        order, and used when the prefix is generated; after a user-given prefix they are
        ``<topic>-sink``, ``<topic>-filter`` and ``<topic>-source``."""
        suffix = naming.REPARTITION_TOPIC_SUFFIX
        topic = prefix if prefix.endswith(suffix) else prefix + suffix
        naming.validate_name(topic, "Repartition topic name")
        sink = self.names.new_processor_name(naming.KSTREAM_SINK)
        filter_ = self.names.new_processor_name(naming.KSTREAM_FILTER)
        source = self.names.new_processor_name(naming.KSTREAM_SOURCE)
        if not _GENERATED.fullmatch(prefix):
            sink, filter_, source = f"{topic}-sink", f"{topic}-filter", f"{topic}-source"
        return topic, sink, filter_, source

    def repartition(
        self,
        parent: str,
        prefix: str,
        *,
        partitions: int | None = None,
        explicit: bool = False,
    ) -> Repartition:
        """Add a repartition of ``parent`` through the topic ``<prefix>-repartition``."""
        topic, sink, filter_, source = self.repartition_names(prefix)
        node = Repartition(
            name=source,
            parent=parent,
            topic=topic,
            sink_name=sink,
            filter_name=filter_,
            partitions=partitions,
            explicit=explicit,
        )
        self.add(node)
        return node

    def require_old_values(self, table: str) -> None:
        """A downstream operator needs the old value of each change of ``table``: the
        nearest materialized table upstream provides it (``KTableImpl.enableSendingOldValues``
        with forced materialization)."""
        node = self._nodes[table]
        while isinstance(node, (TableFilter, TableMapValues)) and node.store is None:
            node = self._nodes[node.parent]
        if isinstance(node, (TableSource, ToTable)):
            self._old_values_needed.add(node.name)

    def add_store_reader(self, table: str, reader: str) -> None:
        """``reader`` looks rows of ``table`` up (a join): the table's nearest store
        upstream is materialized and lists ``reader`` (Kafka's value getter)."""
        self.require_old_values(table)
        node = self._nodes[table]
        while isinstance(node, (TableFilter, TableMapValues)) and node.store is None:
            node = self._nodes[node.parent]
        self._readers.setdefault(node.name, []).append(reader)

    # -- result -------------------------------------------------------------------------

    def build(self) -> Topology:
        """The plan so far as an immutable :class:`Topology`."""
        stores: list[Store] = []
        for node in self._nodes.values():
            readers = tuple(self._readers.get(node.name, ()))
            if isinstance(node, (TableSource, ToTable)):
                if node.queryable or node.name in self._old_values_needed:
                    stores.append(Store(node.store, "table", node.name, node.queryable, readers))
            elif isinstance(node, GlobalTableSource):
                stores.append(Store(node.store, "global", node.name, node.queryable, readers))
            elif isinstance(node, (TableFilter, TableMapValues)) and node.store is not None:
                stores.append(Store(node.store, "table", node.name, node.queryable, readers))
            elif isinstance(node, AggregateNode):
                stores.append(Store(node.store, "aggregate", node.name, node.queryable, readers))
            elif isinstance(node, ForeignKeyJoin):
                stores.append(Store(node.subscriptions, "subscriptions", node.name, False))
                if node.store is not None:
                    stores.append(Store(node.store, "table", node.name, node.queryable))
            elif isinstance(node, TableTableJoin) and node.store is not None:
                stores.append(Store(node.store, "table", node.name, node.queryable))
        return Topology(tuple(self._nodes.values()), tuple(stores), dict(self._functions))

"""``Topology.describe()``: Kafka Streams' ``TopologyDescription`` text, character for
character.

Kafka's text depends on more than the graph: nodes are ordered by the size of the subtree
they feed, and the ``-->``/``<--`` lists are Java ``TreeSet``s filled while those sizes
are still being counted, in the iteration order of a ``HashMap`` keyed by node name; topic
and store lists are printed in ``HashSet`` order. This module reproduces those orders
(``InternalTopologyBuilder.describe`` and friends) so that snapshot tests can compare our
text with the strings in Kafka's own tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar

from tablestream.plan.joins import StreamGlobalTableJoin, StreamTableJoin, TableTableJoin
from tablestream.plan.sinks import ToTopic
from tablestream.plan.sources import GlobalTableSource, StreamSource, TableSource
from tablestream.plan.stateless import Repartition

if TYPE_CHECKING:
    from tablestream.plan.topology import Topology

__all__ = [
    "GlobalStoreDescription",
    "NodeDescription",
    "SubtopologyDescription",
    "TopologyDescription",
    "describe",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class NodeDescription:
    """One node as Kafka describes it: a source, a processor or a sink."""

    kind: Literal["source", "processor", "sink"]
    name: str
    topics: tuple[str, ...] = ()  # a source's topics, a sink's one topic
    stores: tuple[str, ...] = ()
    successors: tuple[str, ...] = ()
    predecessors: tuple[str, ...] = ()

    def __str__(self) -> str:
        if self.kind == "source":
            return (
                f"Source: {self.name} (topics: [{', '.join(self.topics)}])\n"
                f"      --> {_names(self.successors)}"
            )
        if self.kind == "processor":
            return (
                f"Processor: {self.name} (stores: [{', '.join(self.stores)}])\n"
                f"      --> {_names(self.successors)}\n"
                f"      <-- {_names(self.predecessors)}"
            )
        return f"Sink: {self.name} (topic: {self.topics[0]})\n      <-- {_names(self.predecessors)}"


@dataclass(frozen=True, slots=True)
class SubtopologyDescription:
    """Nodes connected without an intermediate topic; Kafka makes one task per partition."""

    id: int
    nodes: tuple[NodeDescription, ...]

    def __str__(self) -> str:
        return f"Sub-topology: {self.id}\n" + "".join(f"    {n}\n" for n in self.nodes) + "\n"


@dataclass(frozen=True, slots=True)
class GlobalStoreDescription:
    """A global table: its source and the processor that fills its store."""

    id: int
    source: NodeDescription
    processor: NodeDescription

    def __str__(self) -> str:
        return (
            f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
            f"    {self.source}\n    {self.processor}\n"
        )


@dataclass(frozen=True, slots=True)
class TopologyDescription:
    """What ``describe()`` returns; ``str()`` of it is Kafka's text."""

    subtopologies: tuple[SubtopologyDescription, ...]
    global_stores: tuple[GlobalStoreDescription, ...]

    def __str__(self) -> str:
        # TopologyDescription.toString: sub-topologies and global stores interleaved by id.
        out = ["Topologies:\n "]
        subs = list(self.subtopologies)
        globs = list(self.global_stores)
        expected = 0
        while subs and globs:
            out.append("  ")
            if subs[0].id == expected:
                out.append(str(subs.pop(0)))
            else:
                out.append(str(globs.pop(0)))
            expected += 1
        out.extend(f"  {s}" for s in subs)
        out.extend(f"  {g}" for g in globs)
        return "".join(out)

    def __repr__(self) -> str:
        return str(self)


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


# --- the physical graph Kafka would build ----------------------------------------------


@dataclass(slots=True)
class _Physical:
    kind: Literal["source", "processor", "sink"]
    name: str
    predecessors: tuple[str, ...] = ()
    topics: tuple[str, ...] = ()
    stores: tuple[str, ...] = ()
    is_global: bool = False


def _physical(topology: Topology) -> list[_Physical]:
    """Kafka's processor nodes in the order ``writeToTopology`` adds them."""
    stores_of: dict[str, list[str]] = {}
    for store in topology.stores:
        for user in (store.owner, *store.readers):
            stores_of.setdefault(user, []).append(store.name)
    out: list[_Physical] = []
    for node in topology.nodes:
        stores = tuple(stores_of.get(node.name, ()))
        if isinstance(node, StreamSource):
            out.append(_Physical("source", node.name, topics=node.topics))
        elif isinstance(node, (TableSource, GlobalTableSource)):
            is_global = isinstance(node, GlobalTableSource)
            out.append(
                _Physical("source", node.source_name, topics=node.topics, is_global=is_global)
            )
            out.append(
                _Physical(
                    "processor", node.name, (node.source_name,), stores=stores, is_global=is_global
                )
            )
        elif isinstance(node, Repartition):
            into_sink = node.parent
            if node.filter_name is not None:
                out.append(_Physical("processor", node.filter_name, (node.parent,)))
                into_sink = node.filter_name
            out.append(_Physical("sink", node.sink_name, (into_sink,), topics=(node.topic,)))
            out.append(_Physical("source", node.name, topics=(node.topic,)))
        elif isinstance(node, ToTopic):
            out.append(_Physical("sink", node.name, node.parents, topics=(node.topic,)))
        elif isinstance(node, TableTableJoin):
            # KTableImpl.doJoin: each side's processor looks the other side's store up;
            # the merge processor owns the result's store.
            out.append(_Physical("processor", node.this_name, (node.left,), stores=tuple(stores_of.get(node.this_name, ()))))
            out.append(_Physical("processor", node.other_name, (node.right,), stores=tuple(stores_of.get(node.other_name, ()))))
            out.append(_Physical("processor", node.name, (node.this_name, node.other_name), stores=stores))
        elif isinstance(node, (StreamTableJoin, StreamGlobalTableJoin)):
            out.append(_Physical("processor", node.name, (node.parent,), stores=stores))
        else:
            out.append(_Physical("processor", node.name, node.parents, stores=stores))
    return out


def _groups(nodes: list[_Physical]) -> list[list[_Physical]]:
    """Connected components without the topic edges, processors sharing a store counted
    as connected, numbered by first appearance (``InternalTopologyBuilder.makeNodeGroups``)."""
    root: dict[str, str] = {}
    store_users: dict[str, str] = {}

    def find(name: str) -> str:
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for node in nodes:
        root[node.name] = node.name
        for parent in node.predecessors:
            root[find(node.name)] = find(parent)
        for store in node.stores:
            if store in store_users:
                root[find(node.name)] = find(store_users[store])
            store_users.setdefault(store, node.name)
    groups: dict[str, list[_Physical]] = {}
    for node in nodes:
        groups.setdefault(find(node.name), []).append(node)
    return list(groups.values())


def describe(topology: Topology) -> TopologyDescription:
    subtopologies: list[SubtopologyDescription] = []
    global_stores: list[GlobalStoreDescription] = []
    for group_id, group in enumerate(_groups(_physical(topology))):
        if any(node.is_global for node in group):
            source, processor = group
            global_stores.append(
                GlobalStoreDescription(
                    group_id,
                    NodeDescription(
                        "source", source.name, topics=source.topics, successors=(processor.name,)
                    ),
                    NodeDescription(
                        "processor",
                        processor.name,
                        stores=processor.stores,
                        predecessors=(source.name,),
                    ),
                )
            )
        else:
            subtopologies.append(_describe_subtopology(group_id, group))
    return TopologyDescription(tuple(subtopologies), tuple(global_stores))


class _Node:
    __slots__ = ("name", "physical", "predecessors", "size", "successors")

    def __init__(self, physical: _Physical) -> None:
        self.name = physical.name
        self.physical = physical
        self.size = 1
        self.predecessors = _JavaTreeSet(_node_order)
        self.successors = _JavaTreeSet(_node_order)


def _node_order(a: _Node, b: _Node) -> int:
    # InternalTopologyBuilder.NodeComparator: larger subtree first, then by name.
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    return -1 if a.name < b.name else (1 if a.name > b.name else 0)


def _update_size(node: _Node, delta: int) -> None:
    node.size += delta
    for predecessor in node.predecessors:
        _update_size(predecessor, delta)


def _describe_subtopology(group_id: int, group: list[_Physical]) -> SubtopologyDescription:
    # describeSubtopology iterates a HashMap<String, node> filled from the group's HashSet.
    nodes = {p.name: _Node(p) for p in _java_hash_order([p.name for p in group], group)}
    for node in nodes.values():
        for predecessor_name in node.physical.predecessors:
            predecessor = nodes[predecessor_name]
            node.predecessors.add(predecessor)
            predecessor.successors.add(node)
            _update_size(predecessor, node.size)
    ordered = sorted(nodes.values(), key=lambda n: (-n.size, n.name))
    return SubtopologyDescription(
        group_id,
        tuple(
            NodeDescription(
                n.physical.kind,
                n.name,
                topics=tuple(_java_hash_order(n.physical.topics, n.physical.topics)),
                stores=tuple(_java_hash_order(n.physical.stores, n.physical.stores)),
                successors=tuple(s.name for s in n.successors),
                predecessors=tuple(p.name for p in n.predecessors),
            )
            for n in ordered
        ),
    )


# --- Java collection orders --------------------------------------------------------------


def _java_string_hash(text: str) -> int:
    """``String.hashCode()`` as an unsigned 32-bit int (over UTF-16 code units)."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def _java_hash_order(keys: Sequence[str], items: Iterable[T]) -> list[T]:
    """Iteration order of a ``java.util.HashSet``/``HashMap`` that received ``keys`` in this
    order: by bucket of the spread hash at the final capacity, then insertion order."""
    items = list(items)
    capacity = 16
    while len(keys) > capacity * 3 // 4:
        capacity *= 2

    def bucket(i: int) -> int:
        h = _java_string_hash(keys[i])
        return (h ^ (h >> 16)) & (capacity - 1)

    return [items[i] for i in sorted(range(len(keys)), key=lambda i: (bucket(i), i))]


class _Entry:
    __slots__ = ("black", "key", "left", "parent", "right")

    def __init__(self, key: _Node, parent: _Entry | None) -> None:
        self.key = key
        self.parent = parent
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.black = True


class _JavaTreeSet:
    """``java.util.TreeSet`` (a red-black tree, ``TreeMap.put``/``fixAfterInsertion``).

    Kafka's comparator reads sizes that change while the sets are being filled, so the
    iteration order depends on the tree's shape; a sorted list would not reproduce it.
    """

    __slots__ = ("_compare", "_root")

    def __init__(self, compare: Callable[[_Node, _Node], int]) -> None:
        self._compare = compare
        self._root: _Entry | None = None

    def add(self, key: _Node) -> None:
        if self._root is None:
            self._root = _Entry(key, None)
            return
        entry = self._root
        while True:
            parent = entry
            order = self._compare(key, entry.key)
            if order == 0:
                return
            child = entry.left if order < 0 else entry.right
            if child is None:
                break
            entry = child
        new = _Entry(key, parent)
        if order < 0:
            parent.left = new
        else:
            parent.right = new
        self._fix_after_insertion(new)

    def __iter__(self) -> Iterator[_Node]:
        stack: list[_Entry] = []
        entry = self._root
        while stack or entry is not None:
            while entry is not None:
                stack.append(entry)
                entry = entry.left
            entry = stack.pop()
            yield entry.key
            entry = entry.right

    # java.util.TreeMap's helpers; a missing node is black.
    @staticmethod
    def _black(e: _Entry | None) -> bool:
        return e is None or e.black

    def _rotate_left(self, p: _Entry) -> None:
        r = p.right
        assert r is not None
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry) -> None:
        left = p.left
        assert left is not None
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        left.parent = p.parent
        if p.parent is None:
            self._root = left
        elif p.parent.right is p:
            p.parent.right = left
        else:
            p.parent.left = left
        left.right = p
        p.parent = left

    def _fix_after_insertion(self, x: _Entry) -> None:
        x.black = False
        while x is not self._root and x.parent is not None and not x.parent.black:
            parent = x.parent
            grand = parent.parent
            assert grand is not None
            if parent is grand.left:
                uncle = grand.right
                if not self._black(uncle):
                    assert uncle is not None
                    parent.black = True
                    uncle.black = True
                    grand.black = False
                    x = grand
                else:
                    if x is parent.right:
                        x = parent
                        self._rotate_left(x)
                    assert x.parent is not None and x.parent.parent is not None
                    x.parent.black = True
                    x.parent.parent.black = False
                    self._rotate_right(x.parent.parent)
            else:
                uncle = grand.left
                if not self._black(uncle):
                    assert uncle is not None
                    parent.black = True
                    uncle.black = True
                    grand.black = False
                    x = grand
                else:
                    if x is parent.left:
                        x = parent
                        self._rotate_right(x)
                    assert x.parent is not None and x.parent.parent is not None
                    x.parent.black = True
                    x.parent.parent.black = False
                    self._rotate_left(x.parent.parent)
        assert self._root is not None
        self._root.black = True

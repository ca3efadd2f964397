"""What every rule is: built once per application for one plan node, applied to each
batch; a registry from plan node classes to their rules."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...plan.base import PlanNode

if TYPE_CHECKING:
    from ..batch import BatchContext
    from ..frames import Frame
    from ..physical import PhysicalPlan


class UnsupportedNodeError(NotImplementedError):
    """A plan node the runtime has no rule for."""


@dataclass(frozen=True)
class StoreUse:
    """A physical store a rule keeps: its name, what it holds, and the rule's node."""

    name: str
    kind: str
    owner: str


RULES: dict[type[PlanNode], type[Rule]] = {}


class Rule:
    """The rule of one plan node.

    ``__init__`` runs once per application (what depends on the node and the plan only);
    what depends on the input frames' types is built at the first :meth:`apply` and kept.
    ``nodes``: the plan node classes the rule serves (it registers itself for them).
    ``consumer``: the rule reads its inputs' rows itself (a store stage, a sink, an
    action), so each read counts as a use of the input's rows (see
    :meth:`~tablestream.runtime.physical.PhysicalPlan.uses`); other rules pass their
    inputs' rows on and their children's uses count instead.
    """

    nodes: ClassVar[tuple[type[PlanNode], ...]] = ()
    consumer: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for node_class in cls.__dict__.get("nodes", ()):
            RULES[node_class] = cls

    def __init__(self, node: Any, physical: PhysicalPlan):
        self.node = node
        self.physical = physical
        self.resolve = physical.topology.resolve
        self.store_names = tuple(s.name for s in self.stores(node, physical))

    @property
    def operator(self) -> str:
        """The operator name records this rule cannot process are logged under."""
        return self.node.name

    def apply(self, batch: BatchContext, *inputs: Frame) -> Frame | None:
        """This node's rows of one batch, from its parents' (in ``node.parents`` order)."""
        raise NotImplementedError

    # ------------------------------------------------------------ physical facts
    @classmethod
    def stores(cls, node: Any, physical: PhysicalPlan) -> tuple[StoreUse, ...]:
        """The physical stores this node's rule reads and writes."""
        return ()

    @classmethod
    def reads(cls, node: Any, parent: str) -> int:
        """How many times the rule reads ``parent``'s rows in one batch."""
        return sum(1 for p in node.parents if p == parent) or 1

    @classmethod
    def keeps(cls, node: Any) -> tuple[str, ...]:
        """Input tables the rule keeps a copy of itself (their sources need no store)."""
        return ()

    @classmethod
    def reads_every_version(cls, node: Any) -> tuple[str, ...]:
        """Input tables whose every record of a batch the rule needs (not only the last
        change per key)."""
        return ()

    #: The rule hands its input table's every version on, each mapped as its rows are,
    #: when a reader of its own table needs them (a table filter, a value mapper).
    passes_versions: ClassVar[bool] = False

    def hands_versions_on(self, frame: Frame) -> bool:
        """Whether this rule (one that ``passes_versions``) hands ``frame``'s every
        version on: its input has them and a reader of its table needs them."""
        return frame.versions is not None and self.physical.needs_every_version(self.node.name)


def rule_for(node: PlanNode) -> type[Rule]:
    """The rule class of a plan node; a clear error for a node without one."""
    try:
        return RULES[type(node)]
    except KeyError:
        raise UnsupportedNodeError(f"No runtime rule for plan node {type(node).__name__} ({node.name})") from None

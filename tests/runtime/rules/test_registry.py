"""Every plan node class has a runtime rule; a plan with a node that has none fails when
its runner is built, naming the node."""

from __future__ import annotations

import inspect
from dataclasses import dataclass

import pytest

import tablestream.plan as plan
from tablestream.plan import aggregate, joins, sinks, sources, stateless
from tablestream.plan.base import PlanNode
from tablestream.plan.topology import Topology
from tablestream.runtime.rules import RULES, UnsupportedNodeError
from tablestream.runtime.runner import BatchRunner
from tablestream.runtime.state import StoreLayout

# Classes the plan exports that are bases of nodes, never nodes themselves.
_BASES = {plan.PlanNode, plan.UnaryNode, plan.AggregateNode, aggregate.ByOffset, aggregate.Collection}


def test_every_node_class_the_plan_exports_has_a_rule():
    nodes = {
        obj for module in (sources, stateless, aggregate, joins, sinks) for name in module.__all__
        if inspect.isclass(obj := getattr(module, name)) and issubclass(obj, PlanNode) and obj not in _BASES
    }
    assert len(nodes) == 38
    assert sorted(n.__name__ for n in nodes if n not in RULES) == []


@dataclass(frozen=True, slots=True)
class Unknown(PlanNode):
    """A node no rule serves."""


def test_a_node_without_a_rule_fails_when_the_runner_is_built(tmp_path):
    topology = Topology(nodes=(Unknown(name="UNKNOWN-0000000000"),))
    with pytest.raises(UnsupportedNodeError) as failed:
        BatchRunner(topology, StoreLayout(tmp_path / "local", tmp_path / "durable"), 1)
    assert str(failed.value) == "No runtime rule for plan node Unknown (UNKNOWN-0000000000)"

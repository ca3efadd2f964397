"""One rule per plan node, in modules that mirror :mod:`tablestream.plan`: sources,
stateless stream operators, tables, aggregation, joins, sinks. Each rule class registers
itself for the node classes it serves; :func:`rule_for` finds a node's rule and names a
node without one."""

from . import aggregate, joins, sinks, sources, stateless, tables
from .base import RULES, Rule, StoreUse, UnsupportedNodeError, rule_for

__all__ = [
    "RULES",
    "Rule",
    "StoreUse",
    "UnsupportedNodeError",
    "aggregate",
    "joins",
    "rule_for",
    "sinks",
    "sources",
    "stateless",
    "tables",
]

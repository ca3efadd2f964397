"""Aggregation rules: a table's rows re-keyed by group (:mod:`.group_by`), and the
aggregates that consume them or a grouped stream: count, sum, avg
(:mod:`.numeric`), min, max (:mod:`.extreme`), a user's reduce or aggregate
(:mod:`.fold`)."""

from . import extreme, fold, group_by, numeric

__all__ = ["extreme", "fold", "group_by", "numeric"]

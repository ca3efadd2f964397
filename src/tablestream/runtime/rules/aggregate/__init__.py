"""Aggregation rules: a table's rows re-keyed by group (:mod:`.group_by`), and the
aggregates that consume them or a grouped stream: count, sum, avg
(:mod:`.numeric`), min, max (:mod:`.extreme`), latest and earliest by offset
(:mod:`.offset`), collect_list, collect_set, count_distinct (:mod:`.collect`), a user's
reduce or aggregate (:mod:`.fold`)."""

from . import collect, extreme, fold, group_by, numeric, offset

__all__ = ["collect", "extreme", "fold", "group_by", "numeric", "offset"]

"""Pull queries: ``SELECT ... FROM table [WHERE ...]`` without ``EMIT CHANGES`` reads the
current rows of a materialized table and ends.

As in ksqlDB, a table is materialized (queryable) when a query keeps it: the table of a
``CREATE TABLE ... AS SELECT`` (:func:`materialized_topology` has its query keep it
under the table's name) or a ``CREATE SOURCE TABLE``. A pull query on a stream, on a
table declared over a topic, or with a join, ``GROUP BY``, ``PARTITION BY`` or
``HAVING`` is refused with ksqlDB's text. The rows come from the materialized table
(:func:`read_materialized` reads an application's Delta table without Spark; the test
driver keeps its tables in memory); the projection and ``WHERE`` are evaluated on
them: column references, literals, comparisons, ``[NOT] IN``, ``[NOT] BETWEEN``,
``IS [NOT] NULL``, ``AND``, ``OR``, ``NOT``, and ``ROWTIME``.
"""

from __future__ import annotations

import dataclasses
import json
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from tablestream.plan.sinks import ToTopic
from tablestream.plan.stateless import ToStream
from tablestream.plan.topology import Store, Topology
from tablestream.sql import statements as st
from tablestream.sql.catalog import QueryInfo, SourceInfo
from tablestream.sql.dialect import node_position
from tablestream.sql.errors import SqlError
from tablestream.sql.expressions import format_expression, ksql_name
from tablestream.sql.isolated import StatementCompiler

__all__ = ["PULL_QUERY_SYNTAX_HELP", "PullQuery", "materialized_topology", "read_materialized"]

PULL_QUERY_SYNTAX_HELP = " See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a push query."

Row = tuple[Any, Any, int | None]  # key, value, timestamp of a table's current row


def materialized_topology(topology: Topology, tables: Mapping[str, str]) -> Topology:
    """``topology`` with the table each sink in ``tables`` (topic -> table name) writes
    kept as a materialized table of that name: the table node before the sink's
    ``ToStream`` becomes queryable under the name (its store renamed to it, or a store
    of that name added). As ksqlDB does, every ``CREATE TABLE ... AS SELECT`` is
    queryable this way.

    >>> from tablestream.sql import compile_sql
    >>> compiled = compile_sql(
    ...     "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='s', value_format='json');"
    ...     "CREATE TABLE c AS SELECT v, COUNT(*) AS n FROM s GROUP BY v;")
    >>> [(s.name, s.queryable) for s in materialized_topology(compiled.topology, {"C": "C"}).stores]
    [('KSTREAM-AGGREGATE-STATE-STORE-0000000002', False), ('C', True)]
    """
    nodes = list(topology.nodes)
    stores = list(topology.stores)
    by_name = {n.name: i for i, n in enumerate(nodes)}
    for sink in [n for n in nodes if isinstance(n, ToTopic) and n.topic in tables]:
        parent = topology.node(sink.parent)
        if not isinstance(parent, ToStream):
            continue
        index = by_name[parent.parent]
        node = nodes[index]
        if not hasattr(node, "queryable") or node.queryable:
            continue
        name = tables[sink.topic]
        old = next((i for i, s in enumerate(stores) if s.owner == node.name and s.name == node.store), None)
        nodes[index] = dataclasses.replace(node, store=name, queryable=True)
        if old is not None:
            stores[old] = dataclasses.replace(stores[old], name=name, queryable=True)
        else:
            owners = [by_name[s.owner] if s.owner in by_name else -1 for s in stores]
            at = next((i for i, o in enumerate(owners) if o > index), len(stores))
            stores.insert(at, Store(name, "table", node.name, True))
    return Topology(tuple(nodes), tuple(stores), dict(topology.functions))


def read_materialized(path: str, storage_options: dict[str, str] | None = None) -> list[Row]:
    """The current rows of a materialized table's Delta changelog (``key, value, ts,
    batch, seq``): the latest change per key, deleted keys left out. No Spark."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(path, storage_options):
        return []
    changes = DeltaTable(path, storage_options=storage_options).to_pyarrow_table(columns=["key", "value", "ts", "batch", "seq"])
    latest: dict[Any, tuple[tuple[int, int], Row]] = {}
    for change in changes.to_pylist():
        order = (change["batch"], change["seq"])
        key = _hashable(change["key"])
        if key not in latest or latest[key][0] <= order:
            latest[key] = (order, (change["key"], change["value"], change["ts"]))
    return [row for _, row in latest.values() if row[1] is not None]


def _hashable(value: Any) -> Any:
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


@dataclass
class PullQuery:
    """A pull query checked against the catalog: the table it reads (``source``), the
    query that keeps it (``query_id``) and the names of its result columns."""

    statement: st.SelectStatement
    sql: str
    source: SourceInfo
    query_id: str
    columns: tuple[str, ...]

    @classmethod
    def plan(
        cls,
        statement: st.SelectStatement,
        sql: str,
        sources: Mapping[str, SourceInfo],
        queries: Sequence[QueryInfo],
        *,
        properties: Mapping[str, str] | None = None,
    ) -> PullQuery:
        """Check ``statement`` (a ``SELECT`` without ``EMIT``) as ksqlDB does: ksqlDB's
        errors for a stream, a table no query keeps, and the clauses pull queries lack."""
        q = statement.query

        def fail(where: st.Position | exp.Expr, message: str) -> SqlError:
            position = where if isinstance(where, st.Position) else node_position(where, sql) or statement.position
            return SqlError(message, line=position.line, column=position.column, statement=statement.text)

        if q.emit == "FINAL":
            raise fail(q.position, "EMIT FINAL is only supported for windowed aggregations, which are not supported yet")
        info = sources.get(q.source.name.text)
        if info is None:
            raise fail(q.source.name.position, f"{q.source.name.text} does not exist")
        for clause, present in (("JOIN", bool(q.joins)), ("GROUP BY", bool(q.group_by)),
                                ("PARTITION BY", bool(q.partition_by)), ("HAVING", q.having is not None)):
            if present:
                raise fail(q.position, f"Pull queries don't support {clause} clauses.{PULL_QUERY_SYNTAX_HELP}")
        if info.kind == "STREAM":
            raise fail(q.position, "Pull queries on streams are disabled. To create a push query on the stream, add EMIT CHANGES to the end.")
        keeper = next((x for x in queries if x.target == info.name and (x.id.startswith(("CTAS_", "CST_")))), None)
        if keeper is None:
            raise fail(
                q.position,
                f"The `{info.name}` table isn't queryable. To derive a queryable table, you can do "
                f"'CREATE TABLE QUERYABLE_{info.name} AS SELECT * FROM {info.name}'.{PULL_QUERY_SYNTAX_HELP}",
            )
        # The projection and WHERE are checked (names, types) as the push query's.
        checker = StatementCompiler(sources, number=0, properties=properties)
        push = dataclasses.replace(statement, query=dataclasses.replace(q, emit="CHANGES", limit=None))
        checker.compile_statement(push, sql)
        pull = cls(statement, sql, info, keeper.id, checker.result.queries[-1].columns)
        pull.evaluate_on([])  # expressions outside what pull queries evaluate fail now
        return pull

    def evaluate_on(self, rows: Iterable[Row]) -> list[tuple[Any, ...]]:
        """The result rows over a table's current ``(key, value, timestamp)`` rows,
        ordered by key, up to ``LIMIT``."""
        q = self.statement.query
        alias = q.source.alias_text
        info = self.source
        evaluate = _Evaluator(self, alias)
        projection: list[Callable[[dict[str, Any]], Any]] = []
        for item in q.select:
            if isinstance(item, st.SelectStar):
                projection += [_getter(c.name) for c in (*info.key_columns, *info.value_columns)]
            else:
                projection.append(evaluate.compile(item.expression))
        where = evaluate.compile(q.where) if q.where is not None else None
        out = []
        for key, value, ts in sorted(rows, key=lambda r: _order(r[0])):
            row = self._columns(key, value, ts)
            if where is not None and where(row) is not True:
                continue
            out.append(tuple(f(row) for f in projection))
            if q.limit is not None and len(out) >= q.limit:
                break
        return out

    def _columns(self, key: Any, value: Any, ts: int | None) -> dict[str, Any]:
        info = self.source
        row: dict[str, Any] = {"ROWTIME": ts}
        if len(info.key_columns) == 1:
            row[info.key_columns[0].name] = key
        else:
            row.update({c.name: (key or {}).get(c.name) for c in info.key_columns})
        if info.wrapped:
            row.update({c.name: (value or {}).get(c.name) for c in info.value_columns})
        elif info.value_columns:
            row[info.value_columns[0].name] = value
        return row


def _getter(name: str) -> Callable[[dict[str, Any]], Any]:
    return lambda row: row.get(name)


def _order(key: Any) -> tuple:
    if key is None:
        return (0, "")
    if isinstance(key, bool):
        return (1, int(key))
    if isinstance(key, (int, float, Decimal)):
        return (2, key)
    if isinstance(key, dict):
        return (3, json.dumps(key, sort_keys=True, default=str))
    return (4, str(key))


_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.GT: operator.gt,
    exp.GTE: operator.ge, exp.LT: operator.lt, exp.LTE: operator.le,
}


class _Evaluator:
    """Pull-query expressions as Python functions of a row (SQL's three-valued logic)."""

    def __init__(self, pull: PullQuery, alias: str):
        self.pull = pull
        self.alias = alias

    def fail(self, node: exp.Expr) -> SqlError:
        position = node_position(node, self.pull.sql) or self.pull.statement.position
        return SqlError(
            f"Pull queries evaluate column references, literals, comparisons, IN, BETWEEN, IS NULL, "
            f"AND, OR and NOT only (for now), got {format_expression(node)}",
            line=position.line, column=position.column, statement=self.pull.statement.text,
        )

    def compile(self, node: exp.Expr) -> Callable[[dict[str, Any]], Any]:
        if isinstance(node, exp.Paren):
            return self.compile(node.this)
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            return _getter(ksql_name(node.this))
        if isinstance(node, exp.Literal):
            value = node.this if node.is_string else _number(node.this)
            return lambda row: value
        if isinstance(node, exp.Boolean):
            flag = bool(node.this)
            return lambda row: flag
        if isinstance(node, exp.Null):
            return lambda row: None
        if isinstance(node, exp.Neg):
            inner = self.compile(node.this)
            return lambda row: None if (v := inner(row)) is None else -v
        if type(node) in _COMPARE:
            compare, left, right = _COMPARE[type(node)], self.compile(node.this), self.compile(node.expression)
            return lambda row: _both(left(row), right(row), compare)
        if isinstance(node, exp.And):
            left, right = self.compile(node.this), self.compile(node.expression)
            return lambda row: _and(left(row), right(row))
        if isinstance(node, exp.Or):
            left, right = self.compile(node.this), self.compile(node.expression)
            return lambda row: _not(_and(_not(left(row)), _not(right(row))))
        if isinstance(node, exp.Not):
            inner = self.compile(node.this)
            return lambda row: _not(inner(row))
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            inner = self.compile(node.this)
            return lambda row: inner(row) is None
        if isinstance(node, exp.In) and node.expressions and not node.args.get("query"):
            inner, options = self.compile(node.this), [self.compile(e) for e in node.expressions]
            return lambda row: _in(inner(row), [o(row) for o in options])
        if isinstance(node, exp.Between):
            inner, low, high = self.compile(node.this), self.compile(node.args["low"]), self.compile(node.args["high"])
            return lambda row: _and(_both(inner(row), low(row), operator.ge), _both(inner(row), high(row), operator.le))
        raise self.fail(node)


def _number(text: str) -> int | float | Decimal:
    if any(c in text for c in "eE"):
        return float(text)
    return Decimal(text) if "." in text else int(text)


def _both(left: Any, right: Any, compare: Callable[[Any, Any], bool]) -> bool | None:
    if left is None or right is None:
        return None
    return compare(left, right)


def _and(left: bool | None, right: bool | None) -> bool | None:
    if left is False or right is False:
        return False
    if left is None or right is None:
        return None
    return True


def _not(value: bool | None) -> bool | None:
    return None if value is None else not value


def _in(value: Any, options: list[Any]) -> bool | None:
    if value is None:
        return None
    if value in options:
        return True
    return None if None in options else False

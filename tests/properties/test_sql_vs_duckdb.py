"""ksqlDB statements against DuckDB: random persistent queries from a small grammar
(projections with arithmetic, ``CASE`` and ``COALESCE``; ``WHERE``; ``GROUP BY`` with
``COUNT``, ``SUM``, ``AVG``, ``MIN`` and ``MAX``; stream-table, primary-key and
foreign-key joins) over one stream and two tables, run by ``TestDriver.from_sql`` on
random changelogs (inserts, updates, tombstones, null keys and null columns) in random
batches. After every batch:

- each table a query creates (its output changelog folded by key) equals the same SQL
  run by DuckDB over the inputs' current contents (a table's current rows, the stream's
  records so far), and the batch emitted at most one record per key, none redundant;
- each stream a query creates holds, as a multiset, the rows DuckDB computes over the
  stream's records so far; a stream-table join meets the table as of each record
  (DuckDB's ``ASOF`` join over the table's changelog: every record has its own
  timestamp, so "as of" is "after every earlier record").

One statement text serves both engines: the grammar keeps to SQL that ksqlDB and DuckDB
read alike. Stream records always have a value: ksqlDB passes a stream's null value
through a projection as a null row, which no SQL over the stream's rows expresses.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import duckdb
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

EXAMPLES = int(os.environ.get("TABLESTREAM_PROPERTY_EXAMPLES", "4"))

SOURCES = """
CREATE STREAM ORDERS (OID STRING KEY, CUST STRING, QTY INT, AMT BIGINT)
  WITH (kafka_topic='orders', value_format='json', partitions=2);
CREATE TABLE CUSTOMERS (ID STRING PRIMARY KEY, TIER STRING, CREDIT INT)
  WITH (kafka_topic='customers', value_format='json', partitions=2);
CREATE TABLE ITEMS (ID STRING PRIMARY KEY, CUST STRING, N INT)
  WITH (kafka_topic='items', value_format='json', partitions=2);
"""

# DuckDB's copies of the inputs. Every record gets its own timestamp and sequence
# number; CUSTOMERS_LOG is the customers' changelog (a tombstone: DELETED, null columns)
# that a stream-table join reads as of each order.
ORACLE_TABLES = """
CREATE TABLE ORDERS (SEQ BIGINT, OID VARCHAR, CUST VARCHAR, QTY INTEGER, AMT BIGINT);
CREATE TABLE CUSTOMERS (ID VARCHAR, TIER VARCHAR, CREDIT INTEGER);
CREATE TABLE ITEMS (ID VARCHAR, CUST VARCHAR, N INTEGER);
CREATE TABLE CUSTOMERS_LOG (SEQ BIGINT, ID VARCHAR, DELETED BOOLEAN, TIER VARCHAR, CREDIT INTEGER);
"""

CUSTOMER_KEYS = ["a", "b", "c", "d"]
ITEM_KEYS = ["a", "b", "c", "d", "e"]  # shares keys with CUSTOMERS: the primary-key joins
ORDER_KEYS = ["o1", "o2", "o3"]
TIERS = ["gold", "silver"]


# --- expressions ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Typed:
    text: str
    type: str  # "INT", "BIGINT", "STRING"


def _maybe(strategy, one_in: int):
    """``strategy``, or None about once in ``one_in`` draws (shrinks towards a value)."""
    return st.tuples(st.integers(0, one_in - 1), strategy).map(
        lambda drawn: None if drawn[0] == one_in - 1 else drawn[1]
    )


def _literal(n: int) -> Typed:
    return Typed(f"({n})" if n < 0 else str(n), "INT")  # never "- -3": "--" starts a comment


def _widest(*types: str) -> str:
    return "BIGINT" if "BIGINT" in types else "INT"


def _as(typed: Typed, target: str) -> str:
    return typed.text if typed.type == target else f"CAST({typed.text} AS {target})"


@st.composite
def numbers(draw, columns: list[Typed], depth: int = 2) -> Typed:
    """An INT or BIGINT expression over ``columns``: small enough never to overflow."""
    leaves = st.one_of(st.sampled_from(columns), st.integers(-3, 9).map(_literal))
    if depth == 0:
        return draw(leaves)
    kind = draw(st.sampled_from(["leaf", "leaf", "arith", "arith", "abs", "coalesce", "case"]))
    if kind == "leaf":
        return draw(leaves)
    if kind == "arith":
        a, b = draw(numbers(columns, depth - 1)), draw(numbers(columns, depth - 1))
        op = draw(st.sampled_from(["+", "-", "*"]))
        return Typed(f"({a.text} {op} {b.text})", _widest(a.type, b.type))
    if kind == "abs":
        a = draw(numbers(columns, depth - 1))
        return Typed(f"ABS({a.text})", a.type)
    if kind == "coalesce":
        a = draw(st.sampled_from(columns))
        n = draw(st.integers(-1, 5))
        return Typed(f"COALESCE({a.text}, {_as(Typed(str(n), 'INT'), a.type)})", a.type)
    condition = draw(conditions(columns, [], depth - 1))
    a, b = draw(numbers(columns, depth - 1)), draw(numbers(columns, depth - 1))
    target = _widest(a.type, b.type)
    return Typed(f"CASE WHEN {condition} THEN {_as(a, target)} ELSE {_as(b, target)} END", target)


@st.composite
def strings(draw, columns: list[Typed], number_columns: list[Typed]) -> Typed:
    column = draw(st.sampled_from(columns))
    kind = draw(st.sampled_from(["column", "coalesce", "ucase", "case"]))
    if kind == "column":
        return column
    if kind == "coalesce":
        return Typed(f"COALESCE({column.text}, 'none')", "STRING")
    if kind == "ucase":
        return Typed(f"UCASE({column.text})", "STRING")
    condition = draw(conditions(number_columns, columns, 0))
    return Typed(f"CASE WHEN {condition} THEN 'yes' ELSE {column.text} END", "STRING")


@st.composite
def conditions(draw, columns: list[Typed], string_columns: list[Typed], depth: int = 1) -> str:
    kinds = ["compare", "compare", "null", "between", "in"] + (["string"] if string_columns else [])
    if depth > 0:
        kinds += ["and", "or", "not"]
    kind = draw(st.sampled_from(kinds))
    if kind == "compare":
        a = draw(numbers(columns, 1))
        op = draw(st.sampled_from(["<", "<=", "=", "<>", ">", ">="]))
        return f"«{a.text} {op} {draw(st.integers(-2, 10))}»"
    if kind == "null":
        column = draw(st.sampled_from(columns + string_columns))
        return f"{column.text} IS {draw(st.sampled_from(['', 'NOT ']))}NULL"
    if kind == "between":
        low = draw(st.integers(-2, 6))
        return f"{draw(st.sampled_from(columns)).text} BETWEEN {low} AND {low + draw(st.integers(0, 6))}"
    if kind == "in":
        values = draw(st.lists(st.integers(0, 9), min_size=1, max_size=3, unique=True))
        return f"{draw(st.sampled_from(columns)).text} IN ({', '.join(map(str, values))})"
    if kind == "string":
        column = draw(st.sampled_from(string_columns))
        return f"«{column.text} = '{draw(st.sampled_from(TIERS))}'»"
    if kind == "not":
        return f"NOT ({draw(conditions(columns, string_columns, depth - 1))})"
    a = draw(conditions(columns, string_columns, depth - 1))
    b = draw(conditions(columns, string_columns, depth - 1))
    return f"({a} {kind.upper()} {b})"


@st.composite
def projections(draw, columns: list[Typed], string_columns: list[Typed]) -> list[str]:
    """One to three value expressions, aliased ``E0``, ``E1``, ...."""
    items = []
    for i in range(draw(st.integers(1, 3))):
        if string_columns and draw(st.booleans()):
            expr = draw(strings(string_columns, columns))
        else:
            expr = draw(numbers(columns))
        items.append(f"{expr.text} AS E{i}")
    return items


# --- queries ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Query:
    """A persistent query: its ksqlDB statement, and DuckDB's SQL for its current result
    (the key first, then the value columns under their output names)."""

    kind: str  # "TABLE" or "STREAM"
    select: str  # after "SELECT"
    oracle: str

    def statement(self, name: str) -> str:
        return f"CREATE {self.kind} {name} AS SELECT {_compared(self.select, '(', ')')};"

    @property
    def duckdb(self) -> str:
        return _compared(self.oracle, "COALESCE((", "), FALSE)")


def _compared(text: str, before: str, after: str) -> str:
    """``text`` with its comparisons (drawn between « and ») as ksqlDB's, or in DuckDB
    made false where a side is null, as ksqlDB's comparisons are."""
    return text.replace("«", before).replace("»", after)


def _where(condition: str | None) -> str:
    return f" WHERE {condition}" if condition else ""


ORDER_NUMBERS = [Typed("QTY", "INT"), Typed("AMT", "BIGINT")]
TABLE_COLUMNS = {
    "CUSTOMERS": ([Typed("CREDIT", "INT")], [Typed("TIER", "STRING")]),
    "ITEMS": ([Typed("N", "INT")], [Typed("CUST", "STRING")]),
}


@st.composite
def stream_selects(draw) -> Query:
    items = draw(projections(ORDER_NUMBERS, [Typed("CUST", "STRING")]))
    where = _where(draw(st.none() | conditions(ORDER_NUMBERS, [Typed("CUST", "STRING")])))
    select = f"OID, {', '.join(items)} FROM ORDERS{where}"
    return Query("STREAM", select, f"SELECT {select}")


@st.composite
def table_selects(draw) -> Query:
    table = draw(st.sampled_from(sorted(TABLE_COLUMNS)))
    numbers_, strings_ = TABLE_COLUMNS[table]
    items = draw(projections(numbers_, strings_))
    where = _where(draw(st.none() | conditions(numbers_, strings_)))
    select = f"ID, {', '.join(items)} FROM {table}{where}"
    return Query("TABLE", select, f"SELECT {select}")


@st.composite
def aggregates(draw, columns: list[Typed], extremes: bool) -> list[tuple[str, str]]:
    """One to three aggregates, aliased ``A0``, ...: (ksqlDB, DuckDB). ``SUM`` of only
    nulls is 0 in ksqlDB."""
    kinds = ["COUNT(*)", "COUNT", "SUM", "AVG"] + (["MIN", "MAX"] if extremes else [])
    out = []
    for i in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(kinds))
        if kind == "COUNT(*)":
            out.append((f"COUNT(*) AS A{i}", f"count(*) AS A{i}"))
            continue
        arg = draw(numbers(columns, 1)).text
        oracle = f"coalesce(sum({arg}), 0)" if kind == "SUM" else f"{kind.lower()}({arg})"
        out.append((f"{kind}({arg}) AS A{i}", f"{oracle} AS A{i}"))
    return out


@st.composite
def group_bys(draw) -> Query:
    """A stream's or a table's aggregation by a column or an expression (rows whose group
    is null are skipped, as ksqlDB skips them), with an optional ``HAVING``."""
    source = draw(st.sampled_from(["ORDERS", "CUSTOMERS", "ITEMS"]))
    if source == "ORDERS":
        group = draw(st.sampled_from(["CUST", "OID", "UCASE(CUST)"]))
        columns, strings_ = ORDER_NUMBERS, [Typed("CUST", "STRING")]
    else:
        column = "TIER" if source == "CUSTOMERS" else "CUST"
        group = draw(st.sampled_from([column, f"UCASE({column})"]))
        columns, strings_ = TABLE_COLUMNS[source]
    item = group if group.isidentifier() else f"{group} AS G"
    aggs = draw(aggregates(columns, extremes=source == "ORDERS"))
    condition = draw(st.none() | conditions(columns, strings_))
    having = draw(st.sampled_from(["", " HAVING COUNT(*) > 1", f" HAVING SUM({columns[0].text}) > 4"]))
    select = f"{item}, {', '.join(a for a, _ in aggs)} FROM {source}{_where(condition)} GROUP BY {group}{having}"
    filters = " AND ".join(f"({c})" for c in (condition, f"{group} IS NOT NULL") if c)
    oracle = (
        f"SELECT {item}, {', '.join(o for _, o in aggs)} FROM {source} WHERE {filters}"
        f" GROUP BY {group}{having}"
    )
    return Query("TABLE", select, oracle)


JOINED = {
    "O": ([Typed("O.QTY", "INT"), Typed("O.AMT", "BIGINT")], [Typed("O.CUST", "STRING")]),
    "C": ([Typed("C.CREDIT", "INT")], [Typed("C.TIER", "STRING")]),
    "I": ([Typed("I.N", "INT")], [Typed("I.CUST", "STRING")]),
}


@st.composite
def joins(draw) -> Query:
    """A stream-table join (ORDERS with CUSTOMERS as of each order), a foreign-key join
    (ITEMS to CUSTOMERS by ITEMS.CUST) or a primary-key join (ITEMS with CUSTOMERS)."""
    shape = draw(st.sampled_from(["stream-table", "foreign-key", "primary-key"]))
    left = "O" if shape == "stream-table" else "I"
    numbers_ = JOINED[left][0] + JOINED["C"][0]
    strings_ = JOINED[left][1] + JOINED["C"][1]
    projected = draw(projections(numbers_, strings_))
    items = ", ".join(projected)
    condition = draw(st.none() | conditions(numbers_, strings_))
    if shape == "stream-table":
        # The join's key column projected a second time is refused, as ksqlDB refuses it
        # (tests/sql/test_qtt_errors.py has the error).
        assume(not any(item.startswith("O.CUST AS ") for item in projected))
        kind = draw(st.sampled_from(["JOIN", "LEFT JOIN"]))
        select = f"O.CUST, {items} FROM ORDERS O {kind} CUSTOMERS C ON O.CUST = C.ID{_where(condition)}"
        matched = "C.SEQ IS NOT NULL AND NOT C.DELETED"
        filters = " AND ".join(
            f"({c})" for c in (condition, matched if kind == "JOIN" else None) if c
        )
        oracle = (
            f"SELECT O.CUST, {items} FROM ORDERS O ASOF LEFT JOIN CUSTOMERS_LOG C"
            f" ON O.CUST = C.ID AND O.SEQ > C.SEQ{_where(filters)}"
        )
        return Query("STREAM", select, oracle)
    if shape == "foreign-key":
        kind = draw(st.sampled_from(["JOIN", "LEFT JOIN"]))
        select = f"I.ID, {items} FROM ITEMS I {kind} CUSTOMERS C ON I.CUST = C.ID{_where(condition)}"
        return Query("TABLE", select, f"SELECT {select}")
    kind = draw(st.sampled_from(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL OUTER JOIN"]))
    key, oracle_key = {
        "JOIN": ("I.ID", "I.ID"),
        "LEFT JOIN": ("I.ID", "I.ID"),
        "RIGHT JOIN": ("C.ID", "C.ID"),
        "FULL OUTER JOIN": ("ROWKEY AS ID", "coalesce(I.ID, C.ID) AS ID"),
    }[kind]
    rest = f"{items} FROM ITEMS I {kind} CUSTOMERS C ON I.ID = C.ID{_where(condition)}"
    return Query("TABLE", f"{key}, {rest}", f"SELECT {oracle_key}, {rest}")


# Every script: a projection, an aggregation and a join.
queries = st.tuples(st.one_of(stream_selects(), table_selects()), group_bys(), joins()).map(list)

# --- changelogs -------------------------------------------------------------------------------
order_values = st.fixed_dictionaries(
    {
        "CUST": _maybe(st.sampled_from(CUSTOMER_KEYS + ["z"]), 6),  # "z": no such customer
        "QTY": _maybe(st.integers(-3, 12), 5),
        "AMT": _maybe(st.integers(0, 20), 5),
    }
)
customer_values = _maybe(  # None: a tombstone
    st.fixed_dictionaries(
        {"TIER": _maybe(st.sampled_from(TIERS), 5), "CREDIT": _maybe(st.integers(-2, 9), 5)}
    ),
    4,
)
item_values = _maybe(
    st.fixed_dictionaries(
        {"CUST": _maybe(st.sampled_from(CUSTOMER_KEYS + ["z"]), 5), "N": _maybe(st.integers(0, 9), 5)}
    ),
    4,
)
changes = st.lists(
    st.one_of(
        st.tuples(st.just("orders"), _maybe(st.sampled_from(ORDER_KEYS), 8), order_values),
        st.tuples(st.just("customers"), _maybe(st.sampled_from(CUSTOMER_KEYS), 10), customer_values),
        st.tuples(st.just("items"), _maybe(st.sampled_from(ITEM_KEYS), 10), item_values),
    ),
    min_size=4,
    max_size=16,
)
batch_sizes = st.lists(st.integers(1, 8), min_size=1, max_size=4)


# --- the oracle and the runner ----------------------------------------------------------------
class Inputs:
    """The inputs as DuckDB sees them: the stream's records so far, each table's current
    rows, the customers' changelog."""

    def __init__(self):
        self.orders: list[tuple] = []
        self.tables: dict[str, dict[str, dict]] = {"customers": {}, "items": {}}
        self.customers_log: list[tuple] = []
        self.seq = 0

    def apply(self, topic: str, key: Any, value: dict | None) -> None:
        self.seq += 1
        if topic == "orders":
            self.orders.append((self.seq, key, value["CUST"], value["QTY"], value["AMT"]))
            return
        if key is None:  # a table record needs a key: dropped
            return
        if value is None:
            self.tables[topic].pop(key, None)
        else:
            self.tables[topic][key] = value
        if topic == "customers":
            row = value or {"TIER": None, "CREDIT": None}
            self.customers_log.append((self.seq, key, value is None, row["TIER"], row["CREDIT"]))

    def query(self, sql: str) -> list[tuple]:
        con = duckdb.connect()
        try:
            con.execute(ORACLE_TABLES)
            rows = {
                "ORDERS": self.orders,
                "CUSTOMERS": [(k, v["TIER"], v["CREDIT"]) for k, v in self.tables["customers"].items()],
                "ITEMS": [(k, v["CUST"], v["N"]) for k, v in self.tables["items"].items()],
                "CUSTOMERS_LOG": self.customers_log,
            }
            for table, values in rows.items():
                if values:
                    marks = ", ".join("?" * len(values[0]))
                    con.executemany(f"INSERT INTO {table} VALUES ({marks})", values)
            result = con.execute(sql)
            names = [d[0] for d in result.description]
            return [(row[0], dict(zip(names[1:], row[1:], strict=True))) for row in result.fetchall()]
        finally:
            con.close()


def _close(value: Any) -> Any:
    """AVG is a DOUBLE: compared to 9 significant digits."""
    if isinstance(value, float):
        return float(f"{value:.9g}") if math.isfinite(value) else value
    if isinstance(value, dict):
        return {k: _close(v) for k, v in value.items()}
    return value


def _key(item: tuple) -> str:
    return repr(item)


def _run(spark, chosen: list[Query], log, sizes, partitions: int) -> None:
    names = [f"Q{i}" for i in range(len(chosen))]
    script = SOURCES + "\n".join(q.statement(n) for q, n in zip(chosen, names, strict=True))
    inputs = Inputs()
    tables: dict[str, dict] = {n: {} for n, q in zip(names, chosen, strict=True) if q.kind == "TABLE"}
    streams: dict[str, list] = {n: [] for n, q in zip(names, chosen, strict=True) if q.kind == "STREAM"}
    with TestDriver.from_sql(script, spark=spark, batched=True, partitions=partitions) as driver:
        read = set(driver.runner.topics)  # the topics the queries read; the others are not fed
        topics = {t: driver.create_input_topic(t) for t in ("orders", "customers", "items") if t in read}
        outputs = {n: driver.sql_output(n) for n in names}
        position = 0
        for size in sizes * (len(log) // max(sum(sizes), 1) + 1):
            if position >= len(log):
                break
            for topic, key, value in log[position : position + size]:
                inputs.apply(topic, key, value)
                if topic in topics:
                    topics[topic].pipe_input(key, value, 1_000 + inputs.seq)
            position += size
            driver.advance()
            context = (script, log[:position])
            for name, query in zip(names, chosen, strict=True):
                records = outputs[name].read_records()
                expected = [(k, _close(v)) for k, v in inputs.query(query.duckdb)]
                if query.kind == "STREAM":
                    streams[name] += [(r.key, _close(r.value)) for r in records]
                    assert sorted(streams[name], key=_key) == sorted(expected, key=_key), (name, context)
                    continue
                keys = [repr(r.key) for r in records]
                assert len(keys) == len(set(keys)), (name, "more than one record per key", records, context)
                current = tables[name]
                for r in records:
                    value = _close(r.value)
                    assert current.get(r.key) != value, (name, "a redundant record", r, context)
                    if value is None:
                        current.pop(r.key)
                    else:
                        current[r.key] = value
                assert len(expected) == len({repr(k) for k, _ in expected}), (name, expected)
                assert current == dict(expected), (name, context)


@settings(max_examples=EXAMPLES * 6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chosen=queries, log=changes, sizes=batch_sizes)
def test_sql_queries_equal_duckdb_after_every_batch(spark, chosen, log, sizes):
    _run(spark, chosen, log, sizes, partitions=2)


def test_a_table_join_projecting_only_a_literal(spark):
    """The smallest example the property test found, with a join result that comes and goes."""
    join = "I.ID, 0 AS E0 FROM ITEMS I JOIN CUSTOMERS C ON I.CUST = C.ID"
    log = [
        ("customers", "a", {"TIER": "gold", "CREDIT": 0}),
        ("items", "i1", {"CUST": "a", "N": 1}),
        ("items", "i1", None),
    ]
    _run(spark, [Query(kind="TABLE", select=join, oracle="SELECT " + join)], log, [1], partitions=2)


@pytest.mark.slow
@settings(max_examples=EXAMPLES * 60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chosen=queries, log=changes, sizes=batch_sizes, partitions=st.integers(1, 4))
def test_sql_queries_equal_duckdb_many_examples(spark, chosen, log, sizes, partitions):
    """The slow tier: ten times the examples, any number of state partitions."""
    _run(spark, chosen, log, sizes, partitions=partitions)

"""The plan as data: expressions, node invariants, the builder's checks, the Topology."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.plan import (
    Aggregate,
    Count,
    ExprRef,
    Filter,
    GlobalTableSource,
    InvalidArgumentError,
    InvalidExpressionError,
    KeyValueExpr,
    Merge,
    PlanBuilder,
    Reduce,
    Repartition,
    SqlExpr,
    Store,
    StreamSource,
    TableFilter,
    TableSource,
    Topology,
    TopologyError,
    ToTable,
    ToTopic,
)
from tablestream.plan.expr import SPARK

# --- expressions ---------------------------------------------------------------------------


def test_sql_expressions_compare_by_normalized_spark_sql():
    assert SqlExpr("amount>10") == SqlExpr("amount  >  10")
    assert SqlExpr("amount>10").text == "amount>10"
    assert str(SqlExpr("upper(name)")) == "UPPER(name)"
    assert SqlExpr("amount > 10") != SqlExpr("amount >= 10")
    assert hash(SqlExpr("a+1")) == hash(SqlExpr("a + 1"))


@pytest.mark.parametrize(
    "text, sql",
    [
        ("to_date(value.d, 'd/M/y')", "TO_DATE(value.d, 'd/M/y')"),
        ("date_format(value.t, 'E y')", "DATE_FORMAT(value.t, 'E y')"),
        ("from_unixtime(value.s, 'y %')", "FROM_UNIXTIME(value.s, 'y %')"),
        ("to_timestamp(value.s, 'yy-M-d')", "TO_TIMESTAMP(value.s, 'yy-M-d')"),
    ],
)
def test_datetime_patterns_are_kept_as_written(text, sql):
    """Spark reads 'y' and 'yyyy' differently (only 'y' takes a two-digit year): the
    normalized SQL keeps the pattern as written, and so does the tree read back."""
    assert SqlExpr(text).sql == sql
    assert SqlExpr(text).tree().sql(dialect=SPARK) == sql


def test_sql_expression_tree():
    assert SqlExpr("a + 1").tree().sql(dialect="spark") == "a + 1"


@pytest.mark.parametrize(
    "text, detail",
    [
        ("amount >", "Required keyword: 'expression' missing for GT (line 1, column 8)"),
        ("", "it is empty"),
        ("(amount", "Expecting ) (line 1, column 7)"),
        ("a b c", "Invalid expression / Unexpected token (line 1, column 5)"),
        ("DROP TABLE orders", "a query or statement is not an expression"),
        (
            "amount AS a",
            "an alias is not an expression (name struct fields inside struct(..., x AS name))",
        ),
        ("*", "'*' is not an expression"),
        ("amount IN (SELECT id FROM t)", "subqueries are not supported"),
    ],
)
def test_invalid_sql_expressions(text, detail):
    with pytest.raises(InvalidExpressionError) as error:
        SqlExpr(text)
    assert str(error.value) == f"Invalid SQL expression {text!r}: {detail}"


def test_sql_expression_needs_text():
    with pytest.raises(InvalidExpressionError) as error:
        SqlExpr(3)  # type: ignore[arg-type]
    assert str(error.value) == "A SQL expression must be a str, got int"


def test_expressions_print():
    assert str(ExprRef("f.predicate", "callable", 2, "<lambda>(k, v)")) == "callable <lambda>(k, v)"
    assert str(KeyValueExpr(SqlExpr("a"), SqlExpr("b"))) == "(a, b)"


# --- node invariants -------------------------------------------------------------------------


def test_nodes_are_frozen_and_hashable():
    node = Filter(name="f", parent="s", predicate=SqlExpr("a"))
    with pytest.raises(AttributeError):
        node.name = "g"  # type: ignore[misc]
    assert {node, Filter(name="f", parent="s", predicate=SqlExpr("a"))} == {node}
    assert node.parents == ("s",)
    assert Merge(name="m", parents=("a", "b")).parents == ("a", "b")
    assert StreamSource(name="s", topics=("t",)).parents == ()


def test_node_checks():
    with pytest.raises(InvalidArgumentError, match="a merge needs at least two parents"):
        Merge(name="m", parents=("a",))
    with pytest.raises(InvalidArgumentError, match="a stream source needs at least one topic"):
        StreamSource(name="s", topics=())
    with pytest.raises(InvalidArgumentError, match="Unknown value format 'XML'"):
        StreamSource(name="s", topics=("t",), value_format="XML")
    with pytest.raises(InvalidArgumentError, match="input_kind must be 'stream' or 'table'"):
        Count(name="c", parent="p", input_kind="grouped", store="store", queryable=False)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="c: a table aggregation needs a subtractor"):
        Reduce(
            name="c",
            parent="p",
            input_kind="table",
            store="store",
            queryable=False,
            adder=SqlExpr("aggregate + value"),
        )
    with pytest.raises(InvalidArgumentError, match="c: a stream aggregation has no subtractor"):
        Aggregate(
            name="c",
            parent="p",
            input_kind="stream",
            store="store",
            queryable=False,
            initializer=SqlExpr("0"),
            adder=SqlExpr("a"),
            subtractor=SqlExpr("b"),
        )
    with pytest.raises(InvalidArgumentError, match="partitions must be a positive int, got 0"):
        Repartition(name="r", parent="p", topic="t", sink_name="s", filter_name=None, partitions=0)


def test_table_nodes_name_their_store_and_topic():
    def plain(**fields):
        return TableFilter(name="f", parent="t", predicate=SqlExpr("a"), **fields)

    assert plain().store is None and not plain().queryable
    assert plain(store="s", queryable=True).queryable
    with pytest.raises(InvalidArgumentError) as error:
        plain(queryable=True)
    assert str(error.value) == "f: a queryable table needs a store name"
    with pytest.raises(InvalidArgumentError) as error:
        ToTable(name="t", parent="s")
    assert str(error.value) == "t: ToTable needs a store name"
    with pytest.raises(InvalidArgumentError) as error:
        TableSource(name="t", source_name="s", topics=("a", "b"), store="st")
    assert str(error.value) == "t: a table is read from exactly one topic, got ['a', 'b']"
    with pytest.raises(InvalidArgumentError) as error:
        GlobalTableSource(name="t", source_name="s", topics="a", store="st")
    assert str(error.value) == "t: topics must be a tuple of topic names"
    with pytest.raises(TypeError):
        StreamSource("s", ("t",))  # type: ignore[misc]


def test_formats_are_upper_cased():
    assert (
        StreamSource(name="s", topics=("t",), key_format="json", value_format="avro").key_format
        == "JSON"
    )
    assert (
        ToTopic(name="k", parent="p", topic="t", value_format="delimited").value_format
        == "DELIMITED"
    )


# --- builder and topology --------------------------------------------------------------------


def test_parents_must_exist():
    plan = PlanBuilder()
    with pytest.raises(TopologyError) as error:
        plan.add(Filter(name="f", parent="missing", predicate=SqlExpr("a")))
    assert str(error.value) == "Invalid topology: Parent processor missing of f is not added yet."


def test_topology_checks_its_nodes_and_stores():
    source = StreamSource(name="s", topics=("t",))
    with pytest.raises(TopologyError, match="Processor s is already added."):
        Topology((source, source))
    with pytest.raises(TopologyError, match="Parent processor x of f is not added yet."):
        Topology((Filter(name="f", parent="x", predicate=SqlExpr("a")),))
    with pytest.raises(TopologyError, match="StateStore st is used by unknown processor nobody."):
        Topology((source,), (Store("st", "table", "nobody", False),))


def test_topology_lookups():
    builder = StreamsBuilder()
    orders = builder.stream("orders")
    orders.filter("a").to("x")
    orders.map_values("b").group_by_key().count(materialized_as="counts")
    topology = builder.build()
    assert topology.node("KSTREAM-FILTER-0000000001") == Filter(
        name="KSTREAM-FILTER-0000000001", parent="KSTREAM-SOURCE-0000000000", predicate=SqlExpr("a")
    )
    assert [n.name for n in topology.children("KSTREAM-SOURCE-0000000000")] == [
        "KSTREAM-FILTER-0000000001",
        "KSTREAM-MAPVALUES-0000000003",
    ]
    assert topology.store("counts") == Store(
        "counts", "aggregate", "KSTREAM-AGGREGATE-0000000004", True
    )
    assert [s.name for s in topology.sources] == ["KSTREAM-SOURCE-0000000000"]
    assert [s.topic for s in topology.sinks] == ["x"]
    with pytest.raises(KeyError, match="No node named 'nope' in this topology"):
        topology.node("nope")
    with pytest.raises(KeyError, match="No store named 'nope' in this topology"):
        topology.store("nope")


def test_functions_are_not_part_of_equality_or_repr():
    def build(predicate):
        builder = StreamsBuilder()
        builder.stream("orders").filter(predicate)
        return builder.build()

    first, second = build(lambda k, v: True), build(lambda k, v: False)
    assert first == second
    assert first.functions != second.functions
    assert "functions" not in repr(first)


def test_build_is_a_snapshot():
    builder = StreamsBuilder()
    stream = builder.stream("orders")
    before = builder.build()
    stream.filter("true")
    assert len(before.nodes) == 1
    assert len(builder.build().nodes) == 2


def test_table_store_listed_only_when_kafka_would_materialize_it():
    builder = StreamsBuilder()
    users = builder.table("users")
    users.map_values("value").to_stream()
    assert builder.build().stores == ()
    # A group_by needs old values: the nearest materialized table upstream provides them.
    users.filter("true").map_values("value").group_by(("k", "v")).count()
    assert [s.name for s in builder.build().stores] == [
        "users-STATE-STORE-0000000000",
        "KTABLE-AGGREGATE-STATE-STORE-0000000008",
    ]


def test_group_by_below_a_materialized_filter_does_not_materialize_the_source():
    builder = StreamsBuilder()
    builder.table("users").filter("true", materialized_as="active").group_by(("k", "v")).count()
    assert [s.name for s in builder.build().stores] == [
        "active",
        "KTABLE-AGGREGATE-STATE-STORE-0000000005",
    ]


def test_plan_and_dsl_import_no_pyspark():
    code = (
        "import sys, tablestream.dsl, tablestream.plan; "
        "bad = [m for m in sys.modules if m.split('.')[0] == 'pyspark' "
        "or m.startswith(('tablestream.runtime', 'tablestream.storage'))]; "
        "print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_plans_pickle_for_shipping_to_executors():
    builder = StreamsBuilder()
    builder.stream("orders").select_key("customer").group_by_key().sum("amount").to_stream().to("t")
    topology = builder.build()
    copy = pickle.loads(pickle.dumps(topology))
    assert copy == topology
    assert str(copy.describe()) == str(topology.describe())

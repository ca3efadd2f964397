"""Every DSL method builds the node it should, field for field."""

from __future__ import annotations

import pytest

from tablestream.dsl import (
    BranchedKStream,
    GlobalKTable,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    StreamsBuilder,
)
from tablestream.dsl import aggregates as agg
from tablestream.plan import (
    Aggregate,
    Avg,
    Branch,
    CollectList,
    CollectSet,
    Count,
    CountDistinct,
    EarliestByOffset,
    ExprRef,
    Filter,
    FlatMap,
    FlatMapValues,
    GlobalTableSource,
    InvalidArgumentError,
    InvalidExpressionError,
    InvalidTypeError,
    KeyValueExpr,
    LatestByOffset,
    Map,
    MapValues,
    Max,
    Merge,
    Min,
    NumericAggregate,
    NumericAggregates,
    Peek,
    Reduce,
    Repartition,
    SelectKey,
    Split,
    SqlExpr,
    Store,
    StreamSource,
    Sum,
    TableFilter,
    TableGroupBy,
    TableMapValues,
    TableSource,
    TopologyError,
    ToStream,
    ToTable,
    ToTopic,
    WithTimestamp,
)

from .fakes import FakeColumn, fake_struct_type

SRC = "KSTREAM-SOURCE-0000000000"


def ref(name: str, arity: int | None, description: str, kind: str = "callable") -> ExprRef:
    return ExprRef(name, kind, arity, description)  # type: ignore[arg-type]


@pytest.fixture
def builder() -> StreamsBuilder:
    return StreamsBuilder()


@pytest.fixture
def orders(builder: StreamsBuilder) -> KStream:
    return builder.stream("orders")


@pytest.fixture
def users(builder: StreamsBuilder) -> KTable:
    return builder.table("users")


# --- sources -----------------------------------------------------------------------------


def test_stream(builder):
    stream = builder.stream(
        "orders",
        key_format="json",
        value_format="avro",
        key_schema="BIGINT",
        value_schema="id BIGINT, amount DOUBLE",
    )
    assert isinstance(stream, KStream)
    assert stream.node == StreamSource(
        name=SRC,
        topics=("orders",),
        key_format="JSON",
        value_format="AVRO",
        key_schema="BIGINT",
        value_schema="id BIGINT, amount DOUBLE",
    )
    assert not stream.repartition_required


def test_stream_of_several_topics_with_defaults(builder):
    assert builder.stream(["a", "b"]).node == StreamSource(
        name=SRC,
        topics=("a", "b"),
        key_format="KAFKA",
        value_format="JSON",
        key_schema=None,
        value_schema=None,
    )


@pytest.mark.parametrize("method", ["stream", "table", "global_table"])
def test_a_timestamp_extractor_is_kept_in_the_source_node_and_not_described(builder, method):
    source = getattr(builder, method)("orders", timestamp_extractor="unix_millis(value.at)")
    assert source.node.timestamp_extractor == SqlExpr("UNIX_MILLIS(value.at)")
    plain = StreamsBuilder()
    getattr(plain, method)("orders")
    # Kafka Streams' TopologyDescription does not show a source's extractor.
    assert builder.build().describe() == plain.build().describe()
    assert builder.build() != plain.build()


@pytest.mark.parametrize("method", ["stream", "table", "global_table"])
@pytest.mark.parametrize(
    ("extractor", "error_type", "message"),
    [
        (lambda key, value: value["ts"], InvalidTypeError,
         "timestamp_extractor must be a SQL expression (str), got function"),
        (1, InvalidTypeError, "timestamp_extractor must be a SQL expression (str), got int"),
        ("at +", InvalidExpressionError,
         "timestamp extractor: Invalid SQL expression 'at +': Required keyword: 'expression' missing for Add "
         "(line 1, column 4)"),
    ],
)
def test_a_timestamp_extractor_that_is_no_sql_expression_is_refused(builder, method, extractor, error_type, message):
    with pytest.raises(error_type) as error:
        getattr(builder, method)("orders", timestamp_extractor=extractor, name="orders-source")
    assert str(error.value) == f"StreamsBuilder.{method}(): {message}"
    assert builder.build().nodes == ()


def test_with_timestamp_adds_a_processor_with_the_sql(builder):
    stamped = builder.stream("orders").with_timestamp("value.placed * 1000", name="stamp")
    assert stamped.node == WithTimestamp(name="stamp", parent=SRC, timestamp=SqlExpr("value.placed * 1000"))
    assert not stamped.repartition_required
    with pytest.raises(InvalidTypeError) as error:
        builder.stream("orders").with_timestamp(lambda key, value: value["placed"])
    assert str(error.value) == "KStream.with_timestamp(): timestamp must be a SQL expression (str), got function"


def test_one_stream_source_read_twice_needs_the_same_timestamp_extractor(builder):
    first = builder.stream("orders", timestamp_extractor="value.at")
    assert builder.stream("orders", timestamp_extractor="value.at").node is first.node
    with pytest.raises(TopologyError) as error:
        builder.stream("orders")
    assert str(error.value) == (
        f"Invalid topology: Topics ['orders'] are already read by {SRC} with other formats, schemas or timestamp extractor."
    )


def test_stream_schema_from_struct_type(builder):
    schema = fake_struct_type()
    assert builder.stream("orders", value_schema=schema).node.value_schema == (
        "id BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, INT>, address STRUCT<city STRING>, raw BYTES"
    )


def test_table(builder):
    table = builder.table("users", value_schema="name STRING")
    assert isinstance(table, KTable)
    assert table.node == TableSource(
        name="KTABLE-SOURCE-0000000002",
        source_name="KSTREAM-SOURCE-0000000001",
        topics=("users",),
        store="users-STATE-STORE-0000000000",
        queryable=False,
        key_format="KAFKA",
        value_format="JSON",
        key_schema=None,
        value_schema="name STRING",
    )
    assert table.queryable_store_name is None
    assert builder.build().stores == ()  # not materialized unless needed, as in Kafka


def test_table_materialized_and_named(builder):
    table = builder.table("users", materialized_as="users-store", name="users")
    assert table.node == TableSource(
        name="users",
        source_name="users-source",
        topics=("users",),
        store="users-store",
        queryable=True,
    )
    assert table.queryable_store_name == "users-store"
    assert builder.build().stores == (Store("users-store", "table", "users", True),)


def test_global_table(builder):
    table = builder.global_table("countries")
    assert isinstance(table, GlobalKTable)
    assert table.node == GlobalTableSource(
        name="KTABLE-SOURCE-0000000002",
        source_name="KSTREAM-SOURCE-0000000001",
        topics=("countries",),
        store="countries-STATE-STORE-0000000000",
    )
    assert table.queryable_store_name is None
    assert builder.build().stores == (
        Store("countries-STATE-STORE-0000000000", "global", "KTABLE-SOURCE-0000000002", False),
    )


# --- KStream ------------------------------------------------------------------------------


def test_filter_sql(orders):
    assert orders.filter("amount > 10").node == Filter(
        name="KSTREAM-FILTER-0000000001", parent=SRC, predicate=SqlExpr("amount > 10"), negate=False
    )


def test_filter_callable_named(builder, orders):
    predicate = lambda k, v: v > 1  # noqa: E731
    stream = orders.filter(predicate, name="positive")
    assert stream.node == Filter(
        name="positive",
        parent=SRC,
        predicate=ref("positive.predicate", 2, "<lambda>(k, v)"),
        negate=False,
    )
    assert builder.build().resolve(stream.node.predicate) is predicate


def test_filter_column(builder, orders):
    column = FakeColumn("(amount > 10)")
    stream = orders.filter(column)
    assert stream.node.predicate == ref(
        "KSTREAM-FILTER-0000000001.predicate", None, "Column<'(amount > 10)'>", kind="column"
    )
    assert builder.build().functions["KSTREAM-FILTER-0000000001.predicate"] is column


def test_filter_not(orders):
    assert orders.filter_not("amount > 10").node == Filter(
        name="KSTREAM-FILTER-0000000001", parent=SRC, predicate=SqlExpr("amount > 10"), negate=True
    )


def test_map_values_by_arity(orders):
    assert orders.map_values(lambda v: v).node == MapValues(
        name="KSTREAM-MAPVALUES-0000000001",
        parent=SRC,
        mapper=ref("KSTREAM-MAPVALUES-0000000001.mapper", 1, "<lambda>(v)"),
    )
    assert orders.map_values(lambda k, v: v).node.mapper.arity == 2
    assert orders.map_values("amount * 2").node.mapper == SqlExpr("amount * 2")


def test_map_with_callable(orders):
    stream = orders.map(lambda k, v: (v, k))
    assert stream.node == Map(
        name="KSTREAM-MAP-0000000001",
        parent=SRC,
        mapper=ref("KSTREAM-MAP-0000000001.mapper", 2, "<lambda>(k, v)"),
    )
    assert stream.repartition_required


def test_map_with_expression_pair(builder, orders):
    column = FakeColumn("amount")
    stream = orders.map(("customer", column))
    assert stream.node == Map(
        name="KSTREAM-MAP-0000000001",
        parent=SRC,
        mapper=KeyValueExpr(
            SqlExpr("customer"),
            ref("KSTREAM-MAP-0000000001.mapper.value", None, "Column<'amount'>", kind="column"),
        ),
    )
    assert builder.build().functions == {"KSTREAM-MAP-0000000001.mapper.value": column}


def test_flat_map(orders):
    stream = orders.flat_map(lambda k, v: [(k, v)])
    assert stream.node == FlatMap(
        name="KSTREAM-FLATMAP-0000000001",
        parent=SRC,
        mapper=ref("KSTREAM-FLATMAP-0000000001.mapper", 2, "<lambda>(k, v)"),
    )
    assert stream.repartition_required


def test_flat_map_values(orders):
    stream = orders.flat_map_values("split(value, ',')")
    assert stream.node == FlatMapValues(
        name="KSTREAM-FLATMAPVALUES-0000000001", parent=SRC, mapper=SqlExpr("split(value, ',')")
    )
    assert not stream.repartition_required


def test_select_key(orders):
    stream = orders.select_key("customer")
    assert stream.node == SelectKey(
        name="KSTREAM-KEY-SELECT-0000000001", parent=SRC, selector=SqlExpr("customer")
    )
    assert stream.repartition_required


def test_peek(orders):
    action = print
    stream = orders.peek(lambda k, v: action(k, v))
    assert stream.node == Peek(
        name="KSTREAM-PEEK-0000000001",
        parent=SRC,
        action=ref("KSTREAM-PEEK-0000000001.action", 2, "<lambda>(k, v)"),
    )


def test_merge(builder, orders):
    other = builder.stream("returns")
    merged = orders.merge(other, name="all")
    assert merged.node == Merge(name="all", parents=(SRC, "KSTREAM-SOURCE-0000000001"))


def test_split_branch_default(orders):
    branched = orders.split()
    assert isinstance(branched, BranchedKStream)
    branches = (
        branched.branch("amount > 100").branch(lambda k, v: v < 0, name="-neg").default_branch()
    )
    split = "KSTREAM-BRANCH-0000000001"
    big = SqlExpr("amount > 100")
    negative = ref(f"{split}-neg.predicate", 2, "<lambda>(k, v)")
    assert {name: stream.node for name, stream in branches.items()} == {
        f"{split}1": Branch(name=f"{split}1", parent=split, predicate=big, preceding=()),
        f"{split}-neg": Branch(
            name=f"{split}-neg", parent=split, predicate=negative, preceding=(big,)
        ),
        f"{split}0": Branch(
            name=f"{split}0", parent=split, predicate=None, preceding=(big, negative)
        ),
    }
    assert orders.plan.node(split) == Split(name=split, parent=SRC)


def test_split_without_default_branch(builder, orders):
    branches = orders.split(name="s-").branch("a", name="a").no_default_branch()
    assert list(branches) == ["s-a"]
    assert [n.name for n in builder.build().nodes] == [SRC, "s-", "s-a"]


def test_explicit_repartition(orders):
    stream = orders.select_key("k").repartition(name="rekeyed", partitions=6)
    assert stream.node == Repartition(
        name="rekeyed-repartition-source",
        parent="KSTREAM-KEY-SELECT-0000000001",
        topic="rekeyed-repartition",
        sink_name="rekeyed-repartition-sink",
        filter_name="rekeyed-repartition-filter",
        partitions=6,
        explicit=True,
    )
    assert not stream.repartition_required


def test_explicit_repartition_generated_names(orders):
    assert orders.repartition().node == Repartition(
        name="KSTREAM-SOURCE-0000000004",
        parent=SRC,
        topic="KSTREAM-REPARTITION-0000000001-repartition",
        sink_name="KSTREAM-SINK-0000000002",
        filter_name="KSTREAM-FILTER-0000000003",
        partitions=None,
        explicit=True,
    )


def test_to_table(builder, orders):
    table = orders.to_table()
    assert isinstance(table, KTable)
    assert table.node == ToTable(
        name="KSTREAM-TOTABLE-0000000001",
        parent=SRC,
        store="KSTREAM-TOTABLE-STATE-STORE-0000000002",
        queryable=False,
    )
    assert builder.build().stores == ()


def test_to(builder, orders):
    assert orders.to("out", key_format="kafka", value_format="json", value_schema="a INT") is None
    assert builder.build().sinks == (
        ToTopic(
            name="KSTREAM-SINK-0000000001",
            parent=SRC,
            topic="out",
            key_format="KAFKA",
            value_format="JSON",
            key_schema=None,
            value_schema="a INT",
        ),
    )


def test_group_by_key_adds_no_node(builder, orders):
    grouped = orders.group_by_key()
    assert isinstance(grouped, KGroupedStream)
    assert not grouped.repartition_required
    assert [n.name for n in builder.build().nodes] == [SRC]


def test_group_by_adds_a_key_select(builder, orders):
    grouped = orders.group_by("customer", name="by-customer")
    assert grouped.repartition_required
    assert builder.build().nodes[-1] == SelectKey(
        name="by-customer", parent=SRC, selector=SqlExpr("customer")
    )


# --- KGroupedStream -------------------------------------------------------------------------


def test_stream_count(builder, orders):
    table = orders.group_by_key().count()
    assert table.node == Count(
        name="KSTREAM-AGGREGATE-0000000002",
        parent=SRC,
        input_kind="stream",
        store="KSTREAM-AGGREGATE-STATE-STORE-0000000001",
        queryable=False,
    )
    assert builder.build().stores == (
        Store(
            "KSTREAM-AGGREGATE-STATE-STORE-0000000001",
            "aggregate",
            "KSTREAM-AGGREGATE-0000000002",
            False,
        ),
    )


def test_stream_reduce(orders):
    table = orders.group_by_key().reduce(
        lambda agg, v: agg + v, name="total", materialized_as="totals"
    )
    assert table.node == Reduce(
        name="total",
        parent=SRC,
        input_kind="stream",
        store="totals",
        queryable=True,
        adder=ref("total.adder", 2, "<lambda>(agg, v)"),
    )
    assert table.queryable_store_name == "totals"


def test_stream_aggregate(orders):
    table = orders.group_by_key().aggregate(lambda: 0, lambda k, v, agg: agg + v["amount"])
    assert table.node == Aggregate(
        name="KSTREAM-AGGREGATE-0000000002",
        parent=SRC,
        input_kind="stream",
        store="KSTREAM-AGGREGATE-STATE-STORE-0000000001",
        queryable=False,
        initializer=ref("KSTREAM-AGGREGATE-0000000002.initializer", 0, "<lambda>()"),
        adder=ref("KSTREAM-AGGREGATE-0000000002.adder", 3, "<lambda>(k, v, agg)"),
    )


def test_stream_aggregate_with_source_key(orders):
    def add(key, value, aggregate, source_key):
        return aggregate

    node = orders.group_by_key().aggregate(lambda: 0, add).node
    assert node.adder == ref(
        "KSTREAM-AGGREGATE-0000000002.adder", 4, "add(key, value, aggregate, source_key)"
    )
    assert node.initializer.arity == 0


@pytest.mark.parametrize(
    "function, node_class, options",
    [("sum", Sum, {}), ("avg", Avg, {}), ("min", Min, {}), ("max", Max, {}),
     ("latest_by_offset", LatestByOffset, {"n": None, "ignore_nulls": True}),
     ("earliest_by_offset", EarliestByOffset, {"n": None, "ignore_nulls": True}),
     ("collect_list", CollectList, {"limit": 1000}), ("collect_set", CollectSet, {"limit": 1000}),
     ("count_distinct", CountDistinct, {})],
)
def test_stream_builtins(orders, function, node_class, options):
    table = getattr(orders.group_by_key(), function)("amount")
    assert table.node == node_class(
        name="KSTREAM-AGGREGATE-0000000002",
        parent=SRC,
        input_kind="stream",
        store="KSTREAM-AGGREGATE-STATE-STORE-0000000001",
        queryable=False,
        column=SqlExpr("amount"),
        **options,
    )


def test_stream_ksql_aggregate_options(orders):
    grouped = orders.group_by_key()
    earliest = grouped.earliest_by_offset("amount", 3, ignore_nulls=False).node
    assert (earliest.n, earliest.ignore_nulls) == (3, False)
    assert grouped.collect_set("amount", limit=None).node.limit is None


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda g: g.latest_by_offset("amount", 0), "KSTREAM-AGGREGATE-0000000002: n must be 1 or greater, got 0"),
        (lambda g: g.collect_list("amount", limit=-1), "KSTREAM-AGGREGATE-0000000002: limit must be 0 or greater (None: no limit), got -1"),
    ],
)
def test_stream_ksql_aggregate_arguments_are_checked(orders, call, message):
    with pytest.raises(InvalidArgumentError) as error:
        call(orders.group_by_key())
    assert str(error.value) == message


def test_a_grouped_table_has_no_by_offset_aggregates(users):
    """A table's rows have no offsets: ksqlDB takes LATEST_BY_OFFSET from streams only."""
    grouped = users.group_by(("customer", "value"))
    assert not hasattr(grouped, "latest_by_offset")
    assert not hasattr(grouped, "earliest_by_offset")
    with pytest.raises(InvalidArgumentError) as error:
        LatestByOffset(name="X", parent="P", input_kind="table", store="s", column=SqlExpr("amount"))
    assert str(error.value) == "X: LatestByOffset takes a stream (a table's rows have no offsets)"


def test_stream_aggregation_after_group_by_reads_a_repartition(builder, orders):
    table = orders.group_by("customer").count()
    assert table.node.parent == "KSTREAM-SOURCE-0000000006"
    assert builder.build().repartitions == (
        Repartition(
            name="KSTREAM-SOURCE-0000000006",
            parent="KSTREAM-KEY-SELECT-0000000001",
            topic="KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
            sink_name="KSTREAM-SINK-0000000004",
            filter_name="KSTREAM-FILTER-0000000005",
        ),
    )


# --- KTable -------------------------------------------------------------------------------

TSRC = "KTABLE-SOURCE-0000000002"


def test_table_filter(users):
    assert users.filter("age >= 18").node == TableFilter(
        name="KTABLE-FILTER-0000000003", parent=TSRC, predicate=SqlExpr("age >= 18")
    )


def test_table_filter_not_materialized(builder, users):
    table = users.filter_not(
        lambda k, v: v is None, materialized_as="present", name="present-users"
    )
    assert table.node == TableFilter(
        name="present-users",
        parent=TSRC,
        predicate=ref("present-users.predicate", 2, "<lambda>(k, v)"),
        negate=True,
        store="present",
        queryable=True,
    )
    assert table.queryable_store_name == "present"
    assert builder.build().stores == (Store("present", "table", "present-users", True),)


def test_table_map_values(users):
    assert users.map_values(lambda v: v).node == TableMapValues(
        name="KTABLE-MAPVALUES-0000000003",
        parent=TSRC,
        mapper=ref("KTABLE-MAPVALUES-0000000003.mapper", 1, "<lambda>(v)"),
    )


def test_table_to_stream(users):
    stream = users.to_stream()
    assert stream.node == ToStream(name="KTABLE-TOSTREAM-0000000003", parent=TSRC)
    assert not stream.repartition_required


def test_table_to(builder, users):
    users.to("users-out", value_format="avro", name="users-sink")
    assert builder.build().nodes[-2:] == (
        ToStream(name="KTABLE-TOSTREAM-0000000003", parent=TSRC),
        ToTopic(
            name="users-sink",
            parent="KTABLE-TOSTREAM-0000000003",
            topic="users-out",
            key_format=None,
            value_format="AVRO",
        ),
    )


def test_table_group_by(builder, users):
    grouped = users.group_by(("region", "value"))
    assert isinstance(grouped, KGroupedTable)
    assert builder.build().nodes[-1] == TableGroupBy(
        name="KTABLE-SELECT-0000000003",
        parent=TSRC,
        mapper=KeyValueExpr(SqlExpr("region"), SqlExpr("value")),
    )


# --- KGroupedTable --------------------------------------------------------------------------


def test_table_count(builder, users):
    table = users.group_by(lambda k, v: (v, k)).count()
    topology = builder.build()
    assert topology.nodes[-2:] == (
        Repartition(
            name="KSTREAM-SOURCE-0000000006",
            parent="KTABLE-SELECT-0000000003",
            topic="KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition",
            sink_name="KSTREAM-SINK-0000000005",
            filter_name=None,
        ),
        Count(
            name="KTABLE-AGGREGATE-0000000007",
            parent="KSTREAM-SOURCE-0000000006",
            input_kind="table",
            store="KTABLE-AGGREGATE-STATE-STORE-0000000004",
            queryable=False,
        ),
    )
    assert table.node == topology.nodes[-1]
    assert topology.stores == (
        Store("users-STATE-STORE-0000000000", "table", TSRC, False),
        Store(
            "KTABLE-AGGREGATE-STATE-STORE-0000000004",
            "aggregate",
            "KTABLE-AGGREGATE-0000000007",
            False,
        ),
    )


def test_table_agg_is_one_node_and_one_store(builder, users):
    table = users.group_by(("region", "value")).agg(
        {"name": agg.count()}, total=agg.sum("amount"), mean=agg.avg("amount"), known=agg.count("amount"),
        materialized_as="per-region",
    )
    topology = builder.build()
    assert table.node == NumericAggregates(
        name="KTABLE-AGGREGATE-0000000006",
        parent="KSTREAM-SOURCE-0000000005",
        input_kind="table",
        store="per-region",
        queryable=True,
        aggregations=(
            NumericAggregate("name", "count"),
            NumericAggregate("total", "sum", SqlExpr("amount")),
            NumericAggregate("mean", "avg", SqlExpr("amount")),
            NumericAggregate("known", "count", SqlExpr("amount")),
        ),
    )
    assert table.node.columns == (SqlExpr("amount"),)  # one non-null count and total in the store
    assert topology.stores[-1] == Store("per-region", "aggregate", "KTABLE-AGGREGATE-0000000006", True)
    assert str(topology.describe()).endswith("""\
  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000005 (topics: [per-region-repartition])
      --> KTABLE-AGGREGATE-0000000006
    Processor: KTABLE-AGGREGATE-0000000006 (stores: [per-region])
      --> none
      <-- KSTREAM-SOURCE-0000000005

""")


def test_stream_agg_binds_spark_columns(builder, orders):
    column = FakeColumn("amount")
    node = orders.group_by_key().agg(total=agg.sum(column), n=agg.count()).node
    assert node.aggregations == (
        NumericAggregate("total", "sum", ref("KSTREAM-AGGREGATE-0000000002.total", None, "Column<'amount'>", "column")),
        NumericAggregate("n", "count"),
    )
    assert builder.build().functions == {"KSTREAM-AGGREGATE-0000000002.total": column}


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda g: g.agg(), InvalidArgumentError, "KGroupedStream.agg(): no aggregation given (e.g. agg(views=aggregates.count()))"),
        (lambda g: g.agg(n=5), InvalidTypeError,
         "KGroupedStream.agg(): 'n' must be an aggregation of tablestream.dsl.aggregates (count(), sum(column), avg(column)); got int"),
        (lambda g: g.agg({"n": agg.count()}, n=agg.count()), InvalidArgumentError, "KGroupedStream.agg(): the result 'n' is given twice"),
        (lambda g: g.agg(n=agg.count(), N=agg.sum("x")), InvalidArgumentError,
         "KSTREAM-AGGREGATE-0000000002: two results named 'n' and 'N'"),
        (lambda g: g.agg(s=agg.sum(None)), InvalidTypeError, "KGroupedStream.agg(): s: sum() needs a column"),
        (lambda g: g.agg(s=agg.avg("x >")), Exception, "KGroupedStream.agg(): s: column: Invalid SQL expression 'x >'"),
        (lambda g: g.agg(["n"]), InvalidTypeError,
         "KGroupedStream.agg(): aggregations must be a mapping of result names to aggregations, got list"),
    ],
)
def test_agg_arguments_are_checked(orders, call, error, message):
    with pytest.raises(error) as raised:
        call(orders.group_by_key())
    assert str(raised.value).startswith(message)


def test_table_reduce(users):
    node = users.group_by(lambda k, v: (v, k)).reduce(lambda a, v: a + v, lambda a, v: a - v).node
    assert node == Reduce(
        name="KTABLE-REDUCE-0000000007",
        parent="KSTREAM-SOURCE-0000000006",
        input_kind="table",
        store="KTABLE-AGGREGATE-STATE-STORE-0000000004",
        queryable=False,
        adder=ref("KTABLE-REDUCE-0000000007.adder", 2, "<lambda>(a, v)"),
        subtractor=ref("KTABLE-REDUCE-0000000007.subtractor", 2, "<lambda>(a, v)"),
    )


def test_table_aggregate(users):
    node = (
        users.group_by(lambda k, v: (v, k), name="by-value")
        .aggregate(
            lambda: 0,
            lambda k, v, agg: agg + 1,
            lambda k, v, agg, source: agg - 1,
            name="n",
            materialized_as="counts",
        )
        .node
    )
    assert node == Aggregate(
        name="n",
        parent="n-source",
        input_kind="table",
        store="counts",
        queryable=True,
        initializer=ref("n.initializer", 0, "<lambda>()"),
        adder=ref("n.adder", 3, "<lambda>(k, v, agg)"),
        subtractor=ref("n.subtractor", 4, "<lambda>(k, v, agg, source)"),
    )


@pytest.mark.parametrize(
    "function, node_class, options",
    [("sum", Sum, {}), ("avg", Avg, {}), ("min", Min, {}), ("max", Max, {}), ("collect_list", CollectList, {"limit": 1000}),
     ("collect_set", CollectSet, {"limit": 1000}), ("count_distinct", CountDistinct, {})],
)
def test_table_builtins(users, function, node_class, options):
    column = FakeColumn("amount")
    node = getattr(users.group_by(("customer", "value")), function)(column).node
    assert node == node_class(
        name="KTABLE-AGGREGATE-0000000007",
        parent="KSTREAM-SOURCE-0000000006",
        input_kind="table",
        store="KTABLE-AGGREGATE-STATE-STORE-0000000004",
        queryable=False,
        column=ref("KTABLE-AGGREGATE-0000000007.column", None, "Column<'amount'>", kind="column"),
        **options,
    )


def test_reprs(builder, orders, users):
    assert repr(orders) == "<KStream KSTREAM-SOURCE-0000000000>"
    assert repr(users) == "<KTable KTABLE-SOURCE-0000000003>"
    assert (
        repr(orders.select_key("k"))
        == "<KStream KSTREAM-KEY-SELECT-0000000004 (repartition required)>"
    )
    assert repr(orders.group_by_key()) == "<KGroupedStream KSTREAM-SOURCE-0000000000>"
    assert repr(users.group_by(("a", "b"))) == "<KGroupedTable KTABLE-SELECT-0000000005>"

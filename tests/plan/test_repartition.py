"""Repartition marking (seed 001): which operations mark a stream, which keep the mark, and
where the mark turns into a repartition."""

from __future__ import annotations

import pytest

from tablestream.dsl import KStream, StreamsBuilder
from tablestream.plan import Count, Repartition, ToTable

MARKING = {
    "map": lambda s: s.map(lambda k, v: (v, k)),
    "flat_map": lambda s: s.flat_map(lambda k, v: [(v, k)]),
    "select_key": lambda s: s.select_key("customer"),
}
KEEPING = {
    "filter": lambda s: s.filter("true"),
    "filter_not": lambda s: s.filter_not("false"),
    "map_values": lambda s: s.map_values("value"),
    "flat_map_values": lambda s: s.flat_map_values("array(value)"),
    "peek": lambda s: s.peek(lambda k, v: None),
    "split branch": lambda s: next(iter(s.split().branch("true").no_default_branch().values())),
    "default branch": lambda s: next(iter(s.split().default_branch().values())),
}


@pytest.mark.parametrize("operation", list(MARKING))
def test_key_changing_operations_mark(operation):
    stream = StreamsBuilder().stream("orders")
    assert MARKING[operation](stream).repartition_required


@pytest.mark.parametrize("operation", list(KEEPING))
def test_other_operations_keep_the_mark(operation):
    unmarked = StreamsBuilder().stream("orders")
    assert not KEEPING[operation](unmarked).repartition_required
    marked = StreamsBuilder().stream("orders").select_key("customer")
    assert KEEPING[operation](marked).repartition_required


@pytest.mark.parametrize(
    "first_marked, second_marked", [(False, False), (True, False), (False, True), (True, True)]
)
def test_merge_is_marked_if_either_input_is(first_marked, second_marked):
    builder = StreamsBuilder()

    def source(topic: str, marked: bool) -> KStream:
        stream = builder.stream(topic)
        return stream.select_key("k") if marked else stream

    merged = source("a", first_marked).merge(source("b", second_marked))
    assert merged.repartition_required == (first_marked or second_marked)


def test_explicit_repartition_and_to_stream_clear_the_mark():
    builder = StreamsBuilder()
    assert not builder.stream("orders").select_key("k").repartition().repartition_required
    table = builder.stream("more-orders").select_key("k").to_table()
    assert not table.to_stream().repartition_required


def test_group_by_key_on_a_marked_stream_repartitions_once_before_the_aggregation():
    builder = StreamsBuilder()
    builder.stream("orders").map(("customer", "amount")).filter("value > 0").group_by_key().count()
    topology = builder.build()
    assert topology.repartitions == (
        Repartition(
            name="KSTREAM-SOURCE-0000000007",
            parent="KSTREAM-FILTER-0000000002",
            topic="KSTREAM-AGGREGATE-STATE-STORE-0000000003-repartition",
            sink_name="KSTREAM-SINK-0000000005",
            filter_name="KSTREAM-FILTER-0000000006",
        ),
    )
    assert topology.nodes[-1] == Count(
        name="KSTREAM-AGGREGATE-0000000004",
        parent="KSTREAM-SOURCE-0000000007",
        input_kind="stream",
        store="KSTREAM-AGGREGATE-STATE-STORE-0000000003",
        queryable=False,
    )


def test_group_by_key_on_an_unmarked_stream_does_not_repartition():
    builder = StreamsBuilder()
    table = builder.stream("orders").map_values("value").group_by_key().count()
    assert builder.build().repartitions == ()
    assert table.node.parent == "KSTREAM-MAPVALUES-0000000001"


def test_group_by_always_repartitions():
    builder = StreamsBuilder()
    builder.stream("orders").group_by("customer").count()
    (repartition,) = builder.build().repartitions
    assert repartition.parent == "KSTREAM-KEY-SELECT-0000000001"


def test_table_group_by_always_repartitions_without_a_filter():
    builder = StreamsBuilder()
    builder.table("users").group_by(("region", "value")).count()
    (repartition,) = builder.build().repartitions
    assert (repartition.parent, repartition.filter_name) == ("KTABLE-SELECT-0000000003", None)


def test_to_table_on_a_marked_stream_repartitions_by_its_name():
    builder = StreamsBuilder()
    table = builder.stream("orders").select_key("id").to_table(name="orders-by-id")
    assert builder.build().repartitions == (
        Repartition(
            name="orders-by-id-repartition-source",
            parent="KSTREAM-KEY-SELECT-0000000001",
            topic="orders-by-id-repartition",
            sink_name="orders-by-id-repartition-sink",
            filter_name="orders-by-id-repartition-filter",
        ),
    )
    assert table.node == ToTable(
        name="orders-by-id",
        parent="orders-by-id-repartition-source",
        store="KSTREAM-TOTABLE-STATE-STORE-0000000003",
        queryable=False,
    )


def test_to_table_on_an_unmarked_stream_does_not_repartition():
    builder = StreamsBuilder()
    builder.stream("orders").filter("true").to_table()
    assert builder.build().repartitions == ()


def test_named_grouping_shares_one_repartition_across_aggregations():
    builder = StreamsBuilder()
    grouped = builder.stream("orders").select_key("customer").group_by_key(name="by-customer")
    count = grouped.count()
    total = grouped.sum("amount")
    (repartition,) = builder.build().repartitions
    assert repartition.topic == "by-customer-repartition"
    assert count.node.parent == total.node.parent == repartition.name


def test_unnamed_grouping_repartitions_per_aggregation():
    builder = StreamsBuilder()
    grouped = builder.stream("orders").select_key("customer").group_by_key()
    grouped.count()
    grouped.sum("amount")
    assert [r.topic for r in builder.build().repartitions] == [
        "KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition",
        "KSTREAM-AGGREGATE-STATE-STORE-0000000007-repartition",
    ]


def test_marked_stream_written_to_a_topic_is_not_repartitioned():
    builder = StreamsBuilder()
    builder.stream("orders").select_key("customer").to("orders-by-customer")
    assert builder.build().repartitions == ()

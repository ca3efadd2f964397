"""Names are Kafka Streams' and deterministic: the same program builds the same plan."""

from __future__ import annotations

from tablestream.dsl import StreamsBuilder
from tablestream.plan.naming import NameProvider


def program() -> StreamsBuilder:
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="id BIGINT, customer STRING, amount DOUBLE")
    branches = orders.split().branch(lambda k, v: v["amount"] > 100).default_branch()
    big, rest = branches.values()
    big.select_key(lambda k, v: v["customer"]).group_by_key().aggregate(
        lambda: 0.0, lambda k, v, total: total + v["amount"]
    ).to_stream().to("big-spenders")
    rest.merge(orders.filter("amount < 0")).to("others")
    users = builder.table("users", materialized_as="users")
    users.group_by(lambda k, v: (v["region"], v)).count().to("users-per-region")
    builder.global_table("regions")
    return builder


def test_two_builds_of_one_program_are_equal():
    first, second = program().build(), program().build()
    assert first == second
    assert str(first.describe()) == str(second.describe())
    assert list(first.functions) == list(second.functions)
    assert [n.name for n in first.nodes] == [
        "KSTREAM-SOURCE-0000000000",
        "KSTREAM-BRANCH-0000000001",
        "KSTREAM-BRANCH-00000000011",
        "KSTREAM-BRANCH-00000000010",
        "KSTREAM-KEY-SELECT-0000000004",
        "KSTREAM-SOURCE-0000000009",
        "KSTREAM-AGGREGATE-0000000006",
        "KTABLE-TOSTREAM-0000000010",
        "KSTREAM-SINK-0000000011",
        "KSTREAM-FILTER-0000000012",
        "KSTREAM-MERGE-0000000013",
        "KSTREAM-SINK-0000000014",
        "KTABLE-SOURCE-0000000016",
        "KTABLE-SELECT-0000000017",
        "KSTREAM-SOURCE-0000000020",
        "KTABLE-AGGREGATE-0000000021",
        "KTABLE-TOSTREAM-0000000022",
        "KSTREAM-SINK-0000000023",
        "KTABLE-SOURCE-0000000026",
    ]


def test_a_given_name_still_spends_its_index():
    builder = StreamsBuilder()
    stream = builder.stream("orders", name="orders").filter("true", name="valid")
    assert stream.map_values("value").name == "KSTREAM-MAPVALUES-0000000002"


def test_store_names():
    builder = StreamsBuilder()
    assert builder.table("users").node.store == "users-STATE-STORE-0000000000"
    grouped = builder.stream("orders").group_by_key()
    assert grouped.count().node.store == "KSTREAM-AGGREGATE-STATE-STORE-0000000004"
    assert grouped.reduce(lambda a, v: v).node.store == "KSTREAM-REDUCE-STATE-STORE-0000000006"


def test_name_provider():
    names = NameProvider()
    assert names.new_processor_name("KSTREAM-FILTER-") == "KSTREAM-FILTER-0000000000"
    assert names.new_store_name("KSTREAM-AGGREGATE-") == "KSTREAM-AGGREGATE-STATE-STORE-0000000001"
    assert names.or_generate("mine", "KSTREAM-MAP-") == "mine"
    assert names.or_generate(None, "KSTREAM-MAP-") == "KSTREAM-MAP-0000000003"
    assert names.suffix_or_generate("t", "-source", "KSTREAM-SOURCE-") == "t-source"
    assert (
        names.suffix_or_generate(None, "-source", "KSTREAM-SOURCE-") == "KSTREAM-SOURCE-0000000005"
    )


def test_function_references_are_named_after_their_node_and_argument():
    builder = StreamsBuilder()
    builder.table("users").group_by(lambda k, v: (k, v)).aggregate(
        lambda: 0, lambda k, v, a: a, lambda k, v, a: a
    )
    assert list(builder.build().functions) == [
        "KTABLE-SELECT-0000000003.mapper",
        "KTABLE-AGGREGATE-0000000007.initializer",
        "KTABLE-AGGREGATE-0000000007.adder",
        "KTABLE-AGGREGATE-0000000007.subtractor",
    ]

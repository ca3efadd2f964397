"""describe() snapshots of the plan shapes that matter: repartition marking, sub-topology
splits, stores, branches, merges. Each program is also in kafka/Describe.java, so the same
text is checked against Kafka Streams 4.3.1 by test_kafka_describe.py."""

from __future__ import annotations

from tablestream.dsl import StreamsBuilder
from tablestream.plan import NodeDescription


def chain(builder: StreamsBuilder) -> None:
    builder.stream("orders", value_schema="id BIGINT, amount DOUBLE").filter(
        "amount > 0"
    ).map_values("amount * 100").filter_not("amount > 1000000").to("orders-cents")


def select_key_group_by_key(builder: StreamsBuilder) -> None:
    builder.stream("orders").select_key("customer").map_values("amount").group_by_key().sum(
        "value", materialized_as="revenue"
    )


def group_by_key_unmarked(builder: StreamsBuilder) -> None:
    builder.stream("orders").filter("amount > 0").group_by_key().count()


def table_group_by_count(builder: StreamsBuilder) -> None:
    builder.table("users", value_schema="name STRING, region STRING").group_by(
        ("region", "name")
    ).count(materialized_as="users-per-region").to("users-per-region")


def split(builder: StreamsBuilder) -> None:
    branches = (
        builder.stream("orders")
        .split(name="orders-")
        .branch("amount >= 1000", name="large")
        .branch("amount >= 100", name="medium")
        .default_branch(name="small")
    )
    branches["orders-large"].to("large-orders")
    branches["orders-medium"].to("medium-orders")
    branches["orders-small"].to("small-orders")


def merge(builder: StreamsBuilder) -> None:
    web = builder.stream("web-orders").select_key("customer")
    merged = web.merge(builder.stream("shop-orders"))
    merged.to("all-orders")
    merged.group_by_key().count()


SNAPSHOT_PROGRAMS = {
    "snapshot-chain": chain,
    "snapshot-select-key-group-by-key": select_key_group_by_key,
    "snapshot-group-by-key-unmarked": group_by_key_unmarked,
    "snapshot-table-group-by-count": table_group_by_count,
    "snapshot-split": split,
    "snapshot-merge": merge,
}


def describe(program) -> str:
    builder = StreamsBuilder()
    program(builder)
    return str(builder.build().describe())


def test_filter_map_values_chain_is_one_sub_topology():
    """A stateless chain stays in one sub-topology; names count up in creation order."""
    assert describe(chain) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
        "      --> KSTREAM-FILTER-0000000001\n"
        "    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n"
        "      --> KSTREAM-MAPVALUES-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000003\n"
        "      <-- KSTREAM-FILTER-0000000001\n"
        "    Processor: KSTREAM-FILTER-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-MAPVALUES-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: orders-cents)\n"
        "      <-- KSTREAM-FILTER-0000000003\n"
        "\n"
    )


def test_select_key_then_group_by_key_repartitions():
    """select_key marks the stream, map_values keeps the mark, group_by_key repartitions
    through ``<store>-repartition`` (the store was named) and starts sub-topology 1."""
    assert describe(select_key_group_by_key) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
        "      --> KSTREAM-KEY-SELECT-0000000001\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n"
        "      --> KSTREAM-MAPVALUES-0000000002\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])\n"
        "      --> revenue-repartition-filter\n"
        "      <-- KSTREAM-KEY-SELECT-0000000001\n"
        "    Processor: revenue-repartition-filter (stores: [])\n"
        "      --> revenue-repartition-sink\n"
        "      <-- KSTREAM-MAPVALUES-0000000002\n"
        "    Sink: revenue-repartition-sink (topic: revenue-repartition)\n"
        "      <-- revenue-repartition-filter\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: revenue-repartition-source (topics: [revenue-repartition])\n"
        "      --> KSTREAM-AGGREGATE-0000000003\n"
        "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [revenue])\n"
        "      --> none\n"
        "      <-- revenue-repartition-source\n"
        "\n"
    )


def test_group_by_key_without_mark_does_not_repartition():
    """No key change, no repartition: the aggregation reads the filter directly. Its store
    (index 2) is named before the processor (index 3), as in Kafka."""
    assert describe(group_by_key_unmarked) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
        "      --> KSTREAM-FILTER-0000000001\n"
        "    Processor: KSTREAM-FILTER-0000000001 (stores: [])\n"
        "      --> KSTREAM-AGGREGATE-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])\n"
        "      --> none\n"
        "      <-- KSTREAM-FILTER-0000000001\n"
        "\n"
    )


def test_table_group_by_count_repartitions_and_materializes_the_source():
    """A table group_by always repartitions (no filter before the sink, as in Kafka) and
    needs old values, so the source table's store is materialized and shown."""
    assert describe(table_group_by_count) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [users])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [users-STATE-STORE-0000000000])\n"
        "      --> KTABLE-SELECT-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: users-per-region-repartition)\n"
        "      <-- KTABLE-SELECT-0000000003\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000005 (topics: [users-per-region-repartition])\n"
        "      --> KTABLE-AGGREGATE-0000000006\n"
        "    Processor: KTABLE-AGGREGATE-0000000006 (stores: [users-per-region])\n"
        "      --> KTABLE-TOSTREAM-0000000007\n"
        "      <-- KSTREAM-SOURCE-0000000005\n"
        "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000008\n"
        "      <-- KTABLE-AGGREGATE-0000000006\n"
        "    Sink: KSTREAM-SINK-0000000008 (topic: users-per-region)\n"
        "      <-- KTABLE-TOSTREAM-0000000007\n"
        "\n"
    )


def test_split_with_named_branches_and_default_branch():
    """Branches are children of the split node, named split name + branch name."""
    assert describe(split) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [orders])\n"
        "      --> orders-\n"
        "    Processor: orders- (stores: [])\n"
        "      --> orders-large, orders-medium, orders-small\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: orders-large (stores: [])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "      <-- orders-\n"
        "    Processor: orders-medium (stores: [])\n"
        "      --> KSTREAM-SINK-0000000006\n"
        "      <-- orders-\n"
        "    Processor: orders-small (stores: [])\n"
        "      --> KSTREAM-SINK-0000000007\n"
        "      <-- orders-\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: large-orders)\n"
        "      <-- orders-large\n"
        "    Sink: KSTREAM-SINK-0000000006 (topic: medium-orders)\n"
        "      <-- orders-medium\n"
        "    Sink: KSTREAM-SINK-0000000007 (topic: small-orders)\n"
        "      <-- orders-small\n"
        "\n"
    )


def test_merge_of_marked_and_unmarked_stream_is_marked():
    """The merge of a marked and an unmarked stream is marked: group_by_key repartitions; the
    direct sink does not."""
    assert describe(merge) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [web-orders])\n"
        "      --> KSTREAM-KEY-SELECT-0000000001\n"
        "    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])\n"
        "      --> KSTREAM-MERGE-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Source: KSTREAM-SOURCE-0000000002 (topics: [shop-orders])\n"
        "      --> KSTREAM-MERGE-0000000003\n"
        "    Processor: KSTREAM-MERGE-0000000003 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000008, KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-KEY-SELECT-0000000001, KSTREAM-SOURCE-0000000002\n"
        "    Processor: KSTREAM-FILTER-0000000008 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000007\n"
        "      <-- KSTREAM-MERGE-0000000003\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: all-orders)\n"
        "      <-- KSTREAM-MERGE-0000000003\n"
        "    Sink: KSTREAM-SINK-0000000007 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000005-repartition)\n"
        "      <-- KSTREAM-FILTER-0000000008\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000009 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000005-repartition])\n"
        "      --> KSTREAM-AGGREGATE-0000000006\n"
        "    Processor: KSTREAM-AGGREGATE-0000000006 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000005])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000009\n"
        "\n"
    )


def test_description_is_structured_data():
    builder = StreamsBuilder()
    select_key_group_by_key(builder)
    description = builder.build().describe()
    assert [s.id for s in description.subtopologies] == [0, 1]
    assert description.subtopologies[1].nodes[0] == NodeDescription(
        "source",
        "revenue-repartition-source",
        topics=("revenue-repartition",),
        successors=("KSTREAM-AGGREGATE-0000000003",),
    )
    assert description.global_stores == ()


def test_global_store_is_numbered_among_sub_topologies():
    builder = StreamsBuilder()
    builder.stream("a").to("b")
    builder.global_table("countries", materialized_as="countries")
    builder.stream("c").to("d")
    assert str(builder.build().describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [a])\n"
        "      --> KSTREAM-SINK-0000000001\n"
        "    Sink: KSTREAM-SINK-0000000001 (topic: b)\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "\n"
        "  Sub-topology: 1 for global store (will not generate tasks)\n"
        "    Source: KSTREAM-SOURCE-0000000002 (topics: [countries])\n"
        "      --> KTABLE-SOURCE-0000000003\n"
        "    Processor: KTABLE-SOURCE-0000000003 (stores: [countries])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000002\n"
        "  Sub-topology: 2\n"
        "    Source: KSTREAM-SOURCE-0000000004 (topics: [c])\n"
        "      --> KSTREAM-SINK-0000000005\n"
        "    Sink: KSTREAM-SINK-0000000005 (topic: d)\n"
        "      <-- KSTREAM-SOURCE-0000000004\n"
        "\n"
    )

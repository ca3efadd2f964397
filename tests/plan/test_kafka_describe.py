"""describe() against Kafka Streams itself.

Two sources of truth:
- strings copied from Kafka Streams' own tests (apache/kafka, streams/src/test/...), each
  test naming the one it ports;
- kafka/describe_4.3.1.txt, the output of kafka/Describe.java run with kafka-streams
  4.3.1, for programs mirrored step for step below.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.plan import ExprRef, Merge, Peek, Store, Topology, TopologyError, ToTopic

from .test_describe import SNAPSHOT_PROGRAMS

T = "true"  # expressions do not show in describe()


def describe(builder: StreamsBuilder) -> str:
    return str(builder.build().describe())


# --- TopologyTest ------------------------------------------------------------------------


def test_kGroupedStreamZeroArgCountShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.stream("input-topic").group_by_key().count()
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n"
        "      --> KSTREAM-AGGREGATE-0000000002\n"
        "    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000001])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )


def test_kGroupedStreamNamedMaterializedCountShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.stream("input-topic").group_by_key().count(materialized_as="count-store")
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input-topic])\n"
        "      --> KSTREAM-AGGREGATE-0000000001\n"
        "    Processor: KSTREAM-AGGREGATE-0000000001 (stores: [count-store])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )


TABLE_COUNT = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
    "      --> KTABLE-SOURCE-0000000002\n"
    "    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n"
    "      --> KTABLE-SELECT-0000000003\n"
    "      <-- KSTREAM-SOURCE-0000000001\n"
    "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000005\n"
    "      <-- KTABLE-SOURCE-0000000002\n"
    "    Sink: KSTREAM-SINK-0000000005 (topic: KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition)\n"
    "      <-- KTABLE-SELECT-0000000003\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: KSTREAM-SOURCE-0000000006 (topics: [KTABLE-AGGREGATE-STATE-STORE-0000000004-repartition])\n"
    "      --> KTABLE-AGGREGATE-0000000007\n"
    "    Processor: KTABLE-AGGREGATE-0000000007 (stores: [KTABLE-AGGREGATE-STATE-STORE-0000000004])\n"
    "      --> none\n"
    "      <-- KSTREAM-SOURCE-0000000006\n"
    "\n"
)


def test_tableZeroArgCountShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").group_by(lambda key, value: (None, None)).count()
    assert describe(builder) == TABLE_COUNT


def test_tableNamedMaterializedCountShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").group_by(lambda key, value: (None, None)).count(
        materialized_as="count-store"
    )
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [input-topic-STATE-STORE-0000000000])\n"
        "      --> KTABLE-SELECT-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-SELECT-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: count-store-repartition)\n"
        "      <-- KTABLE-SELECT-0000000003\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000005 (topics: [count-store-repartition])\n"
        "      --> KTABLE-AGGREGATE-0000000006\n"
        "    Processor: KTABLE-AGGREGATE-0000000006 (stores: [count-store])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000005\n"
        "\n"
    )


def test_kTableNonMaterializedMapValuesShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").map_values(lambda read_only_key, value: None)
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-MAPVALUES-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-MAPVALUES-0000000003 (stores: [])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n\n"
    )


def test_kTableNamedMaterializedMapValuesShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").map_values(
        lambda read_only_key, value: None, materialized_as="store-name"
    )
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-MAPVALUES-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-MAPVALUES-0000000003 (stores: [store-name])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "\n"
    )


def test_kTableNonMaterializedFilterShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").filter(lambda key, value: False)
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-FILTER-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-FILTER-0000000003 (stores: [])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n\n"
    )


def test_kTableNamedMaterializedFilterShouldPreserveTopologyStructure():
    builder = StreamsBuilder()
    builder.table("input-topic").filter(lambda key, value: False, materialized_as="store-name")
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000001 (topics: [input-topic])\n"
        "      --> KTABLE-SOURCE-0000000002\n"
        "    Processor: KTABLE-SOURCE-0000000002 (stores: [])\n"
        "      --> KTABLE-FILTER-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000001\n"
        "    Processor: KTABLE-FILTER-0000000003 (stores: [store-name])\n"
        "      --> none\n"
        "      <-- KTABLE-SOURCE-0000000002\n"
        "\n"
    )


def test_shouldDescribeEmptyTopology():
    assert describe(StreamsBuilder()) == "Topologies:\n "


# --- KStreamImplTest ---------------------------------------------------------------------


def test_shouldNotMaterializedKTableFromKStream():
    builder = StreamsBuilder()
    builder.stream("input").to_table().to_stream().to("output")
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
        "      --> KSTREAM-TOTABLE-0000000001\n"
        "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000003\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KTABLE-TOSTREAM-0000000003 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-TOTABLE-0000000001\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: output)\n"
        "      <-- KTABLE-TOSTREAM-0000000003\n\n"
    )


def test_shouldMaterializeKTableFromKStream():
    builder = StreamsBuilder()
    builder.stream("input").to_table(materialized_as="store")
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
        "      --> KSTREAM-TOTABLE-0000000001\n"
        "    Processor: KSTREAM-TOTABLE-0000000001 (stores: [store])\n"
        "      --> none\n"
        "      <-- KSTREAM-SOURCE-0000000000\n\n"
    )


def test_shouldSupportKeyChangeKTableFromKStream():
    builder = StreamsBuilder()
    builder.stream("input").map(lambda key, value: (key, value)).to_table().to_stream().to("output")
    assert describe(builder) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
        "      --> KSTREAM-MAP-0000000001\n"
        "    Processor: KSTREAM-MAP-0000000001 (stores: [])\n"
        "      --> KSTREAM-FILTER-0000000005\n"
        "      <-- KSTREAM-SOURCE-0000000000\n"
        "    Processor: KSTREAM-FILTER-0000000005 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000004\n"
        "      <-- KSTREAM-MAP-0000000001\n"
        "    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-TOTABLE-0000000002-repartition)\n"
        "      <-- KSTREAM-FILTER-0000000005\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-TOTABLE-0000000002-repartition])\n"
        "      --> KSTREAM-TOTABLE-0000000002\n"
        "    Processor: KSTREAM-TOTABLE-0000000002 (stores: [])\n"
        "      --> KTABLE-TOSTREAM-0000000007\n"
        "      <-- KSTREAM-SOURCE-0000000006\n"
        "    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])\n"
        "      --> KSTREAM-SINK-0000000008\n"
        "      <-- KSTREAM-TOTABLE-0000000002\n"
        "    Sink: KSTREAM-SINK-0000000008 (topic: output)\n"
        "      <-- KTABLE-TOSTREAM-0000000007\n\n"
    )


# --- RepartitionTopicNamingTest ----------------------------------------------------------

# EXPECTED_UNOPTIMIZED_TOPOLOGY, verbatim.
REPARTITION_NAMING_UNOPTIMIZED = (
    "Topologies:\n"
    "   Sub-topology: 0\n"
    "    Source: KSTREAM-SOURCE-0000000000 (topics: [input])\n"
    "      --> KSTREAM-MAP-0000000001\n"
    "    Processor: KSTREAM-MAP-0000000001 (stores: [])\n"
    "      --> KSTREAM-FILTER-0000000029, KSTREAM-FILTER-0000000002, KSTREAM-FILTER-0000000020, aggregate-stream-repartition-filter, count-stream-repartition-filter\n"
    "      <-- KSTREAM-SOURCE-0000000000\n"
    "    Processor: KSTREAM-FILTER-0000000020 (stores: [])\n"
    "      --> KSTREAM-PEEK-0000000021\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Processor: KSTREAM-FILTER-0000000002 (stores: [])\n"
    "      --> KSTREAM-MAPVALUES-0000000003\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Processor: KSTREAM-FILTER-0000000029 (stores: [])\n"
    "      --> joined-stream-left-repartition-filter\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Processor: KSTREAM-PEEK-0000000021 (stores: [])\n"
    "      --> reduced-stream-repartition-filter\n"
    "      <-- KSTREAM-FILTER-0000000020\n"
    "    Processor: KSTREAM-MAPVALUES-0000000003 (stores: [])\n"
    "      --> KSTREAM-PROCESSOR-0000000004\n"
    "      <-- KSTREAM-FILTER-0000000002\n"
    "    Processor: aggregate-stream-repartition-filter (stores: [])\n"
    "      --> aggregate-stream-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Processor: count-stream-repartition-filter (stores: [])\n"
    "      --> count-stream-repartition-sink\n"
    "      <-- KSTREAM-MAP-0000000001\n"
    "    Processor: joined-stream-left-repartition-filter (stores: [])\n"
    "      --> joined-stream-left-repartition-sink\n"
    "      <-- KSTREAM-FILTER-0000000029\n"
    "    Processor: reduced-stream-repartition-filter (stores: [])\n"
    "      --> reduced-stream-repartition-sink\n"
    "      <-- KSTREAM-PEEK-0000000021\n"
    "    Processor: KSTREAM-PROCESSOR-0000000004 (stores: [])\n"
    "      --> none\n"
    "      <-- KSTREAM-MAPVALUES-0000000003\n"
    "    Sink: aggregate-stream-repartition-sink (topic: aggregate-stream-repartition)\n"
    "      <-- aggregate-stream-repartition-filter\n"
    "    Sink: count-stream-repartition-sink (topic: count-stream-repartition)\n"
    "      <-- count-stream-repartition-filter\n"
    "    Sink: joined-stream-left-repartition-sink (topic: joined-stream-left-repartition)\n"
    "      <-- joined-stream-left-repartition-filter\n"
    "    Sink: reduced-stream-repartition-sink (topic: reduced-stream-repartition)\n"
    "      <-- reduced-stream-repartition-filter\n"
    "\n"
    "  Sub-topology: 1\n"
    "    Source: count-stream-repartition-source (topics: [count-stream-repartition])\n"
    "      --> KSTREAM-AGGREGATE-0000000007\n"
    "    Processor: KSTREAM-AGGREGATE-0000000007 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000006])\n"
    "      --> KTABLE-TOSTREAM-0000000011\n"
    "      <-- count-stream-repartition-source\n"
    "    Processor: KTABLE-TOSTREAM-0000000011 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000012, joined-stream-other-windowed\n"
    "      <-- KSTREAM-AGGREGATE-0000000007\n"
    "    Source: joined-stream-left-repartition-source (topics: [joined-stream-left-repartition])\n"
    "      --> joined-stream-this-windowed\n"
    "    Processor: joined-stream-other-windowed (stores: [joined-stream-other-join-store])\n"
    "      --> joined-stream-other-join\n"
    "      <-- KTABLE-TOSTREAM-0000000011\n"
    "    Processor: joined-stream-this-windowed (stores: [joined-stream-this-join-store])\n"
    "      --> joined-stream-this-join\n"
    "      <-- joined-stream-left-repartition-source\n"
    "    Processor: joined-stream-other-join (stores: [joined-stream-this-join-store])\n"
    "      --> joined-stream-merge\n"
    "      <-- joined-stream-other-windowed\n"
    "    Processor: joined-stream-this-join (stores: [joined-stream-other-join-store])\n"
    "      --> joined-stream-merge\n"
    "      <-- joined-stream-this-windowed\n"
    "    Processor: joined-stream-merge (stores: [])\n"
    "      --> KSTREAM-SINK-0000000038\n"
    "      <-- joined-stream-this-join, joined-stream-other-join\n"
    "    Sink: KSTREAM-SINK-0000000012 (topic: outputTopic_0)\n"
    "      <-- KTABLE-TOSTREAM-0000000011\n"
    "    Sink: KSTREAM-SINK-0000000038 (topic: outputTopicForJoin)\n"
    "      <-- joined-stream-merge\n"
    "\n"
    "  Sub-topology: 2\n"
    "    Source: aggregate-stream-repartition-source (topics: [aggregate-stream-repartition])\n"
    "      --> KSTREAM-AGGREGATE-0000000014\n"
    "    Processor: KSTREAM-AGGREGATE-0000000014 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000013])\n"
    "      --> KTABLE-TOSTREAM-0000000018\n"
    "      <-- aggregate-stream-repartition-source\n"
    "    Processor: KTABLE-TOSTREAM-0000000018 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000019\n"
    "      <-- KSTREAM-AGGREGATE-0000000014\n"
    "    Sink: KSTREAM-SINK-0000000019 (topic: outputTopic_1)\n"
    "      <-- KTABLE-TOSTREAM-0000000018\n"
    "\n"
    "  Sub-topology: 3\n"
    "    Source: reduced-stream-repartition-source (topics: [reduced-stream-repartition])\n"
    "      --> KSTREAM-REDUCE-0000000023\n"
    "    Processor: KSTREAM-REDUCE-0000000023 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000022])\n"
    "      --> KTABLE-TOSTREAM-0000000027\n"
    "      <-- reduced-stream-repartition-source\n"
    "    Processor: KTABLE-TOSTREAM-0000000027 (stores: [])\n"
    "      --> KSTREAM-SINK-0000000028\n"
    "      <-- KSTREAM-REDUCE-0000000023\n"
    "    Sink: KSTREAM-SINK-0000000028 (topic: outputTopic_2)\n"
    "      <-- KTABLE-TOSTREAM-0000000027\n\n"
)


def test_repartition_topic_naming_unoptimized_topology():
    """RepartitionTopicNamingTest.buildTopology(NO_OPTIMIZATION). Its ``process()`` is
    stood in for by a peek of the same name, and the windowed stream-stream join (joins
    come with the joins issue) by peek/merge nodes and stores of Kafka's names: the
    stand-ins give the same graph, so this checks every Java ordering describe() imitates
    (HashMap iteration, TreeSets filled while subtree sizes change, HashSet store lists)."""
    builder = StreamsBuilder()
    mapped = builder.stream("input").map(lambda k, v: (k.upper(), v))
    mapped.filter(lambda k, v: k == "B").map_values(lambda v: v.upper()).peek(
        lambda k, v: None, name="KSTREAM-PROCESSOR-0000000004"
    )
    plan = builder.plan
    plan.names.new_processor_name("KSTREAM-PROCESSOR-")  # process() spends a second name
    count_stream = mapped.group_by_key(name="count-stream").count().to_stream()
    count_stream.to("outputTopic_0")
    mapped.group_by_key(name="aggregate-stream").aggregate(
        lambda: 0, lambda k, v, agg: agg + len(v)
    ).to_stream().to("outputTopic_1")
    mapped.filter(T).peek(lambda k, v: None).group_by_key(name="reduced-stream").reduce(
        lambda v1, v2: f"{v1}:{v2}"
    ).to_stream().to("outputTopic_2")
    left = mapped.filter(lambda k, v: k == "A")
    # join(countStream, ..., StreamJoined.withName("joined-stream")): the left side is
    # marked, so it is repartitioned first, then the join's processors.
    repartitioned = plan.repartition(left.name, "joined-stream-left")
    join = ExprRef("join", "callable", 2, "join")
    plan.add(Peek(name="joined-stream-this-windowed", parent=repartitioned.name, action=join))
    plan.add(Peek(name="joined-stream-other-windowed", parent=count_stream.name, action=join))
    plan.add(
        Peek(name="joined-stream-this-join", parent="joined-stream-this-windowed", action=join)
    )
    plan.add(
        Peek(name="joined-stream-other-join", parent="joined-stream-other-windowed", action=join)
    )
    plan.add(
        Merge(
            name="joined-stream-merge",
            parents=("joined-stream-this-join", "joined-stream-other-join"),
        )
    )
    plan.add(
        ToTopic(
            name="KSTREAM-SINK-0000000038", parent="joined-stream-merge", topic="outputTopicForJoin"
        )
    )
    built = builder.build()
    join_stores = (
        Store(
            "joined-stream-this-join-store",
            "table",
            "joined-stream-this-windowed",
            False,
            ("joined-stream-other-join",),
        ),
        Store(
            "joined-stream-other-join-store",
            "table",
            "joined-stream-other-windowed",
            False,
            ("joined-stream-this-join",),
        ),
    )
    topology = Topology(built.nodes, built.stores + join_stores)
    assert str(topology.describe()) == REPARTITION_NAMING_UNOPTIMIZED


def _repartition_sinks(text: str) -> int:
    return len(re.findall(r"Sink: .*-repartition", text))


def test_shouldNotFailWithSameRepartitionTopicNameUsingSameKGroupedTable():
    builder = StreamsBuilder()
    grouped = builder.table("topic").group_by(lambda k, v: (k, v), name="grouping")
    grouped.count().to_stream().to("output-count")
    grouped.reduce(lambda v, v2: v2, lambda v, v2: v2).to_stream().to("output-reduce")
    text = describe(builder)
    assert _repartition_sinks(text) == 1
    assert "grouping-repartition" in text


def test_shouldNotReuseRepartitionNodeWithUnnamedRepartitionTopicsKGroupedTable():
    builder = StreamsBuilder()
    grouped = builder.table("topic").group_by(lambda k, v: (k, v))
    grouped.count().to_stream().to("output-count")
    grouped.reduce(lambda v, v2: v2, lambda v, v2: v2).to_stream().to("output-reduce")
    assert _repartition_sinks(describe(builder)) == 2


def test_shouldFailWithSameRepartitionTopicName():
    builder = StreamsBuilder()
    builder.stream("topic").select_key(lambda k, v: k).group_by_key(
        name="grouping"
    ).count().to_stream()
    with pytest.raises(TopologyError) as error:
        builder.stream("topicII").select_key(lambda k, v: k).group_by_key(name="grouping").count()
    # Kafka's test expects a TopologyException; this is the one Kafka raises first.
    assert (
        str(error.value)
        == "Invalid topology: Processor grouping-repartition-filter is already added."
    )


@pytest.mark.parametrize("other_operations", [False, True])
@pytest.mark.parametrize("group_by_key", [True, False])
def test_shouldKeepRepartitionTopicNameForGroupBy_NoWindows(other_operations, group_by_key):
    """shouldKeepRepartitionTopicNameForGroupByKeyNoWindows / ...ForGroupByNoWindows."""
    builder = StreamsBuilder()
    stream = builder.stream("topic").select_key(lambda k, v: k + v)
    if other_operations:
        stream = stream.filter(T).map_values(lambda v: v)
    if group_by_key:
        stream.group_by_key(name="kstream-grouping").count()
    else:
        stream.group_by(lambda k, v: k, name="kstream-grouping").count()
    assert "(topic: kstream-grouping-repartition)" in describe(builder)


@pytest.mark.parametrize("other_operations", [False, True])
def test_shouldKeepRepartitionNameForGroupByKTable(other_operations):
    builder = StreamsBuilder()
    table = builder.table("topic")
    if other_operations:
        table = table.filter(T)
    table.group_by(lambda k, v: (k, v), name="ktable-group-by").count()
    assert "(topic: ktable-group-by-repartition)" in describe(builder)


# --- StreamsBuilderTest: names --------------------------------------------------------------


def test_shouldUseSpecifiedNameForStreamSourceProcessor():
    builder = StreamsBuilder()
    first = builder.stream("stream-topic", name="source-node")
    second = builder.stream("stream-topic-two")
    assert (first.name, second.name) == ("source-node", "KSTREAM-SOURCE-0000000001")


def test_shouldUseSpecifiedNameForTableSourceProcessor():
    builder = StreamsBuilder()
    first = builder.table("stream-topic", name="source-node").node
    second = builder.table("stream-topic-two").node
    assert (first.source_name, first.name) == ("source-node-source", "source-node")
    assert (second.source_name, second.name) == (
        "KSTREAM-SOURCE-0000000004",
        "KTABLE-SOURCE-0000000005",
    )


def test_shouldUseSpecifiedNameForGlobalTableSourceProcessor():
    builder = StreamsBuilder()
    first = builder.global_table("stream-topic", name="source-processor").node
    second = builder.global_table("stream-topic-two").node
    assert (first.store, second.store) == (
        "stream-topic-STATE-STORE-0000000000",
        "stream-topic-two-STATE-STORE-0000000003",
    )


def test_shouldUseSpecifiedNameForSinkProcessor():
    builder = StreamsBuilder()
    stream = builder.stream("stream-topic")
    stream.to("stream-topic-two", name="sink-processor")
    stream.to("stream-topic-two")
    assert [n.name for n in builder.build().nodes] == [
        "KSTREAM-SOURCE-0000000000",
        "sink-processor",
        "KSTREAM-SINK-0000000002",
    ]


def test_shouldUseSpecifiedNameForSplitOperation():
    builder = StreamsBuilder()
    builder.stream("stream-topic").split(name="branch-processor").branch(
        lambda k, v: True, name="-1"
    ).branch(lambda k, v: False, name="-2")
    assert [n.name for n in builder.build().nodes] == [
        "KSTREAM-SOURCE-0000000000",
        "branch-processor",
        "branch-processor-1",
        "branch-processor-2",
    ]


def test_shouldUseSpecifiedNameForMergeOperation():
    builder = StreamsBuilder()
    builder.stream("topic-1").merge(builder.stream("topic-2"), name="merge-processor")
    assert [n.name for n in builder.build().nodes] == [
        "KSTREAM-SOURCE-0000000000",
        "KSTREAM-SOURCE-0000000001",
        "merge-processor",
    ]


def test_shouldUseSpecifiedNameForToStream():
    builder = StreamsBuilder()
    builder.table("stream-topic").to_stream(name="to-stream")
    nodes = builder.build().nodes
    assert (nodes[0].source_name, nodes[0].name, nodes[1].name) == (
        "KSTREAM-SOURCE-0000000001",
        "KTABLE-SOURCE-0000000002",
        "to-stream",
    )


def test_shouldUseSpecifiedNameForToStreamWithMapper():
    """``toStream(mapper, named)`` is ``toStream(named).selectKey(mapper)``."""
    builder = StreamsBuilder()
    builder.table("stream-topic").to_stream(name="to-stream").select_key(lambda k, v: k)
    assert [n.name for n in builder.build().nodes][1:] == [
        "to-stream",
        "KSTREAM-KEY-SELECT-0000000004",
    ]


def test_shouldUseSpecifiedNameForAggregateOperationGivenTable():
    builder = StreamsBuilder()
    builder.table("stream-topic").group_by(lambda k, v: (k, v), name="group-operation").count(
        name="stream-operation-name"
    )
    topology = builder.build()
    assert [s.name for s in topology.stores] == [
        "stream-topic-STATE-STORE-0000000000",
        "KTABLE-AGGREGATE-STATE-STORE-0000000004",
    ]
    repartition = topology.repartitions[0]
    assert [n.name for n in topology.nodes] == [
        "KTABLE-SOURCE-0000000002",
        "group-operation",
        "stream-operation-name-source",
        "stream-operation-name",
    ]
    assert (repartition.sink_name, repartition.topic) == (
        "stream-operation-name-sink",
        "group-operation-repartition",
    )


def test_shouldAllowStreamsFromSameTopic():
    builder = StreamsBuilder()
    assert (
        builder.stream("topic").name == builder.stream("topic").name == "KSTREAM-SOURCE-0000000000"
    )


def test_shouldAllowReadingFromSameCollectionOfTopics():
    builder = StreamsBuilder()
    assert builder.stream(["topic1", "topic2"]).name == builder.stream(["topic2", "topic1"]).name


def test_shouldNotAllowReadingFromOverlappingAndUnequalCollectionOfTopics():
    builder = StreamsBuilder()
    builder.stream(["topic"])
    with pytest.raises(TopologyError) as error:
        builder.stream(["topic", "anotherTopic"])
    assert str(error.value) == (
        "Invalid topology: Two source nodes are subscribed to overlapping but not equal input topics"
    )


def test_shouldNotAllowTablesFromSameTopic():
    builder = StreamsBuilder()
    builder.table("topic")
    with pytest.raises(TopologyError) as error:
        builder.table("topic")
    assert (
        str(error.value)
        == "Invalid topology: Topic topic has already been registered by another source."
    )


def test_shouldNowAllowStreamAndTableFromSameTopic():
    builder = StreamsBuilder()
    builder.stream("topic")
    with pytest.raises(TopologyError) as error:
        builder.table("topic")
    assert (
        str(error.value)
        == "Invalid topology: Topic topic has already been registered by another source."
    )


# --- kafka/Describe.java, run with kafka-streams 4.3.1 ---------------------------------------


def _split(builder: StreamsBuilder) -> None:
    s = builder.stream("orders")
    branches = (
        s.split(name="orders-")
        .branch(T, name="large")
        .branch(T, name="medium")
        .default_branch(name="small")
    )
    branches["orders-large"].to("large-orders")
    branches["orders-small"].map_values("value").to("small-orders")


def _merge(builder: StreamsBuilder) -> None:
    web = builder.stream("web").select_key("value")
    web.merge(builder.stream("shop")).group_by_key().count().to_stream().to("counts")


def _multi_global_repartition(builder: StreamsBuilder) -> None:
    builder.stream(["b-topic", "a-topic", "c-topic"]).to("out")
    builder.global_table("countries")
    builder.stream("x").repartition(name="by-key", partitions=3).to("y")


def _table(builder: StreamsBuilder) -> None:
    builder.table("users").filter(T).group_by(("key", "value"), name="users-by-region").count(
        materialized_as="users-per-region"
    ).to_stream().to("region-counts")


def _chain(builder: StreamsBuilder) -> None:
    builder.stream("orders").filter(T).map_values("value").filter_not(T).to("out")


def _selectkey_groupbykey(builder: StreamsBuilder) -> None:
    builder.stream("orders").select_key("value").peek(lambda k, v: None).group_by_key().count()


def _unmarked_groupbykey(builder: StreamsBuilder) -> None:
    builder.stream("orders").map_values("value").flat_map_values(
        "array(value)"
    ).group_by_key().count()


def _groupby_named_shared(builder: StreamsBuilder) -> None:
    grouped = builder.stream("orders").group_by("value", name="g")
    grouped.count()
    grouped.reduce(lambda x, y: x, materialized_as="reduced")


def _table_groupby_unnamed_two(builder: StreamsBuilder) -> None:
    grouped = builder.table("t").group_by(("key", "value"))
    grouped.count()
    grouped.reduce(lambda x, y: x, lambda x, y: x)


def _flatmap_aggregate_named(builder: StreamsBuilder) -> None:
    builder.stream("lines").flat_map(lambda k, v: []).filter(T).peek(
        lambda k, v: None
    ).group_by_key().aggregate(
        lambda: 0, lambda k, v, a: a, name="agg", materialized_as="agg-store"
    )


def _split_unnamed(builder: StreamsBuilder) -> None:
    for stream in builder.stream("orders").split().branch(T).branch(T).no_default_branch().values():
        stream.to("out")


def _same_topic(builder: StreamsBuilder) -> None:
    builder.stream("orders").to("a")
    builder.stream("orders").to("b")


def _tables_named(builder: StreamsBuilder) -> None:
    builder.table("t", name="users", materialized_as="users-store").to_stream(name="changes").to(
        "out"
    )
    builder.table("t2").map_values("value", materialized_as="mv").group_by(("key", "value")).reduce(
        lambda x, y: x, lambda x, y: x, name="red", materialized_as="red-store"
    )


def _named_aggregate_totable(builder: StreamsBuilder) -> None:
    builder.stream("orders").map(("value", "key")).group_by_key().count(name="cnt")
    builder.stream("orders2").select_key("value").to_table(
        name="tt", materialized_as="tt-store"
    ).to_stream().to("o")


def _mixed(builder: StreamsBuilder) -> None:
    source = builder.stream("in")
    marked = source.select_key("value")
    marked.group_by_key().count()
    marked.group_by_key().reduce(lambda x, y: x)
    source.filter(T).merge(marked).to("out")
    builder.global_table("g1")
    builder.stream("late").group_by_key().aggregate(lambda: 0, lambda k, v, a: a)


KAFKA_PROGRAMS: dict[str, Callable[[StreamsBuilder], None]] = {
    "split": _split,
    "merge": _merge,
    "multi+global+repartition": _multi_global_repartition,
    "table": _table,
    "chain": _chain,
    "selectkey-groupbykey": _selectkey_groupbykey,
    "unmarked-groupbykey": _unmarked_groupbykey,
    "groupby-named-shared": _groupby_named_shared,
    "table-groupby-unnamed-two": _table_groupby_unnamed_two,
    "flatmap-aggregate-named": _flatmap_aggregate_named,
    "split-unnamed": _split_unnamed,
    "same-topic": _same_topic,
    "tables-named": _tables_named,
    "named-aggregate-totable": _named_aggregate_totable,
    "mixed": _mixed,
    **SNAPSHOT_PROGRAMS,
}


def _kafka_output() -> dict[str, str]:
    text = (Path(__file__).parent / "kafka" / "describe_4.3.1.txt").read_text()
    sections = re.split(r"^===== (.+)\n", text, flags=re.MULTILINE)[1:]
    return dict(zip(sections[::2], sections[1::2], strict=True))


def test_every_kafka_program_is_mirrored():
    assert list(_kafka_output()) == list(KAFKA_PROGRAMS)


@pytest.mark.parametrize("title", list(KAFKA_PROGRAMS))
def test_describe_equals_kafka_streams_4_3_1(title):
    builder = StreamsBuilder()
    KAFKA_PROGRAMS[title](builder)
    assert describe(builder) == _kafka_output()[title]

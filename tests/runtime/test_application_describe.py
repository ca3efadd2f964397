"""An application describes every store its runtime keeps: a table source's store (none
for a table only a foreign-key join reads, which keeps its own copy), the foreign-key
join's copy of the right table and its subscriptions, a stream-table join's copy of its
table, an aggregate's store; the foreign-key join's layout (Kafka's: the products topic
is empty at the first start); and the materialized tables users read."""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import TopicConfig

pytestmark = pytest.mark.spark


def test_describe_lists_every_store_the_runtime_keeps(tmp_path, spark):
    store = EmbeddedStore(tmp_path / "home")
    for topic in ("orders", "products", "clicks"):
        store.create_topic(TopicConfig(topic, partitions=2))
    builder = StreamsBuilder()
    orders = builder.table("orders", key_schema="BIGINT", value_schema="product BIGINT, qty BIGINT")
    products = builder.table("products", key_schema="BIGINT", value_schema="name STRING")
    orders.join(products, "left.qty", foreign_key="product", materialized_as="priced")
    orders.group_by(("product", "value")).count(materialized_as="per-product")
    builder.stream("clicks", key_schema="BIGINT", value_schema="n BIGINT").join(orders, "left.n + right.qty").to("out")
    app = Application(builder.build(), "described", store=store, spark=spark)

    described = app.describe()
    assert described.split("\nState stores:\n")[1] == (
        "  orders-STATE-STORE-0000000000 (table, owner KTABLE-SOURCE-0000000002, 2 partitions)\n"
        "  KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007-RIGHT (table copy, owner "
        "KTABLE-FK-JOIN-OUTPUT-0000000006, 2 partitions)\n"
        "  KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007 (subscriptions, owner "
        "KTABLE-FK-JOIN-OUTPUT-0000000006, 2 partitions)\n"
        "  per-product (aggregate, owner KTABLE-AGGREGATE-0000000011, 2 partitions)\n"
        "  KSTREAM-JOIN-0000000013-TABLE (table copy, owner KSTREAM-JOIN-0000000013, 2 partitions)\n"
        "\n"
        "Foreign-key joins:\n"
        "  KTABLE-FK-JOIN-OUTPUT-0000000006: subscriptions by foreign key (Kafka's layout)\n"
        "\n"
        "Materialized tables:\n"
        "  priced (owner KTABLE-FK-JOIN-OUTPUT-0000000006)\n"
        "  per-product (owner KTABLE-AGGREGATE-0000000011)\n"
    )
    assert described.startswith(str(app.topology.describe()).rstrip() + "\n\nState stores:\n")

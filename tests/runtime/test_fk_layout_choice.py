"""An application chooses the layout of a foreign-key join that leaves it open
(``replicate_right=None``): the right table replicated in every state partition when
its topic holds 1 to ``replicate_right_up_to`` records at the first start, else Kafka's
layout; the choice is recorded with the state and kept at later starts."""

from __future__ import annotations

import json

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application, ApplicationError
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig

pytestmark = pytest.mark.spark

JOIN = "KTABLE-FK-JOIN-OUTPUT-0000000006"
REPLICATED = f"  {JOIN}: the right table replicated in every state partition"
SHUFFLED = f"  {JOIN}: subscriptions by foreign key (Kafka's layout)"


def _topology(replicate_right=None):
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING, qty BIGINT")
    products = builder.table("products", value_schema="price BIGINT")
    joined = orders.join(products, "left.qty * right.price", foreign_key="product", replicate_right=replicate_right)
    joined.to_stream().to("priced")
    return builder.build()


def _store(home, products: int):
    store = EmbeddedStore(home)
    store.create_topic(TopicConfig("orders", partitions=2))
    store.create_topic(TopicConfig("products", partitions=2))
    _products(store, range(products))
    return store


def _products(store, numbers, ts=100):
    store.produce(
        "products",
        [Record(f"p{n}".encode(), json.dumps({"price": 10 + n}).encode(), ts + n, partition=n % 2) for n in numbers],
    )


def _layout(app) -> str:
    return app.describe().split("Foreign-key joins:\n")[1].splitlines()[0]


def test_a_small_right_table_is_replicated_and_the_choice_is_kept(tmp_path, spark):
    store = _store(tmp_path, 3)
    app = Application(_topology(), "small", store=store, spark=spark)
    assert _layout(app) == REPLICATED
    assert "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000007-LEFT (table copy" in app.describe()
    store.produce("orders", [
        Record(b"o1", b'{"product": "p1", "qty": 2}', 1_000, partition=0),
        Record(b"o2", b'{"product": "p2", "qty": 5}', 1_001, partition=1),
        Record(b"o3", b'{"product": "p9", "qty": 1}', 1_002, partition=1),
    ])
    app.run_until_caught_up()
    assert app.paths.read_meta()["replicated"] == [JOIN]

    # The right table has grown past the threshold: a later start keeps the layout its
    # state was built with.
    _products(store, range(3, 10), ts=2_000)
    store.produce("orders", [Record(b"o3", b'{"product": "p9", "qty": 4}', 3_000, partition=1)])
    again = Application(_topology(), "small", store=store, spark=spark, replicate_right_up_to=5)
    assert _layout(again) == REPLICATED
    again.run_until_caught_up()
    priced = sorted((r["key"], r["value"], r["timestamp"]) for r in store.read("priced").to_pylist())
    # o3 meets p9 (19) and its quantity becomes 4 in one batch: one record per key per batch.
    assert priced == [(b"o1", b"22", 1_000), (b"o2", b"60", 1_001), (b"o3", b"76", 3_000)]


@pytest.mark.parametrize(
    ("products", "up_to", "replicate_right"),
    [(3, 2, None), (0, 1_000_000, None), (3, None, None), (3, 1_000_000, False)],
    ids=["over-the-threshold", "empty-topic", "never-by-itself", "kafka-layout-asked-for"],
)
def test_otherwise_kafkas_layout(tmp_path, spark, products, up_to, replicate_right):
    store = _store(tmp_path, products)
    app = Application(
        _topology(replicate_right), "large", store=store, spark=spark, replicate_right_up_to=up_to
    )
    assert _layout(app) == SHUFFLED
    assert app.paths.read_meta()["replicated"] == []


def test_an_application_started_before_layouts_were_chosen_keeps_kafkas(tmp_path, spark):
    store = _store(tmp_path, 3)
    app = Application(_topology(), "older", store=store, spark=spark)
    meta = app.paths.read_meta()
    del meta["replicated"]
    app.paths.meta.write_text(json.dumps(meta))
    assert _layout(Application(_topology(), "older", store=store, spark=spark)) == SHUFFLED


def test_the_threshold_must_be_a_record_count(tmp_path, spark):
    store = _store(tmp_path, 1)
    with pytest.raises(ApplicationError) as error:
        Application(_topology(), "bad", store=store, spark=spark, replicate_right_up_to=-1)
    assert str(error.value) == "replicate_right_up_to must be a record count (0 or more) or None, got -1"

"""The plan's side of a foreign-key join's layout: which joins leave it to the
application, the topic a right table is read from, and the plan with layouts given."""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.plan.errors import InvalidArgumentError
from tablestream.plan.joins import ForeignKeyJoin


def _joins():
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING, qty BIGINT")
    products = builder.table("products", value_schema="price BIGINT, live BOOLEAN")
    live = products.filter("live").map_values("struct(price)")
    totals = builder.stream("sales", value_schema="product STRING, qty BIGINT").group_by("product").count()
    latest = builder.stream("prices", value_schema="price BIGINT").to_table()
    open_ = orders.join(live, "right.price", foreign_key="product", name="through-filter")
    counted = orders.join(totals, "right", foreign_key="product", name="aggregated")
    from_stream = orders.join(latest, "right.price", foreign_key="product", name="from-stream")
    kafka = orders.join(products, "right.price", foreign_key="product", name="kafka", replicate_right=False)
    asked = orders.join(products, "right.price", foreign_key="product", name="asked", replicate_right=True)
    return builder.build(), [j.name for j in (open_, counted, from_stream, kafka, asked)]


def test_the_topic_a_right_table_is_read_from():
    topology, (open_, counted, from_stream, *_) = _joins()
    assert [topology.table_topic(topology.node(j).right) for j in (open_, counted, from_stream)] == [
        "products", None, None
    ]


def test_layouts_left_to_the_application_are_given_and_the_others_kept():
    topology, names = _joins()
    open_, counted, from_stream, kafka, asked = names
    assert [n.name for n in topology.unchosen_layouts] == [open_, counted, from_stream]
    given = topology.with_layouts([open_, kafka])
    assert [given.node(n).replicate_right for n in names] == [True, False, False, False, True]
    assert given.unchosen_layouts == ()
    assert (given.stores, dict(given.functions)) == (topology.stores, dict(topology.functions))


def test_a_layout_is_true_false_or_none():
    topology, names = _joins()
    node = topology.node(names[0])
    with pytest.raises(InvalidArgumentError) as error:
        ForeignKeyJoin(**{**{f: getattr(node, f) for f in node.__dataclass_fields__}, "replicate_right": 1})
    assert str(error.value) == f"{names[0]}: replicate_right must be True, False or None, got 1"

"""Key types of joins as the plan knows them, and the joins refused while building
(no Spark: every type here is declared or unknown until the job runs)."""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.plan import JoinTypeError
from tablestream.plan.expr import SqlExpr
from tablestream.plan.keys import KeyType, expression_type, key_type
from tablestream.schema import BIGINT, INT, STRING, parse_type

HINT = "Declare the key_schema and value_schema the records are written with, or convert one side (CAST)."


def refused(source: str, target: str) -> str:
    return f"Invalid join condition: types don't match. Got {source} = {target}. {HINT}"


def test_key_types_follow_the_key_through_the_plan():
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="product BIGINT, qty INT")
    products = builder.table("products", key_schema="BIGINT")
    users = builder.table("users", key_format="JSON")
    filtered = orders.filter("qty > 0").map_values("qty * 2")
    by_sql = orders.select_key("product")
    by_callable = orders.select_key(lambda k, v: v["product"])
    counts = orders.group_by_key().count()
    plan = builder.build()
    of = plan.node
    assert key_type(of, filtered.name) == KeyType("undeclared", of="orders")
    assert key_type(of, counts.name) == KeyType("undeclared", of="orders")
    assert key_type(of, products.name) == KeyType("declared", BIGINT, "products")
    assert key_type(of, users.name) == KeyType("json", of="users")
    assert key_type(of, by_sql.name) == KeyType("declared", BIGINT, by_sql.name)
    assert key_type(of, by_callable.name) == KeyType("json", of=by_callable.name)


def test_expression_types_of_fields_casts_and_the_rest():
    builder = StreamsBuilder()
    orders = builder.table("orders", key_schema="INT", value_schema="product STRING, qty INT")
    plan = builder.build()
    of, name = plan.node, orders.name
    typed = {
        "product": STRING,
        "value.qty": INT,
        "key": INT,
        "rowtime": BIGINT,
        "CAST(product AS BIGINT)": BIGINT,
        "value": parse_type("STRUCT<product STRING, qty INT>"),
    }
    for sql, expected in typed.items():
        assert expression_type(SqlExpr(sql), of, name) == KeyType("declared", expected, "orders"), sql
    assert expression_type(SqlExpr("upper(product)"), of, name) == KeyType("computed", of="orders")


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda b: b.table("orders", value_schema="product STRING").join(
                b.table("products", key_schema="BIGINT"), "right", foreign_key="product"
            ),
            refused("orders.product{STRING}", "products.KEY{BIGINT}"),
            id="foreign-key-string-to-bigint",
        ),
        pytest.param(
            lambda b: b.table("orders", value_schema="product DOUBLE").left_join(
                b.table("products"), "right", foreign_key="value.product"
            ),
            refused("orders.value.product{DOUBLE}", "products.KEY{STRING or BIGINT (KAFKA, no key_schema)}"),
            id="foreign-key-double-to-undeclared",
        ),
        pytest.param(
            lambda b: b.stream("clicks", key_schema="DOUBLE").join(b.table("users", key_schema="INT"), "right"),
            refused("clicks.KEY{DOUBLE}", "users.KEY{INT}"),
            id="stream-table",
        ),
        pytest.param(
            lambda b: b.table("a", key_format="JSON", key_schema="id BIGINT").outer_join(
                b.table("b", key_schema="STRING"), "right"
            ),
            refused("a.KEY{STRUCT<id BIGINT>}", "b.KEY{STRING}"),
            id="struct-to-string",
        ),
        pytest.param(
            lambda b: b.stream("visits", value_schema="country INT").join(
                b.global_table("countries", key_schema="STRING"), "right", key_selector="country"
            ),
            refused("visits.country{INT}", "countries.KEY{STRING}"),
            id="global-table",
        ),
    ],
)
def test_joins_whose_types_never_match_are_refused(build, message):
    with pytest.raises(JoinTypeError) as error:
        build(StreamsBuilder())
    assert str(error.value) == message


def test_joins_whose_types_can_match_are_built():
    b = StreamsBuilder()
    products = b.table("products")  # undeclared: strings and integers
    b.table("orders", value_schema="product INT").join(products, "right", foreign_key="product")
    b.table("lines", value_schema="product STRING").join(products, "right", foreign_key="product")
    b.table("wide", key_schema="INT").join(b.table("narrow", key_schema="BIGINT"), "right")
    b.table("json", key_format="JSON").join(b.table("typed", key_schema="DOUBLE"), "right")  # known when it runs
    b.table("f", value_schema="x DOUBLE").join(products, "right", foreign_key=lambda v: v["x"])
    joins = [n for n in b.build().nodes if "JOIN" in n.name or "MERGE" in n.name]
    assert len(joins) == 5

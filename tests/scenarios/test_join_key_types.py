"""Keys of different types across joins, as exact-record scenarios.

A join converts the key it looks up with (a stream's key, a left table's key, a foreign
key) to the type of the looked-up table's keys: a string to STRING, an integer to INT or
BIGINT, a floating-point number to DOUBLE. A KAFKA key without a key schema reads as
``pipe_input`` writes it (a Python int as 8 bytes, read back as a BIGINT), so integer
keys without schemas meet integer foreign keys. A value that does not convert matches
nothing and leaves a processing-log entry; a join whose two types can never match is
refused while the topology is built (see ``tests/plan/test_keys.py``) or, for a Spark
Column, before its first batch.

Callables are made inside functions: Spark's workers unpickle a module-level function by
reference, and this module is not importable there.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from tablestream.dsl import StreamsBuilder
from tablestream.plan import JoinTypeError
from tablestream.storage.formats import get_format
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

R = TestRecord
KINDS = ("join", "left_join")


def pair():
    """The joiner ``[left, right]``."""
    return lambda left, right: [left, right]


def product_of():
    """The foreign key ``value["product"]``."""
    return lambda value: value["product"]


def fk_topology(kind: str, key_schema: str | None, replicate_right: bool):
    builder = StreamsBuilder()
    orders = builder.table("orders", key_schema=key_schema)
    products = builder.table("products", key_schema=key_schema)
    join = getattr(orders, kind)(products, pair(), foreign_key=product_of(), replicate_right=replicate_right)
    join.to_stream().to("out")
    return builder.build()


@pytest.mark.parametrize("replicate_right", [False, True], ids=["shuffled", "replicated"])
@pytest.mark.parametrize("key_schema", [None, "BIGINT"], ids=["no-key-schema", "bigint"])
@pytest.mark.parametrize("kind", KINDS)
def test_integer_keys_meet_integer_foreign_keys_with_or_without_key_schemas(spark, kind, key_schema, replicate_right):
    """The issue's case: integer keys (``pipe_input(3, ...)``) and a callable returning
    the integer foreign key joined nothing without key schemas; they match as with
    ``key_schema="BIGINT"`` on both tables."""
    with TestDriver(fk_topology(kind, key_schema, replicate_right), spark=spark) as driver:
        products, orders = driver.create_input_topic("products"), driver.create_input_topic("orders")
        out = driver.create_output_topic("out", key_format=get_format("KAFKA", "BIGINT"))
        products.pipe_input(3, {"name": "pen"}, 1)
        products.pipe_input(4, {"name": "ink"}, 2)
        orders.pipe_input(10, {"product": 3}, 3)
        orders.pipe_input(11, {"product": 5}, 4)
        products.pipe_input(3, {"name": "nib"}, 5)
        orders.pipe_input(11, {"product": 4}, 6)
        expected = [
            R(10, [{"product": 3}, {"name": "pen"}], 3),
            *([R(11, [{"product": 5}, None], 4)] if kind == "left_join" else []),
            R(10, [{"product": 3}, {"name": "nib"}], 5),
            R(11, [{"product": 4}, {"name": "ink"}], 6),
        ]
        assert out.read_records() == expected
        assert driver.processing_log == []


def typed_fk_topology(kind: str, replicate_right: bool = False):
    builder = StreamsBuilder()
    orders = builder.table("orders")
    products = builder.table("products", key_schema="INT")
    join = getattr(orders, kind)(products, pair(), foreign_key=product_of(), replicate_right=replicate_right)
    join.to_stream().to("out")
    return builder.build(), join.node.name


@pytest.mark.parametrize("replicate_right", [False, True], ids=["shuffled", "replicated"])
@pytest.mark.parametrize("kind", KINDS)
def test_foreign_keys_that_do_not_convert_go_to_the_processing_log(spark, kind, replicate_right):
    """A string, a struct, a float and an integer out of INT's range never match an INT
    key: each left row joins nothing (a left join keeps it, as for a null foreign key)
    and its record is logged with the reason."""
    topology, join = typed_fk_topology(kind, replicate_right)
    with TestDriver(topology, spark=spark) as driver:
        products, orders = driver.create_input_topic("products"), driver.create_input_topic("orders")
        out = driver.create_output_topic("out")
        products.pipe_input(3, {"name": "pen"}, 1)
        bad = [("a", {"product": "3"}), ("b", {"product": {"id": 3}}), ("c", {"product": 3.0}),
               ("d", {"product": 2**31})]
        for i, (key, value) in enumerate(bad):
            orders.pipe_input(key, value, 10 + i)
        orders.pipe_input("e", {"product": 3}, 20)
        unmatched = [R(key, [value, None], 10 + i) for i, (key, value) in enumerate(bad)]
        assert out.read_records() == [
            *(unmatched if kind == "left_join" else []),
            R("e", [{"product": 3}, {"name": "pen"}], 20),
        ]
        shown = ['"3" (STRING)', '{"id":3} (STRUCT)', "3.0 (DOUBLE)", "2147483648 (BIGINT)"]
        assert driver.processing_log == [
            {
                "topic": "orders", "partition": 0, "offset": i, "timestamp": 10 + i,
                "error": f"{join}: foreign key {what} cannot match a key of products (INT)",
                "key": key.encode(), "value": get_format("JSON").serialize(value),
            }
            for i, ((key, value), what) in enumerate(zip(bad, shown, strict=True))
        ]


def test_a_spark_column_of_another_type_is_refused_before_the_first_batch(spark):
    builder = StreamsBuilder()
    orders = builder.table("orders", value_schema="product STRING")
    products = builder.table("products", key_schema="BIGINT")
    orders.join(products, "right", foreign_key=F.col("value.product")).to_stream().to("out")
    # Spark knows the Column's type when the driver analyzes the topology.
    with pytest.raises(JoinTypeError) as error:
        TestDriver(builder.build(), spark=spark)
    assert str(error.value) == (
        "Invalid join condition: types don't match. Got orders.Column<'value.product'>{STRING} = "
        "products.KEY{BIGINT}. Declare the key_schema and value_schema the records are written with, "
        "or convert one side (CAST)."
    )


@pytest.mark.parametrize("kind", KINDS)
def test_stream_keys_convert_to_the_table_key_type(spark, kind):
    """Stream records keyed without a key schema look up a BIGINT-keyed table: an
    integer key matches, a string key cannot (logged; the left join keeps the record);
    output records keep the stream's own keys."""
    builder = StreamsBuilder()
    clicks = builder.stream("clicks")
    users = builder.table("users", key_schema="BIGINT")
    join = getattr(clicks, kind)(users, pair())
    join.to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        driver.create_input_topic("users").pipe_input(7, {"name": "ann"}, 1)
        stream = driver.create_input_topic("clicks")
        stream.pipe_input(7, {"page": "a"}, 2)
        stream.pipe_input("7", {"page": "b"}, 3)
        assert driver.create_output_topic("out").read_records() == [
            R(7, [{"page": "a"}, {"name": "ann"}], 2),
            *([R("7", [{"page": "b"}, None], 3)] if kind == "left_join" else []),
        ]
        assert [(e["topic"], e["offset"], e["error"], e["key"]) for e in driver.processing_log] == [
            ("clicks", 1, f'{join.node.name}: key "7" (STRING) cannot match a key of users (BIGINT)', b"7"),
        ]


def test_table_table_outer_join_across_key_types(spark):
    """A left table without key schema and a BIGINT-keyed right table: the left string
    key matches no right key (logged, kept by the outer join under its own key), a
    right key alone gets the left table's form (8 bytes, read back as the integer)."""
    builder = StreamsBuilder()
    a = builder.table("a")
    b = builder.table("b", key_schema="BIGINT")
    joined = a.outer_join(b, pair(), materialized_as="both")
    joined.to_stream().to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        left, right = driver.create_input_topic("a"), driver.create_input_topic("b")
        out = driver.create_output_topic("out")
        left.pipe_input(1, {"x": 1}, 1)
        right.pipe_input(1, {"y": 1}, 2)
        left.pipe_input("1", {"x": 2}, 3)
        right.pipe_input(2, {"y": 2}, 4)
        assert out.read_records() == [
            R(1, [{"x": 1}, None], 1),
            R(1, [{"x": 1}, {"y": 1}], 2),
            R("1", [{"x": 2}, None], 3),
            R(2, [None, {"y": 2}], 4),
        ]
        assert [(e["offset"], e["error"]) for e in driver.processing_log] == [
            (1, f'{joined.node.name}: key "1" (STRING) cannot match a key of b (BIGINT)'),
        ]


def test_a_right_key_out_of_the_left_key_range_has_no_outer_result(spark):
    builder = StreamsBuilder()
    a = builder.table("a", key_schema="INT")
    b = builder.table("b", key_schema="BIGINT")
    joined = a.outer_join(b, pair(), materialized_as="both")
    with TestDriver(builder.build(), spark=spark) as driver:
        driver.create_input_topic("b").pipe_input(2**40, {"y": 1}, 5)
        driver.create_input_topic("b").pipe_input(3, {"y": 2}, 6)
        assert driver.table("both") == {3: [None, {"y": 2}]}
        assert driver.processing_log == [{
            "topic": None, "partition": None, "offset": None, "timestamp": 5,
            "error": f"{joined.node.name}: the key 1099511627776 (BIGINT) of b cannot be a key of a (INT)",
            "key": b"1099511627776", "value": b'{"y":1}',
        }]


def test_callable_group_by_results_join_a_table_without_key_schema(spark):
    """Counts per product (a callable's group key: a Python int) joined with products
    keyed by ints without a key schema."""
    builder = StreamsBuilder()
    orders = builder.stream("orders")
    products = builder.table("products")
    counts = orders.group_by(lambda key, value: value["product"]).count()
    counts.join(products, pair(), materialized_as="counted")
    with TestDriver(builder.build(), spark=spark) as driver:
        driver.create_input_topic("products").pipe_input(3, {"name": "pen"}, 1)
        for i, product in enumerate([3, 3, 4]):
            driver.create_input_topic("orders").pipe_input(f"o{i}", {"product": product}, 2 + i)
        assert driver.table("counted") == {3: [2, {"name": "pen"}]}
        assert driver.processing_log == []


@pytest.mark.parametrize("selector", ["sql", "callable"])
def test_selected_keys_join_a_table_of_another_key_type(spark, selector):
    """A stream re-keyed by a field (SQL over a declared INT field, or a callable giving
    a Python int) joins a table without key schema keyed by ints."""
    builder = StreamsBuilder()
    orders = builder.stream("orders", value_schema="product INT")
    products = builder.table("products")
    keyed = orders.select_key("product" if selector == "sql" else (lambda key, value: value["product"]))
    keyed.join(products, pair()).to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        driver.create_input_topic("products").pipe_input(3, {"name": "pen"}, 1)
        driver.create_input_topic("orders").pipe_input("o1", {"product": 3}, 2)
        key_format = get_format("KAFKA", "INT") if selector == "sql" else None
        assert driver.create_output_topic("out", key_format=key_format).read_records() == [
            R(3, [{"product": 3}, {"name": "pen"}], 2),
        ]


def test_global_table_key_selector_converts_to_the_table_key_type(spark):
    builder = StreamsBuilder()
    visits = builder.stream("visits")
    countries = builder.global_table("countries")
    visits.left_join(countries, pair(), key_selector=lambda key, value: value["country"]).to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        driver.create_input_topic("countries").pipe_input(33, {"name": "France"}, 1)
        stream = driver.create_input_topic("visits")
        stream.pipe_input("v1", {"country": 33}, 2)
        stream.pipe_input("v2", {"country": [33]}, 3)
        assert driver.create_output_topic("out").read_records() == [
            R("v1", [{"country": 33}, {"name": "France"}], 2),
            R("v2", [{"country": [33]}, None], 3),
        ]
        assert [e["error"].split(": ", 1)[1] for e in driver.processing_log] == [
            "selected key [33] (ARRAY) cannot match a key of countries (STRING or BIGINT (KAFKA, no key_schema))",
        ]

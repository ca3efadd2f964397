"""Integer keys without a key schema, whatever their bytes, through every operator.

A KAFKA key without ``key_schema`` is read as ``pipe_input`` writes it: printable UTF-8
text is a STRING, other 8 bytes a BIGINT (Kafka's LongSerializer). Most integers' 8
bytes are not valid UTF-8 (200 is ``00 .. 00 C8``, -1 is ``FF .. FF``); they work as 3
does: read at the source, kept apart in stores, given to callables as ``int``, joined
with integer keys and foreign keys, written back with the bytes they came with, and in
the processing log with those bytes. Each scenario mixes such keys with a small one and
checks the exact records and an empty processing log.

Callables are made inside functions: Spark's workers unpickle a module-level function by
reference, and this module is not importable there.
"""

from __future__ import annotations

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.storage.formats import get_format
from tablestream.testing.driver import TestDriver, TestRecord

pytestmark = pytest.mark.spark

R = TestRecord
BIG = 2**40 + 7
KEYS = (200, -1, BIG, 3)  # 200, -1 and BIG are not UTF-8; 3 is
BYTES = get_format("KAFKA", "BYTES")


def raw(key: int) -> bytes:
    """The 8 bytes ``pipe_input`` writes for an int key (Kafka's LongSerializer)."""
    return key.to_bytes(8, "big", signed=True)


def pair():
    return lambda left, right: [left, right]


def test_keys_are_read_and_written_with_their_own_bytes(spark):
    """A KAFKA sink writes a key's bytes as they came; a JSON sink the value it reads as."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.to("out")
    events.to("out-json", key_format="JSON")
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        for i, key in enumerate([*KEYS, "alice"]):
            topic.pipe_input(key, {"n": i}, 10 + i)
        assert driver.create_output_topic("out", key_format=BYTES).read_records() == [
            *[R(raw(key), {"n": i}, 10 + i) for i, key in enumerate(KEYS)], R(b"alice", {"n": 4}, 14)
        ]
        assert driver.create_output_topic("out-json", key_format=BYTES).read_records() == [
            R(b"200", {"n": 0}, 10), R(b"-1", {"n": 1}, 11), R(b"1099511627783", {"n": 2}, 12), R(b"3", {"n": 3}, 13),
            R(b'"alice"', {"n": 4}, 14),
        ]
        assert driver.processing_log == []


def test_callables_receive_the_integer(spark):
    """A mapper, a predicate, a peek action and a key selector get ``int`` keys (the
    peek action divides by ``key - 200``: a text key would fail on every record); a
    selected key that is the integer is written with the bytes the record came with."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.map_values(lambda k, v: {"key": k, "type": type(k).__name__}).to("typed")
    events.filter(lambda k, v: k < 0 or k > 2**32).to("filtered")
    events.peek(lambda k, v: 1 // (k - 200), name="divide").to("peeked")
    events.select_key(lambda k, v: k).to("selected")
    events.select_key("key").to("selected-sql")
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        for i, key in enumerate(KEYS):
            topic.pipe_input(key, {"n": i}, 10 + i)
        assert driver.create_output_topic("typed").read_records() == [
            R(key, {"key": key, "type": "int"}, 10 + i) for i, key in enumerate(KEYS)
        ]
        assert driver.create_output_topic("filtered").read_records() == [R(-1, {"n": 1}, 11), R(BIG, {"n": 2}, 12)]
        assert driver.create_output_topic("peeked").read_records() == [
            R(key, {"n": i}, 10 + i) for i, key in enumerate(KEYS) if key != 200
        ]
        for out in ("selected", "selected-sql"):
            assert driver.create_output_topic(out, key_format=BYTES).read_records() == [
                R(raw(key), {"n": i}, 10 + i) for i, key in enumerate(KEYS)
            ]
        assert driver.processing_log == [
            {
                "topic": "in", "partition": 0, "offset": 0, "timestamp": 10,
                "error": "divide: ZeroDivisionError: integer division or modulo by zero",
                "key": raw(200), "value": b'{"n":0}',
            }
        ]


@pytest.mark.parametrize("source", ["stream", "table"])
def test_tables_keep_each_key_apart(spark, source):
    """200 and 201 differ in their last byte only (both not UTF-8): each is a row of its
    own, in the output changelog and in the materialized table."""
    builder = StreamsBuilder()
    if source == "stream":
        table = builder.stream("in").to_table(materialized_as="latest")
    else:
        table = builder.table("in", materialized_as="latest")
    table.to_stream().to("out")
    records = [(200, {"n": 0}, 1), (201, {"n": 1}, 2), (-1, {"n": 2}, 3), (BIG, {"n": 3}, 4), (3, {"n": 4}, 5),
               (200, {"n": 5}, 6), (-1, None, 7)]
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        for key, value, ts in records:
            topic.pipe_input(key, value, ts)
        assert driver.create_output_topic("out").read_records() == [R(*record) for record in records]
        assert driver.table("latest") == {200: {"n": 5}, 201: {"n": 1}, BIG: {"n": 3}, 3: {"n": 4}}
        assert driver.processing_log == []


def test_aggregations_group_by_them(spark):
    """A stream grouped by its key (an aggregator gets it); a table grouped by its key
    (SQL ``key``), and by a callable's integer with an aggregator given each row's key."""
    builder = StreamsBuilder()
    events = builder.stream("in")
    events.group_by_key().count(materialized_as="counts").to_stream().to("counts")
    events.group_by_key().aggregate(lambda: [], lambda k, v, agg: [*agg, k]).to_stream().to("keys")
    table = events.to_table()
    table.group_by(("key", "value")).count().to_stream().to("by-key")
    table.group_by(lambda k, v: (v["g"], v)).aggregate(
        lambda: [], lambda g, v, agg, k: [*agg, k], lambda g, v, agg, k: [x for x in agg if x != k]
    ).to_stream().to("by-g")
    records = [(200, {"g": -1}, 1), (-1, {"g": 200}, 2), (200, {"g": 200}, 3), (BIG, {"g": -1}, 4), (3, {"g": 3}, 5)]
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        for key, value, ts in records:
            topic.pipe_input(key, value, ts)
        assert driver.create_output_topic("counts").read_records() == [
            R(200, 1, 1), R(-1, 1, 2), R(200, 2, 3), R(BIG, 1, 4), R(3, 1, 5)
        ]
        assert driver.create_output_topic("keys").read_records() == [
            R(200, [200], 1), R(-1, [-1], 2), R(200, [200, 200], 3), R(BIG, [BIG], 4), R(3, [3], 5)
        ]
        assert driver.create_output_topic("by-key").read_records() == [
            R(200, 1, 1), R(-1, 1, 2), R(BIG, 1, 4), R(3, 1, 5)
        ]
        assert driver.create_output_topic("by-g").read_records() == [
            R(-1, [200], 1),
            R(200, [-1], 2),
            R(-1, [], 3),  # 200 leaves group -1 for group 200
            R(200, [-1, 200], 3),
            R(-1, [BIG], 4),
            R(3, [3], 5),
        ]
        assert driver.table("counts") == {200: 2, -1: 1, BIG: 1, 3: 1}
        assert driver.processing_log == []


STREAM_TABLE_SCHEMAS = [(None, None), (None, "BIGINT"), ("BIGINT", None)]


@pytest.mark.parametrize(("stream_schema", "table_schema"), STREAM_TABLE_SCHEMAS, ids=["none-none", "none-bigint", "bigint-none"])
def test_stream_table_joins(spark, stream_schema, table_schema):
    builder = StreamsBuilder()
    table = builder.table("t", key_schema=table_schema)
    builder.stream("s", key_schema=stream_schema).left_join(table, pair()).to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        t, s = driver.create_input_topic("t"), driver.create_input_topic("s")
        for i, key in enumerate(KEYS):
            t.pipe_input(key, {"t": i}, i)
        stream_keys = [3, 200, 201, -1, BIG]
        for i, key in enumerate(stream_keys):
            s.pipe_input(key, {"s": i}, 10 + i)
        table_of = {key: i for i, key in enumerate(KEYS)}
        assert driver.create_output_topic("out", key_format=BYTES).read_records() == [
            R(raw(key), [{"s": i}, None if key not in table_of else {"t": table_of[key]}], 10 + i)
            for i, key in enumerate(stream_keys)
        ]
        assert driver.processing_log == []


@pytest.mark.parametrize("right_schema", [None, "BIGINT"], ids=["none", "bigint"])
def test_table_table_outer_join(spark, right_schema):
    """Both sides' keys meet whatever their bytes; a right key alone is the left key of
    its value, written with its 8 bytes."""
    builder = StreamsBuilder()
    left = builder.table("l")
    right = builder.table("r", key_schema=right_schema)
    left.outer_join(right, pair()).to_stream().to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        lt, rt = driver.create_input_topic("l"), driver.create_input_topic("r")
        lt.pipe_input(200, {"l": 1}, 1)
        lt.pipe_input(-1, {"l": 2}, 2)
        rt.pipe_input(200, {"r": 1}, 3)
        rt.pipe_input(BIG, {"r": 2}, 4)
        lt.pipe_input(BIG, {"l": 3}, 5)
        rt.pipe_input(201, {"r": 3}, 6)
        assert driver.create_output_topic("out", key_format=BYTES).read_records() == [
            R(raw(200), [{"l": 1}, None], 1),
            R(raw(-1), [{"l": 2}, None], 2),
            R(raw(200), [{"l": 1}, {"r": 1}], 3),
            R(raw(BIG), [None, {"r": 2}], 4),
            R(raw(BIG), [{"l": 3}, {"r": 2}], 5),
            R(raw(201), [None, {"r": 3}], 6),
        ]
        assert driver.processing_log == []


@pytest.mark.parametrize("replicate_right", [False, True], ids=["shuffled", "replicated"])
@pytest.mark.parametrize("right_schema", [None, "BIGINT"], ids=["none", "bigint"])
def test_foreign_key_joins(spark, right_schema, replicate_right):
    """Orders keyed by integers look products up by a callable's integer foreign key."""
    builder = StreamsBuilder()
    orders = builder.table("orders")
    products = builder.table("products", key_schema=right_schema)
    joined = orders.left_join(
        products, pair(), foreign_key=lambda v: v["product"], replicate_right=replicate_right,
        materialized_as="enriched",
    )
    joined.to_stream().to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        products_in, orders_in = driver.create_input_topic("products"), driver.create_input_topic("orders")
        products_in.pipe_input(200, {"name": "pen"}, 1)
        products_in.pipe_input(-1, {"name": "ink"}, 2)
        orders_in.pipe_input(BIG, {"product": 200}, 3)
        orders_in.pipe_input(-1, {"product": 201}, 4)
        orders_in.pipe_input(201, {"product": -1}, 5)
        products_in.pipe_input(200, {"name": "nib"}, 6)
        orders_in.pipe_input(-1, {"product": 200}, 7)
        assert driver.create_output_topic("out").read_records() == [
            R(BIG, [{"product": 200}, {"name": "pen"}], 3),
            R(-1, [{"product": 201}, None], 4),
            R(201, [{"product": -1}, {"name": "ink"}], 5),
            R(BIG, [{"product": 200}, {"name": "nib"}], 6),
            R(-1, [{"product": 200}, {"name": "nib"}], 7),
        ]
        assert driver.table("enriched") == {
            BIG: [{"product": 200}, {"name": "nib"}],
            201: [{"product": -1}, {"name": "ink"}],
            -1: [{"product": 200}, {"name": "nib"}],
        }
        assert driver.processing_log == []


def test_global_table_join_by_an_integer_selected_key(spark):
    builder = StreamsBuilder()
    products = builder.global_table("products")
    builder.stream("orders").join(products, pair(), key_selector=lambda k, v: v["product"]).to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        products_in, orders_in = driver.create_input_topic("products"), driver.create_input_topic("orders")
        for i, key in enumerate(KEYS):
            products_in.pipe_input(key, {"p": i}, i)
        for i, key in enumerate([-1, 201, 200, BIG]):
            orders_in.pipe_input(key, {"product": KEYS[i]}, 10 + i)
        assert driver.create_output_topic("out").read_records() == [
            R(-1, [{"product": 200}, {"p": 0}], 10),
            R(201, [{"product": -1}, {"p": 1}], 11),
            R(200, [{"product": BIG}, {"p": 2}], 12),
            R(BIG, [{"product": 3}, {"p": 3}], 13),
        ]
        assert driver.processing_log == []


def test_merged_streams(spark):
    builder = StreamsBuilder()
    builder.stream("a").merge(builder.stream("b")).to_table().to_stream().to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        a, b = driver.create_input_topic("a"), driver.create_input_topic("b")
        a.pipe_input(200, {"a": 1}, 1)
        b.pipe_input(201, {"b": 1}, 2)
        b.pipe_input(200, {"b": 2}, 3)
        assert driver.create_output_topic("out").read_records() == [
            R(200, {"a": 1}, 1), R(201, {"b": 1}, 2), R(200, {"b": 2}, 3)
        ]
        assert driver.processing_log == []


def test_processing_log_holds_the_key_bytes(spark):
    """A record a SQL expression fails on (found by a careful run of its batch) and one a
    callable fails on are logged with their key's bytes."""
    builder = StreamsBuilder()
    events = builder.stream("in", value_schema="code STRING, d INT")
    events.filter("CAST(value.code AS INT) > 0", name="parse").to("parsed")
    events.map_values(lambda k, v: 100 // v["d"], name="invert").to("inverted")
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        topic.pipe_input(200, {"code": "x", "d": 1}, 1)
        topic.pipe_input(-1, {"code": "2", "d": 0}, 2)
        assert driver.create_output_topic("parsed").read_records() == [R(-1, {"code": "2", "d": 0}, 2)]
        assert driver.create_output_topic("inverted").read_records() == [R(200, 100, 1)]
        assert driver.processing_log == [
            {
                "topic": "in", "partition": 0, "offset": 0, "timestamp": 1,
                "error": "parse: CAST(value.code AS INT): cannot cast 'x' to INT",
                "key": raw(200), "value": b'{"code":"x","d":1}',
            },
            {
                "topic": "in", "partition": 0, "offset": 1, "timestamp": 2,
                "error": "invert: ZeroDivisionError: integer division or modulo by zero",
                "key": raw(-1), "value": b'{"code":"2","d":0}',
            },
        ]


def test_other_keys_that_are_not_text(spark):
    """Bytes that are neither UTF-8 nor 8 long cannot be read without a key schema: the
    record goes to the processing log at the source. Other UTF-8 text, printable or
    not, is a STRING key."""
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda k, v: k).to("out")
    with TestDriver(builder.build(), spark=spark) as driver:
        topic = driver.create_input_topic("in")
        topic.pipe_raw(b"\xff\xfe", b"{}", 1)
        topic.pipe_raw(b"\x01\x02", b"{}", 2)
        assert driver.create_output_topic("out", key_format=BYTES).read_records() == [R(b"\x01\x02", "\x01\x02", 2)]
        assert driver.processing_log == [
            {
                "topic": "in", "partition": 0, "offset": 0, "timestamp": 1,
                "error": "key: invalid UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
                "key": b"\xff\xfe", "value": b"{}",
            }
        ]

"""Timestamp extractors (Kafka Streams' ``TimestampExtractor``): a source's records take
the timestamp a SQL expression over their contents gives, everywhere after the source;
a record without a usable one goes to the processing log."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.expressions import ExpressionError
from tablestream.runtime.timestamps import TimestampExtraction
from tablestream.testing.driver import TestDriver


def records_of(driver: TestDriver, topic: str) -> list[tuple]:
    return [(r.key, r.value, r.timestamp) for r in driver.create_output_topic(topic).read_records()]


def test_a_plan_without_extractors_reads_its_records_as_they_are():
    # No column, projection or job is added: the batch's records are the same object.
    records = object()
    plain = SimpleNamespace(node=SimpleNamespace(timestamp_extractor=None))
    extraction = TimestampExtraction([plain, plain], records)
    assert not extraction
    assert extraction.apply(records) is records


@pytest.mark.spark
def test_extracted_timestamps_order_a_stream_table_join_and_stamp_its_outputs_and_aggregates(spark):
    # Written timestamps would put every user update after both clicks (no match); the
    # extracted ones interleave them: home (10) meets ann (5), cart (30) meets bob (20).
    builder = StreamsBuilder()
    users = builder.table("users", key_schema="STRING", value_schema="name STRING, at BIGINT",
                          timestamp_extractor="at")
    clicks = builder.stream("clicks", key_schema="STRING", value_schema="page STRING, at TIMESTAMP",
                            timestamp_extractor="at")
    joined = clicks.left_join(users, "struct(left.page AS page, right.name AS name)")
    joined.map_values("struct(page, name, rowtime AS seen)").to("enriched")
    users.group_by(("name", "value")).count().to_stream().to("per-name")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        user_topic = driver.create_input_topic("users")
        user_topic.pipe_input("u1", {"name": "ann", "at": 5}, timestamp=100)
        user_topic.pipe_input("u1", {"name": "bob", "at": 20}, timestamp=1)
        click_topic = driver.create_input_topic("clicks")
        click_topic.pipe_input("u1", {"page": "home", "at": 10}, timestamp=50)
        click_topic.pipe_input("u1", {"page": "cart", "at": 30}, timestamp=2)
        driver.advance()
        assert records_of(driver, "enriched") == [
            ("u1", {"page": "home", "name": "ann", "seen": 10}, 10),
            ("u1", {"page": "cart", "name": "bob", "seen": 30}, 30),
        ]
        # One change per key per batch: bob's group, stamped with its row's extracted time.
        assert records_of(driver, "per-name") == [("bob", 1, 20)]
        user_topic.pipe_input("u2", {"name": "bob", "at": 7}, timestamp=1000)
        driver.advance()
        assert records_of(driver, "per-name") == [("bob", 2, 20)]
        assert driver.processing_log == []


@pytest.mark.spark
def test_records_without_a_usable_extracted_timestamp_go_to_the_processing_log(spark):
    builder = StreamsBuilder()
    builder.stream("events", key_schema="STRING", value_schema="id INT, at STRING",
                   timestamp_extractor="unix_millis(to_timestamp(at, 'yyyy-MM-dd HH:mm:ss'))").to("out")
    ticks = builder.stream("ticks", key_schema="STRING", value_schema="id INT, ms BIGINT",
                           timestamp_extractor="ms - 100")
    ticks.to("out-ticks")
    # A new timestamp later on: the extracted one less the id's tens.
    ticks.with_timestamp("rowtime - id * 10", name="restamp").to("out-restamped")
    with TestDriver(builder.build(), spark=spark, batched=True) as driver:
        events = driver.create_input_topic("events")
        events.pipe_input("a", {"id": 1, "at": "2020-05-11 21:58:33"}, timestamp=1)
        events.pipe_input("b", {"id": 2, "at": "yesterday"}, timestamp=2)
        events.pipe_input("c", {"id": 3, "at": None}, timestamp=3)
        driver.pipe_bytes("events", b"d", b"{not json", timestamp=4, partition=0)
        ticks = driver.create_input_topic("ticks")
        ticks.pipe_input("e", {"id": 5, "ms": 150}, timestamp=5)
        ticks.pipe_input("f", {"id": 6, "ms": 99}, timestamp=6)
        ticks.pipe_input("g", {"id": 9, "ms": 180}, timestamp=7)
        driver.advance()
        assert records_of(driver, "out") == [("a", {"id": 1, "at": "2020-05-11 21:58:33"}, 1589234313000)]
        assert records_of(driver, "out-ticks") == [("e", {"id": 5, "ms": 150}, 50), ("g", {"id": 9, "ms": 180}, 80)]
        assert records_of(driver, "out-restamped") == [("e", {"id": 5, "ms": 150}, 0)]
        log = sorted((e["topic"], e["offset"], e["timestamp"], e["error"]) for e in driver.processing_log)
        assert log == [
            ("events", 1, 2, "timestamp: TO_TIMESTAMP(at, 'yyyy-MM-dd HH:mm:ss'): cannot parse 'yesterday' as a timestamp"),
            ("events", 2, 3, "timestamp: the extracted timestamp is null (timestamp extractor "
                             "'unix_millis(to_timestamp(at, 'yyyy-MM-dd HH:mm:ss'))')"),
            ("events", 3, 4, "value: line 1 column 2: Expecting property name enclosed in double quotes"),
            ("ticks", 1, 6, "timestamp: the extracted timestamp is negative: -1 (timestamp extractor 'ms - 100')"),
            ("ticks", 2, 80, "restamp: the timestamp is negative: -10 (timestamp 'rowtime - id * 10')"),
        ]


@pytest.mark.spark
def test_a_timestamp_of_another_type_or_an_unknown_column_is_refused_when_the_driver_is_made(spark):
    builder = StreamsBuilder()
    builder.stream("events", value_schema="id INT, at STRING", timestamp_extractor="at").to("out")
    with pytest.raises(ExpressionError) as failure:
        TestDriver(builder.build(), spark=spark)
    assert str(failure.value) == (
        "KSTREAM-SOURCE-0000000000: timestamp extractor 'at' is STRING, not BIGINT or TIMESTAMP"
    )
    builder = StreamsBuilder()
    builder.table("users", value_schema="id INT", timestamp_extractor="created").to_stream().to("out")
    with pytest.raises(ExpressionError) as failure:
        TestDriver(builder.build(), spark=spark)
    assert str(failure.value) == (
        "KTABLE-SOURCE-0000000002: timestamp extractor: expression 'created': unknown column 'created' "
        "(columns: key, value, rowtime, id)"
    )
    builder = StreamsBuilder()
    builder.stream("events", value_schema="id INT, at STRING").with_timestamp("at", name="stamp").to("out")
    with pytest.raises(ExpressionError) as failure:
        TestDriver(builder.build(), spark=spark)
    assert str(failure.value) == "stamp: timestamp 'at' is STRING, not BIGINT or TIMESTAMP"

"""Kafka Streams' DSL in Python naming: build a topology from streams and tables.

>>> from tablestream.dsl import StreamsBuilder
>>> builder = StreamsBuilder()
>>> orders = builder.stream("orders", value_schema="id BIGINT, customer STRING, amount DOUBLE")
>>> orders.filter("amount > 0").group_by("customer").sum("amount").to_stream().to("revenue")
>>> topology = builder.build()

Public methods only validate their arguments and add plan nodes
(:mod:`tablestream.plan`); nothing runs here.
"""

from tablestream.dsl.builder import StreamsBuilder
from tablestream.dsl.grouped import KGroupedStream, KGroupedTable
from tablestream.dsl.kstream import BranchedKStream, KStream
from tablestream.dsl.ktable import GlobalKTable, KTable

__all__ = [
    "BranchedKStream",
    "GlobalKTable",
    "KGroupedStream",
    "KGroupedTable",
    "KStream",
    "KTable",
    "StreamsBuilder",
]

"""One statement compiled on its own against a catalog: what a ksqlDB server does with
each statement it receives.

:func:`~tablestream.sql.compile_sql` compiles a whole script into one plan, a query
reading another query's stream or table directly. A server (:mod:`tablestream.sql.engine`)
runs each persistent query as an application of its own, as ksqlDB runs each as a
Kafka Streams application: its plan reads the streams and tables it uses from their
topics. :class:`StatementCompiler` is the compiler seeded with what the server has
declared (the streams and tables, their topics, the ``SET`` properties, the next query
number); after one statement its ``result`` holds the catalog as that statement leaves
it and the plan of that statement alone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

from tablestream.sql import statements as st
from tablestream.sql.catalog import SourceInfo
from tablestream.sql.compiler import SqlCompiler

__all__ = ["StatementCompiler"]


class StatementCompiler(SqlCompiler):
    """A compiler for one statement against ``sources`` (copied; their DSL streams and
    tables are made anew in this plan, from their topics).

    >>> from tablestream.sql.dialect import parse_script
    >>> sql = "CREATE STREAM s (id INT KEY, v STRING) WITH (kafka_topic='s', value_format='json');"
    >>> first = StatementCompiler({}, number=0)
    >>> first.compile_statement(parse_script(sql)[0], sql)
    >>> query = "CREATE STREAM t AS SELECT id, UCASE(v) AS v FROM s;"
    >>> second = StatementCompiler(first.result.sources, number=4)
    >>> second.compile_statement(parse_script(query)[0], query)
    >>> [q.id for q in second.result.queries], second.next_number
    (['CSAS_T_4'], 5)
    """

    def __init__(
        self,
        sources: Mapping[str, SourceInfo],
        *,
        number: int,
        topics: Mapping[str, int] | None = None,
        properties: Mapping[str, str] | None = None,
        topic_partitions: Callable[[str], int | None] | None = None,
    ):
        super().__init__(topic_partitions=topic_partitions)
        self.result.sources = {name: dataclasses.replace(info, facade=None) for name, info in sources.items()}
        self.result.topics = dict(topics or {})
        self.result.properties = dict(properties or {})
        self._query_count = number

    @property
    def next_number(self) -> int:
        """The number the next query will take."""
        return self._query_count

    def _facade(self, info: SourceInfo):
        # A source table is materialized by its own query only; another query reads its
        # topic as a plain table.
        creating = isinstance(self._statement, st.CreateSource) and self._statement.name.text == info.name
        if info.facade is None and info.read_only and not creating:
            info.facade = self.builder.table(
                info.topic,
                key_format=info.key_format,
                value_format=info.value_format,
                key_schema=info.key_schema,
                value_schema=info.value_schema,
                timestamp_extractor=info.timestamp_extractor,
            )
        return super()._facade(info)

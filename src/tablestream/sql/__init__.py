"""ksqlDB's SQL for tablestream: statements parsed with sqlglot (a ksqlDB dialect) and
compiled into the same plan the DSL builds.

>>> from tablestream.sql import compile_sql, parse
>>> [type(s).__name__ for s in parse("SET 'auto.offset.reset'='earliest'; UNSET 'auto.offset.reset';")]
['SetProperty', 'UnsetProperty']
>>> compiled = compile_sql(
...     "CREATE STREAM clicks (user_id BIGINT KEY, url STRING) WITH (kafka_topic='clicks', value_format='json');"
...     "CREATE TABLE per_user AS SELECT user_id, COUNT(*) AS n FROM clicks GROUP BY user_id;")
>>> [type(n).__name__ for n in compiled.topology.nodes]
['StreamSource', 'Count', 'TableMapValues', 'ToStream', 'ToTopic']

Every error is a :class:`SqlError` whose one-line message names the line and column in
the script and the statement.
"""

from tablestream.sql.compiler import CompiledSql, compile_sql
from tablestream.sql.dialect import parse_script as parse
from tablestream.sql.errors import SqlError

__all__ = ["CompiledSql", "SqlError", "compile_sql", "parse"]

"""ksqlDB's SQL for tablestream: statements parsed with sqlglot (a ksqlDB dialect) and
compiled into the same plan the DSL builds.

>>> from tablestream.sql import parse
>>> [type(s).__name__ for s in parse("SET 'auto.offset.reset'='earliest'; UNSET 'auto.offset.reset';")]
['SetProperty', 'UnsetProperty']

Every error is a :class:`SqlError` whose one-line message names the line and column in
the script and the statement.
"""

from tablestream.sql.dialect import parse_script as parse
from tablestream.sql.errors import SqlError

__all__ = ["SqlError", "parse"]

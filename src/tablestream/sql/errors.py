"""The one error the SQL front end raises: what went wrong, where, and in which statement."""

from __future__ import annotations

import re

from tablestream.errors import TablestreamError

__all__ = ["SqlError", "statement_excerpt"]

_SPACE = re.compile(r"\s+")
_EXCERPT = 120


def statement_excerpt(text: str) -> str:
    """A statement on one line (whitespace collapsed), cut after 120 characters.

    >>> statement_excerpt("SELECT *\\n  FROM orders\\nEMIT CHANGES;")
    'SELECT * FROM orders EMIT CHANGES;'
    """
    flat = _SPACE.sub(" ", text).strip()
    return flat if len(flat) <= _EXCERPT else flat[: _EXCERPT - 3] + "..."


class SqlError(TablestreamError, ValueError):
    """A statement that cannot be parsed or compiled. The message is one line: the
    position (``Line: 3, Col: 12``, counted in the whole script, as ksqlDB counts), what
    is wrong (ksqlDB's own text where ksqlDB has one), and the statement.

    >>> str(SqlError("Syntax error at or near 'FORM'", line=1, column=10, statement="SELECT * FORM t;"))
    "Line: 1, Col: 10: Syntax error at or near 'FORM'. Statement: SELECT * FORM t;"
    """

    def __init__(self, detail: str, *, line: int, column: int, statement: str | None = None):
        flat = " ".join(detail.splitlines())
        self.detail = flat[:-1] if flat.endswith(".") and not flat.endswith("..") else flat
        self.line = line
        self.column = column
        self.statement = statement
        where = f"Line: {line}, Col: {column}: "
        tail = f" Statement: {statement_excerpt(statement)}" if statement else ""
        end = "" if self.detail.endswith("...") else "."
        super().__init__(f"{where}{self.detail}{end}{tail}")

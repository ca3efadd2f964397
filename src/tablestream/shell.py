"""``tablestream sql``: an interactive shell for ksqlDB's SQL, like ksqlDB's CLI.

Statements end with ``;`` and may span lines; each is executed by a
:class:`~tablestream.runtime.sql_engine.SqlEngine` and its result printed as a table
(rich). On a terminal the shell keeps a history (readline, in
``$TABLESTREAM_HOME/sql/history``), persistent queries run in the background, and a
push query shows rows as they come until Ctrl-C or its ``LIMIT``. Given a file or a
script on stdin it runs the statements in order and stops at the first error; push
queries and ``PRINT`` then show what there is and end.
"""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from .runtime.sql_engine import Result, SqlEngine
from .sql import statements as st
from .sql.dialect import _KSQL, parse_script
from .sql.errors import SqlError

__all__ = ["render", "run_script", "run_shell", "shown", "statement_complete"]

PROMPT = "tablestream> "
CONTINUATION = "          > "


def shown(value: Any) -> str:
    """A value as ksqlDB's CLI prints it: ``null``, ``true``, structs and maps as
    ``{A=1, B=x}``, arrays as ``[1, 2]``.

    >>> shown(None), shown(True), shown({"A": 1, "B": [1.5, None]})
    ('null', 'true', '{A=1, B=[1.5, null]}')
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={shown(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(shown(v) for v in value) + "]"
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _table(columns: tuple[str, ...], rows: Any) -> Table:
    table = Table(*columns, box=box.ASCII, show_lines=False, header_style="bold")
    for row in rows:
        table.add_row(*(shown(v) if not isinstance(v, str) else v for v in row))
    return table


def render(result: Result, console: Console) -> None:
    """Print a statement's result (a push query's rows as they come)."""
    out = console.print
    if result.kind == "message":
        out(_table(("Message",), [(result.message,)]))
    elif result.kind == "table":
        out(_table(result.columns, result.rows))
        if result.footer:
            out(result.footer, markup=False)
    elif result.kind == "description":
        for label, value in result.fields:
            out(f"{label:<20} : {value}", markup=False)
        if len(result.fields) > 1:
            out("")
        if result.rows:
            out(_table(result.columns, result.rows))
        for title, lines in result.sections:
            out("", markup=False)
            out(title, markup=False)
            out("-" * max(len(title.rstrip()), 20), markup=False)
            for line in lines:
                out(line, markup=False, highlight=False)
        if result.footer:
            out(result.footer, markup=False)
    elif result.kind == "rows":
        if isinstance(result.rows, (list, tuple)):
            out(_table(result.columns, result.rows))
        else:
            _stream_rows(result, console)
    elif result.kind == "lines":
        for line in result.rows:
            out(line, markup=False, highlight=False)
    elif result.kind == "results":
        for inner in result.results:
            render(inner, console)


def _stream_rows(result: Result, console: Console) -> None:
    """A push query's rows, one line each as they arrive, under a header."""
    widths = [max(len(c), 10) for c in result.columns]
    rule = "+" + "+".join("-" * (w + 2) for w in widths) + "+"

    def line(cells: list[str]) -> str:
        return "|" + "|".join(f" {c:<{w}} " for c, w in zip(cells, widths, strict=True)) + "|"

    console.print(rule, markup=False)
    console.print(line(list(result.columns)), markup=False)
    console.print(rule, markup=False)
    count = 0
    rows: Iterator[tuple[Any, ...]] = result.rows
    try:
        for row in rows:
            console.print(line([shown(v) for v in row]), markup=False, highlight=False)
            count += 1
    except KeyboardInterrupt:
        rows.close()  # type: ignore[attr-defined]
        console.print(rule, markup=False)
        console.print("Query terminated", markup=False)
        return
    console.print(rule, markup=False)
    if _limit(result.statement) is not None and count >= _limit(result.statement):  # type: ignore[operator]
        console.print("Limit Reached", markup=False)
    console.print("Query terminated", markup=False)


def _limit(text: str) -> int | None:
    statement = parse_script(text)[0]
    return statement.query.limit if isinstance(statement, st.SelectStatement) else None


def statement_complete(buffer: str) -> bool:
    """Whether ``buffer`` holds whole statements: its last token is ``;`` (a ``;`` in a
    string, a quoted name or a comment does not count).

    >>> statement_complete("SELECT * FROM t"), statement_complete("SELECT ';' FROM t;")
    (False, True)
    >>> statement_complete("SELECT 'it''s; -- not done")
    False
    """
    try:
        tokens = _KSQL.tokenize(buffer)
    except Exception:  # noqa: BLE001 - an unterminated string or name: not complete yet
        return False
    return bool(tokens) and tokens[-1].text == ";"


def run_script(engine: SqlEngine, sql: str, console: Console) -> None:
    """Execute a script's statements in order, printing each result; the first error
    is raised (the statements before it stay done)."""
    for statement in parse_script(sql):
        render(engine.execute_statement(statement, sql), console)


def run_shell(engine: SqlEngine, console: Console, history: Any = None) -> None:
    """Read statements from the terminal until ``exit``, ``quit`` or Ctrl-D."""
    try:
        import readline
    except ImportError:  # pragma: no cover - readline is part of CPython on Unix
        readline = None  # type: ignore[assignment]
    if readline is not None and history is not None:
        try:
            readline.read_history_file(str(history))
        except OSError:
            pass
    console.print("tablestream SQL shell: statements end with ';' (exit or Ctrl-D to leave, Ctrl-C stops a query)", markup=False)
    buffer = ""
    try:
        while True:
            try:
                line = input(CONTINUATION if buffer else PROMPT)
            except KeyboardInterrupt:
                console.print("")
                buffer = ""
                continue
            except EOFError:
                console.print("")
                return
            if not buffer and line.strip().rstrip(";").lower() in ("exit", "quit"):
                return
            buffer += line + "\n"
            if not buffer.strip():
                buffer = ""
                continue
            if not statement_complete(buffer):
                continue
            sql, buffer = buffer, ""
            try:
                run_script(engine, sql, console)
            except SqlError as error:
                console.print(f"Error: {error}", markup=False)
            except KeyboardInterrupt:
                console.print("Query terminated", markup=False)
            except Exception as error:  # noqa: BLE001 - the shell goes on after any failed statement
                console.print(f"Error: {type(error).__name__}: {error}", markup=False)
    finally:
        if readline is not None and history is not None:
            try:
                history.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(str(history))
            except OSError:
                pass


"""The ``tablestream`` command line: topics, produce, consume, compact, app, run, demo.

The embedded store (``$TABLESTREAM_HOME``, default ``./.tablestream``) is used unless
``--bootstrap-servers HOST:PORT`` names a Kafka cluster. Errors are one line on stderr
and a non-zero exit code; a command that fails writes nothing. ``tablestream --verbose
COMMAND`` adds the full traceback of an error.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from . import config as ts_config
from .errors import DamagedTopicError, TablestreamError, first_line
from .progress import record_progress
from .storage.stores import open_store
from .storage.topic import (
    DEFAULT_DELETE_RETENTION_MS,
    DEFAULT_RETENTION_MS,
    Record,
    TopicConfig,
)
from .storage.undeclared import undeclared_kafka_value

app = typer.Typer(
    name="tablestream",
    help="Kafka Streams and ksqlDB semantics on Apache Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
topics_app = typer.Typer(help="Create, list, describe and delete topics.", no_args_is_help=True)
app.add_typer(topics_app, name="topics")
apps_app = typer.Typer(help="Manage applications.", no_args_is_help=True)
app.add_typer(apps_app, name="app")

stdout = Console(highlight=False, soft_wrap=True)
stderr = Console(stderr=True, highlight=False, soft_wrap=True)

Bootstrap = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-servers",
        envvar="TABLESTREAM_BOOTSTRAP_SERVERS",
        help="Kafka cluster HOST:PORT; without it the embedded store is used.",
    ),
]
Home = Annotated[
    str | None,
    typer.Option("--home", envvar="TABLESTREAM_HOME", help="Embedded store directory."),
]


class CliError(TablestreamError):
    """A user error found by the command line itself (bad input line, bad option)."""


_options = {"verbose": False}


@app.callback()
def _global_options(
    verbose: Annotated[
        bool,
        typer.Option("--verbose", help="On an error, print its full traceback; let Spark print its own output."),
    ] = False,
) -> None:
    _options["verbose"] = verbose
    if verbose:
        os.environ[ts_config.VERBOSE_ENV] = "1"


def _run(action: Callable[[], None]) -> None:
    """Run a command: an error is one line on stderr and exit code 1 (the traceback
    too with ``--verbose``); an unexpected one is told by its type and message."""
    try:
        action()
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    except Exception as err:  # noqa: BLE001 - no traceback reaches a user without --verbose
        if _options["verbose"]:
            stderr.print("".join(traceback.format_exception(err)).rstrip(), markup=False)
        if isinstance(err, TablestreamError):
            stderr.print(f"Error: {err}", markup=False)
        else:
            stderr.print(f"Error: {type(err).__name__}: {first_line(err)}", markup=False)
        raise typer.Exit(1) from None


# ---------------------------------------------------------------------------- topics
@topics_app.command("create")
def topics_create(
    name: str,
    partitions: Annotated[int, typer.Option("--partitions", "-p", help="Partition count.")] = 1,
    compact: Annotated[bool, typer.Option("--compact", help="cleanup.policy=compact")] = False,
    retention_ms: Annotated[int, typer.Option(help="retention.ms (-1: unlimited)")] = DEFAULT_RETENTION_MS,
    delete_retention_ms: Annotated[
        int, typer.Option(help="delete.retention.ms: how long tombstones survive compaction")
    ] = DEFAULT_DELETE_RETENTION_MS,
    key_format: Annotated[str, typer.Option(help="KAFKA, JSON, AVRO or DELIMITED")] = "KAFKA",
    key_schema: Annotated[str | None, typer.Option(help="e.g. BIGINT, or 'id BIGINT' for JSON")] = None,
    value_format: Annotated[str, typer.Option(help="KAFKA, JSON, AVRO or DELIMITED")] = "JSON",
    value_schema: Annotated[str | None, typer.Option(help="e.g. 'id BIGINT, name STRING'")] = None,
    bootstrap_servers: Bootstrap = None,
    home: Home = None,
) -> None:
    """Create a topic."""

    def action() -> None:
        config = TopicConfig(
            name,
            partitions=partitions,
            cleanup_policy="compact" if compact else "delete",
            retention_ms=retention_ms,
            delete_retention_ms=delete_retention_ms,
            key_format=key_format,
            key_schema=key_schema,
            value_format=value_format,
            value_schema=value_schema,
        )
        _formats(config)  # reject a bad format or schema before creating anything
        open_store(bootstrap_servers, home).create_topic(config)
        stdout.print(f"Created topic {name} ({partitions} partition{'s' if partitions != 1 else ''}, {config.cleanup_policy})")

    _run(action)


@topics_app.command("list")
def topics_list(bootstrap_servers: Bootstrap = None, home: Home = None) -> None:
    """List topic names, one per line; a damaged embedded topic is listed too, and
    told on stderr."""

    def action() -> None:
        store = open_store(bootstrap_servers, home)
        check = getattr(store, "check_topic", None)  # Kafka topics are the broker's concern
        damaged = []
        for name in store.list_topics():
            stdout.print(name, markup=False)
            try:
                if check is not None:
                    check(name)
            except DamagedTopicError as err:
                damaged.append(err)
        for err in damaged:
            stderr.print(f"Warning: {err}", markup=False)

    _run(action)


@topics_app.command("describe")
def topics_describe(name: str, bootstrap_servers: Bootstrap = None, home: Home = None) -> None:
    """Show a topic's settings, and per partition its offsets and record count."""

    def action() -> None:
        d = open_store(bootstrap_servers, home).describe_topic(name)
        c = d.config
        stdout.print(
            f"Topic: {c.name}  partitions: {c.partitions}  cleanup.policy: {c.cleanup_policy}  "
            f"retention.ms: {c.retention_ms}  delete.retention.ms: {c.delete_retention_ms}",
            markup=False,
        )
        stdout.print(
            f"Key format: {c.key_format}{f' ({c.key_schema})' if c.key_schema else ''}  "
            f"value format: {c.value_format}{f' ({c.value_schema})' if c.value_schema else ''}",
            markup=False,
        )
        table = Table("partition", "start offset", "end offset", "records")
        for p in range(c.partitions):
            table.add_row(str(p), str(d.start_offsets[p]), str(d.end_offsets[p]), str(d.record_counts[p]))
        table.add_row("total", "", "", str(d.record_count), style="bold")
        stdout.print(table)

    _run(action)


@topics_app.command("delete")
def topics_delete(name: str, bootstrap_servers: Bootstrap = None, home: Home = None) -> None:
    """Delete a topic and its records."""

    def action() -> None:
        open_store(bootstrap_servers, home).delete_topic(name)
        stdout.print(f"Deleted topic {name}", markup=False)

    _run(action)


# --------------------------------------------------------------------------- produce
@app.command()
def produce(topic: str, bootstrap_servers: Bootstrap = None, home: Home = None) -> None:
    """Write JSON lines from stdin to TOPIC, all or nothing.

    Each line: {"key": ..., "value": ... or null, "timestamp": ms, "partition": n,
    "headers": {"name": "text"}} (all but "value" optional). Keys and values are written
    in the topic's key and value formats.
    """

    def action() -> None:
        store = open_store(bootstrap_servers, home)
        config = store.topic_config(topic)
        lines = sys.stdin.read().splitlines()
        # A bar on a terminal only: piped or redirected, the output is the summary line.
        with record_progress(stderr, f"Reading lines for {topic}", len(lines)) as progress:
            records = parse_produce_lines(lines, config, progress.advance)
            progress.describe(f"Writing to {topic}")
            written = store.produce(topic, records)
        stderr.print(f"Produced {len(written)} record{'s' if len(written) != 1 else ''} to {topic}")

    _run(action)


_PRODUCE_FIELDS = {"key", "value", "timestamp", "partition", "headers"}
_PROGRESS_EVERY = 1000  # lines between updates of the bar (an update per line costs more)


def parse_produce_lines(
    lines: list[str], config: TopicConfig, advance: Callable[[int], None] | None = None
) -> list[Record]:
    """Parse and serialize every line first, so a bad line N writes nothing.
    ``advance(n)`` counts the lines as they are read, a thousand at a time."""
    key_format, value_format = _formats(config)
    records = []
    for number, line in enumerate(lines, start=1):
        if advance is not None and number % _PROGRESS_EVERY == 0:
            advance(_PROGRESS_EVERY)
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise CliError(f"line {number}: bad JSON: {err.msg} at column {err.colno}") from None
        if not isinstance(item, dict):
            raise CliError(f"line {number}: expected a JSON object with \"key\" and \"value\"")
        unknown = sorted(set(item) - _PRODUCE_FIELDS)
        if unknown:
            raise CliError(f"line {number}: unknown field '{unknown[0]}' (allowed: headers, key, partition, timestamp, value)")
        if "value" not in item:
            raise CliError(f"line {number}: missing \"value\" (use null for a tombstone)")
        timestamp, partition = item.get("timestamp"), item.get("partition")
        for field, value in (("timestamp", timestamp), ("partition", partition)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise CliError(f"line {number}: \"{field}\" must be a non-negative integer, got {json.dumps(value)}")
        if partition is not None and partition >= config.partitions:
            raise CliError(
                f"line {number}: partition {partition} does not exist in topic '{config.name}' "
                f"(it has {config.partitions} partition{'s' if config.partitions != 1 else ''}: 0..{config.partitions - 1})"
            )
        headers = item.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(v, str | None) for v in headers.values()):
            raise CliError(f"line {number}: \"headers\" must be an object of strings")
        try:
            key = None if item.get("key") is None else key_format.serialize(item["key"])
        except TablestreamError as err:
            raise CliError(f"line {number}: key: {err}") from None
        try:
            value = value_format.serialize(item["value"])
        except TablestreamError as err:
            raise CliError(f"line {number}: value: {err}") from None
        records.append(
            Record(
                key,
                value,
                timestamp,
                partition,
                headers=tuple((k, None if v is None else v.encode()) for k, v in headers.items()),
            )
        )
    if advance is not None:
        advance(len(lines) % _PROGRESS_EVERY)
    return records


# --------------------------------------------------------------------------- consume
@app.command()
def consume(
    topic: str,
    from_beginning: Annotated[bool, typer.Option("--from-beginning", help="Start at the oldest record.")] = False,
    max_records: Annotated[int | None, typer.Option("--max", help="Stop after N records.")] = None,
    timeout: Annotated[
        float | None, typer.Option(help="Stop when no record arrives for S seconds (default: wait).")
    ] = None,
    read_uncommitted: Annotated[
        bool,
        typer.Option(
            "--read-uncommitted",
            help="Kafka: also show records of open and aborted transactions.",
        ),
    ] = False,
    bootstrap_servers: Bootstrap = None,
    home: Home = None,
) -> None:
    """Print TOPIC's records as JSON lines, ordered by partition then offset.

    Without --from-beginning only records written after the command starts are shown.
    Each line: {"key", "value", "timestamp", "partition", "offset"}; a key or value the
    topic's format cannot read is shown base64-encoded with an "error" field. On Kafka,
    records are read read_committed (those of committed transactions and those written
    without one, as an application's consumers read them); --read-uncommitted shows
    every record, those of aborted transactions too.
    """

    def action() -> None:
        if read_uncommitted and not bootstrap_servers:
            raise CliError(
                "--read-uncommitted applies to topics on a Kafka cluster: give --bootstrap-servers too "
                "(the embedded store has no transactions to leave open)"
            )
        store = open_store(bootstrap_servers, home)
        config = store.topic_config(topic)
        key_format, value_format = _formats(config)
        shown = 0
        isolation = {"read_committed": not read_uncommitted} if bootstrap_servers else {}
        for chunk in store.follow(topic, from_beginning=from_beginning, timeout=timeout, **isolation):
            for record in chunk:
                if max_records is not None and shown >= max_records:
                    return
                print(json.dumps(render_record(record, key_format, value_format)), flush=True)
                shown += 1
            if max_records is not None and shown >= max_records:
                return

    _run(action)


def render_record(record: Record, key_format, value_format) -> dict[str, Any]:
    out: dict[str, Any] = {}
    errors = []
    for field, data, fmt in (("key", record.key, key_format), ("value", record.value, value_format)):
        try:
            if data is None:
                out[field] = None
            elif fmt.name == "KAFKA" and fmt.schema is None:
                out[field] = undeclared_kafka_value(data)
            else:
                out[field] = fmt.deserialize(data)
        except TablestreamError as err:
            out[field] = base64.b64encode(data).decode()
            errors.append(f"{field}: {err}")
    out.update(timestamp=record.timestamp, partition=record.partition, offset=record.offset)
    if errors:
        out["error"] = "; ".join(errors)
    return out


# --------------------------------------------------------------------------- compact
@app.command()
def compact(topic: str, home: Home = None) -> None:
    """Run the embedded log cleaner on TOPIC once (compaction, or retention for
    cleanup.policy=delete). Kafka brokers clean their logs themselves."""

    def action() -> None:
        result = open_store(None, home).compact(topic)
        stdout.print(f"Compacted {topic}: {result['before']} -> {result['after']} records", markup=False)

    _run(action)


# ------------------------------------------------------------------------------- app
@apps_app.command("list")
def app_list(home: Home = None) -> None:
    """List the applications under the home: status, state partitions, last batch
    done, stores. Damaged files are told on stderr."""
    from .runtime.layout import describe_application, list_applications

    def action() -> None:
        ids = list_applications(home)
        if not ids:
            stdout.print(f"No applications in {ts_config.home(home)}", markup=False)
            return
        table = Table("application", "status", "partitions", "last batch", "stores")
        problems = []
        for application_id in ids:
            d = describe_application(application_id, home)
            problems += d.problems
            table.add_row(
                application_id,
                _status(d, short=True),
                _text(d.partitions),
                _text(d.last_batch),
                ", ".join(d.store_names),
            )
        stdout.print(table)
        for problem in problems:
            stderr.print(f"Warning: {problem}", markup=False)

    _run(action)


@apps_app.command("describe")
def app_describe(application_id: str, home: Home = None) -> None:
    """Show an application's state partitions, run, last batch, stores (per partition:
    changelog files and bytes, snapshots, live database) and materialized tables, from
    its files alone. Damaged files are told on stderr."""
    from .runtime.layout import describe_application

    def action() -> None:
        d = describe_application(application_id, home)
        stdout.print(
            f"Application: {d.application_id}  status: {_status(d)}  "
            f"state partitions: {_text(d.partitions)}  run: {_text(d.run)}",
            markup=False,
        )
        last = f"Last batch: {_text(d.last_batch)}"
        if d.planned_batch is not None and d.planned_batch != d.last_batch:
            last += f" (batch {d.planned_batch} planned, not done: the next start finishes it)"
        stdout.print(last, markup=False)
        stdout.print(f"Directory: {d.root}", markup=False)
        if d.stores:
            table = Table("store", "partition", "changelogs", "changelog bytes", "snapshots", "live db")
            for s in d.stores:
                table.add_row(
                    s.store,
                    str(s.partition),
                    str(s.changelogs),
                    str(s.changelog_bytes),
                    ", ".join(map(str, s.snapshots)) or "-",
                    "yes" if s.local else "no",
                )
            stdout.print(table)
        else:
            stdout.print("Stores: none", markup=False)
        stdout.print(f"Materialized tables: {', '.join(d.tables) or 'none'}", markup=False)
        for problem in d.problems:
            stderr.print(f"Warning: {problem}", markup=False)

    _run(action)


def _status(description, *, short: bool = False) -> str:
    running = description.running
    if running is not None:
        return "running" if short else f"running ({running})"
    return "damaged" if description.problems else "stopped"


def _text(value: object) -> str:
    return "-" if value is None else str(value)


@apps_app.command("reset")
def app_reset(application_id: str, home: Home = None) -> None:
    """Start APPLICATION_ID over from the beginning of its source topics: delete its
    checkpoint, state stores, changelogs and materialized tables. Output topics and the
    processing log are kept. Stop the application first."""
    from .runtime.layout import reset_application

    def action() -> None:
        if not reset_application(application_id, home):
            raise CliError(f"No application '{application_id}' in {ts_config.home(home)}")
        stdout.print(
            f"Reset application {application_id}: checkpoint, state stores, changelogs and "
            "materialized tables deleted; output topics and the processing log kept",
            markup=False,
        )

    _run(action)


# ------------------------------------------------------------------------------- run
@app.command()
def run(
    file: Annotated[str, typer.Argument(help="A ksqlDB script (.sql).")],
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Process every record already in the topics, then exit.")
    ] = False,
    application_id: Annotated[
        str | None, typer.Option("--application-id", help="Default: the file name without .sql.")
    ] = None,
    bootstrap_servers: Bootstrap = None,
    home: Home = None,
) -> None:
    """Run the statements of a ksqlDB script.

    Missing topics are created (with the statements' PARTITIONS; a query's output
    topic with its source's), INSERT ... VALUES records are produced, and each
    persistent query (CREATE ... AS SELECT, INSERT INTO ... SELECT, CREATE SOURCE
    TABLE) runs as an application of its own, ID-QUERY_ID: until Ctrl-C, or with
    --until-idle until every record already written is processed. Run again with the
    same home, a statement whose definition did not change is a no-op and each query
    resumes from its checkpoint; a changed one needs CREATE OR REPLACE.
    """

    def action() -> None:
        from .runtime.sql_engine import SqlEngine
        from .sql import statements as st
        from .sql.dialect import parse_script
        from .sql.errors import SqlError
        from .sql.script import application_id_of

        try:
            with open(file, encoding="utf-8") as handle:
                sql = handle.read()
        except OSError as err:
            raise CliError(f"Cannot read {file}: {err.strerror}") from None
        name = application_id or application_id_of(file)
        statements = parse_script(sql)
        for statement in statements:
            if isinstance(statement, st.SelectStatement):
                push = statement.query.emit == "CHANGES"
                raise SqlError(
                    f"{'Push' if push else 'Pull'} queries are not run by 'tablestream run'; "
                    + ("write their rows to a stream with CREATE STREAM ... AS SELECT" if push else "run them in 'tablestream sql'"),
                    line=statement.position.line, column=statement.position.column, statement=statement.text,
                )
        from pathlib import Path

        engine = SqlEngine(
            open_store(bootstrap_servers, home), home=home, service_id=name, rerun=True,
            base_dir=Path(file).resolve().parent,
        )
        from .shell import render

        for statement in statements:
            result = engine.execute_statement(statement, sql)
            if result.kind not in ("message", "none"):
                render(result, stdout)
        if not engine.queries:
            stdout.print(f"{file}: no persistent query to run", markup=False)
            return
        queries = ", ".join(q.id for q in sorted(engine.queries.values(), key=lambda q: q.number))
        stdout.print(f"Running {name}: {queries}", markup=False)
        if until_idle:
            engine.catch_up()
            stdout.print(f"{name}: caught up", markup=False)
            return
        try:
            engine.start_all()
            engine.await_all()
        finally:
            engine.stop()

    _run(action)


# ------------------------------------------------------------------------------- sql
@app.command("sql")
def sql_shell(
    file: Annotated[
        str | None, typer.Option("--file", "-f", help="Run the statements of this file, then exit.")
    ] = None,
    application_id: Annotated[
        str, typer.Option("--application-id", help="Whose streams, tables and queries (the metastore).")
    ] = "sql",
    bootstrap_servers: Bootstrap = None,
    home: Home = None,
) -> None:
    """An interactive shell for ksqlDB's SQL, like ksqlDB's CLI.

    Statements end with ';' and may span lines; SHOW, DESCRIBE, EXPLAIN, PRINT, pull
    and push queries print tables. On a terminal, persistent queries run in the
    background and a push query shows rows until Ctrl-C or its LIMIT. With --file, or
    statements on stdin, the statements run in order and the first error ends the
    command (exit 1).
    """

    def action() -> None:
        from pathlib import Path

        from .runtime.sql_engine import SqlEngine
        from .shell import run_script, run_shell

        interactive = file is None and sys.stdin.isatty()
        engine = SqlEngine(
            open_store(bootstrap_servers, home), home=home, service_id=application_id,
            background=interactive, interactive=interactive,
            base_dir=Path(file).resolve().parent if file else Path.cwd(),
        )
        try:
            if interactive:
                engine.start_all()  # the queries an earlier session or run declared
                run_shell(engine, stdout, history=ts_config.home(home) / "sql" / "history")
                return
            if file is not None:
                try:
                    with open(file, encoding="utf-8") as handle:
                        text = handle.read()
                except OSError as err:
                    raise CliError(f"Cannot read {file}: {err.strerror}") from None
            else:
                text = sys.stdin.read()
            wide = Console(highlight=False, soft_wrap=True, width=10_000)
            run_script(engine, text, wide)
        finally:
            engine.stop()

    _run(action)


# ------------------------------------------------------------------------------ demo
@app.command()
def demo(
    directory: Annotated[
        str | None, typer.Option("--dir", help="Store directory for the demo (default: a new temporary one).")
    ] = None,
    bootstrap_servers: Bootstrap = None,
    sql: Annotated[
        bool, typer.Option("--sql", help="Run the demo's application from its ksqlDB statements (examples/demo.sql).")
    ] = False,
) -> None:
    """Run the change-data-capture demo on an embedded store of its own, or with its
    topics on a Kafka cluster (--bootstrap-servers; the topics must not exist yet)."""
    from .demo import run_demo

    _run(lambda: run_demo(directory, stdout, bootstrap_servers, sql=sql))


def _formats(config: TopicConfig):
    from .storage.formats import get_format

    return get_format(config.key_format, config.key_schema), get_format(config.value_format, config.value_schema)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

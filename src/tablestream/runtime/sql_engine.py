"""A ksqlDB server in-process: statements executed one after another against a topic
store, each persistent query run as an application of its own.

:class:`SqlEngine` is what ``tablestream sql`` (the shell) and ``tablestream run
FILE.sql`` talk to. It keeps ksqlDB's metastore, the streams, tables and queries
declared so far, in ``<home>/sql/<service id>.json`` (the statements that changed it,
replayed when the engine opens, as ksqlDB replays its command topic). Each persistent
query (``CREATE ... AS SELECT``, ``INSERT INTO ... SELECT``, ``CREATE SOURCE TABLE``)
is compiled on its own (:class:`~tablestream.sql.isolated.StatementCompiler`) and runs
as the application ``<service id>-<query id>`` (its checkpoint, state and materialized
table under ``<home>/apps/``); a ``CREATE TABLE ... AS SELECT``'s table is kept
materialized under the table's name, for pull queries.

Every statement gives a :class:`Result`: data (a message, columns and rows, ``Name :
value`` fields, titled sections), which the shell prints and tests compare. Push
queries and ``PRINT`` give their rows as an iterator.

``rerun=True`` (``tablestream run``): a statement whose definition did not change since
the metastore recorded it is a no-op, and an ``INSERT ... VALUES`` an earlier run
produced is not produced again; ``background=True`` (the interactive shell):
persistent queries run continuously from their creation, else they process their
input when something reads their results (a pull or push query, ``PRINT``) or when
:meth:`SqlEngine.catch_up` is called.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tablestream import config as ts_config
from tablestream.errors import TablestreamError
from tablestream.plan.stateless import Repartition
from tablestream.plan.topology import Topology
from tablestream.sql import statements as st
from tablestream.sql.catalog import QueryInfo, SourceInfo
from tablestream.sql.dialect import parse_script
from tablestream.sql.errors import SqlError
from tablestream.sql.isolated import StatementCompiler
from tablestream.sql.pull import PullQuery, materialized_topology, read_materialized
from tablestream.sql.types import ksql_text
from tablestream.storage.location import delta_options, remove_tree, write_atomic

__all__ = ["PersistentQuery", "Result", "SqlEngine"]

_CATCH_UP_SECONDS = 600.0


@dataclass(frozen=True)
class Result:
    """What a statement gives, as data.

    ``kind``: ``message`` (``message``), ``table`` (``columns`` and ``rows``, a
    ``footer``), ``description`` (``fields`` as ``Name : value`` lines, a table of
    ``columns``/``rows``, ``sections`` of titled lines, a ``footer``), ``rows`` (a pull
    or push query: ``columns``, and ``rows`` a list, or an iterator for a push query),
    ``lines`` (``PRINT``: ``rows`` an iterator of text lines), ``results`` (``RUN
    SCRIPT`` and the ``EXTENDED`` lists: ``results``), ``none`` (``INSERT ...
    VALUES``)."""

    statement: str
    kind: str
    message: str | None = None
    columns: tuple[str, ...] = ()
    rows: Any = ()
    fields: tuple[tuple[str, str], ...] = ()
    sections: tuple[tuple[str, tuple[str, ...]], ...] = ()
    footer: str | None = None
    results: tuple[Result, ...] = ()


@dataclass
class PersistentQuery:
    """A persistent query of the engine: its info, its own plan, its application."""

    info: QueryInfo
    topology: Topology
    application_id: str
    number: int
    plan: dict[str, Any]
    application: Any = None
    status: str = "RUNNING"
    continuous: bool = False

    @property
    def id(self) -> str:
        return self.info.id


@dataclass
class _Catalog:
    sources: dict[str, SourceInfo] = field(default_factory=dict)
    topics: dict[str, int] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)  # source -> its statement, normalized
    next_query: int = 0


def _normalized(text: str) -> str:
    return statement_excerpt_full(text)


def statement_excerpt_full(text: str) -> str:
    """A statement on one line, whitespace collapsed (not cut)."""
    return re.sub(r"\s+", " ", text).strip().rstrip(";").strip()


def _number_of(query_id: str) -> int:
    return int(query_id.rsplit("_", 1)[1])


class SqlEngine:
    """Statements executed against ``store`` (an embedded or Kafka
    :class:`~tablestream.storage.stores.TopicStore`), the applications' files under
    ``home``; the metastore is ``service_id``'s.

    >>> engine = SqlEngine(store, home="/tmp/ts", service_id="shop")     # doctest: +SKIP
    >>> [r.message for r in engine.execute("CREATE STREAM s (id INT KEY, v STRING) "
    ...     "WITH (kafka_topic='s', value_format='json', partitions=1);")]   # doctest: +SKIP
    ['Stream created']
    """

    def __init__(
        self,
        store: Any,
        *,
        home: Any = None,
        service_id: str = "sql",
        rerun: bool = False,
        background: bool = False,
        interactive: bool = False,
        spark: Any = None,
        base_dir: Path | None = None,
    ):
        if not re.fullmatch(r"[A-Za-z0-9._-]+", service_id or ""):
            raise TablestreamError(f"Invalid service id {service_id!r} (letters, digits, '.', '_' and '-')")
        self.store = store
        self.home = ts_config.home(home) if not hasattr(store, "home") else store.home
        self.service_id = service_id
        self.rerun = rerun
        self.background = background
        self.interactive = interactive
        self.spark = spark
        self.base_dir = base_dir or Path.cwd()
        self.properties: dict[str, str] = {}
        self.catalog = _Catalog()
        self.queries: dict[str, PersistentQuery] = {}
        self.metastore = self.home / "sql" / f"{service_id}.json"
        self._entries: list[dict[str, Any]] = []
        self._inserted: set[str] = set()
        self._insert_counts: dict[str, int] = {}
        self._replay()

    # ---------------------------------------------------------------- metastore
    def _replay(self) -> None:
        if not self.metastore.exists():
            return
        try:
            stored = json.loads(self.metastore.read_text())
            entries, inserted = stored["entries"], stored.get("inserted", [])
        except (ValueError, KeyError, TypeError) as error:
            raise TablestreamError(f"The SQL metastore {self.metastore} is damaged: {error} (delete it to start over)") from None
        self._inserted = set(inserted)
        for entry in entries:
            try:
                if entry["op"] == "terminate":
                    self._forget_query(entry["query_id"])
                else:
                    statement = parse_script(entry["text"])[0]
                    self._apply(statement, entry["text"], entry.get("properties", {}), replay=entry)
            except TablestreamError as error:
                raise TablestreamError(f"The SQL metastore {self.metastore} cannot be replayed: {error}") from None
            self._entries.append(entry)

    def _record(self, entry: dict[str, Any]) -> None:
        self._entries.append(entry)
        self._save()

    def _save(self) -> None:
        self.metastore.parent.mkdir(parents=True, exist_ok=True)
        data = {"entries": self._entries, "inserted": sorted(self._inserted)}
        write_atomic(self.metastore, json.dumps(data, indent=1).encode())

    # ---------------------------------------------------------------- executing
    def execute(self, sql: str) -> list[Result]:
        """Execute every statement of ``sql`` in order; the first that fails raises
        its :class:`~tablestream.sql.SqlError` (those before it stay done)."""
        return [self.execute_statement(s, sql) for s in parse_script(sql)]

    def execute_statement(self, statement: st.Statement, sql: str) -> Result:
        """Execute one statement parsed from ``sql``."""
        handlers: dict[type, Callable[[Any, str], Result]] = {
            st.ListStatement: self._list,
            st.Describe: self._describe,
            st.Explain: self._explain,
            st.Terminate: self._terminate,
            st.PrintTopic: self._print,
            st.RunScript: self._run_script,
            st.SetProperty: self._set,
            st.UnsetProperty: self._unset,
            st.SelectStatement: self._select,
        }
        handler = handlers.get(type(statement))
        if handler is not None:
            return handler(statement, sql)
        return self._change(statement, sql)

    def error(self, statement: st.Statement, message: str, where: st.Position | None = None) -> SqlError:
        position = where or statement.position
        return SqlError(message, line=position.line, column=position.column, statement=statement.text)

    # ---------------------------------------------------------------- catalog changes
    def _change(self, statement: st.Statement, sql: str) -> Result:
        """CREATE, CREATE ... AS SELECT, INSERT INTO, INSERT VALUES, DROP."""
        name = getattr(statement, "name", None)
        existing = self.catalog.sources.get(name.text) if isinstance(name, st.Name) else None
        normalized = _normalized(statement.text)
        if isinstance(statement, (st.CreateSource, st.CreateAsSelect)) and existing is not None:
            unchanged = self.catalog.definitions.get(existing.name) == normalized
            if unchanged and self.rerun:
                return Result(statement.text, "message", message=f"{existing.kind.title()} {existing.name} unchanged")
        if isinstance(statement, st.InsertInto) and self.rerun:
            same = next((q for q in self.queries.values() if q.info.id.startswith("INSERTQUERY_") and _normalized(q.info.statement) == normalized), None)
            if same is not None:
                return Result(statement.text, "message", message=f"Query {same.id} unchanged")
        if isinstance(statement, st.DropSource):
            self._check_drop(statement)
        return self._apply(statement, sql, dict(self.properties))

    def _apply(self, statement: st.Statement, sql: str, properties: dict[str, str], replay: dict[str, Any] | None = None) -> Result:
        catalog = self.catalog
        name = getattr(statement, "name", None)
        existing = catalog.sources.get(name.text) if isinstance(name, st.Name) else None
        replacing = (
            isinstance(statement, (st.CreateSource, st.CreateAsSelect))
            and statement.or_replace and existing is not None and not statement.if_not_exists
        )
        sources = dict(catalog.sources)
        number = catalog.next_query
        if replacing:
            assert existing is not None
            if existing.kind != statement.kind:  # type: ignore[attr-defined]
                raise self.error(statement, f"Cannot add {statement.kind.lower()} '{existing.name}': A {existing.kind.lower()} with the same name already exists")  # type: ignore[attr-defined]
            if isinstance(statement, st.CreateAsSelect) != (existing.query_id is not None and not existing.read_only):
                raise self.error(statement, f"Cannot replace {existing.kind.lower()} '{existing.name}' by a {'query' if isinstance(statement, st.CreateAsSelect) else 'declared ' + existing.kind.lower()}: drop it first")
            del sources[existing.name]
            if existing.query_id is not None:
                number = _number_of(existing.query_id)
        if replay is not None and replay.get("query_id"):
            number = _number_of(replay["query_id"])
        existing_topics = None if replay is not None else set(self.store.list_topics())

        def partitions(topic: str) -> int | None:
            if existing_topics is None:
                return catalog.topics.get(topic, 1)
            return self.store.topic_config(topic).partitions if topic in existing_topics else None

        compiler = StatementCompiler(sources, number=number, topics=catalog.topics, properties=properties, topic_partitions=partitions)
        compiler.compile_statement(statement, sql)
        result = compiler.result
        new_queries = [q for q in result.queries if q.target is not None]
        if replacing:
            assert existing is not None
            self._check_upgrade(statement, existing, result.sources[existing.name])
        # Persistent queries: their plans, checked before anything changes.
        planned = [self._persistent(q, result, statement) for q in new_queries]
        if replacing and replay is None and existing is not None and existing.query_id is not None:
            self._check_replace(statement, self.queries[existing.query_id], planned[0])
        # Apply.
        dropped = None
        if isinstance(statement, st.DropSource):
            dropped = self.catalog.sources[statement.name.text] if statement.name.text in self.catalog.sources else None
            if dropped is not None and dropped.query_id is not None and dropped.query_id in self.queries:
                self._stop_query(dropped.query_id, reset=replay is None)
                self._forget_query(dropped.query_id)
        catalog.sources = {n: dataclasses.replace(i, facade=None) for n, i in result.sources.items()}
        for gone in set(catalog.definitions) - set(catalog.sources):
            del catalog.definitions[gone]
        catalog.topics = dict(result.topics)
        if not replacing or not planned:
            catalog.next_query = max(catalog.next_query, compiler.next_number)
        if isinstance(statement, (st.CreateSource, st.CreateAsSelect)) and statement.name.text in catalog.sources:
            catalog.definitions[statement.name.text] = _normalized(statement.text)
        if replacing and existing is not None and existing.query_id in self.queries:
            self._stop_query(existing.query_id, reset=False)
        for query in planned:
            self.queries[query.id] = query
        if replay is not None:
            return Result(statement.text, "none")
        # Side effects: topics, records, queries started; then the metastore.
        self._create_topics(result.sources.values())
        records = self._produce(result.inserts)
        if isinstance(statement, st.DropSource) and statement.delete_topic and dropped is not None:
            if dropped.topic in self.store.list_topics():
                self.store.delete_topic(dropped.topic)
        if not isinstance(statement, st.InsertValues):
            entry: dict[str, Any] = {"op": "execute", "text": statement.text, "properties": properties}
            if planned:
                entry["query_id"] = planned[0].id
            self._record(entry)
        elif records:
            self._save()
        for query in planned:
            if self.background:
                self._start(query)
        return self._change_result(statement, planned, dropped)

    def _change_result(self, statement: st.Statement, planned: list[PersistentQuery], dropped: SourceInfo | None) -> Result:
        if isinstance(statement, st.InsertValues):
            return Result(statement.text, "none")
        if isinstance(statement, st.DropSource):
            if dropped is None:
                return Result(statement.text, "message", message=f"Source `{statement.name.text}` does not exist.")
            return Result(statement.text, "message", message=f"Source `{dropped.name}` (topic: {dropped.topic}) was dropped.")
        if isinstance(statement, st.CreateSource) and not statement.source:
            return Result(statement.text, "message", message=f"{statement.kind.title()} created")
        if planned:
            return Result(statement.text, "message", message=f"Created query with ID {planned[0].id}")
        return Result(statement.text, "message", message=f"{getattr(statement, 'kind', 'Stream').title()} created")

    def _persistent(self, info: QueryInfo, result: Any, statement: st.Statement) -> PersistentQuery:
        topology = result.topology
        target = result.sources.get(info.target) if info.target else None
        if info.id.startswith("CTAS_") and target is not None:
            topology = materialized_topology(topology, {info.sink_topic: target.name})
        plan = {"state": _state_plan(topology), "topics": sorted({t for node in topology.sources for t in node.topics})}
        return PersistentQuery(info, topology, f"{self.service_id}-{info.id}", _number_of(info.id), plan)

    def _check_upgrade(self, statement: st.Statement, old: SourceInfo, new: SourceInfo) -> None:
        """ksqlDB's rules for CREATE OR REPLACE: same topic and formats, the same key
        columns, the old value columns kept in order (new ones may follow)."""
        issues = []
        for prop, before, after in (
            ("kafka topic", old.topic, new.topic),
            ("key format", old.key_format, new.key_format),
            ("value format", old.value_format, new.value_format),
        ):
            if before != after:
                issues.append(f"DataSource '{old.name}' has {prop} = {before} which is not upgradeable to {after}")

        def shown(columns: Sequence[Any]) -> str:
            return "[" + ", ".join(f"`{c.name}` {ksql_text(c.type)}" for c in columns) + "]"

        if old.key_columns != new.key_columns:
            issues.append(f"DataSource '{old.name}' has schema = {shown(old.key_columns + old.value_columns)} which is not upgradeable to {shown(new.key_columns + new.value_columns)}. (Key columns must be identical. The following key columns are changed, missing or reordered: {shown([c for c in old.key_columns if c not in new.key_columns])})")
        elif tuple(new.value_columns[: len(old.value_columns)]) != tuple(old.value_columns):
            changed = [c for i, c in enumerate(old.value_columns) if i >= len(new.value_columns) or new.value_columns[i] != c]
            issues.append(f"DataSource '{old.name}' has schema = {shown(old.key_columns + old.value_columns)} which is not upgradeable to {shown(new.key_columns + new.value_columns)}. (The following columns are changed, missing or reordered: {shown(changed)})")
        if issues:
            raise self.error(statement, "Cannot upgrade data source: " + "\n\tAND ".join(issues))

    def _check_replace(self, statement: st.Statement, old: PersistentQuery, new: PersistentQuery) -> None:
        """A replaced query resumes from its application's state: its new plan must keep
        the same state stores and read the same topics, unless it has no state yet."""
        if old.plan == new.plan or not self._has_state(old.application_id):
            return
        what = []
        if old.plan["state"] != new.plan["state"]:
            what.append("what its state stores keep")
        if old.plan["topics"] != new.plan["topics"]:
            what.append("the topics it reads")
        raise self.error(
            statement,
            f"Cannot replace query {old.id}: the new plan changes {' and '.join(what)}, which the state of its "
            f"application cannot follow; reset it first with 'tablestream app reset {old.application_id}' "
            "(it then starts over from its source topics)",
        )

    def _has_state(self, application_id: str) -> bool:
        from tablestream.runtime.layout import AppPaths

        return AppPaths.of(application_id, self.home).root.exists()

    def _check_drop(self, statement: st.DropSource) -> None:
        info = self.catalog.sources.get(statement.name.text)
        if info is None:
            return
        readers = sorted(q.id for q in self.queries.values() if info.name in q.info.sources and q.info.target != info.name)
        writers = sorted(q.id for q in self.queries.values() if q.info.target == info.name and q.id != info.query_id)
        if readers or writers:
            raise self.error(
                statement,
                f"Cannot drop {info.name}.\nThe following queries read from this source: [{', '.join(readers)}].\n"
                f"The following queries write into this source: [{', '.join(writers)}].\n"
                f"You need to terminate them before dropping {info.name}.",
            )

    def _create_topics(self, sources: Any) -> None:
        from tablestream.storage.topic import TopicConfig

        existing = set(self.store.list_topics())
        for info in sources:
            if info.topic in existing:
                continue
            self.store.create_topic(
                TopicConfig(
                    info.topic,
                    partitions=info.partitions or 1,
                    cleanup_policy="compact" if info.kind == "TABLE" else "delete",
                    key_format=info.key_format,
                    key_schema=info.key_schema,
                    value_format=info.value_format,
                    value_schema=info.value_schema,
                )
            )
            existing.add(info.topic)

    def _produce(self, inserts: Sequence[Any]) -> list[str]:
        from tablestream.storage.formats import get_format
        from tablestream.storage.topic import Record

        produced = []
        by_topic = {info.topic: info for info in self.catalog.sources.values()}
        for insert in inserts:
            marker = None
            if self.rerun:
                count = self._insert_counts.get(insert.statement, 0)
                self._insert_counts[insert.statement] = count + 1
                marker = f"{count}:{insert.statement}"
                if marker in self._inserted:
                    continue
            info = by_topic[insert.topic]
            key = get_format(info.key_format, info.key_schema)
            value = get_format(info.value_format, info.value_schema)
            self.store.produce(
                insert.topic,
                [Record(
                    None if insert.key is None else key.serialize(insert.key),
                    None if insert.value is None else value.serialize(insert.value),
                    timestamp=insert.timestamp,
                )],
            )
            if marker is not None:
                self._inserted.add(marker)
                produced.append(marker)
        return produced

    # ---------------------------------------------------------------- running queries
    def _application(self, query: PersistentQuery):
        if query.application is None:
            from tablestream.runtime.app import Application

            query.application = Application(query.topology, query.application_id, store=self.store, home=self.home, spark=self.spark)
        return query.application

    def _start(self, query: PersistentQuery) -> None:
        if query.continuous:
            return
        self._application(query).start()
        query.continuous = True

    def start_all(self) -> None:
        """Run every persistent query continuously (in creation order)."""
        for query in sorted(self.queries.values(), key=lambda q: q.number):
            self._start(query)

    def await_all(self) -> None:
        """Wait until a continuously running query fails (raising its error) or the
        process is interrupted."""
        while True:
            for query in self.queries.values():
                if query.continuous and query.application.await_termination(0.5):
                    query.status = "ERROR"
                    raise TablestreamError(f"Query {query.id} stopped")
            if not any(q.continuous for q in self.queries.values()):
                return

    def _stop_query(self, query_id: str, *, reset: bool) -> None:
        from tablestream.runtime.layout import reset_application

        query = self.queries[query_id]
        if query.application is not None:
            query.application.stop()
        query.continuous = False
        query.application = None
        if reset:
            reset_application(query.application_id, self.home)

    def _forget_query(self, query_id: str) -> None:
        self.queries.pop(query_id, None)
        for info in self.catalog.sources.values():
            if info.query_id == query_id:
                info.query_id = None

    def stop(self) -> None:
        """Stop every query this engine runs."""
        for query in self.queries.values():
            if query.application is not None:
                query.application.stop()
                query.continuous = False

    def upstream(self, names: Sequence[str]) -> list[PersistentQuery]:
        """The persistent queries whose outputs the streams and tables ``names`` are
        made of (transitively), in creation order."""
        wanted, todo = set(), list(names)
        while todo:
            name = todo.pop()
            for query in self.queries.values():
                if query.info.target == name and query.id not in wanted:
                    wanted.add(query.id)
                    todo.extend(query.info.sources)
        return sorted((self.queries[i] for i in wanted), key=lambda q: q.number)

    def catch_up(self, queries: Sequence[PersistentQuery] | None = None) -> None:
        """Let the queries (default: all) process every record in their source topics,
        in creation order (a query after the queries it reads)."""
        chosen = sorted(self.queries.values(), key=lambda q: q.number) if queries is None else queries
        for query in chosen:
            application = self._application(query)
            if not query.continuous:
                application.run_until_caught_up()
                continue
            deadline = time.monotonic() + _CATCH_UP_SECONDS
            while application.lag() > 0:
                if application.await_termination(0.2):
                    break
                if time.monotonic() > deadline:
                    raise TablestreamError(f"Query {query.id} did not catch up within {_CATCH_UP_SECONDS:.0f} s")

    # ---------------------------------------------------------------- SHOW, DESCRIBE, EXPLAIN
    def _list(self, s: st.ListStatement, sql: str) -> Result:
        if s.what in ("STREAMS", "TABLES"):
            kind = s.what[:-1]
            sources = sorted((i for i in self.catalog.sources.values() if i.kind == kind), key=lambda i: i.name)
            if s.extended:
                return Result(s.text, "results", results=tuple(self._description(i, True, s.text) for i in sources))
            rows = tuple((i.name, i.topic, self._key_format(i), i.value_format, "false") for i in sources)
            return Result(s.text, "table", columns=(f"{kind.title()} Name", "Kafka Topic", "Key Format", "Value Format", "Windowed"), rows=rows)
        if s.what == "TOPICS":
            topics = sorted(t for t in self.store.list_topics() if s.all_topics or not t.startswith("_"))
            readers = {t: [q for q in self.queries.values() if t in q.plan["topics"]] for t in topics}
            rows = []
            for topic in topics:
                partitions = self.store.topic_config(topic).partitions
                row: tuple[Any, ...] = (topic, str(partitions), "1")
                if s.extended:
                    groups = len(readers[topic])
                    row += (str(groups * partitions), str(groups))
                rows.append(row)
            columns = ("Kafka Topic", "Partitions", "Partition Replicas")
            if s.extended:
                columns += ("Consumers", "ConsumerGroups")
            return Result(s.text, "table", columns=columns, rows=tuple(rows))
        if s.what == "QUERIES":
            queries = sorted(self.queries.values(), key=lambda q: q.number)
            if s.extended:
                return Result(s.text, "results", results=tuple(self._query_description(q.info, q.topology, s.text, q) for q in queries))
            rows = tuple(
                (q.id, "PERSISTENT", f"{self._status(q)}:1", q.info.target or "", q.info.sink_topic, _normalized(q.info.statement) + ";")
                for q in queries
            )
            return Result(
                s.text, "table",
                columns=("Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String"),
                rows=rows, footer="For detailed information on a Query run: EXPLAIN <Query ID>;",
            )
        rows = tuple((name, "KSQL", "SESSION", value) for name, value in sorted(self.properties.items()))
        return Result(s.text, "table", columns=("Property", "Scope", "Level", "Value"), rows=rows)

    def _status(self, query: PersistentQuery) -> str:
        application = query.application
        if application is not None and query.continuous:
            try:
                if application.await_termination(0):
                    query.status = "ERROR"
            except TablestreamError:
                query.status = "ERROR"
        return query.status

    @staticmethod
    def _key_format(info: SourceInfo) -> str:
        return info.key_format if info.key_columns else "NONE"

    def _describe(self, s: st.Describe, sql: str) -> Result:
        if s.every is not None:
            sources = sorted((i for i in self.catalog.sources.values() if i.kind == s.every), key=lambda i: i.name)
            return Result(s.text, "results", results=tuple(self._description(i, s.extended, s.text) for i in sources))
        assert s.name is not None
        info = self.catalog.sources.get(s.name.text)
        if info is None:
            raise self.error(s, f"Could not find STREAM/TABLE '{s.name.text}' in the Metastore", s.name.position)
        return self._description(info, s.extended, s.text)

    def _schema_rows(self, info: SourceInfo) -> tuple[tuple[str, str], ...]:
        marker = "(primary key)" if info.kind == "TABLE" else "(key)"
        keys = tuple((c.name, f"{ksql_text(c.type):<16} {marker}") for c in info.key_columns)
        return keys + tuple((c.name, ksql_text(c.type)) for c in info.value_columns)

    def _description(self, info: SourceInfo, extended: bool, text: str) -> Result:
        rows = self._schema_rows(info)
        if not extended:
            return Result(
                text, "description", fields=(("Name", info.name),), columns=("Field", "Type"), rows=rows,
                footer="For runtime statistics and query details run: DESCRIBE <Stream,Table> EXTENDED;",
            )
        kind = info.kind
        partitions = self.store.topic_config(info.topic).partitions if info.topic in self.store.list_topics() else info.partitions
        fields = (
            ("Name", info.name),
            ("Type", kind),
            ("Timestamp field", info.timestamp_column or "Not set - using <ROWTIME>"),
            ("Key format", self._key_format(info)),
            ("Value format", info.value_format),
            ("Kafka topic", f"{info.topic} (partitions: {partitions}, replication: 1)"),
            ("Statement", _normalized(info.statement) + ";"),
        )
        sections = []
        for operation, chosen in (
            ("read", [q for q in self.queries.values() if info.name in q.info.sources and q.info.target != info.name]),
            ("write", [q for q in self.queries.values() if q.info.target == info.name]),
        ):
            if chosen:
                lines = tuple(f"{q.id} ({self._status(q)}) : {_normalized(q.info.statement)};" for q in sorted(chosen, key=lambda q: q.number))
                sections.append((f"Queries that {operation} from this {kind}", lines))
        return Result(text, "description", fields=fields, columns=("Field", "Type"), rows=rows, sections=tuple(sections))

    def _explain(self, s: st.Explain, sql: str) -> Result:
        if s.query_id is not None:
            query = self._query_by_id(s, s.query_id)
            if query is None:
                raise self.error(s, f"Query with id:{s.query_id} does not exist, use SHOW QUERIES to view the full set of queries.")
            return self._query_description(query.info, query.topology, s.text, query)
        inner = s.statement
        if not isinstance(inner, (st.CreateAsSelect, st.InsertInto, st.SelectStatement)) or (
            isinstance(inner, st.SelectStatement) and inner.query.emit != "CHANGES"
        ):
            raise self.error(s, "The provided statement does not run a ksql query")
        compiler = StatementCompiler(self.catalog.sources, number=self.catalog.next_query, topics=self.catalog.topics, properties=self.properties)
        compiler.compile_statement(inner, sql)
        info = compiler.result.queries[-1]
        topology = compiler.result.topology
        if info.id.startswith("CTAS_") and info.target:
            topology = materialized_topology(topology, {info.sink_topic: info.target})
        return self._query_description(info, topology, s.text, None)

    def _query_by_id(self, s: st.Statement, query_id: str) -> PersistentQuery | None:
        return next((q for q in self.queries.values() if q.id.upper() == query_id.upper()), None)

    def _query_description(self, info: QueryInfo, topology: Topology, text: str, query: PersistentQuery | None) -> Result:
        fields = [("ID", info.id), ("Query Type", "PERSISTENT" if info.target else "PUSH"), ("SQL", _normalized(info.statement) + ";")]
        if query is not None:
            fields.append(("Host Query Status", f"{{tablestream:{query.application_id}={self._status(query)}}}"))
        target = self.catalog.sources.get(info.target) if info.target else None
        rows: tuple[tuple[str, str], ...] = self._schema_rows(target) if target is not None else tuple((c, "") for c in info.columns)
        sections = [
            ("Sources that this query reads from: ", tuple(info.sources)),
            ("Sinks that this query writes to: ", (info.target or info.sink_topic,)),
        ]
        repartitions = [n for n in topology.nodes if isinstance(n, Repartition)]
        if repartitions:
            sections.append(("Repartitions", tuple(f"{n.topic} (by {n.parent}{f', {n.partitions} partitions' if n.partitions else ''})" for n in repartitions)))
        sections.append(("Processing topology", tuple(str(topology.describe()).rstrip().splitlines())))
        return Result(text, "description", fields=tuple(fields), columns=("Field", "Type"), rows=rows, sections=tuple(sections))

    # ---------------------------------------------------------------- TERMINATE
    def _terminate(self, s: st.Terminate, sql: str) -> Result:
        if s.query_id is None:
            chosen = sorted(self.queries.values(), key=lambda q: q.number)
        else:
            query = self._query_by_id(s, s.query_id)
            if query is None:
                raise self.error(s, f"Unknown queryId: {s.query_id}")
            chosen = [query]
        for query in chosen:
            self._stop_query(query.id, reset=True)
            self._forget_query(query.id)
            self._record({"op": "terminate", "query_id": query.id})
        return Result(s.text, "message", message="Query terminated.")

    # ---------------------------------------------------------------- SET, UNSET, RUN SCRIPT
    def _set(self, s: st.SetProperty, sql: str) -> Result:
        self.properties[s.name] = s.value
        return Result(s.text, "message", message=f"Successfully changed local property '{s.name}' to '{s.value}'. Use the UNSET command to revert your change.")

    def _unset(self, s: st.UnsetProperty, sql: str) -> Result:
        if s.name not in self.properties:
            return Result(s.text, "message", message=f"Local property '{s.name}' is not set")
        value = self.properties.pop(s.name)
        return Result(s.text, "message", message=f"Successfully unset local property '{s.name}' (value was '{value}').")

    def _run_script(self, s: st.RunScript, sql: str) -> Result:
        path = Path(s.path) if Path(s.path).is_absolute() else self.base_dir / s.path
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise self.error(s, f"Failed to read file: {s.path} ({error.strerror})") from None
        results = []
        for statement in parse_script(text):
            if isinstance(statement, st.RunScript):
                raise self.error(statement, "RUN SCRIPT cannot be used inside a script")
            results.append(self.execute_statement(statement, text))
        return Result(s.text, "results", results=tuple(results))

    # ---------------------------------------------------------------- queries
    def _select(self, s: st.SelectStatement, sql: str) -> Result:
        if s.query.emit == "CHANGES":
            return self._push(s, sql)
        active = [q.info for q in self.queries.values()]
        pull = PullQuery.plan(s, sql, self.catalog.sources, active, properties=self.properties)
        query = self.queries[pull.query_id]
        self.catch_up(self.upstream([pull.source.name]))
        path = self.home / "apps" / query.application_id / "tables" / pull.source.name
        rows = pull.evaluate_on(read_materialized(str(path), delta_options(path)))
        return Result(s.text, "rows", columns=pull.columns, rows=rows)

    def _push(self, s: st.SelectStatement, sql: str) -> Result:
        from tablestream.runtime.app import Application
        from tablestream.storage.processing_log import processing_log_topic

        compiler = StatementCompiler(self.catalog.sources, number=self.catalog.next_query, topics=self.catalog.topics, properties=self.properties)
        compiler.compile_statement(s, sql)
        info = compiler.result.queries[-1]
        upstream = self.upstream(list(info.sources))
        application_id = f"{self.service_id}-{info.id}"
        topics = [info.sink_topic, processing_log_topic(application_id)]

        def clean() -> None:
            from tablestream.runtime.layout import AppPaths

            for topic in topics:
                if topic in self.store.list_topics():
                    self.store.delete_topic(topic)
            remove_tree(AppPaths.of(application_id, self.home).root, ignore_errors=True)

        clean()
        self.catch_up(upstream)
        application = Application(compiler.result.topology, application_id, store=self.store, home=self.home, spark=self.spark)
        limit = s.query.limit
        columns = info.columns

        def rows() -> Iterator[tuple[Any, ...]]:
            try:
                application.run_until_caught_up()
                _, value_format = _formats(self.store.topic_config(info.sink_topic))
                shown = 0
                follow = self.store.follow(info.sink_topic, from_beginning=True, timeout=0.2)
                caught_up = True
                while True:
                    for chunk in follow:
                        for record in chunk:
                            if record.value is None:
                                continue
                            value = value_format.deserialize(record.value)
                            yield tuple(value.get(c) for c in columns)
                            shown += 1
                            if limit is not None and shown >= limit:
                                return
                    if not self.interactive:
                        return
                    if caught_up:
                        # Interactive: go on with new input until Ctrl-C or LIMIT.
                        for query in upstream:
                            self._start(query)
                        application.start()
                        caught_up = False
                    follow = self.store.follow(info.sink_topic, from_beginning=False, timeout=None)
            finally:
                application.stop()
                clean()

        return Result(s.text, "rows", columns=columns, rows=rows())

    # ---------------------------------------------------------------- PRINT
    def _print(self, s: st.PrintTopic, sql: str) -> Result:
        topics = self.store.list_topics()
        topic = s.topic
        if topic not in topics:
            matches = [t for t in topics if t.upper() == topic.upper()]
            if len(matches) != 1:
                raise self.error(s, f"Could not find topic '{topic}', or the KSQL user does not have permissions to list the topic. Topic names are case-sensitive.")
            topic = matches[0]
        self.catch_up(self.upstream([i.name for i in self.catalog.sources.values() if i.topic == topic]))
        config = self.store.topic_config(topic)
        key_format, value_format = _formats(config)

        def lines() -> Iterator[str]:
            yield f"Key format: {_print_format(config.key_format, config.key_schema)}"
            yield f"Value format: {_print_format(config.value_format, config.value_schema)}"
            shown = seen = 0
            timeout = None if self.interactive else 0.2
            for chunk in self.store.follow(topic, from_beginning=s.from_beginning, timeout=timeout):
                for record in chunk:
                    seen += 1
                    if (seen - 1) % s.interval:
                        continue
                    yield (
                        f"rowtime: {_rowtime(record.timestamp)}, key: {_printed(record.key, key_format)}, "
                        f"value: {_printed(record.value, value_format)}, partition: {record.partition}"
                    )
                    shown += 1
                    if s.limit is not None and shown >= s.limit:
                        return

        return Result(s.text, "lines", rows=lines())


def _state_plan(topology: Topology) -> list[str]:
    """What a plan's state depends on: the nodes that keep or read state stores and
    every node before them, as text (a table only materialized for pull queries is
    an output, not state)."""
    from tablestream.plan.stateless import TableFilter, TableMapValues

    keep: set[str] = set()
    for store in topology.stores:
        node = topology.node(store.owner)
        if isinstance(node, (TableFilter, TableMapValues)) and store.queryable and not store.readers:
            continue
        keep.add(store.owner)
        keep.update(r for r in store.readers if any(n.name == r for n in topology.nodes))
    todo = list(keep)
    while todo:
        for parent in topology.node(todo.pop()).parents:
            if parent not in keep:
                keep.add(parent)
                todo.append(parent)
    return sorted(repr(topology.node(name)) for name in keep)


def _print_format(name: str, schema: str | None) -> str:
    if name == "KAFKA":
        kind = (schema or "STRING").upper()
        return f"KAFKA_{kind}" if kind in ("INT", "BIGINT", "DOUBLE", "STRING") else "KAFKA"
    return name


def _rowtime(timestamp: int | None) -> str:
    if timestamp is None or timestamp < 0:
        return "N/A"
    moment = datetime.fromtimestamp(timestamp / 1000, tz=timezone.utc)
    return moment.strftime("%Y/%m/%d %H:%M:%S.") + f"{timestamp % 1000:03d} Z"


def _formats(config: Any) -> tuple[Any, Any]:
    from tablestream.storage.formats import get_format

    return get_format(config.key_format, config.key_schema), get_format(config.value_format, config.value_schema)


def _printed(data: bytes | None, fmt: Any) -> str:
    """A key or value as PRINT shows it: ``<null>``, JSON text, or the value itself
    (bytes its format cannot read: their base64 text)."""
    from tablestream.storage.undeclared import undeclared_kafka_value

    if data is None:
        return "<null>"
    try:
        value = undeclared_kafka_value(data) if fmt.name == "KAFKA" and fmt.schema is None else fmt.deserialize(data)
    except TablestreamError:
        return base64.b64encode(data).decode()
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), default=str)
    return str(value)

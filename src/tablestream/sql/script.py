"""A ksqlDB script against a topic store: what ``tablestream run FILE.sql`` does before
its application starts.

The script is compiled with the store's topics (a topic that does not exist needs
``PARTITIONS``, as in ksqlDB); the topics it declares or writes are created when
missing, with the partition count and formats the statements give them; the records of
``INSERT INTO ... VALUES`` not produced by an earlier run are produced. The persistent
queries then run as one application (:class:`~tablestream.runtime.app.Application`),
which the caller starts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tablestream.sql.compiler import CompiledSql, compile_sql
from tablestream.sql.errors import SqlError

if TYPE_CHECKING:
    from tablestream.storage.stores import TopicStore

__all__ = ["application_id_of", "prepare_script"]

_ID = re.compile(r"[^A-Za-z0-9._-]+")


def application_id_of(path: str | Path) -> str:
    """The application a script file runs as: its file name without ``.sql``.

    >>> application_id_of("jobs/orders enrichment.sql")
    'orders_enrichment'
    """
    return _ID.sub("_", Path(path).stem) or "script"


def prepare_script(sql: str, store: TopicStore, done: frozenset[str] = frozenset()) -> tuple[CompiledSql, list[str]]:
    """Compile ``sql`` against ``store``, create the topics it needs and produce the
    records of its ``INSERT ... VALUES`` statements but those in ``done``; returns what
    the script compiled to and the statements produced now. A statement is named by
    its text and how many times the same text came before it in the script (run again,
    an unchanged script inserts nothing twice)."""
    from tablestream.storage.formats import get_format
    from tablestream.storage.topic import Record, TopicConfig

    existing = set(store.list_topics())
    compiled = compile_sql(
        sql, topic_partitions=lambda t: store.topic_config(t).partitions if t in existing else None
    )
    push = next((q for q in compiled.queries if q.target is None), None)
    if push is not None:
        assert push.position is not None
        raise SqlError(
            f"Push queries are not run by 'tablestream run' (query {push.id}); "
            "write their rows to a stream with CREATE STREAM ... AS SELECT",
            line=push.position.line,
            column=push.position.column,
            statement=push.statement,
        )
    for info in compiled.sources.values():
        if info.topic in existing:
            continue
        store.create_topic(
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
    by_topic = {info.topic: info for info in compiled.sources.values()}
    seen: dict[str, int] = {}
    produced: list[str] = []
    for insert in compiled.inserts:
        name = f"{seen.get(insert.statement, 0)}:{insert.statement}"
        seen[insert.statement] = seen.get(insert.statement, 0) + 1
        if name in done:
            continue
        produced.append(name)
        info = by_topic[insert.topic]
        key = get_format(info.key_format, info.key_schema)
        value = get_format(info.value_format, info.value_schema)
        store.produce(
            insert.topic,
            [
                Record(
                    None if insert.key is None else key.serialize(insert.key),
                    None if insert.value is None else value.serialize(insert.value),
                    timestamp=insert.timestamp,
                )
            ],
        )
    return compiled, produced

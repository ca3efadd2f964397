"""A ksqlDB script file: the name ``tablestream run FILE.sql`` runs it under (its
statements are executed by :class:`~tablestream.runtime.sql_engine.SqlEngine`)."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["application_id_of"]

_ID = re.compile(r"[^A-Za-z0-9._-]+")


def application_id_of(path: str | Path) -> str:
    """The application a script file runs as: its file name without ``.sql``.

    >>> application_id_of("jobs/orders enrichment.sql")
    'orders_enrichment'
    """
    return _ID.sub("_", Path(path).stem) or "script"

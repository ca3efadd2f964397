"""Where an application keeps what it runs on, under ``<home>/apps/<application id>/``,
and how to delete it to start over (imports no Spark, so the command line can use it).

::

    app.json        the state partition count and the run id, fixed at the first start
    checkpoint/     Spark's streaming checkpoint (source offsets per batch id)
    state/          live RocksDB stores, one per (store, state partition)
    changelog/      the stores' changelog files and snapshots (restore)
    tables/<store>  each materialized table's changelog, a Delta table users read
    positions.json  per source topic partition, the offset after the last record read
                    (what its lag is counted from)
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .. import config as ts_config
from ..errors import TablestreamError
from .state import StoreLayout


class ApplicationError(TablestreamError):
    """An application that cannot start or run as configured."""


@dataclass(frozen=True)
class AppPaths:
    """The directories of one application."""

    root: Path

    @classmethod
    def of(cls, application_id: str, home: str | os.PathLike[str] | None = None) -> AppPaths:
        """The directories of ``application_id`` under ``home`` (see :func:`tablestream.config.home`)."""
        if not application_id or application_id in (".", "..") or any(c in application_id for c in "/\\\0"):
            raise ApplicationError(f"Invalid application id {application_id!r} (a name without '/')")
        return cls(ts_config.home(home) / "apps" / application_id)

    @property
    def meta(self) -> Path:
        return self.root / "app.json"

    @property
    def positions(self) -> Path:
        return self.root / "positions.json"

    @property
    def checkpoint(self) -> Path:
        return self.root / "checkpoint"

    @property
    def layout(self) -> StoreLayout:
        return StoreLayout(self.root / "state", self.root / "changelog")

    @property
    def tables(self) -> Path:
        return self.root / "tables"

    def table(self, store: str) -> Path:
        return self.tables / store


def reset_application(application_id: str, home: str | os.PathLike[str] | None = None) -> bool:
    """Delete everything ``application_id`` keeps (checkpoint, state stores, their
    changelogs and snapshots, materialized tables, its state partition count), so that
    it starts over from the beginning of its source topics, as Kafka's
    ``kafka-streams-application-reset`` resets an application. Output topics and the
    processing log are kept. False when there was nothing to delete.

    >>> reset_application("revenue", home="/tmp/ts")              # doctest: +SKIP
    True
    """
    root = AppPaths.of(application_id, home).root
    if not root.exists():
        return False
    shutil.rmtree(root)
    return True

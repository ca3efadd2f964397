"""Rows for the kernel tests: canonical bytes, ordering keys, Arrow tables, and a
kernel run against store sessions of one batch."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

import pyarrow as pa

from tablestream.runtime.kernels.order import ORDER_FIELDS
from tablestream.runtime.state import StoreLayout, StoreSession


def cb(value) -> bytes:
    """Canonical bytes of ``value``: the JSON text of ``{"v": value}``."""
    return json.dumps({"v": value}, separators=(",", ":")).encode()


def at(ts: int, off: int, *, src: int = 0, part: int = 0, idx: int = 0, o_ts: int | None = None) -> dict:
    """A row's timestamp and ordering key (ordered at its own timestamp unless ``o_ts``)."""
    return {"ts": ts, "o_ts": ts if o_ts is None else o_ts, "o_src": src, "o_part": part, "o_off": off, "o_idx": idx}


def rows_table(fields: list[tuple[str, pa.DataType]], rows: list[dict], *, order: bool = True) -> pa.Table:
    """An input table: ``fields``, then ``ts`` and (with ``order``) the ordering key."""
    schema = pa.schema([*fields, ("ts", pa.int64()), *(ORDER_FIELDS if order else [])])
    return pa.Table.from_pylist(rows, schema=schema)


class Stores:
    """Store sessions of one state partition (0) under one directory."""

    def __init__(self, root: Path):
        self.layout = StoreLayout(root / "local", root / "durable")

    def session(self, name: str, batch_id: int) -> StoreSession:
        return StoreSession(self.layout, name, 0, batch_id)

    def run(self, kernel, table: pa.Table, names: tuple[str, ...], batch_id: int, **options) -> pa.Table:
        """``kernel(table, *sessions, **options)`` with a session of each store, committed."""
        with ExitStack() as stack:
            sessions = [stack.enter_context(self.session(n, batch_id)) for n in names]
            return kernel(table, *sessions, **options)

"""The expected results, computed by DuckDB from the records a workload wrote, and the
exact comparison every system's result goes through."""

from __future__ import annotations

import duckdb
import pyarrow as pa


class Log:
    """The records written to one topic, in the order they were appended (a key's
    records all go to one partition, so a key's last record here is its latest)."""

    def __init__(self) -> None:
        self.parts: list[pa.Table] = []

    def add(self, records: pa.Table) -> pa.Table:
        self.parts.append(records.select(["key", "value", "timestamp"]))
        return records

    def copy(self) -> Log:
        """The records written so far (later appends not included)."""
        copied = Log()
        copied.parts = list(self.parts)
        return copied

    def since(self, earlier: Log) -> Log:
        """The records appended after ``earlier`` (a copy of this log) was taken."""
        later = Log()
        later.parts = self.parts[len(earlier.parts):]
        return later

    def __len__(self) -> int:
        return sum(part.num_rows for part in self.parts)

    def table(self) -> pa.Table:
        rows = pa.concat_tables(self.parts)
        rows = pa.table({name: rows.column(name).cast(pa.string()) if pa.types.is_binary(rows.schema.field(name).type)
                         else rows.column(name) for name in rows.column_names})
        return rows.append_column("seq", pa.array(range(rows.num_rows), pa.int64()))


def query(sql: str, **logs: Log) -> pa.Table:
    """``sql`` over ``latest_<name>`` (each key's latest value, deleted keys left out,
    ``key`` and ``value`` as text) and ``records_<name>`` (every record) of each log."""
    con = duckdb.connect()
    try:
        con.execute("SET threads TO 2")
        for name, log in logs.items():
            con.register(f"raw_{name}", log.table())
            con.execute(
                f"CREATE VIEW records_{name} AS SELECT key, value, timestamp, seq FROM raw_{name}"
            )
            con.execute(
                f"CREATE VIEW latest_{name} AS SELECT key, value, timestamp FROM records_{name} "
                "QUALIFY row_number() OVER (PARTITION BY key ORDER BY seq DESC) = 1 AND value IS NOT NULL"
            )
        return con.sql(sql).to_arrow_table()
    finally:
        con.close()


class Mismatch(AssertionError):
    """A system's result differs from DuckDB's."""


def check(name: str, got: pa.Table, expected: pa.Table) -> None:
    """Raise :class:`Mismatch` unless ``got`` holds exactly ``expected``'s rows (as a
    multiset; columns matched by name, compared as text so that types may differ)."""
    columns = expected.column_names
    missing = [c for c in columns if c not in got.column_names]
    if missing:
        raise Mismatch(f"{name}: no column {', '.join(missing)} in {got.column_names}")

    def text(table: pa.Table) -> pa.Table:
        as_text = pa.table({c: table.column(c).cast(pa.string()) for c in columns})
        return as_text.sort_by([(c, "ascending") for c in columns])

    a, b = text(got), text(expected)
    if not a.equals(b):
        got_rows, expected_rows = set(zip(*a.to_pydict().values(), strict=False)), set(zip(*b.to_pydict().values(), strict=False))
        extra = sorted(got_rows - expected_rows, key=str)[:3]
        lacking = sorted(expected_rows - got_rows, key=str)[:3]
        raise Mismatch(
            f"{name}: {a.num_rows:,} rows, DuckDB {b.num_rows:,}; not expected {extra}; missing {lacking}"
        )

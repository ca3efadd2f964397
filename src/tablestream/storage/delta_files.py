"""Delta appends in two halves: data files written where the rows are (inside Spark
tasks), then one commit of those files on the driver.

A task writes a Parquet file under the table's directory with a name of its own
(:func:`write_data_file`) and returns a :class:`DataFile`: the file's path, size, row
count, Delta statistics and partition values, never the rows. The driver commits the
files of the tasks that succeeded in one Delta transaction (:func:`commit_data_files`);
a file written by an attempt that failed, or whose summary never reached the driver, is
in no commit, so readers never see it.

Paths are strings handed to ``pyarrow.fs``: a local path, or a URI it opens.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from deltalake import CommitProperties, DeltaTable, Schema
from deltalake.transaction import AddAction, create_table_with_add_actions
from pyarrow import fs as pafs

from .location import Location

__all__ = ["DataFile", "commit_data_files", "write_data_file"]


@dataclass(frozen=True)
class DataFile:
    """A data file written into a Delta table's directory and not yet committed:
    ``path`` relative to the table, ``partition_values`` as Delta keeps them (text)."""

    path: str
    size: int
    rows: int
    stats: str
    partition_values: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> DataFile:
        return cls(**json.loads(text))

    def add_action(self) -> AddAction:
        return AddAction(
            self.path, self.size, dict(self.partition_values), int(time.time() * 1000), True, self.stats
        )


def write_data_file(
    table_path: str,
    rows: pa.Table,
    partition_values: Mapping[str, str] | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> DataFile:
    """Write ``rows`` (without the partition columns) as a new Parquet file of the Delta
    table at ``table_path``, under its partition's directory; the name is unique to this
    call, so two attempts of one task never write the same file.

    >>> write_data_file("/tmp/t/log", rows, {"partition": "1"})   # doctest: +SKIP
    DataFile(path='partition=1/part-...parquet', size=1994, rows=2, stats='{"numRecords": 2, ...}', ...)
    """
    values = dict(partition_values or {})
    directory = "/".join(f"{k}={v}" for k, v in values.items())
    name = f"part-{uuid.uuid4()}-c000.snappy.parquet"
    relative = f"{directory}/{name}" if directory else name
    if "://" in table_path:
        table = Location(table_path, storage_options or {})
        filesystem, root = table.filesystem, table.fs_path
    else:
        filesystem, root = pafs.LocalFileSystem(), table_path
    root = root.rstrip("/")
    filesystem.create_dir(f"{root}/{directory}" if directory else root, recursive=True)
    full = f"{root}/{relative}"
    pq.write_table(rows, full, filesystem=filesystem, compression="snappy")
    size = filesystem.get_file_info(full).size
    return DataFile(relative, int(size), rows.num_rows, _stats(rows), values)


def _stats(rows: pa.Table) -> str:
    """Delta's file statistics: the row count, and the bounds and null counts of the
    integer columns (what delta-rs records for these tables; readers skip by them)."""
    low: dict[str, int] = {}
    high: dict[str, int] = {}
    nulls: dict[str, int] = {}
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        if not pa.types.is_integer(column.type):
            continue
        nulls[name] = column.null_count
        if column.null_count < len(column):
            bounds = pc.min_max(column)
            low[name], high[name] = bounds["min"].as_py(), bounds["max"].as_py()
    return json.dumps({"numRecords": rows.num_rows, "minValues": low, "maxValues": high, "nullCount": nulls})


def commit_data_files(
    table_path: str,
    files: Sequence[DataFile],
    schema: pa.Schema,
    commit_properties: CommitProperties,
    partition_by: list[str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> None:
    """Commit ``files`` to the Delta table at ``table_path`` in one append transaction
    (which creates the table with ``schema`` when there is none yet); with no file, the
    commit still records ``commit_properties`` (the batch's transaction)."""
    if not DeltaTable.is_deltatable(table_path, storage_options):
        create_table_with_add_actions(
            table_path,
            Schema.from_arrow(schema),
            [f.add_action() for f in files],
            partition_by=partition_by,
            storage_options=storage_options,
            commit_properties=commit_properties,
        )
        return
    DeltaTable(table_path, storage_options=storage_options).create_write_transaction(
        [f.add_action() for f in files],
        "append",
        schema,
        partition_by=partition_by,
        commit_properties=commit_properties,
    )

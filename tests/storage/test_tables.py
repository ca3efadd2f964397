"""Materialized tables as Delta changelogs (without Spark: read back with deltalake)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable

from tablestream.storage.tables import DeltaTables


def _changes(key: str, value: str | None, ts: int) -> pa.Table:
    return pa.table({"key": [key], "new": pa.array([value], pa.string()), "ts": [ts]})


def test_a_batch_appended_by_another_instance_is_not_appended_again(tmp_path):
    first, second = DeltaTables(tmp_path, "app"), DeltaTables(tmp_path, "app")
    first.append("totals", _changes("a", "1", 5), 0)
    first.append("totals", _changes("b", "2", 6), 1)
    second.append("totals", _changes("c", "3", 7), 2)  # another instance of the application
    first.append("totals", _changes("c", "3", 7), 2)  # the same batch replayed: skipped
    first.append("totals", _changes("a", None, 8), 3)
    assert first.appending_files("totals", 3).done
    assert not first.appending_files("totals", 4).done
    rows = DeltaTable(str(tmp_path / "totals")).to_pyarrow_table().sort_by("batch").to_pylist()
    assert rows == [
        {"key": "a", "value": "1", "ts": 5, "batch": 0, "seq": 0},
        {"key": "b", "value": "2", "ts": 6, "batch": 1, "seq": 0},
        {"key": "c", "value": "3", "ts": 7, "batch": 2, "seq": 0},
        {"key": "a", "value": None, "ts": 8, "batch": 3, "seq": 0},
    ]
    assert DeltaTable(str(tmp_path / "totals")).transaction_version("tablestream:app") == 3


def test_a_table_not_yet_written_has_no_batch(tmp_path):
    tables = DeltaTables(tmp_path, "app", run="r1")
    assert not tables.appending_files("totals", 0).done
    tables.append("totals", _changes("a", "1", 5), 0)
    assert tables.appending_files("totals", 0).done
    assert DeltaTable(str(tmp_path / "totals")).transaction_version("tablestream:app:r1") == 0

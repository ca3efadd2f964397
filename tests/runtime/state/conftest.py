"""Fixtures of the store tests: a layout with a snapshot every three batches."""

from __future__ import annotations

import pytest

from tablestream.runtime.state import StoreLayout


@pytest.fixture
def layout(tmp_path):
    return StoreLayout(tmp_path / "local", tmp_path / "durable", snapshot_every=3)

from __future__ import annotations

import pytest

from .rows import Stores


@pytest.fixture
def stores(tmp_path) -> Stores:
    return Stores(tmp_path)

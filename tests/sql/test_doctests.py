"""The examples in the SQL front end's docstrings (and the SQL shell's and engine's) are tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tablestream.sql

MODULES = sorted(
    info.name for info in pkgutil.iter_modules(tablestream.sql.__path__, "tablestream.sql.")
) + ["tablestream.sql", "tablestream.shell", "tablestream.runtime.sql_engine"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

"""The examples in the plan and DSL docstrings are tests."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import tablestream.dsl
import tablestream.plan

MODULES = sorted(
    info.name
    for package in (tablestream.plan, tablestream.dsl)
    for info in pkgutil.iter_modules(package.__path__, package.__name__ + ".")
) + ["tablestream.dsl", "tablestream.plan"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

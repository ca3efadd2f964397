"""One line for an error raised while a batch runs.

A batch's failure reaches the driver wrapped several times: a tablestream error raised
by a Python UDF on an executor comes back as a PySpark ``PythonException`` whose text
holds the worker's traceback; one raised in the ``foreachBatch`` function comes back as
a ``StreamingQueryException`` whose text holds the driver's traceback, each with Spark's
query description around it. Python ends a traceback with the exception's line,
``<module>.<class>: <message>``, so a tablestream error is found as the last such line
naming a :class:`~tablestream.errors.TablestreamError` class; its message (one line by
contract) is what the user reads. Any other failure is told by its innermost Python
exception's line, or by its own type and first line.

>>> failure_line(ValueError("bad\\nmore"))
'ValueError: bad'
>>> text = (
...     "An exception was thrown from the Python worker:\\n"
...     "Traceback (most recent call last):\\n"
...     '  File "x.py", line 1, in f\\n'
...     "tablestream.errors.SerializationError: value: not JSON\\n"
... )
>>> failure_line(RuntimeError(text))
'value: not JSON'
"""

from __future__ import annotations

import importlib
import re

from ..errors import TablestreamError

# The last line of a Python traceback: ``package.module.Class: message`` (or no message).
_RAISED = re.compile(r"^(tablestream(?:\.\w+)*)\.(\w+)(?:: (.*))?$", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last):"
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_][\w.]*): ?(.*)$")


def failure_line(error: BaseException) -> str:
    """What a failed batch tells its user: the message of the tablestream error in the
    failure (raised here or in a Python worker), else ``<exception type>: <first line>``
    of the innermost Python exception the text shows, else of ``error`` itself."""
    for raised in _chain(error):
        if isinstance(raised, TablestreamError):
            return _first_line(str(raised))
    text = "\n".join(str(e) for e in _chain(error))
    found = tablestream_message(text)
    if found is not None:
        return found
    innermost = _innermost_exception(text)
    if innermost is not None:
        return innermost
    return f"{type(error).__name__}: {_first_line(str(error))}"


def tablestream_message(text: str) -> str | None:
    """The message of the last tablestream error a traceback in ``text`` ends with."""
    for match in reversed(list(_RAISED.finditer(text))):
        module, name, message = match.groups()
        if _is_tablestream_error(module, name):
            return message or name
    return None


def _is_tablestream_error(module: str, name: str) -> bool:
    try:
        cls = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return False
    return isinstance(cls, type) and issubclass(cls, TablestreamError)


def _innermost_exception(text: str) -> str | None:
    """``<type>: <message>`` of the last traceback in ``text`` (its first line that is not
    indented), the type without its module."""
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    for line in text[at + len(_TRACEBACK) :].splitlines():
        if line and not line[0].isspace():
            match = _EXCEPTION_LINE.match(line)
            if match is None:
                return None
            kind, message = match.groups()
            return f"{kind.rsplit('.', 1)[-1]}: {message}" if message else kind.rsplit(".", 1)[-1]
    return None


def _chain(error: BaseException):
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else ""

"""Where tablestream keeps its files, and how much Spark may say."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TABLESTREAM_HOME"
DEFAULT_HOME = ".tablestream"


def home(path: str | os.PathLike[str] | None = None) -> Path:
    """The tablestream home directory: ``path``, else ``$TABLESTREAM_HOME``, else ``./.tablestream``."""
    chosen = path if path is not None else os.environ.get(HOME_ENV, DEFAULT_HOME)
    return Path(chosen).expanduser().absolute()


VERBOSE_ENV = "TABLESTREAM_VERBOSE"


def verbose() -> bool:
    """Whether Spark speaks for itself: its start-up output (Ivy's resolution report,
    JVM and log4j warnings) and its logs at its default levels. On when
    ``$TABLESTREAM_VERBOSE`` is ``1``, ``true``, ``yes`` or ``on``; off by default, when
    tablestream shows only its own lines and Spark's errors.

    >>> os.environ["TABLESTREAM_VERBOSE"] = "1"              # doctest: +SKIP
    >>> verbose()                                             # doctest: +SKIP
    True
    """
    return os.environ.get(VERBOSE_ENV, "").strip().lower() in ("1", "true", "yes", "on")

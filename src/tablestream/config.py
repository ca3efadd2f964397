"""Where tablestream keeps its files, and how much Spark may say."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import InvalidHomeError

HOME_ENV = "TABLESTREAM_HOME"
DEFAULT_HOME = ".tablestream"


def home(path: str | os.PathLike[str] | None = None) -> Path:
    """The tablestream home directory: ``path``, else ``$TABLESTREAM_HOME``, else
    ``./.tablestream``. It need not exist yet; a file there is an error.

    >>> home("/etc/hostname")
    Traceback (most recent call last):
    tablestream.errors.InvalidHomeError: Home /etc/hostname is not a directory (give --home or $TABLESTREAM_HOME a directory)
    """
    chosen = path if path is not None else os.environ.get(HOME_ENV, DEFAULT_HOME)
    resolved = Path(chosen).expanduser().absolute()
    if resolved.exists() and not resolved.is_dir():
        raise InvalidHomeError(
            f"Home {resolved} is not a directory (give --home or ${HOME_ENV} a directory)"
        )
    return resolved


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

"""Where tablestream keeps its files."""

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

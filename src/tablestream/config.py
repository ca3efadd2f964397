"""Where tablestream keeps its files."""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "TABLESTREAM_HOME"
DEFAULT_HOME = ".tablestream"


def home(path: str | os.PathLike[str] | None = None) -> Path:
    """The tablestream home directory: ``path``, else ``$TABLESTREAM_HOME``, else ``./.tablestream``."""
    chosen = path if path is not None else os.environ.get(HOME_ENV, DEFAULT_HOME)
    return Path(chosen).expanduser().absolute()

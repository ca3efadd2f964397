"""Where tablestream keeps its files, and how much Spark may say."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from .errors import InvalidHomeError, InvalidLocationError
from .storage.location import Location, is_uri

HOME_ENV = "TABLESTREAM_HOME"
DEFAULT_HOME = ".tablestream"


def home(
    path: str | os.PathLike[str] | Location | None = None, storage_options: Mapping[str, str] | None = None
) -> Path | Location:
    """The tablestream home directory: ``path``, else ``$TABLESTREAM_HOME``, else
    ``./.tablestream``. It need not exist yet; a file there is an error.

    A local path is made absolute (a :class:`~pathlib.Path`); a URI stays the URI it is
    (a :class:`~tablestream.storage.location.Location`: ``file://``, ``hdfs://``,
    ``s3a://``, ``s3://``, ``gs://``, ``abfss://``), opened with ``storage_options``
    (else those in ``$TABLESTREAM_STORAGE_OPTIONS``).

    >>> home("s3a://bucket/ts")
    Location('s3a://bucket/ts')
    >>> home("/etc/hostname")
    Traceback (most recent call last):
    tablestream.errors.InvalidHomeError: Home /etc/hostname is not a directory (give --home or $TABLESTREAM_HOME a directory)
    >>> home("ftp://host/ts")
    Traceback (most recent call last):
    tablestream.errors.InvalidHomeError: Home ftp://host/ts has an unknown scheme 'ftp' (give --home or $TABLESTREAM_HOME a local path or a file://, hdfs://, s3a://, s3://, gs://, abfss:// or abfs:// URI)
    """
    chosen = path if path is not None else os.environ.get(HOME_ENV, DEFAULT_HOME)
    if isinstance(chosen, Location):
        return chosen if storage_options is None else Location(chosen.uri, storage_options)
    if is_uri(chosen):
        return _home_uri(str(chosen), storage_options)
    resolved = Path(chosen).expanduser().absolute()
    _check_directory(resolved, resolved)
    return resolved


def _home_uri(uri: str, storage_options: Mapping[str, str] | None) -> Location:
    try:
        location = Location(uri, storage_options)
    except InvalidLocationError as err:
        fix = err.fix
        if fix.startswith("a durable location is "):
            fix = f"give --home or ${HOME_ENV} {fix.removeprefix('a durable location is ')}"
        raise InvalidHomeError(f"Home {uri} {err.problem} ({fix})") from None
    local = location.local_path
    if local is not None:
        _check_directory(local, uri)
    return location


def _check_directory(local: Path, shown: object) -> None:
    if local.exists() and not local.is_dir():
        raise InvalidHomeError(
            f"Home {shown} is not a directory (give --home or ${HOME_ENV} a directory)"
        )


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

"""Durable locations: where an application keeps what must outlive a process and be seen
by every host (checkpoint, stores' changelogs and snapshots, the record of their
versions, materialized tables, embedded topics).

A durable location is a local directory (a :class:`pathlib.Path`, used with Python's
file I/O exactly as ever) or a URI (a :class:`Location`): ``file://`` (a directory on a
mount every host sees), ``hdfs://``, ``s3a://`` / ``s3://``, ``gs://``, ``abfss://`` /
``abfs://``. A :class:`Location` is opened with :mod:`pyarrow.fs` (Hadoop's scheme names
mapped to pyarrow's: ``s3a`` -> ``s3``, ``abfss`` -> ``abfs``) and keeps the URI as given,
which is what Spark is handed (Spark's checkpoint, its Delta reads) and what deltalake
opens with the location's ``storage_options``.

:class:`Location` offers the part of :class:`~pathlib.Path`'s interface the code uses
(``/``, ``name``, ``parent``, ``exists``, ``is_dir``, ``iterdir``, ``glob``, ``read_text``,
``unlink``, ...), so code written against a ``Path`` reads either. What a ``Path`` has no
single call for is a function here, for both: :func:`write_atomic`, :func:`remove_tree`,
:func:`copy_up`, :func:`copy_down`, :func:`read_arrow_file`, :func:`delta_options`.

Credentials and endpoints of object stores come from the environment the storage
clients read (``AWS_*``, ``GOOGLE_APPLICATION_CREDENTIALS``, ``AZURE_*``), or from
``storage_options`` (deltalake's names: ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ...), given to
:class:`~tablestream.runtime.app.Application` or as JSON in
``$TABLESTREAM_STORAGE_OPTIONS``. They are never shown: a location's ``repr`` and
``str`` are its URI.

>>> home = Location("s3a://bucket/ts")
>>> home / "apps" / "revenue"
Location('s3a://bucket/ts/apps/revenue')
>>> Location("ftp://host/ts")
Traceback (most recent call last):
tablestream.errors.InvalidLocationError: ftp://host/ts has an unknown scheme 'ftp' (a durable location is a local path or a file://, hdfs://, s3a://, s3://, gs://, abfss:// or abfs:// URI)
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Union
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from ..errors import InvalidLocationError

STORAGE_OPTIONS_ENV = "TABLESTREAM_STORAGE_OPTIONS"

#: The URI schemes a durable location may have, and pyarrow's name for each.
SCHEMES = {
    "file": "file",
    "hdfs": "hdfs",
    "s3a": "s3",
    "s3": "s3",
    "gs": "gs",
    "abfss": "abfs",
    "abfs": "abfs",
}
_OBJECT_STORES = frozenset({"s3", "gs", "abfs"})  # a PUT replaces an object atomically
_URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_OPTIONS_FIX = 'give a JSON object of strings such as {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"}'
SCHEME_LIST = "a local path or a file://, hdfs://, s3a://, s3://, gs://, abfss:// or abfs:// URI"

#: A snapshot on a durable location is complete once this file is in it (written last).
COMPLETE_MARKER = ".complete"

Durable = Union[Path, "Location"]


def is_uri(text: str | os.PathLike[str]) -> bool:
    """Whether ``text`` is a URI (``scheme://...``) rather than a local path.

    >>> is_uri("s3a://bucket/ts"), is_uri("/tmp/ts"), is_uri("c:/ts")
    (True, False, False)
    """
    return isinstance(text, str) and _URI.match(text) is not None


def storage_options_from_env() -> dict[str, str]:
    """The storage options in ``$TABLESTREAM_STORAGE_OPTIONS`` (a JSON object of
    strings), or none."""
    text = os.environ.get(STORAGE_OPTIONS_ENV, "").strip()
    if not text:
        return {}
    try:
        options = json.loads(text)
    except json.JSONDecodeError as err:
        raise InvalidLocationError(
            f"${STORAGE_OPTIONS_ENV}", f"is not JSON ({err.msg} at column {err.colno})", _OPTIONS_FIX
        ) from None
    if not isinstance(options, dict):
        raise InvalidLocationError(f"${STORAGE_OPTIONS_ENV}", "is not a JSON object", _OPTIONS_FIX)
    return {str(k): str(v) for k, v in options.items()}


class Location:
    """A directory or file at a URI, read and written through :mod:`pyarrow.fs`.

    ``storage_options``: credentials and endpoints (deltalake's names); None: those in
    ``$TABLESTREAM_STORAGE_OPTIONS``, if any. The filesystem client is made on first
    use (nothing is contacted before), once per process for each bucket or host, and
    is not pickled: a location handed to a Spark task opens its own there.

    >>> Location("s3a://bucket/ts/").uri
    's3a://bucket/ts'
    >>> (Location("file:///tmp/ts") / "apps").local_path
    PosixPath('/tmp/ts/apps')
    """

    __slots__ = ("uri", "scheme", "storage_options", "_info")

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None):
        match = _URI.match(uri)
        if match is None:
            raise InvalidLocationError(uri, "is not a URI", f"a durable location is {SCHEME_LIST}")
        scheme = match.group(1).lower()
        if scheme not in SCHEMES:
            raise InvalidLocationError(uri, f"has an unknown scheme '{scheme}'", f"a durable location is {SCHEME_LIST}")
        rest = uri[match.end() :]
        if SCHEMES[scheme] in _OBJECT_STORES and not rest.split("/")[0]:
            raise InvalidLocationError(uri, "names no bucket or container", f"give {scheme}://<bucket>/<path>")
        self.uri = uri[: match.end()] + rest.rstrip("/") if rest.rstrip("/") else uri
        self.scheme = scheme
        self.storage_options = dict(storage_options) if storage_options is not None else storage_options_from_env()
        self._info: pafs.FileInfo | None = None  # as listed by the parent's iterdir()

    def _child(self, uri: str, info: pafs.FileInfo | None = None) -> Location:
        child = object.__new__(Location)
        child.uri, child.scheme, child.storage_options, child._info = uri, self.scheme, self.storage_options, info
        return child

    def __reduce__(self):
        return (Location, (self.uri, self.storage_options))

    # ------------------------------------------------------------------ naming
    def __truediv__(self, name: str | os.PathLike[str]) -> Location:
        name = os.fspath(name).strip("/")
        return self._child(f"{self.uri}/{name}" if name else self.uri)

    def __str__(self) -> str:
        return self.uri

    def __repr__(self) -> str:
        return f"Location({self.uri!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Location) and other.uri == self.uri

    def __hash__(self) -> int:
        return hash(self.uri)

    @property
    def name(self) -> str:
        return self._path().rsplit("/", 1)[-1]

    @property
    def stem(self) -> str:
        name = self.name
        return name[: name.rindex(".")] if "." in name[1:] else name

    @property
    def suffix(self) -> str:
        name = self.name
        return name[name.rindex(".") :] if "." in name[1:] else ""

    @property
    def parent(self) -> Location:
        head, _, _ = self.uri.rpartition("/")
        return self._child(head) if not head.endswith(":/") else self

    def with_suffix(self, suffix: str) -> Location:
        return self.parent / (self.stem + suffix)

    @property
    def local_path(self) -> Path | None:
        """The local path of a ``file://`` location; None for any other."""
        if self.scheme != "file":
            return None
        return Path(self._path())

    @property
    def is_object_store(self) -> bool:
        """Whether a write replaces an object atomically (S3, GCS, Azure), so needs no
        temporary file."""
        return SCHEMES[self.scheme] in _OBJECT_STORES

    # ------------------------------------------------------------------ the filesystem
    def _path(self) -> str:
        """The path in the filesystem: ``bucket/key`` on an object store (``container/path``
        on Azure), the absolute path on ``file://`` and HDFS."""
        parts = urlsplit(self.uri)
        if self.scheme == "file":
            return unquote(parts.path) or "/"
        if self.scheme in ("abfs", "abfss"):
            container = parts.netloc.split("@", 1)[0]
            return container + unquote(parts.path)
        if self.scheme == "hdfs":
            return unquote(parts.path) or "/"
        return parts.netloc + unquote(parts.path)

    @property
    def fs_path(self) -> str:
        """The path of this location in :attr:`filesystem`."""
        return self._path()

    @property
    def filesystem(self) -> pafs.FileSystem:
        """The pyarrow filesystem this location is on (made once per process)."""
        parts = urlsplit(self.uri)
        authority = "" if self.is_object_store and self.scheme not in ("abfs", "abfss") else parts.netloc
        key = (SCHEMES[self.scheme], authority, tuple(sorted(self.storage_options.items())))
        with _LOCK:
            fs = _FILESYSTEMS.get(key)
            if fs is None:
                fs = _FILESYSTEMS[key] = _filesystem(SCHEMES[self.scheme], parts.netloc, self.storage_options)
        return fs

    def _file_info(self) -> pafs.FileInfo:
        return self.filesystem.get_file_info(self._path())

    # ------------------------------------------------------------------ Path's interface
    def exists(self) -> bool:
        return self._file_info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        info = self._info if self._info is not None else self._file_info()
        return info.type == pafs.FileType.Directory

    def is_file(self) -> bool:
        info = self._info if self._info is not None else self._file_info()
        return info.type == pafs.FileType.File

    def stat(self) -> SimpleNamespace:
        """``st_size`` and ``st_mtime`` (seconds), as far as the store tells them."""
        info = self._info if self._info is not None else self._file_info()
        if info.type == pafs.FileType.NotFound:
            raise FileNotFoundError(f"No such file: {self.uri}")
        mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
        return SimpleNamespace(st_size=info.size or 0, st_mtime=mtime)

    def iterdir(self) -> Iterator[Location]:
        """The entries of this directory (none when it does not exist)."""
        selector = pafs.FileSelector(self._path(), allow_not_found=True)
        for info in self.filesystem.get_file_info(selector):
            yield self._child(f"{self.uri}/{info.base_name}", info)

    def glob(self, pattern: str) -> Iterator[Location]:
        """The entries whose names match ``pattern`` (``fnmatch``; ``/`` separates the
        levels, e.g. ``*/topic.json``)."""
        head, _, rest = pattern.partition("/")
        for child in self.iterdir():
            if not fnmatch.fnmatchcase(child.name, head):
                continue
            if not rest:
                yield child
            elif child.is_dir():
                yield from child.glob(rest)

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Make the directory (an object store has none: nothing to do there)."""
        if self.is_object_store:
            return
        self.filesystem.create_dir(self._path(), recursive=True)

    def read_bytes(self) -> bytes:
        try:
            with self.filesystem.open_input_stream(self._path()) as stream:
                return stream.read()
        except FileNotFoundError:
            raise
        except OSError as err:
            if self._file_info().type == pafs.FileType.NotFound:
                raise FileNotFoundError(f"No such file: {self.uri}") from None
            raise err

    def read_text(self, encoding: str = "utf-8") -> str:
        return self.read_bytes().decode(encoding)

    def write_bytes(self, data: bytes) -> None:
        """Write the file atomically: a reader sees the old contents or the new ones. An
        object store's PUT is atomic; elsewhere a temporary file is renamed."""
        fs, path = self.filesystem, self._path()
        if self.is_object_store:
            with fs.open_output_stream(path) as stream:
                stream.write(data)
            return
        parent, _, name = path.rpartition("/")
        fs.create_dir(parent or "/", recursive=True)
        tmp = f"{parent}/.{name}.tmp"
        with fs.open_output_stream(tmp) as stream:
            stream.write(data)
        fs.move(tmp, path)

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(text.encode(encoding))

    def touch(self) -> None:
        if not self.exists():
            self.write_bytes(b"")

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self.filesystem.delete_file(self._path())
        except FileNotFoundError:
            if not missing_ok:
                raise
        except OSError:
            if self._file_info().type != pafs.FileType.NotFound:
                raise
            if not missing_ok:
                raise FileNotFoundError(f"No such file: {self.uri}") from None


_LOCK = threading.Lock()
_FILESYSTEMS: dict[tuple, pafs.FileSystem] = {}


def _filesystem(scheme: str, netloc: str, options: Mapping[str, str]) -> pafs.FileSystem:
    if scheme == "file":
        return pafs.LocalFileSystem()
    if scheme == "s3":
        return pafs.S3FileSystem(**_s3_arguments(options))
    if scheme == "gs":
        return pafs.GcsFileSystem()
    if scheme == "hdfs":
        fs, _ = pafs.FileSystem.from_uri(f"hdfs://{netloc}/")
        return fs
    # abfs: container@account.dfs.core.windows.net
    account = netloc.split("@", 1)[-1].split(".", 1)[0]
    key = options.get("AZURE_STORAGE_ACCOUNT_KEY") or options.get("AZURE_STORAGE_KEY")
    return pafs.AzureFileSystem(account_name=account, account_key=key) if key else pafs.AzureFileSystem(account)


def _s3_arguments(options: Mapping[str, str]) -> dict[str, object]:
    """pyarrow's S3 arguments from deltalake's option names (the rest come from the
    environment and the AWS credential chain, as pyarrow reads them)."""
    upper = {k.upper(): v for k, v in options.items()}
    arguments: dict[str, object] = {}
    for option, argument in (
        ("AWS_ACCESS_KEY_ID", "access_key"),
        ("AWS_SECRET_ACCESS_KEY", "secret_key"),
        ("AWS_SESSION_TOKEN", "session_token"),
        ("AWS_REGION", "region"),
    ):
        if upper.get(option):
            arguments[argument] = upper[option]
    endpoint = upper.get("AWS_ENDPOINT_URL") or upper.get("AWS_ENDPOINT")
    if endpoint:
        scheme, _, host = endpoint.partition("://")
        arguments["endpoint_override"] = host or scheme
        if host:
            arguments["scheme"] = scheme
    return arguments


# ---------------------------------------------------------------------- either kind
def write_atomic(path: Durable, data: bytes) -> None:
    """Write ``data`` to ``path`` so that a reader finds the old file or the new one,
    never a part: a temporary file beside it renamed over it (locally and on HDFS), or
    one PUT (an object store)."""
    if isinstance(path, Location):
        path.write_bytes(data)
        return
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def remove_tree(path: Durable, *, ignore_errors: bool = False) -> None:
    """Remove a directory and everything under it, as :func:`shutil.rmtree` does (a
    :class:`Location` that is not there is nothing to remove)."""
    if not isinstance(path, Location):
        shutil.rmtree(path, ignore_errors=ignore_errors)
        return
    try:
        path.filesystem.delete_dir(path._path())  # noqa: SLF001 - the same module's class
    except FileNotFoundError:
        pass
    except OSError:
        if not ignore_errors and path.exists():
            raise


def copy_up(local_dir: Path, target: Durable) -> None:
    """Copy a local directory's files to ``target`` (a durable directory)."""
    if isinstance(target, Location):
        target.mkdir(parents=True, exist_ok=True)
        pafs.copy_files(
            str(local_dir),
            target._path(),  # noqa: SLF001 - the same module's class
            source_filesystem=pafs.LocalFileSystem(),
            destination_filesystem=target.filesystem,
        )
        return
    shutil.copytree(local_dir, target)


def copy_down(source: Durable, local_dir: Path) -> None:
    """Copy a durable directory's files to a new local directory."""
    if isinstance(source, Location):
        local_dir.mkdir(parents=True)
        pafs.copy_files(
            source._path(),  # noqa: SLF001 - the same module's class
            str(local_dir),
            source_filesystem=source.filesystem,
            destination_filesystem=pafs.LocalFileSystem(),
        )
        return
    shutil.copytree(source, local_dir)


def read_arrow_file(path: Durable) -> pa.Table:
    """An Arrow IPC file's table."""
    if isinstance(path, Location):
        return pa.ipc.open_file(pa.py_buffer(path.read_bytes())).read_all()
    return pa.ipc.open_file(str(path)).read_all()


def write_arrow_file(path: Durable, table: pa.Table) -> None:
    """Write ``table`` as an Arrow IPC file, atomically (see :func:`write_atomic`)."""
    if isinstance(path, Location):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        path.write_bytes(sink.getvalue().to_pybytes())
        return
    tmp = path.with_suffix(".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    os.replace(tmp, path)


def delta_options(path: Durable) -> dict[str, str] | None:
    """The ``storage_options`` deltalake opens ``str(path)`` with (None for a local path)."""
    if isinstance(path, Location) and path.storage_options:
        return dict(path.storage_options)
    return None


def local_path(path: Durable) -> Path | None:
    """The local path of ``path``: itself, a ``file://`` location's path, else None."""
    return path if isinstance(path, Path) else path.local_path

"""Store versions: a store partition's contents after a batch that wrote it, named by
the batch and the commit id of the task attempt that wrote it; and the runner's record
of which version of each store partition each batch left (:class:`VersionRecord`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import NamedTuple

from ...storage.location import Durable, write_atomic

_NONE = "-1"  # no version: the empty store


class Version(NamedTuple):
    """A store partition's contents after a batch that wrote it: the batch id and the
    commit id of the task attempt that wrote it (empty when one writer is certain, as
    in a store used directly). Its name (``12`` or ``12-3f9a0c1b2d4e``) names its
    changelog file and snapshot."""

    batch: int
    commit: str = ""

    @property
    def name(self) -> str:
        return f"{self.batch}-{self.commit}" if self.commit else str(self.batch)

    @classmethod
    def parse(cls, name: str) -> Version | None:
        """The version a file stem names; None for a name that is not one."""
        batch, _, commit = name.partition("-")
        if not batch.isdigit() or (_ and not commit.isalnum()):
            return None
        return cls(int(batch), commit)


def version_name(version: Version | None) -> str:
    """``version``'s name, or ``-1`` for none (the empty store)."""
    return _NONE if version is None else version.name


def parse_version(name: str) -> Version | None:
    """The version ``name`` names (:func:`version_name`'s inverse); ValueError if none."""
    if name == _NONE:
        return None
    version = Version.parse(name)
    if version is None:
        raise ValueError(f"not a store version: {name!r}")
    return version


Versions = dict[str, dict[int, Version]]  # store -> state partition -> version


class VersionRecord:
    """The version of each store partition after each batch, as the runner records it
    when the batch's stages have run, before its outputs commit: ``<directory>/<batch>.json``
    (the newest few are kept). A batch opens each store partition as of the record of
    the batch before it, so a working copy written by an attempt that did not count,
    or left behind on a host the partition has since moved from, is never used, and a
    partition with no durable files that should hold earlier batches is an error.

    >>> record = VersionRecord(layout.versions_dir)                    # doctest: +SKIP
    >>> record.record(7, [("counts", 0, Version(7, "3f9a0c1b2d4e"))])  # doctest: +SKIP
    >>> record.before(8)["counts"][0]                                  # doctest: +SKIP
    Version(batch=7, commit='3f9a0c1b2d4e')
    """

    def __init__(self, directory: Durable, damaged: Callable[[Durable, str], Exception], kept: int = 3) -> None:
        self.directory = directory
        self._damaged = damaged
        self.kept = kept
        self._known: dict[int, Versions] = {}

    def before(self, batch_id: int, committed: int | None = None) -> Versions:
        """The versions the batches before ``batch_id`` left: the newest record of a
        batch before it (none: empty). ``committed``: the last batch the application's
        checkpoint says is done; when it is before ``batch_id`` its record must be there
        (a record found missing is an error, not an older one used)."""
        batch = max((b for b in self._recorded() if b < batch_id), default=None)
        if committed is not None and 0 <= committed < batch_id and (batch is None or batch < committed):
            raise self._damaged(
                self.directory / f"{committed}.json", f"missing (the stores' versions after batch {committed})"
            )
        if batch is None:
            return {}
        if batch not in self._known:
            self._known[batch] = self._read(batch)
        return self._known[batch]

    def _recorded(self) -> list[int]:
        """The batches with a record, known in this process or on disk."""
        found = set(self._known)
        if self.directory.is_dir():
            found.update(int(p.stem) for p in self.directory.glob("*.json") if p.stem.isdigit())
        return sorted(found)

    def record(
        self, batch_id: int, written: Iterable[tuple[str, int, Version]], committed: int | None = None
    ) -> Versions:
        """Record the versions after ``batch_id``: those before it (see :meth:`before`),
        with the partitions it wrote (of several reports for one partition, the last
        counts)."""
        versions = {store: dict(parts) for store, parts in self.before(batch_id, committed).items()}
        for store, partition, version in written:
            if version.batch == batch_id:
                versions.setdefault(store, {})[partition] = version
        self.directory.mkdir(parents=True, exist_ok=True)
        text = {store: {str(p): v.name for p, v in sorted(parts.items())} for store, parts in sorted(versions.items())}
        write_atomic(self.directory / f"{batch_id}.json", json.dumps({"batch": batch_id, "stores": text}).encode())
        self._known = {batch_id: versions}
        kept = [b for b in self._recorded() if b <= batch_id][-self.kept :]
        for path in self.directory.glob("*.json"):
            if path.stem.isdigit() and int(path.stem) < kept[0]:
                path.unlink(missing_ok=True)
        return versions

    def _read(self, batch: int) -> Versions:
        path = self.directory / f"{batch}.json"
        try:
            recorded = json.loads(path.read_text())
        except FileNotFoundError:
            raise self._damaged(path, f"missing (the stores' versions after batch {batch})") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise self._damaged(path, f"unreadable: {str(err).splitlines()[0]}") from None
        try:
            if recorded["batch"] != batch:
                raise ValueError(f"it records batch {recorded['batch']}")
            return {
                store: {int(p): _recorded_version(name) for p, name in parts.items()}
                for store, parts in recorded["stores"].items()
            }
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise self._damaged(path, f"not a record of the stores' versions ({err})") from None


def _recorded_version(name: str) -> Version:
    version = parse_version(name)
    if version is None:
        raise ValueError(f"no version in {name!r}")
    return version

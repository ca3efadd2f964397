"""Durable locations: a local directory and S3 (moto on 127.0.0.1) read, written,
listed and copied alike; a home given as a URI stays one."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tablestream import config
from tablestream.errors import InvalidHomeError, InvalidLocationError
from tablestream.storage.location import (
    COMPLETE_MARKER,
    Location,
    copy_down,
    copy_up,
    delta_options,
    read_arrow_file,
    remove_tree,
    write_arrow_file,
    write_atomic,
)


@pytest.fixture(params=["file", "s3"])
def root(request, tmp_path):
    """A durable directory: a file:// location, or one on moto's S3."""
    if request.param == "file":
        return Location(f"file://{tmp_path}/durable", {})
    return request.getfixturevalue("s3_home")


def test_home_given_as_an_s3a_uri_stays_that_uri():
    assert repr(config.home("s3a://bucket/ts")) == "Location('s3a://bucket/ts')"
    assert str(config.home("s3a://bucket/ts/") / "apps" / "revenue") == "s3a://bucket/ts/apps/revenue"


def test_home_given_as_a_local_path_is_an_absolute_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert config.home("ts") == tmp_path / "ts"


def test_home_with_an_unknown_scheme_is_an_error():
    with pytest.raises(InvalidHomeError) as raised:
        config.home("ftp://host/ts")
    assert str(raised.value) == (
        "Home ftp://host/ts has an unknown scheme 'ftp' (give --home or $TABLESTREAM_HOME a local path "
        "or a file://, hdfs://, s3a://, s3://, gs://, abfss:// or abfs:// URI)"
    )


def test_home_on_an_object_store_without_a_bucket_is_an_error():
    with pytest.raises(InvalidHomeError) as raised:
        config.home("s3a:///ts")
    assert str(raised.value) == "Home s3a:///ts names no bucket or container (give s3a://<bucket>/<path>)"


def test_storage_options_come_from_the_environment_and_are_never_shown(monkeypatch):
    monkeypatch.setenv("TABLESTREAM_STORAGE_OPTIONS", json.dumps({"AWS_SECRET_ACCESS_KEY": "s3cr3t"}))
    home = config.home("s3a://bucket/ts")
    assert delta_options(home / "tables") == {"AWS_SECRET_ACCESS_KEY": "s3cr3t"}
    assert "s3cr3t" not in repr(home) + str(home)


def test_storage_options_that_are_not_json_are_an_error(monkeypatch):
    monkeypatch.setenv("TABLESTREAM_STORAGE_OPTIONS", "{AWS_REGION: x}")
    with pytest.raises(InvalidLocationError) as raised:
        Location("s3a://bucket/ts")
    assert str(raised.value) == (
        "$TABLESTREAM_STORAGE_OPTIONS is not JSON (Expecting property name enclosed in double quotes at "
        'column 2) (give a JSON object of strings such as {"AWS_ENDPOINT_URL": "http://127.0.0.1:9000"})'
    )


def test_hadoop_scheme_names_map_to_pyarrow_filesystems(s3_server):
    assert type(Location("s3a://b/x", s3_server).filesystem).__name__ == "S3FileSystem"
    assert type(Location("s3://b/x", s3_server).filesystem).__name__ == "S3FileSystem"
    assert type(Location("file:///tmp/x", {}).filesystem).__name__ == "LocalFileSystem"


def test_write_read_list_and_remove(root):
    meta = root / "apps" / "a" / "app.json"
    assert not meta.exists()
    with pytest.raises(FileNotFoundError):
        meta.read_text()
    meta.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(meta, b'{"partitions": 2}')
    write_atomic(meta, b'{"partitions": 3}')
    (root / "apps" / "a" / "changelog" / "s" / "0").mkdir(parents=True, exist_ok=True)
    write_atomic(root / "apps" / "a" / "changelog" / "s" / "0" / "1.arrow", b"x")
    write_atomic(root / "apps" / "b" / "app.json", b"{}")
    assert meta.read_text() == '{"partitions": 3}' and meta.is_file() and not meta.is_dir()
    assert meta.stat().st_size == 17
    assert sorted((p.name, p.is_dir()) for p in (root / "apps" / "a").iterdir()) == [
        ("app.json", False),
        ("changelog", True),
    ]
    assert sorted(str(p) for p in (root / "apps").glob("*/app.json")) == [
        f"{root}/apps/a/app.json",
        f"{root}/apps/b/app.json",
    ]
    assert list((root / "nowhere").iterdir()) == []
    (root / "apps" / "b" / "app.json").unlink()
    (root / "apps" / "b" / "app.json").unlink(missing_ok=True)
    with pytest.raises(FileNotFoundError):
        (root / "apps" / "b" / "app.json").unlink()
    remove_tree(root / "apps" / "a")
    assert not meta.exists() and not (root / "apps" / "a" / "changelog" / "s" / "0" / "1.arrow").exists()
    remove_tree(root / "apps" / "a")  # not there: nothing to do


def test_arrow_files_round_trip(root):
    table = pa.table({"key": [b"a", b"b"], "entry": [b"1", None]}).replace_schema_metadata({b"previous": b"-1"})
    path = root / "changelog" / "0.arrow"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_arrow_file(path, table)
    read = read_arrow_file(path)
    assert read.to_pydict() == {"key": [b"a", b"b"], "entry": [b"1", None]}
    assert read.schema.metadata == {b"previous": b"-1"}


def test_a_local_directory_is_copied_up_and_down(root, tmp_path):
    local = tmp_path / "local-db"
    (local / "sub").mkdir(parents=True)
    (local / "CURRENT").write_bytes(b"MANIFEST-000005\n")
    (local / "000007.sst").write_bytes(bytes(range(256)) * 40)
    (local / "sub" / "deep").write_bytes(b"d")
    target = root / "snapshots" / "5"
    copy_up(local, target)
    write_atomic(target / COMPLETE_MARKER, b"")
    assert sorted(p.name for p in target.iterdir()) == [COMPLETE_MARKER, "000007.sst", "CURRENT", "sub"]
    back = tmp_path / "restored"
    copy_down(target, back)
    assert sorted(str(p.relative_to(back)) for p in back.rglob("*")) == [
        COMPLETE_MARKER, "000007.sst", "CURRENT", "sub", "sub/deep"
    ]
    assert (back / "000007.sst").read_bytes() == bytes(range(256)) * 40
    assert (back / "sub" / "deep").read_bytes() == b"d"


def test_a_location_pickles_without_its_client(s3_home):
    import pickle

    s3_home.filesystem  # a client made  # noqa: B018
    copy = pickle.loads(pickle.dumps(s3_home / "x"))
    assert copy == s3_home / "x" and copy.storage_options == s3_home.storage_options


@pytest.mark.parametrize("module", ["tablestream.storage.location", "tablestream.config"])
def test_docstring_examples(module, monkeypatch):
    import doctest
    import importlib

    monkeypatch.delenv("TABLESTREAM_STORAGE_OPTIONS", raising=False)
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0

"""The tablestream command line on the embedded store (exact output and error text)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from tablestream.cli import app

runner = CliRunner()


def cli(home, *args, stdin: str | None = None):
    return runner.invoke(app, [*args, "--home", str(home)], input=stdin)


def lines(output: str) -> list[dict]:
    return [json.loads(line) for line in output.splitlines() if line.strip()]


def test_topics_create_list_describe_delete(tmp_path):
    assert cli(tmp_path, "topics", "create", "orders", "--partitions", "3").output == (
        "Created topic orders (3 partitions, delete)\n"
    )
    assert cli(tmp_path, "topics", "create", "customers", "--compact").output == (
        "Created topic customers (1 partition, compact)\n"
    )
    assert cli(tmp_path, "topics", "list").output == "customers\norders\n"
    cli(tmp_path, "produce", "orders", stdin='{"key": "a", "value": 1}\n{"key": "b", "value": 2}\n')
    described = cli(tmp_path, "topics", "describe", "orders")
    assert described.exit_code == 0
    assert described.output.splitlines()[0] == (
        "Topic: orders  partitions: 3  cleanup.policy: delete  retention.ms: 604800000  "
        "delete.retention.ms: 86400000"
    )
    rows = [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in described.output.splitlines()
        if line.startswith("│")
    ]
    assert rows == [  # partition, start offset, end offset, records
        ["0", "0", "0", "0"],
        ["1", "0", "1", "1"],  # murmur2: "a" -> 1, "b" -> 2
        ["2", "0", "1", "1"],
        ["total", "", "", "2"],
    ]
    assert cli(tmp_path, "topics", "delete", "orders").output == "Deleted topic orders\n"
    assert cli(tmp_path, "topics", "list").output == "customers\n"


def test_produce_then_consume_returns_exactly_what_was_produced(tmp_path):
    cli(tmp_path, "topics", "create", "t", "--partitions", "2")
    produced = [
        {"key": "alice", "value": {"qty": 2, "tags": ["x"]}, "timestamp": 1000},
        {"key": 42, "value": "text", "timestamp": 1001},
        {"key": "alice", "value": None, "timestamp": 1002},
        {"key": None, "value": [1, 2.5, True], "timestamp": 1003, "partition": 1},
        {"key": -7, "value": 3.25, "timestamp": 1004, "partition": 0},
    ]
    result = cli(tmp_path, "produce", "t", stdin="\n".join(json.dumps(p) for p in produced) + "\n")
    assert result.exit_code == 0, result.output
    consumed = lines(cli(tmp_path, "consume", "t", "--from-beginning", "--timeout", "0").stdout)
    from tablestream.storage.partitioner import partition_for_key

    p_alice = partition_for_key(b"alice", 2)
    p_42 = partition_for_key((42).to_bytes(8, "big", signed=True), 2)
    expected = [
        {"key": "alice", "value": {"qty": 2, "tags": ["x"]}, "timestamp": 1000, "partition": p_alice},
        {"key": 42, "value": "text", "timestamp": 1001, "partition": p_42},
        {"key": "alice", "value": None, "timestamp": 1002, "partition": p_alice},
        {"key": None, "value": [1, 2.5, True], "timestamp": 1003, "partition": 1},
        {"key": -7, "value": 3.25, "timestamp": 1004, "partition": 0},
    ]
    offsets: dict[int, int] = {}
    for item in expected:
        item["offset"] = offsets.get(item["partition"], 0)
        offsets[item["partition"]] = item["offset"] + 1
    assert consumed == sorted(expected, key=lambda r: (r["partition"], r["offset"]))
    assert lines(cli(tmp_path, "consume", "t", "--from-beginning", "--max", "2", "--timeout", "0").stdout) == consumed[:2]


MANY = "".join(json.dumps({"key": f"k{i}", "value": i, "timestamp": i}) + "\n" for i in range(2_500))


def test_produce_of_many_records_prints_only_its_summary_when_not_on_a_terminal(tmp_path):
    cli(tmp_path, "topics", "create", "t", "--partitions", "2")
    result = cli(tmp_path, "produce", "t", stdin=MANY)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "Produced 2500 records to t\n")


def test_produce_shows_a_bar_of_the_records_on_a_terminal(tmp_path, monkeypatch):
    import io

    from rich.console import Console

    import tablestream.cli

    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=100, color_system=None, highlight=False)
    monkeypatch.setattr(tablestream.cli, "stderr", terminal)
    cli(tmp_path, "topics", "create", "t", "--partitions", "2")
    result = cli(tmp_path, "produce", "t", stdin=MANY)
    assert (result.exit_code, result.stdout, result.stderr) == (0, "", "")
    shown = screen.getvalue()
    assert "Writing to t" in shown and "2500/2500 records" in shown
    assert shown.endswith("Produced 2500 records to t\n")
    assert len(lines(cli(tmp_path, "consume", "t", "--from-beginning", "--timeout", "0").stdout)) == 2_500


def test_declared_key_and_value_formats(tmp_path):
    cli(tmp_path, "topics", "create", "c", "--compact", "--key-schema", "BIGINT", "--value-schema", "id BIGINT, name STRING")
    result = cli(tmp_path, "produce", "c", stdin='{"key": 1, "value": {"id": 1, "name": "Ada"}, "timestamp": 5}\n')
    assert result.exit_code == 0, result.output
    assert lines(cli(tmp_path, "consume", "c", "--from-beginning", "--timeout", "0").stdout) == [
        {"key": 1, "value": {"id": 1, "name": "Ada"}, "timestamp": 5, "partition": 0, "offset": 0}
    ]


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        ('{"key": "a", "value": 1}\n{"key": "b", "value": }\n',
         "Error: line 2: bad JSON: Expecting value at column 23"),
        ('{"key": "a", "value": 1, "partition": 5}\n',
         "Error: line 1: partition 5 does not exist in topic 't' (it has 2 partitions: 0..1)"),
        ('{"key": "a"}\n', 'Error: line 1: missing "value" (use null for a tombstone)'),
        ('{"key": "a", "value": 1, "colour": "red"}\n',
         "Error: line 1: unknown field 'colour' (allowed: headers, key, partition, timestamp, value)"),
        ('{"key": "a", "value": 1, "timestamp": "soon"}\n',
         'Error: line 1: "timestamp" must be a non-negative integer, got "soon"'),
        ("[1, 2]\n", 'Error: line 1: expected a JSON object with "key" and "value"'),
    ],
)
def test_produce_errors_are_one_line_and_write_nothing(tmp_path, stdin, message):
    cli(tmp_path, "topics", "create", "t", "--partitions", "2")
    result = cli(tmp_path, "produce", "t", stdin=stdin)
    assert result.exit_code == 1
    assert result.stderr == message + "\n"
    assert cli(tmp_path, "consume", "t", "--from-beginning", "--timeout", "0").stdout == ""


def test_unknown_topic_and_existing_topic_errors(tmp_path):
    for args in (("topics", "describe", "nope"), ("topics", "delete", "nope"), ("produce", "nope"),
                 ("consume", "nope", "--timeout", "0"), ("compact", "nope")):
        result = cli(tmp_path, *args, stdin="")
        assert (result.exit_code, result.stderr) == (1, "Error: Unknown topic 'nope'\n"), args
    cli(tmp_path, "topics", "create", "t")
    result = cli(tmp_path, "topics", "create", "t")
    assert (result.exit_code, result.stderr) == (1, "Error: Topic 't' already exists\n")
    result = cli(tmp_path, "topics", "create", "u", "--value-format", "XML")
    assert result.exit_code == 1 and result.stderr.startswith("Error: ")
    assert "u" not in cli(tmp_path, "topics", "list").output.split()


def test_compact_command(tmp_path):
    cli(tmp_path, "topics", "create", "c", "--compact", "--delete-retention-ms", "0")
    cli(tmp_path, "produce", "c", stdin="\n".join(
        json.dumps(r) for r in [
            {"key": "a", "value": 1, "timestamp": 1}, {"key": "b", "value": 2, "timestamp": 2},
            {"key": "a", "value": 3, "timestamp": 3}, {"key": "b", "value": None, "timestamp": 4},
        ]))
    assert cli(tmp_path, "compact", "c").output == "Compacted c: 4 -> 1 records\n"
    assert lines(cli(tmp_path, "consume", "c", "--from-beginning", "--timeout", "0").stdout) == [
        {"key": "a", "value": 3, "timestamp": 3, "partition": 0, "offset": 2}
    ]


def test_installed_command_produce_then_consume(tmp_path):
    """The `tablestream` executable end to end, as a user runs it."""
    exe = os.path.join(os.path.dirname(sys.executable), "tablestream")
    env = {**os.environ, "TABLESTREAM_HOME": str(tmp_path / "home")}

    def run(*args, stdin=""):
        return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60)

    assert run("topics", "create", "events", "--partitions", "1").returncode == 0
    produced = run("produce", "events", stdin='{"key": "k", "value": {"n": 1}, "timestamp": 10}\n{"key": "k", "value": null, "timestamp": 11}\n')
    assert (produced.returncode, produced.stderr) == (0, "Produced 2 records to events\n")
    consumed = run("consume", "events", "--from-beginning", "--timeout", "0")
    assert consumed.returncode == 0
    assert lines(consumed.stdout) == [
        {"key": "k", "value": {"n": 1}, "timestamp": 10, "partition": 0, "offset": 0},
        {"key": "k", "value": None, "timestamp": 11, "partition": 0, "offset": 1},
    ]


def test_app_reset_deletes_what_the_application_keeps(tmp_path):
    """``app reset`` removes an application's directory (checkpoint, stores, changelogs,
    tables) and nothing else; an unknown or invalid id is one line of error."""
    root = tmp_path / "apps" / "revenue"
    (root / "checkpoint").mkdir(parents=True)
    (root / "app.json").write_text('{"partitions": 2}')
    (tmp_path / "apps" / "other").mkdir()
    reset = cli(tmp_path, "app", "reset", "revenue")
    assert (reset.exit_code, reset.output) == (
        0,
        "Reset application revenue: checkpoint, state stores, changelogs and materialized tables "
        "deleted; output topics and the processing log kept\n",
    )
    assert not root.exists()
    assert (tmp_path / "apps" / "other").is_dir()
    again = cli(tmp_path, "app", "reset", "revenue")
    assert (again.exit_code, again.output) == (1, f"Error: No application 'revenue' in {tmp_path}\n")
    invalid = cli(tmp_path, "app", "reset", "..")
    assert (invalid.exit_code, invalid.output) == (1, "Error: Invalid application id '..' (a name without '/')\n")


def _err(result) -> tuple[int, str]:
    return result.exit_code, result.stderr


def test_a_damaged_topic_is_one_line_in_every_command_and_delete_removes_it(tmp_path):
    for name in ("broken", "lost", "ok"):
        cli(tmp_path, "topics", "create", name)
    cli(tmp_path, "produce", "lost", stdin='{"key": "a", "value": 1}\n')
    settings = tmp_path / "topics" / "broken" / "topic.json"
    settings.write_text("{garbage")
    log = tmp_path / "topics" / "lost" / "log"
    shutil.rmtree(log / "_delta_log")
    damaged = {
        "broken": f"Topic 'broken' is damaged: {settings}: not valid JSON (Expecting property name "
        "enclosed in double quotes at line 1 column 2) (delete it with 'tablestream topics delete broken')",
        "lost": f"Topic 'lost' is damaged: {log}: no Delta log (_delta_log is missing or empty) "
        "(delete it with 'tablestream topics delete lost')",
    }
    for name, message in damaged.items():
        for args in (("topics", "describe", name), ("consume", name, "--from-beginning", "--timeout", "0"),
                     ("produce", name), ("compact", name)):
            result = cli(tmp_path, *args, stdin='{"key": "a", "value": 2}\n')
            assert _err(result) == (1, f"Error: {message}\n"), args

    listed = cli(tmp_path, "topics", "list")
    assert (listed.exit_code, listed.stdout) == (0, "broken\nlost\nok\n")
    assert listed.stderr == f"Warning: {damaged['broken']}\nWarning: {damaged['lost']}\n"

    assert cli(tmp_path, "topics", "delete", "broken").output == "Deleted topic broken\n"
    assert cli(tmp_path, "topics", "delete", "lost").output == "Deleted topic lost\n"
    assert cli(tmp_path, "topics", "list").output == "ok\n"
    cli(tmp_path, "topics", "create", "lost")
    assert cli(tmp_path, "produce", "lost", stdin='{"key": "a", "value": 3, "timestamp": 5}\n').exit_code == 0
    assert lines(cli(tmp_path, "consume", "lost", "--from-beginning", "--timeout", "0").stdout) == [
        {"key": "a", "value": 3, "timestamp": 5, "partition": 0, "offset": 0}
    ]


def test_a_home_that_is_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    for args in (("topics", "list"), ("topics", "create", "t"), ("app", "list")):
        result = runner.invoke(app, [*args, "--home", str(tmp_path / "file")])
        assert _err(result) == (
            1, f"Error: Home {tmp_path / 'file'} is not a directory (give --home or $TABLESTREAM_HOME a directory)\n"
        ), args


def test_an_unexpected_error_is_one_line_and_verbose_shows_the_chained_traceback(tmp_path, monkeypatch):
    from tablestream.storage.embedded import EmbeddedStore

    def broken(self):
        try:
            {}["catalog"]
        except KeyError as err:
            raise ValueError("the catalog is gone\nsecond line") from err

    monkeypatch.setattr(EmbeddedStore, "list_topics", broken)
    assert _err(cli(tmp_path, "topics", "list")) == (1, "Error: ValueError: the catalog is gone\n")
    verbose = runner.invoke(app, ["--verbose", "topics", "list", "--home", str(tmp_path)])
    assert verbose.exit_code == 1
    assert verbose.stderr.startswith("Traceback (most recent call last):\n")
    assert "KeyError: 'catalog'\n\nThe above exception was the direct cause of the following exception:\n" in verbose.stderr
    assert verbose.stderr.endswith("ValueError: the catalog is gone\nsecond line\nError: ValueError: the catalog is gone\n")


def _rows(output: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in output.splitlines() if line.startswith("│")]


def _application(home, application_id="revenue"):
    """An application's files as a run leaves them: its recorded partitions and run,
    checkpoint logs (batch 2 planned, 1 done), two stores written in batches 0 and 1
    (partition 1 of 'counts' never written), a materialized table."""
    from tablestream.runtime.layout import AppPaths
    from tablestream.runtime.state import StoreSession

    paths = AppPaths.of(application_id, home)
    paths.root.mkdir(parents=True)
    paths.meta.write_text(json.dumps({"partitions": 2, "run": "r1"}))
    for log, batches in (("offsets", 3), ("commits", 2)):
        (paths.checkpoint / log).mkdir(parents=True)
        for batch in range(batches):
            (paths.checkpoint / log / str(batch)).write_text('v1\n{"batchWatermarkMs":0}\n{"reservoirVersion":1}\n')
    layout = paths.layout
    for batch in (0, 1):
        for store, partition in (("counts", 0), ("revenue", 0), ("revenue", 1)):
            with StoreSession(layout, store, partition, batch) as session:
                session.put([b"k%d" % batch], [b"v"])
    (paths.table("revenue") / "_delta_log").mkdir(parents=True)
    return paths


def test_app_list_and_describe_read_the_application_files(tmp_path):
    assert cli(tmp_path, "app", "list").output == f"No applications in {tmp_path}\n"
    paths = _application(tmp_path)
    other = tmp_path / "apps" / "fresh"
    other.mkdir()

    listed = cli(tmp_path, "app", "list")
    assert listed.exit_code == 0
    assert _rows(listed.stdout) == [  # application, status, (state) partitions, last batch, stores
        ["fresh", "stopped", "-", "-", ""],
        ["revenue", "stopped", "2", "1", "counts, revenue"],
    ]

    described = cli(tmp_path, "app", "describe", "revenue")
    assert described.exit_code == 0
    assert described.stdout.splitlines()[:3] == [
        "Application: revenue  status: stopped  state partitions: 2  run: r1",
        "Last batch: 1 (batch 2 planned, not done: the next start finishes it)",
        f"Directory: {paths.root}",
    ]
    size = {
        (store, p): sum(f.stat().st_size for f in paths.layout.changelog_dir(store, p).glob("*.arrow"))
        for store, p in (("counts", 0), ("revenue", 0), ("revenue", 1))
    }
    assert _rows(described.stdout) == [  # store, partition, changelogs, bytes, snapshots, live db
        ["counts", "0", "2", str(size["counts", 0]), "-", "yes"],
        ["revenue", "0", "2", str(size["revenue", 0]), "-", "yes"],
        ["revenue", "1", "2", str(size["revenue", 1]), "-", "yes"],
    ]
    assert described.stdout.splitlines()[-1] == "Materialized tables: revenue"
    assert described.stderr == ""
    assert _err(cli(tmp_path, "app", "describe", "nope")) == (1, f"Error: No application 'nope' in {tmp_path}\n")


def test_app_describe_and_list_tell_damaged_files_and_a_running_instance(tmp_path):
    from tablestream.runtime.layout import InstanceLock

    paths = _application(tmp_path)
    offsets = paths.checkpoint / "offsets" / "2"
    offsets.write_text("v1\n{garbage\n")
    damage = (
        f"Application 'revenue' is damaged: {offsets}: line 2 is not JSON (Expecting property name enclosed "
        "in double quotes at column 2) (reset the application to rebuild it from its source topics: "
        "'tablestream app reset revenue' or Application.reset())"
    )
    described = cli(tmp_path, "app", "describe", "revenue")
    assert described.stdout.splitlines()[0] == "Application: revenue  status: damaged  state partitions: 2  run: r1"
    assert described.stderr == f"Warning: {damage}\n"
    listed = cli(tmp_path, "app", "list")
    assert _rows(listed.stdout) == [["revenue", "damaged", "2", "1", "counts, revenue"]]
    assert listed.stderr == f"Warning: {damage}\n"

    lock = InstanceLock(paths)
    lock.acquire()
    try:
        since = json.loads(paths.lock.read_text())["since"]
        running = f"running (pid {os.getpid()}, since {since})"
        described = cli(tmp_path, "app", "describe", "revenue")
        assert described.stdout.splitlines()[0] == (
            f"Application: revenue  status: {running}  state partitions: 2  run: r1"
        )
        assert _rows(cli(tmp_path, "app", "list").stdout) == [["revenue", "running", "2", "1", "counts, revenue"]]
        reset = cli(tmp_path, "app", "reset", "revenue")
        assert _err(reset) == (1, f"Error: Application 'revenue' is {running}; stop it before resetting it\n")
        assert paths.root.exists()
    finally:
        lock.release()
    assert cli(tmp_path, "app", "reset", "revenue").exit_code == 0
    assert not paths.root.exists()

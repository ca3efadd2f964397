"""The tablestream command line on the embedded store (exact output and error text)."""

from __future__ import annotations

import json
import os
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

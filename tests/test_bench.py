"""The benchmark suite (``make bench``): its check against DuckDB, its reading of Flink's
changelogs, its report lines; and a ``--quick`` run of every workload with the in-process
peers, whose lines must have the documented shape and say that every result was checked."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

from suite.flink import PrintedChanges, fold, printed_change  # noqa: E402
from suite.oracle import Log, Mismatch, check, query  # noqa: E402
from suite.report import Report, Timing  # noqa: E402

KEYS = {"workload", "phase", "system", "peer", "records", "seconds", "ratio"}


def _log(*records: tuple[str, str | None]) -> Log:
    log = Log()
    log.add(pa.table({"key": pa.array([k.encode() for k, _ in records], pa.binary()),
                      "value": pa.array([None if v is None else v.encode() for _, v in records], pa.binary()),
                      "timestamp": pa.array(range(len(records)), pa.int64())}))
    return log


def test_latest_rows_and_check():
    log = _log(("a", '{"n": 1}'), ("b", '{"n": 2}'), ("a", '{"n": 3}'), ("b", None))
    latest = query("SELECT key, CAST(json_extract(value, '$.n') AS BIGINT) AS n FROM latest_t", t=log)
    assert latest.to_pylist() == [{"key": "a", "n": 3}]
    check("same rows, other types", pa.table({"n": ["3"], "key": ["a"]}), latest)
    with pytest.raises(Mismatch, match=r"1 rows, DuckDB 1; not expected \[\(.a., .1.\)\]; missing \[\(.a., .3.\)\]"):
        check("another value", pa.table({"key": ["a"], "n": [1]}), latest)
    with pytest.raises(Mismatch, match="2 rows, DuckDB 1"):
        check("a row twice", pa.table({"key": ["a", "a"], "n": [3, 3]}), latest)


def test_flink_changelog_folds_into_its_rows(tmp_path):
    # Two part files, as two subtasks write them: an update, a delete, an insert.
    (tmp_path / "part-0").write_text("\n".join(json.dumps(c) for c in [
        {"before": None, "after": {"key": "a", "v": 1}, "op": "c"},
        {"before": {"key": "a", "v": 1}, "after": {"key": "a", "v": 2}, "op": "u"},
    ]) + "\n")
    (tmp_path / ".part-1-inprogress").write_text("\n".join(json.dumps(c) for c in [
        {"before": None, "after": {"key": "b", "v": 5}, "op": "c"},
        {"before": {"key": "b", "v": 5}, "after": None, "op": "d"},
        {"before": None, "after": {"key": "c", "v": 7}, "op": "c"},
    ]) + "\n")
    assert sorted(fold(tmp_path, ["key", "v"]).to_pylist(), key=str) == [{"key": "a", "v": 2}, {"key": "c", "v": 7}]
    (tmp_path / "part-2").write_text(json.dumps({"before": {"key": "z", "v": 0}, "after": None, "op": "d"}) + "\n")
    with pytest.raises(AssertionError, match="retracts rows it never wrote"):
        fold(tmp_path, ["key", "v"])


def test_flink_printed_changes_are_folded_and_checked_against_the_expected_rows():
    assert printed_change("per_product:1> -U[p2, 3, 40]\n") == (("per_product", ("p2", "3", "40")), -1)
    assert printed_change("enriched> +I[o1, 2, product 7, null]") == (("enriched", ("o1", "2", "product 7", "null")), 1)
    assert printed_change("INFO  org.apache.flink.runtime: started") is None
    lines = io.StringIO("".join(line + "\n" for line in [
        "some log line",
        "sums> +I[a, 1]",
        "sums> -U[a, 1]",
        "sums> +U[a, 4]",
        "sums:1> +I[b, 2]",
        "sums:1> -D[b, 2]",
    ]))
    changes = PrintedChanges(lines)
    changes.settle({"sums": pa.table({"key": ["a"], "value": [4]})}, "the state", "job.err")
    assert changes.differing == 0
    with pytest.raises(AssertionError, match=r"batch 1: 2 rows differ from DuckDB's, e\.g\. \[\('sums', \('a', '4'\)\), \('sums', \('a', '5'\)\)\]; "
                                             r"the job ended \(see job\.err\)"):
        changes.settle({"sums": pa.table({"key": ["a"], "value": [5]})}, "batch 1", "job.err")


def test_a_log_since_an_earlier_copy_holds_the_records_appended_after_it():
    log = _log(("a", '{"n": 1}'))
    earlier = log.copy()
    log.add(_log(("b", '{"n": 2}'), ("a", None)).parts[0])
    later = log.since(earlier)
    assert (len(earlier), len(log), len(later)) == (1, 3, 2)
    assert query("SELECT key, value FROM records_t ORDER BY seq", t=later).to_pylist() == [
        {"key": "b", "value": '{"n": 2}'}, {"key": "a", "value": None}]


def test_report_ratio_is_per_record():
    out = io.StringIO()
    report = Report(out)
    report.measured(Timing("W2", "catch-up", "tablestream", 1_000, 2.0, validated=True))
    report.compared(Timing("W2", "catch-up", "transform_with_state", 100, 4.0))
    ours, peer = (json.loads(line) for line in out.getvalue().splitlines())
    assert KEYS <= set(ours) and ours["peer"] is None and ours["ratio"] is None
    assert peer["peer"] == "transform_with_state" and peer["ratio"] == 20.0 and peer["seconds"] == 2.0


def test_report_driver_memory_gives_each_samples_growth():
    out = io.StringIO()
    Report(out).driver_memory("W2", 500, {
        "after": [10, 20, 30], "jvm_heap_mib": [120.5, 118.0, 121.0], "jvm_rss_mib": [2000.0, 1990.0, 1985.5],
        "python_rss_mib": [306.4, 310.0, 319.4], "harness_logs_mib": [10.0, 15.0, 20.0],
    })
    assert json.loads(out.getvalue()) == {"driver_memory": {
        "workload": "W2", "batch": 500, "after": [10, 20, 30], "jvm_heap_mib": [120.5, 118.0, 121.0],
        "jvm_rss_mib": [2000.0, 1990.0, 1985.5], "python_rss_mib": [306.4, 310.0, 319.4],
        "harness_logs_mib": [10.0, 15.0, 20.0],
        "growth_mib": {"jvm_heap_mib": 0.5, "jvm_rss_mib": -14.5, "python_rss_mib": 13.0, "harness_logs_mib": 10.0,
                       "python_rss_less_logs_mib": 3.0},
    }}


def test_report_memory_while_each_system_ran_and_flinks_total_over_ours():
    out = io.StringIO()
    Report(out).memory(
        {"Python driver": 4000.0, "driver JVM": 2500.0, "flink JVM": 6000.0},
        while_running={"tablestream": {"Python driver": 600.04, "driver JVM": 2400.0, "Python workers": 1000.0},
                       "flink": {"flink JVM": 5000.0, "flink Python driver": 1000.0}},
    )
    whole, running = (json.loads(line) for line in out.getvalue().splitlines())
    assert whole == {"peak_memory_mib": {"Python driver": 4000.0, "driver JVM": 2500.0, "flink JVM": 6000.0}}
    assert running == {
        "peak_memory_while_running_mib": {
            "flink": {"flink JVM": 5000.0, "flink Python driver": 1000.0},
            "tablestream": {"Python driver": 600.0, "Python workers": 1000.0, "driver JVM": 2400.0},
        },
        "total_mib": {"flink": 6000.0, "tablestream": 4000.0},
        "ratio": 1.5,
    }


def test_peak_memory_while_a_system_runs_starts_from_when_it_began():
    import numpy as np
    from suite.memory import PeakMemory

    memory = PeakMemory(interval=60)  # sampled by hand
    with memory:
        spike = np.ones(300 * 2**20, np.uint8)  # every page touched
        memory.sample()
        del spike
        with memory.running("tablestream"):
            during = np.ones(50 * 2**20, np.uint8)
            memory.sample()
            del during
    whole, ran = memory.peaks["Python driver"], memory.while_running["tablestream"]["Python driver"]
    assert whole - ran > 200, (whole, ran)
    assert ran > 50
    assert "flink" not in memory.while_running


@pytest.mark.slow
def test_quick_run_checks_every_result():
    env = dict(os.environ, PYTHONPATH=str(BENCH.parent / "src"))
    run = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--quick", "--peers", "spark_batch,recompute,transform_with_state"],
        capture_output=True, text=True, env=env, timeout=3600, check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    measurements = [line for line in lines if "workload" in line]
    for line in measurements:
        assert KEYS <= set(line), line
        assert line["system"] == "tablestream" and line["seconds"] > 0
        if line["peer"] is not None:
            assert line["ratio"] > 0
    ours = {(m["workload"], m["phase"]): m for m in measurements if m["peer"] is None}
    assert set(ours) == {
        ("startup", "bootstrap"), ("W1", "bootstrap"), ("W2", "bootstrap"), ("W2", "catch-up"), ("W2", "steady"), ("W2", "steady-floor"),
        ("W2", "steady-2x-state"), ("W2", "steady-2x-state-floor"),
        ("W3", "bootstrap"), ("W3", "catch-up"), ("W3", "steady"), ("W3", "steady-floor"),
        ("W3", "steady-2x-state"), ("W3", "steady-2x-state-floor"), ("W4", "enrich"),
    }
    assert all(m["validated"] for (_, phase), m in ours.items() if not phase.startswith("steady"))
    peers = {(m["workload"], m["phase"], m["peer"]): m for m in measurements if m["peer"] is not None}
    assert {("startup", "bootstrap", "spark_batch"), ("W1", "bootstrap", "spark_batch"), ("W2", "steady", "recompute"), ("W3", "steady", "recompute"),
            ("W3", "catch-up", "transform_with_state"), ("W4", "enrich", "spark_batch"),
            ("W4", "enrich", "transform_with_state"), ("W2", "steady-2x-state", "tablestream-1x-state"),
            ("W3", "steady-2x-state", "tablestream-1x-state")} <= set(peers)
    for workload in ("W2", "W3"):
        doubled = peers[workload, "steady-2x-state", "tablestream-1x-state"]
        assert doubled["peer_seconds"] == ours[workload, "steady"]["seconds"]
        assert doubled["seconds"] == ours[workload, "steady-2x-state"]["seconds"]
    assert all(m["peer_validated"] for key, m in peers.items() if key[2] in ("spark_batch", "recompute")
               or key[0] == "W4")
    drift = next(line["driver_memory"] for line in lines if "driver_memory" in line)
    assert drift["workload"] == "W2" and drift["after"] == list(range(10, 101, 10))
    assert all(len(drift[k]) == 10 and min(drift[k]) > 0 for k in ("jvm_heap_mib", "jvm_rss_mib", "python_rss_mib", "harness_logs_mib"))
    peaks = next(line for line in lines if "peak_memory_mib" in line)
    memory = peaks["peak_memory_mib"]
    assert memory["driver JVM"] > 0 and memory["Python driver"] > 0 and memory["Python workers"] > 0
    # Each kind's peak is the sum of its processes then.
    assert set(peaks["peak_processes"]) == set(memory)
    for kind, members in peaks["peak_processes"].items():
        assert abs(sum(mib for _pid, _command, mib in members) - memory[kind]) <= 0.1 * len(members)
    # While our application ran: its own kinds only, none above its whole-run peak.
    running = next(line for line in lines if "peak_memory_while_running_mib" in line)
    ours = running["peak_memory_while_running_mib"]["tablestream"]
    assert set(ours) == {"driver JVM", "Python driver", "Python workers"}
    assert all(0 < mib <= memory[kind] + 0.1 for kind, mib in ours.items())
    assert running["total_mib"] == {"tablestream": round(sum(ours.values()), 1)} and running["ratio"] is None

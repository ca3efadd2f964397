"""Applications run on a Spark master of the tests' choice, in a process of their own.

usage: app.py demo MASTER HOME
       app.py sums MASTER HOME [--ui-port P] [--delay-ms N]

``demo``: the demo topology over the embedded store under HOME, in the demo's two
phases (:func:`run_demo`), then exit.

``sums``: counts and sums per group of table topic ``events`` (:func:`sums_topology`)
of the embedded store under HOME (the topic must exist). It reads commands on
standard input, one a line, and answers each with one JSON line on standard output,
``{"lag": n}`` (the application's lag once the command is done):

* ``run``: process every record in the topic;
* ``start``: start the query with a one-second trigger;
* ``wait``: wait until the running query has read every record;
* ``stop``: stop the query.

``--ui-port`` turns Spark's UI on at that port (its REST API shows the running tasks);
``--delay-ms`` makes each row take that long (see :func:`sums_topology`).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from tablestream.demo import PHASE_ONE, create_demo_topics, demo_topology, produce_demo_data
from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.spark import get_spark
from tablestream.storage.embedded import EmbeddedStore

EVENTS = "events"


def session(master: str, ui_port: int | None = None):
    """A SparkSession on ``master``: on a cluster, two executors of one core, and the
    first job waits until both have registered."""
    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.executor.cores": "1",
        "spark.cores.max": "2",
        "spark.executor.memory": "1g",
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "180s",
        "spark.ui.enabled": "false" if ui_port is None else "true",
    }
    if ui_port is not None:
        conf["spark.ui.port"] = str(ui_port)
    return get_spark(master, app_name="tablestream-cluster-test", conf=conf)


def run_demo(spark, home, progress=None) -> None:
    """The demo's data set in its two phases, each processed to the end."""
    store = EmbeddedStore(home)
    create_demo_topics(store)
    produce_demo_data(store, slice(0, PHASE_ONE))
    app = Application(demo_topology(), "demo", store=store, spark=spark, progress=progress)
    app.run_until_caught_up()
    produce_demo_data(store, slice(PHASE_ONE, None))
    app.run_until_caught_up()


def sums_topology(delay_ms: int = 0):
    """Table ``events`` (value ``grp STRING, amount BIGINT``) grouped by ``grp``:
    materialized ``counts`` and ``sums``. With ``delay_ms``, a filter that keeps every
    row takes that long per row, so that a batch's tasks last long enough to be killed."""
    builder = StreamsBuilder()
    table = builder.table(EVENTS, value_schema="grp STRING, amount BIGINT")
    if delay_ms:

        def keep_slowly(key, value) -> bool:
            time.sleep(delay_ms / 1000)
            return True

        table = table.filter(keep_slowly)
    grouped = table.group_by(("grp", "value"))
    grouped.count(materialized_as="counts")
    grouped.sum("amount", materialized_as="sums")
    return builder.build()


def _log(line) -> None:
    print(line, file=sys.stderr, flush=True)


def _wait_caught_up(app: Application) -> None:
    while app.lag() > 0:
        if app.await_termination(0.5):
            raise SystemExit("The query stopped before it read every record")


def serve_sums(spark, home, commands, answer, delay_ms: int = 0) -> None:
    app = Application(
        sums_topology(delay_ms), "sums", store=EmbeddedStore(home), spark=spark, snapshot_every=2, progress=_log
    )
    for line in commands:
        command = line.strip()
        started = time.monotonic()
        if command == "run":
            app.run_until_caught_up()
        elif command == "start":
            app.start(processing_time="1 second")
        elif command == "wait":
            _wait_caught_up(app)
        elif command == "stop":
            app.stop()
        else:
            raise SystemExit(f"Unknown command {command!r}")
        answer({"lag": app.lag()})
        _log(f"{command}: {time.monotonic() - started:.1f} s")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("app", choices=("demo", "sums"))
    parser.add_argument("master")
    parser.add_argument("home")
    parser.add_argument("--ui-port", type=int)
    parser.add_argument("--delay-ms", type=int, default=0)
    args = parser.parse_args(argv)
    started = time.monotonic()
    spark = session(args.master, args.ui_port)
    _log(f"session started in {time.monotonic() - started:.1f} s")
    if args.app == "demo":
        run_demo(spark, args.home, progress=_log)
    else:
        serve_sums(
            spark, args.home, sys.stdin, lambda reply: print(json.dumps(reply), flush=True), args.delay_ms
        )
    spark.stop()


if __name__ == "__main__":
    main()

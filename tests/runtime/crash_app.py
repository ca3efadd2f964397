"""The application the crash tests kill and restart (run as a script).

usage: crash_app.py HOME [--bootstrap-servers B --app-id A --events T --out T --records-per-batch N]
                        [--stop-in-first-offsets]
Reads topic `events` (table changelog and stream at once), writes `sums-out` and
materializes counts and sums per group; processes everything there is, then exits.
On the embedded store under HOME by default; on a Kafka cluster with
``--bootstrap-servers`` (the application's files under HOME). With
``--stop-in-first-offsets`` it runs until Spark is writing its first offset file (its
temporary file is there), stops the application, then exits.
"""

from __future__ import annotations

import argparse
import time

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.spark import get_spark
from tablestream.storage.embedded import EmbeddedStore

RECORDS_PER_BATCH = 20_000


def topology(events: str = "events", out: str = "sums-out"):
    builder = StreamsBuilder()
    table = builder.table(events, value_schema="grp STRING, amount BIGINT")
    grouped = table.group_by(("grp", "value"))
    grouped.count(materialized_as="counts")
    grouped.sum("amount", materialized_as="sums").to_stream().to(out)
    return builder.build()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("home")
    parser.add_argument("--bootstrap-servers")
    parser.add_argument("--app-id", default="crash-app")
    parser.add_argument("--events", default="events")
    parser.add_argument("--out", default="sums-out")
    parser.add_argument("--records-per-batch", type=int)
    parser.add_argument("--stop-in-first-offsets", action="store_true")
    args = parser.parse_args(argv)
    spark = get_spark("local[2]", app_name="tablestream-crash-test", conf={"spark.sql.shuffle.partitions": "2"})
    if args.bootstrap_servers:
        where = dict(bootstrap_servers=args.bootstrap_servers, home=args.home)
    else:
        where = dict(store=EmbeddedStore(args.home))
    app = Application(
        topology(args.events, args.out), args.app_id, spark=spark, snapshot_every=3,
        max_records_per_batch=args.records_per_batch or RECORDS_PER_BATCH, **where,
    )
    if args.stop_in_first_offsets:
        app.start(processing_time="1 second")
        offsets = app.paths.checkpoint / "offsets"
        deadline = time.monotonic() + 300
        while not (offsets.is_dir() and any(p.name.endswith(".tmp") for p in offsets.iterdir())):
            if time.monotonic() > deadline:
                raise SystemExit("Spark did not write its first offset file in 300 s")
            time.sleep(0.01)
        app.stop()
    else:
        app.run_until_caught_up()
    spark.stop()


if __name__ == "__main__":
    main()

"""The application the crash test kills and restarts (run as a script).

usage: crash_app.py HOME [--stop-in-first-offsets]
Reads topic `events` (table changelog and stream at once), writes `sums-out` and
materializes counts and sums per group; processes everything there is, then exits.
With ``--stop-in-first-offsets`` it runs until Spark is writing its first offset file
(its temporary file is there), stops the application, then exits.
"""

from __future__ import annotations

import sys
import time

from tablestream.dsl import StreamsBuilder
from tablestream.runtime.app import Application
from tablestream.spark import get_spark
from tablestream.storage.embedded import EmbeddedStore

FILES_PER_BATCH = 4


def topology():
    builder = StreamsBuilder()
    events = builder.table("events", value_schema="grp STRING, amount BIGINT")
    grouped = events.group_by(("grp", "value"))
    grouped.count(materialized_as="counts")
    grouped.sum("amount", materialized_as="sums").to_stream().to("sums-out")
    return builder.build()


def main(home: str, stop_in_first_offsets: bool = False) -> None:
    spark = get_spark("local[2]", app_name="tablestream-crash-test", conf={"spark.sql.shuffle.partitions": "2"})
    app = Application(
        topology(), "crash-app", store=EmbeddedStore(home), spark=spark,
        max_files_per_batch=FILES_PER_BATCH, snapshot_every=3,
    )
    if stop_in_first_offsets:
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
    main(sys.argv[1], "--stop-in-first-offsets" in sys.argv[2:])

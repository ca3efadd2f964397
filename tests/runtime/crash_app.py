"""The application the crash test kills and restarts (run as a script).

usage: crash_app.py HOME
Reads topic `events` (table changelog and stream at once), writes `big-events` and
materializes counts and sums per group; processes everything there is, then exits.
"""

from __future__ import annotations

import sys

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


def main(home: str) -> None:
    spark = get_spark("local[2]", app_name="tablestream-crash-test", conf={"spark.sql.shuffle.partitions": "2"})
    app = Application(
        topology(), "crash-app", store=EmbeddedStore(home), spark=spark,
        max_files_per_batch=FILES_PER_BATCH, snapshot_every=3,
    )
    app.run_until_caught_up()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])

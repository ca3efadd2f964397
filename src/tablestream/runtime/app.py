"""Running a topology as an application: one Structured Streaming query over its
source topics, each micro-batch applied by the compiled rules, outputs committed once.

Its topics are in the embedded store or on a Kafka cluster. Everything else an
application keeps lives under ``<home>/apps/<application id>/``
(:mod:`tablestream.runtime.layout`); its materialized tables are Delta changelogs
(:class:`~tablestream.storage.tables.DeltaTables`).

Exactly once: a batch id always covers the same input (Spark's offset log); stores
read a replayed batch as they were before it; every write of a batch is idempotent per
batch id, so a replayed batch skips what was already committed (one commit path for
every output: ``runtime/commit.py``). On the embedded store each write — records to
output topics, table changelogs, the processing log — is a Delta commit that carries
the application's transaction version (the batch id). On Kafka, the batch's records
for output topics and the processing log are one Kafka transaction with the batch's
commit marker (:mod:`tablestream.storage.kafka_batches`); table changelogs stay Delta
commits.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pyarrow as pa

from .. import config as ts_config
from ..plan.joins import ForeignKeyJoin
from ..plan.topology import Topology
from ..progress import BatchProgress
from ..storage.delta_files import DataFile
from ..storage.embedded import EmbeddedStore, FileAppend
from ..storage.kafka import KafkaStore
from ..storage.kafka_batches import KafkaBatchWriter
from ..storage.location import Location, write_atomic
from ..storage.processing_log import processing_log_topic, processing_log_values
from ..storage.tables import DeltaTables, MaterializedTables, TableFiles, transaction_app
from ..storage.topic import TopicConfig
from .commit import commit_batch
from .failure_text import failure_line
from .failures import ProcessingSettings
from .layout import STATE_FORMAT, ApplicationError, AppPaths, InstanceLock, reset_application
from .output import TableEncoding
from .output_files import ExecutorWrites
from .runner import BatchRunner, query_stopped

DEFAULT_MAX_RECORDS_PER_BATCH = 1_000_000
"""The default bound of a micro-batch, in source records. A batch's cost in memory grows
with its records (each task gathers its share of a store stage's rows as Arrow, and the
records bound for Kafka topics reach the driver's producer, about 450 bytes of driver
memory per row), so an unbounded first batch over a large backlog can exhaust the executors or the driver,
or Spark's ``maxResultSize``; at a million records a batch's fixed cost (about a second)
is a small share of its time."""

#: The largest right table (records in its topic at the first start) a foreign-key join
#: replicates when its layout is left to the application.
DEFAULT_REPLICATE_RIGHT_UP_TO = 1_000_000

#: In local mode, by default, the batches of at least this many records have their
#: outputs written by the executors (see ``Application(write_on_executors=)``).
EXECUTORS_WRITE_FROM = 50_000


class Application:
    """A topology running on Spark against a topic store: the embedded store (default,
    or ``store=EmbeddedStore(...)``) or a Kafka cluster (``bootstrap_servers``, or
    ``store=KafkaStore(...)``).

    >>> app = Application(builder.build(), "revenue")            # doctest: +SKIP
    >>> app.run_until_caught_up()                                 # doctest: +SKIP
    >>> app.table("revenue-per-customer").show()                  # doctest: +SKIP

    On Kafka, ``kafka_options`` are Kafka client settings by Kafka's names (security
    protocol, SASL, SSL, any other), given to Spark's Kafka source and to the
    application's own producer and admin client, never shown (see
    :class:`~tablestream.storage.kafka_options.KafkaOptions`). The application's files
    (checkpoint, stores, materialized tables) stay under ``home``. Sources are read from
    the earliest offsets on the first start, ``read_committed``; each batch's records for
    output topics and the processing log are written in one Kafka transaction
    (:mod:`tablestream.storage.kafka_batches`).

    >>> app = Application(topology, "revenue", bootstrap_servers="broker:9093",   # doctest: +SKIP
    ...                   kafka_options={"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
    ...                                  "sasl.jaas.config": jaas})

    ``partitions``: state partitions per store, fixed at the first start (default: the
    largest partition count of the source topics, one task per input partition as in
    Kafka Streams). ``max_records_per_batch``: the most source records (offsets) a
    micro-batch reads, on both backends (default :data:`DEFAULT_MAX_RECORDS_PER_BATCH`,
    so a batch's memory stays bounded whatever the backlog; ``None``: all there is),
    shared among the source partitions in proportion to their backlog as Spark's Kafka
    source shares ``maxOffsetsPerTrigger``. ``snapshot_every``: batches between store
    snapshots. ``compact_tables_every``: batches between compactions of the
    materialized tables' changelogs (``tables``, a :class:`DeltaTables`).
    ``processing_errors``: a user function that raises on a record sends the record to
    the processing log and the batch goes on (``"log_and_continue"``), or fails the
    application with one line naming the operator and the record (``"fail"``).
    ``log_skipped_records``: records an operator drops (a null group-by or join key)
    are written to the processing log too (see :mod:`tablestream.runtime.failures`).
    ``local_state_dir``: where each host keeps the stores' RocksDB working copies (a
    local path valid on every executor host). By default, in local mode, the
    application's ``state/`` directory; on a cluster, each executor's Spark local
    directory (``SPARK_LOCAL_DIRS``): a working copy is a cache of the changelogs and
    snapshots under ``home``, which every executor must see, and a store partition
    that moves to another executor is rebuilt there from them.

    ``home`` may be a URI every executor can open (``file://``, ``hdfs://``, ``s3a://``,
    ``s3://``, ``gs://``, ``abfss://``; see :mod:`tablestream.storage.location`):
    Spark's checkpoint, the stores' changelogs and snapshots, the materialized tables
    and the embedded topics live there. ``storage_options``: the object store's
    credentials and endpoint by deltalake's names (default: ``$TABLESTREAM_STORAGE_OPTIONS``,
    else the environment the storage clients read); Spark's own access to the URI is
    configured in Spark (``spark.hadoop.fs.s3a.*``, ...).

    >>> app = Application(topology, "revenue", home="s3a://bucket/ts",           # doctest: +SKIP
    ...                   storage_options={"AWS_REGION": "eu-west-1"})

    ``write_on_executors``: the batch's materialized tables and embedded output topics
    are written by the Spark tasks that hold their rows, the driver receiving only the
    files' summaries (``True``), or collected and written by the driver (``False``).
    By default the executors write on a cluster; in local mode, where every task
    shares the driver's host, they write the batches of at least
    :data:`EXECUTORS_WRITE_FROM` records and the driver the smaller ones, whose
    outputs are too few to repay the executors' extra shuffle and Python stage (a
    10,000-change batch: 0.89 s against 1.14 s).

    ``replicate_right_up_to``: a foreign-key join that leaves its layout to the
    application (``replicate_right=None``, the default, and every SQL foreign-key
    join) keeps the whole right table in every state partition when, at the
    application's first start, the right table is read from a topic (through filters
    and value mappings) that holds at least one and at most this many records, as
    Spark broadcasts a join side below ``spark.sql.autoBroadcastJoinThreshold``; else
    Kafka's layout. The choice is recorded with the state and kept until a reset
    (:meth:`describe` shows it); ``None`` never replicates by itself.

    ``progress``: called
    after each batch with its :class:`BatchProgress` (batch id,
    input records, time, lag); :func:`tablestream.progress.batch_lines` prints them on
    a terminal.

    >>> app = Application(topology, "revenue", progress=print)   # doctest: +SKIP
    >>> app.run_until_caught_up()                                 # doctest: +SKIP
    revenue batch 0: 1,000,000 records in 41.3 s, lag 250,000 records
    revenue batch 1: 250,000 records in 9.8 s, lag 0 records

    One instance of an application runs at a time: :meth:`start` takes a lock under the
    application's directory (released by :meth:`stop`, at the end of
    :meth:`run_until_caught_up`, or when the process ends) and refuses a second one:
    ``Application 'revenue' is already running (pid 4242, since 2026-11-24 16:20:00)``.
    """

    def __init__(
        self,
        topology: Topology,
        application_id: str,
        *,
        store: EmbeddedStore | KafkaStore | None = None,
        bootstrap_servers: str | None = None,
        kafka_options: Mapping[str, Any] | None = None,
        home: str | os.PathLike[str] | Location | None = None,
        spark=None,
        partitions: int | None = None,
        snapshot_every: int = 10,
        max_records_per_batch: int | None = DEFAULT_MAX_RECORDS_PER_BATCH,
        compact_tables_every: int = 100,
        processing_errors: str = "log_and_continue",
        log_skipped_records: bool = True,
        progress: Callable[[BatchProgress], None] | None = None,
        local_state_dir: str | os.PathLike[str] | None = None,
        storage_options: Mapping[str, str] | None = None,
        write_on_executors: bool | None = None,
        replicate_right_up_to: int | None = DEFAULT_REPLICATE_RIGHT_UP_TO,
    ):
        from ..spark import batch_session, get_spark, session_runs_locally

        self.topology = topology
        self.application_id = application_id
        self.store = _topic_store(store, bootstrap_servers, kafka_options, home, storage_options)
        self.on_kafka = isinstance(self.store, KafkaStore)
        _check_batch_bound(max_records_per_batch)
        self.spark = spark or get_spark()
        # The batches run in a session of their own: ``spark``'s settings, adaptive
        # execution off (see :func:`tablestream.spark.batch_session`).
        self._batch_spark = batch_session(self.spark)
        # The home resolved once (with its storage options): a reset finds the same files.
        self.home = self.store.home if isinstance(self.store, EmbeddedStore) else ts_config.home(home, storage_options)
        self.paths = AppPaths.of(application_id, self.home)
        self._check_source_topics()
        self.topology = self._chosen_layouts(replicate_right_up_to)
        # Everything a user can get wrong in the topology is found before anything is
        # recorded or created: the runner analyzes it (and checks co-partitioning).
        chosen, run = self._recorded_run(partitions, record=False)
        self.layout = dataclasses.replace(
            self.paths.layout,
            snapshot_every=snapshot_every,
            local_dir=_working_dir(self.spark, self.paths, local_state_dir),
            run=run,
        )
        topic_partitions = {t: self.store.topic_config(t).partitions for t in self._source_topics()}
        settings = ProcessingSettings(processing_errors, log_skipped_records)
        self.runner = BatchRunner(self.topology, self.layout, chosen, topic_partitions, settings, spark=self._batch_spark)
        self.partitions, self.run = self._recorded_run(partitions, run=run)
        self.max_records_per_batch = max_records_per_batch
        self.compact_tables_every = compact_tables_every
        self.progress = progress
        if write_on_executors is not None and not isinstance(write_on_executors, bool):
            raise ApplicationError(f"write_on_executors must be True, False or None (chosen), got {write_on_executors!r}")
        #: True / False as given; None: chosen per batch by its size (local mode's default).
        self.write_on_executors = (
            True if write_on_executors is None and not session_runs_locally(self.spark) else write_on_executors
        )
        self._read_to = self._recorded_positions()
        self._query = None
        self._instance = InstanceLock(self.paths, alive=lambda: self._query is None or self._query.isActive)
        self._reset = False
        self._batch: int | None = None  # the batch being processed, or the last one
        self._failure: BaseException | None = None  # what the last batch raised
        self.tables: MaterializedTables = DeltaTables(self.paths.tables, application_id, self.run)
        self._sink = _ApplicationSink(self)
        self._create_output_topics()

    # ---------------------------------------------------------------- setup
    def _recorded_run(self, requested: int | None, *, record: bool = True, run: str | None = None) -> tuple[int, str]:
        """The state partition count and the run id recorded at the first start since
        the last reset (recorded now if this is that start, with ``run`` when given;
        with ``record=False`` the count and a new run id it would record)."""
        meta = self.paths.meta
        started = self.paths.read_meta()
        if started is not None:
            recorded = started["partitions"]
            written = started.get("state_format", 1)
            if written != STATE_FORMAT:
                raise ApplicationError(
                    f"Application '{self.application_id}' keeps its state in format {written}; this "
                    f"version of tablestream reads format {STATE_FORMAT} (reset the application to run "
                    f"it again from its topics: Application.reset() or 'tablestream app reset "
                    f"{self.application_id}')"
                )
            if requested is not None and requested != recorded:
                raise ApplicationError(
                    f"Application '{self.application_id}' was started with {recorded} state partitions; "
                    f"it cannot change to {requested} (reset the application to change it: "
                    f"Application.reset() or 'tablestream app reset {self.application_id}')"
                )
            return recorded, started.get("run")
        chosen = requested
        if chosen is None:
            counts = [self.store.topic_config(t).partitions for t in self._source_topics()]
            chosen = max(counts) if counts else 1
        run = run or uuid.uuid4().hex
        if not record:
            return chosen, run
        self.paths.root.mkdir(parents=True, exist_ok=True)
        recorded = {"partitions": chosen, "run": run, "state_format": STATE_FORMAT, "replicated": list(self._replicated)}
        write_atomic(meta, json.dumps(recorded).encode())
        return chosen, run

    def _chosen_layouts(self, up_to: int | None) -> Topology:
        """The topology with a layout for each foreign-key join that leaves it to the
        application: as recorded at the first start, or chosen now (see
        ``replicate_right_up_to``)."""
        if up_to is not None and (isinstance(up_to, bool) or not isinstance(up_to, int) or up_to < 0):
            raise ApplicationError(f"replicate_right_up_to must be a record count (0 or more) or None, got {up_to!r}")
        unchosen = self.topology.unchosen_layouts
        started = self.paths.read_meta()
        if started is not None:
            # An application started before layouts were chosen has Kafka's.
            self._replicated = tuple(started.get("replicated", ()))
        else:
            self._replicated = tuple(n.name for n in unchosen if self._small_table(n.right, up_to))
        return self.topology.with_layouts(self._replicated) if unchosen else self.topology

    def _small_table(self, table: str, up_to: int | None) -> bool:
        """Whether ``table`` is read from a topic of 1 to ``up_to`` records."""
        topic = self.topology.table_topic(table)
        if up_to is None or topic is None:
            return False
        return 0 < self.store.describe_topic(topic).record_count <= up_to

    def _source_topics(self) -> list[str]:
        topics: list[str] = []
        for node in self.topology.sources:
            for topic in node.topics:
                if topic not in topics:
                    topics.append(topic)
        return topics

    def _check_source_topics(self) -> None:
        existing = set(self.store.list_topics())
        missing = [t for t in self._source_topics() if t not in existing]
        if missing:
            raise ApplicationError(
                f"Source topic{'s' if len(missing) > 1 else ''} missing: {', '.join(missing)}"
            )

    def _create_output_topics(self) -> None:
        existing = set(self.store.list_topics())
        for sink in self.topology.sinks:
            if sink.topic not in existing:
                self.store.create_topic(TopicConfig(sink.topic, partitions=self.partitions))
                existing.add(sink.topic)
        log = processing_log_topic(self.application_id)
        if log not in existing:
            self.store.create_topic(TopicConfig(log, partitions=1))
        if self.on_kafka:
            self._sink.writer.create_topic()

    # ---------------------------------------------------------------- positions
    def _recorded_positions(self) -> dict[str, dict[int, int]]:
        path = self.paths.positions
        if not path.exists():
            return {}
        stored = json.loads(path.read_text())
        return {t: {int(p): o for p, o in parts.items()} for t, parts in stored.items()}

    def _record_positions(self, ends: dict[tuple[str, int], int]) -> None:
        """Move the position of each partition the batch read, as Kafka Streams commits
        its consumer offsets (a replayed batch records the same positions again)."""
        for (topic, partition), end in ends.items():
            read = self._read_to.setdefault(topic, {})
            read[partition] = max(read.get(partition, 0), end)
        if ends:
            write_atomic(self.paths.positions, json.dumps(self._read_to, sort_keys=True).encode())

    def _planned(self, batch_id: int) -> dict[str, dict[int, int]] | None:
        """Where the batch ends in each source partition as Spark planned it (its offset
        log, Kafka's offsets on both backends): past what the records' own offsets reach
        (Kafka's transaction markers after the last record, records compaction removed).
        None when there is no such plan (a batch handed to :meth:`process_batch`
        directly, or one whose log Spark has purged)."""
        try:
            lines = (self.paths.checkpoint / "offsets" / str(batch_id)).read_text().splitlines()
        except OSError:
            return None
        planned: dict[str, dict[int, int]] = {}
        for line in lines[2:]:
            try:
                offsets = json.loads(line)
            except json.JSONDecodeError:
                return None
            if isinstance(offsets, dict):
                for topic, parts in offsets.items():
                    if isinstance(parts, dict):
                        planned.setdefault(topic, {}).update({int(p): int(o) for p, o in parts.items()})
        return planned or None

    def _planned_ends(self, batch_id: int) -> dict[tuple[str, int], int]:
        planned = self._planned(batch_id) or {}
        return {(topic, p): o for topic, parts in planned.items() for p, o in parts.items()}

    def lag(self) -> int:
        """The records of the source topics after the application's position in each
        partition: the offset after the last record it read, or the partition's start
        offset when it has read none (a consumer's lag in Kafka terms; a compacted
        partition's gaps count as records)."""
        behind = 0
        for topic in self._source_topics():
            end = self.store.end_offsets(topic)
            read = self._read_to.get(topic, {})
            start = {}
            if any(p not in read and offset > 0 for p, offset in end.items()):
                start = self.store.describe_topic(topic).start_offsets
            behind += sum(max(0, offset - read.get(p, start.get(p, 0))) for p, offset in end.items())
        return behind

    # ---------------------------------------------------------------- running
    def _process_planned(self, records, batch_id: int) -> None:
        """The ``foreachBatch`` function: on the embedded store, the batch's records are
        read by Spark's Parquet reader between the positions Spark planned (the offset
        logs of this batch and the one before), not through the source's Python reader:
        the same records, with the JVM's columnar reads and column pruning (a 1M-record
        batch read twice: about 0.6 s less). Kafka's source reads in the JVM already.
        The planned positions also bound the batch's records, so that a small batch
        runs in one job (see :meth:`BatchRunner.process`)."""
        end = self._planned(batch_id)
        start = self._planned(batch_id - 1) if batch_id > 0 else None
        if not self.on_kafka and end is not None and (start is not None or batch_id == 0):
            records = self.store.read_between(self._batch_spark, start or {}, end)
        self.process_batch(records, batch_id, at_most=_records_between(start, end))

    def process_batch(self, records, batch_id: int, *, at_most: int | None = None) -> None:
        """Apply the topology to one micro-batch and commit its outputs (the streaming
        query hands it each batch through :meth:`_process_planned`; also callable
        directly). ``at_most``: how many records the batch holds at most, when known
        before it is read (the streaming query knows it from its planned offsets): a
        small batch then runs in one Spark job (see
        :meth:`~tablestream.runtime.runner.BatchRunner.process`)."""
        started = time.perf_counter()
        # The batch is read twice (its positions and checks, then every rule), not
        # cached: caching would materialize every column of the batch first, which
        # costs more than the second read (2M records: 6 s against 1 s).
        self._after_reset()
        self._batch, self._failure = batch_id, None
        try:
            committed = self.paths.batches("commits")
            writes = functools.partial(self._sink.executor_writes, batch_id)
            collected = self.runner.process(
                records, batch_id, committed[-1] if committed else None, writes, at_most=at_most
            )
            commit_batch(collected, self._sink, batch_id)
        except BaseException as error:
            self._sink.discard()  # records staged for a transaction that never began, topic locks
            self._failure = error  # the query's own exception holds only its text
            if query_stopped(error):
                raise  # a stop() during the batch: Spark tells it by this text
            # Spark matches the text of a failed foreachBatch against a regex that recurses
            # once per character ("(.|\r\n|\r|\n)*", StreamExecution.PROXY_ERROR): a Spark
            # job's failure with its Java stack trace overflows the query thread's stack, which
            # dies without ending the query, and it hangs as active. Spark gets one line.
            raise ApplicationError(f"Batch {batch_id} failed: {failure_line(error)}") from None
        positions = self.runner.last_positions
        self._record_positions(self._planned_ends(batch_id) or positions.ends)
        if self.progress is not None:
            seconds = time.perf_counter() - started
            self.progress(BatchProgress(self.application_id, batch_id, positions.count, seconds, self.lag()))

    def _stream(self):
        topics = self._source_topics()
        if not self.on_kafka:
            return self.store.read_stream(self._batch_spark, topics, max_records_per_batch=self.max_records_per_batch)
        # Outputs of other exactly-once applications: their committed records only.
        options = {"kafka.isolation.level": "read_committed"}
        if self.max_records_per_batch is not None:
            options["maxOffsetsPerTrigger"] = str(self.max_records_per_batch)
        return self.store.read_stream(self._batch_spark, topics, options=options)

    def start(self, *, available_now: bool = False, processing_time: str | None = None):
        """Start the streaming query (``available_now``: process what is there, then stop).

        Refused while another instance of the application runs
        (:class:`~tablestream.runtime.layout.ApplicationRunningError`); a damaged
        checkpoint file is reported before Spark reads it
        (:class:`~tablestream.errors.DamagedStateError`, naming the file and how to
        start over), and what an instance stopped or killed while Spark wrote a
        checkpoint file left of it is removed (see
        :meth:`~tablestream.runtime.layout.AppPaths.remove_unfinished_checkpoint_writes`),
        so a restart after a stop at any point of a batch, the first included, resumes it."""
        if self._query is not None and self._query.isActive:
            raise ApplicationError(
                f"Application '{self.application_id}' is already running; stop it before starting it again"
            )
        self._query = None
        self._instance.acquire()
        try:
            self._after_reset()
            self.paths.check_checkpoint()
            self.paths.remove_unfinished_checkpoint_writes()
            # The query's tasks keep their stores open between its batches under a token
            # of this start: a task of a later start opens them again, checked.
            self.runner.physical.keep = uuid.uuid4().hex
            stream = self._stream()
            writer = stream.writeStream.option(
                "checkpointLocation", str(self.paths.checkpoint)
            ).foreachBatch(self._process_planned)
            if available_now:
                writer = writer.trigger(availableNow=True)
            elif processing_time:
                writer = writer.trigger(processingTime=processing_time)
            self._query = writer.queryName(f"tablestream-{self.application_id}").start()
        except BaseException:
            self._instance.release()
            raise
        return self._query

    def run_until_caught_up(self) -> None:
        """Process every record already in the source topics, then return (on Kafka,
        once ``read_committed`` consumers can read the last batch's records).

        A failed batch raises an :class:`ApplicationError` of one line naming the batch
        and what went wrong (see :meth:`await_termination`)."""
        self.start(available_now=True)
        try:
            self.await_termination()
        finally:
            self._instance.release()
        if self._sink.writer is not None:
            # Return once read_committed consumers see the last batch's records.
            self._sink.writer.wait_visible()

    def await_termination(self, timeout: float | None = None) -> bool:
        """Wait for the streaming query to stop (at most ``timeout`` seconds): True when
        it has stopped. If it failed, raise an :class:`ApplicationError` of one line,
        ``Application 'x' failed in batch N: <what>``: the message of the tablestream
        error behind the failure (raised by the application or inside a Spark task),
        else the failure's type and first line. The exception raised in the batch (or
        Spark's) is chained as its cause.

        >>> app.start(); app.await_termination(60)                    # doctest: +SKIP
        """
        if self._query is None:
            return True
        from pyspark.errors import StreamingQueryException

        query = self._query
        try:
            stopped = query.awaitTermination(timeout) if timeout is not None else query.awaitTermination()
        except StreamingQueryException:
            stopped = True
        failure = query.exception()
        if failure is not None:
            cause = self._failure if self._failure is not None else failure
            where = f" in batch {self._batch}" if self._failure is not None else ""
            # Spark's Kafka client that timed out is told as the cluster not answering.
            timed_out = self.store.client_timeout(cause) if self.on_kafka else None
            line = str(timed_out) if timed_out is not None else failure_line(cause)
            raise ApplicationError(f"Application '{self.application_id}' failed{where}: {line}") from cause
        return stopped is not False

    def stop(self) -> None:
        """Stop the streaming query and let another instance start."""
        try:
            if self._query is not None:
                self._query.stop()
                self._query = None
        finally:
            self._instance.release()

    def reset(self) -> None:
        """Start over from the beginning of the source topics: delete the application's
        checkpoint, state stores, their changelogs and snapshots, and its materialized
        tables (:func:`~tablestream.runtime.layout.reset_application`). Output topics
        and the processing log are kept. Refused while the application runs.

        >>> app.stop(); app.reset(); app.run_until_caught_up()       # doctest: +SKIP
        """
        if self._query is not None and self._query.isActive:
            raise ApplicationError(
                f"Application '{self.application_id}' is running; stop it before resetting it"
            )
        self._query = None
        self._instance.release()
        reset_application(self.application_id, self.home)
        self._read_to = {}
        self._reset = True

    def _after_reset(self) -> None:
        """After :meth:`reset`, the next batch begins a new run: batch ids start at 0
        again, under a transaction id of their own (so its writes to the output topics
        are not taken for the earlier run's). The run is recorded then, not at the reset,
        so that a new instance may choose another state partition count."""
        if self._reset:
            self.partitions, self.run = self._recorded_run(self.partitions)
            # Working copies on executors' disks are the earlier run's: the new run's
            # live in a directory of its own.
            self.layout = dataclasses.replace(self.layout, run=self.run)
            self.runner.use_layout(self.layout)
            self.tables = DeltaTables(self.paths.tables, self.application_id, self.run)
            self._sink.close()
            self._sink = _ApplicationSink(self)
            self._reset = False

    # ---------------------------------------------------------------- reading
    def table(self, store: str):
        """A materialized table's current contents as a Spark DataFrame (``key, value,
        ts``): the latest change per key, deleted keys left out."""
        queryable = {s.name for s in self.topology.stores if s.queryable}
        if store not in queryable:
            raise ApplicationError(
                f"No materialized table '{store}' (materialized tables: {', '.join(sorted(queryable)) or 'none'})"
            )
        return self.tables.read(self.spark, store)

    def compact_table(self, store: str) -> None:
        """Rewrite a materialized table's changelog as its current rows (one per key,
        deleted keys gone). Reads give the same rows before and after."""
        self.tables.compact(self.spark, store)

    def describe(self) -> str:
        """The topology; every state store the runtime keeps, with its kind, the node that
        keeps it and its state partitions (a join's copies of its input tables and its
        subscriptions included); each foreign-key join's layout; and the materialized
        tables users can read."""
        plural = "s" if self.partitions != 1 else ""
        lines = [str(self.topology.describe()).rstrip(), "", "State stores:"]
        for s in self.runner.physical.stores:
            lines.append(f"  {s.name} ({s.kind}, owner {s.owner}, {self.partitions} partition{plural})")
        joins = [n for n in self.topology.nodes if isinstance(n, ForeignKeyJoin)]
        if joins:
            lines += ["", "Foreign-key joins:"]
            lines += [
                f"  {n.name}: "
                + ("the right table replicated in every state partition" if n.replicate_right
                   else "subscriptions by foreign key (Kafka's layout)")
                for n in joins
            ]
        tables = [s for s in self.topology.stores if s.queryable]
        if tables:
            lines += ["", "Materialized tables:"]
            lines += [f"  {s.name} (owner {s.owner})" for s in tables]
        return "\n".join(lines) + "\n"


class _ApplicationSink:
    """A batch's outputs into the application's topic store and materialized tables,
    every write idempotent per batch id; tables compacted every
    ``compact_tables_every`` batches. Materialized tables and embedded output topics
    are written by the executors when the application says so (:meth:`executor_writes`;
    each embedded output topic's lock held from reading its end offsets to its commit),
    else by the driver; the processing log and, on
    Kafka, records for topics come to the driver. On Kafka, records for topics are
    staged and written at :meth:`commit`, in one transaction with the batch's commit
    marker."""

    def __init__(self, app: Application):
        self.app = app
        self.txn_app = transaction_app(app.application_id, app.run)
        self.log_topic = processing_log_topic(app.application_id)
        self.writer = (
            KafkaBatchWriter(app.store, app.application_id, app.run) if isinstance(app.store, KafkaStore) else None
        )
        self._held = ExitStack()
        self._appends: dict[str, FileAppend] = {}
        self._tables: dict[str, TableFiles] = {}

    def executor_writes(self, batch_id: int, records: int) -> ExecutorWrites | None:
        self._held.close()
        self._appends, self._tables = {}, {}
        chosen = self.app.write_on_executors
        if not (records >= EXECUTORS_WRITE_FROM if chosen is None else chosen):
            return None
        if self.writer is None:
            topics = sorted({sink.topic for sink in self.app.topology.sinks})  # locks in one order
            for topic in topics:
                self._appends[topic] = self._held.enter_context(
                    self.app.store.appending_files(topic, (self.txn_app, batch_id))
                )
        for store in self.app.topology.stores:
            if store.queryable:
                self._tables[store.name] = self.app.tables.appending_files(store.name, batch_id)
        return ExecutorWrites(self._appends, self._tables, self.app.partitions)

    def commit_topic_files(self, topic: str, files: list[DataFile], batch_id: int) -> None:
        self.app.store.commit_files(self._appends[topic], files)

    def commit_table_files(self, store: str, files: list[DataFile], schema: pa.Schema, batch_id: int) -> None:
        self.app.tables.commit_files(self._tables[store], files, schema)
        self._compact_now(store, batch_id)

    def write_records(self, topic: str, records: pa.Table, batch_id: int) -> None:
        if self.writer is not None:
            self.writer.write(topic, records)
        else:
            self.app.store.append(topic, records, txn=(self.txn_app, batch_id))

    def write_changes(
        self, store: str, changes: pa.Table, encoding: TableEncoding, batch_id: int
    ) -> None:
        self.app.tables.append(store, changes, batch_id)
        self._compact_now(store, batch_id)

    def _compact_now(self, store: str, batch_id: int) -> None:
        if batch_id > 0 and batch_id % self.app.compact_tables_every == 0:
            self.app.compact_table(store)

    def write_processing_log(self, entries: pa.Table, batch_id: int) -> None:
        log = pa.table(
            {
                "key": pa.nulls(entries.num_rows, pa.binary()),
                "value": processing_log_values(entries),
                "timestamp": entries.column("timestamp"),
            }
        )
        self.write_records(self.log_topic, log, batch_id)

    def commit(self, batch_id: int) -> None:
        try:
            if self.writer is not None:
                # The batch's positions go to the application's consumer group with it.
                positions = self.app.runner.last_positions
                ends = self.app._planned_ends(batch_id) or (positions.ends if positions is not None else {})  # noqa: SLF001 - the sink is the application's
                self.writer.commit(batch_id, ends)
        finally:
            self._held.close()

    def discard(self) -> None:
        try:
            if self.writer is not None:
                self.writer.discard()
        finally:
            self._held.close()

    def close(self) -> None:
        self._held.close()
        if self.writer is not None:
            self.writer.close()


# What the text of a batch's error shows when stop() interrupted it (Spark's
# StreamExecution.IO_EXCEPTION_NAMES, and the cancelled job).

def _working_dir(spark, paths: AppPaths, requested: str | os.PathLike[str] | None):
    """Where the working copies live: as requested; in local mode, under the
    application's directory on a local home; on a cluster, or in local mode on a home
    that is not local, on each executor's local disk (None)."""
    if requested is not None:
        return Path(requested).absolute()
    from ..spark import session_runs_locally

    local = session_runs_locally(spark)
    return paths.local_root / "state" if local and paths.local_root is not None else None


def _topic_store(store, bootstrap_servers, kafka_options, home, storage_options=None) -> EmbeddedStore | KafkaStore:
    """The application's topic store from its arguments (one of ``store`` and
    ``bootstrap_servers``; ``kafka_options`` with a Kafka cluster only)."""
    if store is not None and bootstrap_servers is not None:
        raise ApplicationError(
            "Give an Application either store= or bootstrap_servers=, not both"
        )
    if bootstrap_servers is not None:
        return KafkaStore(bootstrap_servers, kafka_options=kafka_options)
    if kafka_options is not None:
        raise ApplicationError(
            "kafka_options= applies to a Kafka cluster: give bootstrap_servers= too "
            "(or a KafkaStore created with them as store=)"
        )
    return store if store is not None else EmbeddedStore(home, storage_options=storage_options)


def _check_batch_bound(max_records: int | None) -> None:
    if max_records is not None and (not isinstance(max_records, int) or isinstance(max_records, bool) or max_records < 1):
        raise ApplicationError(
            f"max_records_per_batch must be a positive integer or None (unbounded), got {max_records!r}"
        )


def _records_between(start: dict[str, dict[int, int]] | None, end: dict[str, dict[int, int]] | None) -> int | None:
    """How many records lie between two planned positions at most (offsets a compacted
    partition or Kafka's transaction markers skip count too); None when either is
    unknown or a partition of ``end`` is not in ``start``."""
    if start is None or end is None:
        return None
    total = 0
    for topic, parts in end.items():
        for partition, offset in parts.items():
            begin = start.get(topic, {}).get(partition)
            if begin is None:
                return None
            total += max(0, offset - begin)
    return total

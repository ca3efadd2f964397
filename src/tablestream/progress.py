"""Progress of long work, shown on a terminal only: a bar of the records ``tablestream
produce`` has written, a line per micro-batch of an application. When the console is
not a terminal (a pipe, a file, a test) nothing is shown, so the output stays exactly
what the command prints anyway.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@dataclass(frozen=True)
class BatchProgress:
    """One micro-batch of an application, once its outputs are committed.

    ``records``: the batch's input records. ``seconds``: the time to process and commit
    it. ``lag``: the records of the source topics after the application's position in
    each partition (read when the batch was done): 0 once it has caught up.

    >>> print(BatchProgress("revenue", 3, 250_000, 4.21, 1_250_000))
    revenue batch 3: 250,000 records in 4.2 s, lag 1,250,000 records
    """

    application_id: str
    batch_id: int
    records: int
    seconds: float
    lag: int

    def __str__(self) -> str:
        return (
            f"{self.application_id} batch {self.batch_id}: {self.records:,} records in "
            f"{self.seconds:.1f} s, lag {self.lag:,} records"
        )


def batch_lines(console: Console) -> Callable[[BatchProgress], None] | None:
    """A progress function for :class:`~tablestream.runtime.app.Application` that prints
    one line per batch on ``console``; None when the console is not a terminal.

    >>> app = Application(topology, "revenue", progress=batch_lines(Console(stderr=True)))  # doctest: +SKIP
    """
    if not console.is_terminal:
        return None

    def show(progress: BatchProgress) -> None:
        console.print(str(progress), markup=False, highlight=False)

    return show


class RecordProgress:
    """A running count of records toward a total (see :func:`record_progress`)."""

    def __init__(self, progress: Progress | None = None, task=None):
        self._progress = progress
        self._task = task

    def advance(self, records: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, records)

    def describe(self, description: str) -> None:
        """Name the step now running (e.g. from reading the records to writing them)."""
        if self._progress is not None:
            self._progress.update(self._task, description=description)


@contextmanager
def record_progress(console: Console, description: str, total: int) -> Iterator[RecordProgress]:
    """A bar of ``total`` records on ``console`` while the block runs, removed at its
    end; on a console that is not a terminal, a :class:`RecordProgress` that shows
    nothing.

    >>> with record_progress(Console(stderr=True), "Producing to orders", 3) as progress:  # doctest: +SKIP
    ...     progress.advance(3)
    """
    if not console.is_terminal:
        yield RecordProgress()
        return
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("records"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as progress:
        yield RecordProgress(progress, progress.add_task(description, total=total))

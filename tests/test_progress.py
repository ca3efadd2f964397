"""Progress on a terminal, nothing elsewhere: the batch line and the record bar."""

from __future__ import annotations

import io

from rich.console import Console

from tablestream.progress import BatchProgress, batch_lines, record_progress


def console(terminal: bool) -> tuple[Console, io.StringIO]:
    screen = io.StringIO()
    return Console(file=screen, force_terminal=terminal, width=100, color_system=None), screen


def test_a_batch_line_names_the_batch_its_records_its_time_and_the_lag():
    line = str(BatchProgress("revenue", 12, 1_250_000, 3.04, 0))
    assert line == "revenue batch 12: 1,250,000 records in 3.0 s, lag 0 records"


def test_batch_lines_print_on_a_terminal_only():
    assert batch_lines(console(terminal=False)[0]) is None
    terminal, screen = console(terminal=True)
    show = batch_lines(terminal)
    show(BatchProgress("demo", 0, 17, 2.5, 4))
    show(BatchProgress("demo", 1, 4, 0.25, 0))
    assert screen.getvalue() == (
        "demo batch 0: 17 records in 2.5 s, lag 4 records\n"
        "demo batch 1: 4 records in 0.2 s, lag 0 records\n"
    )


def test_record_progress_shows_nothing_when_not_on_a_terminal():
    plain, screen = console(terminal=False)
    with record_progress(plain, "Reading lines for t", 10) as progress:
        progress.advance(10)
        progress.describe("Writing to t")
    assert screen.getvalue() == ""


def test_record_progress_on_a_terminal_counts_to_its_total():
    terminal, screen = console(terminal=True)
    with record_progress(terminal, "Reading lines for t", 2_000) as progress:
        progress.advance(1_000)
        progress.advance(1_000)
        progress.describe("Writing to t")
    assert "Writing to t" in screen.getvalue() and "2000/2000 records" in screen.getvalue()

"""The benchmark suite behind ``make bench`` (``bench/run.py``): workloads run through the
public API as a user runs them, peers run in the same process or in venvs of their own,
every result checked against DuckDB over the same generated records."""

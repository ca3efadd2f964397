"""Execution on Spark: plan nodes compiled to per-batch rules, keyed stores, the runner."""

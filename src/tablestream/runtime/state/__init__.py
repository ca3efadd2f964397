"""Keyed state stores (RocksDB per store and state partition) with changelogs and snapshots."""

from .store import StoreError, StoreLayout, StoreSession

__all__ = ["StoreError", "StoreLayout", "StoreSession"]

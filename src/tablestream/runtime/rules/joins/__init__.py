"""Join rules: the joiner shared by all (:mod:`.joiner`), stream-table and
stream-global-table (:mod:`.stream_table`), primary-key table-table
(:mod:`.table_table`) and foreign-key (:mod:`.foreign_key`) joins."""

from . import foreign_key, stream_table, table_table

__all__ = ["foreign_key", "stream_table", "table_table"]

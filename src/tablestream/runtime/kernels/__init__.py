"""Task kernels: what runs inside a Spark task, Arrow tables in, Arrow tables out.

Each kernel takes the whole input of one task for one state partition (the Arrow batches
gathered: their arrival order means nothing), orders it by the ordering key where order
matters, reads and writes its stores' sessions with vectorized calls, and returns its
rows. Each module holds one kernel and its output schema (Arrow; the Spark side derives
its schema from it). Nothing here imports pyspark or the rules, so every kernel is
unit-tested on plain Arrow tables.

- :mod:`.order` the ordering key; last change per key
- :mod:`.codec` timestamped values, null-safe equality, canonical bytes decoded in Arrow
- :mod:`.upsert` a table from its changelog records
- :mod:`.numeric` count, sum, avg by signed deltas
- :mod:`.extreme` min, max with retraction
- :mod:`.offset` latest and earliest by offset
- :mod:`.collect` collect_list, collect_set with retraction
- :mod:`.distinct` exact count_distinct with retraction
- :mod:`.fold` a user's reduce / aggregate
- :mod:`.table_join` primary-key table-table join
- :mod:`.stream_table` stream-table join as of each record's time
- :mod:`.foreign_key` KIP-213's stages: subscriptions, the shuffled and replicated layouts
"""

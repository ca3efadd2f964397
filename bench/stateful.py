"""What the benchmarks share: running a transformWithState query to the end of its input."""

from __future__ import annotations

import time
from pathlib import Path


def run_to_end(frame, processor, schema, checkpoint: Path, name: str) -> float:
    """Seconds to run ``frame.transformWithState(processor, schema)`` (Update mode) over
    everything its source holds (``availableNow``), written as Delta to
    ``checkpoint / name``, where a following query can read it."""
    began = time.perf_counter()
    query = (
        frame.transformWithState(processor, schema, "Update", "None")
        .writeStream.format("delta")
        .option("checkpointLocation", str(checkpoint / f"{name}-ck"))
        .trigger(availableNow=True)
        .start(str(checkpoint / name))
    )
    query.awaitTermination()
    return time.perf_counter() - began

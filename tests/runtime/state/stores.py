"""Helpers of the store tests: a batch written with ``get_and_put``, a store's contents."""

from __future__ import annotations

from tablestream.runtime.state import StoreLayout, StoreSession

#: Changes to one store partition, a batch each (keys, values; None deletes).
BATCHES = [
    ([b"a", b"b"], [b"1", b"2"]),
    ([b"a"], [b"3"]),
    ([b"c"], [b"4"]),
    ([b"b"], [None]),
    ([b"d", b"a"], [b"5", b"6"]),
    ([b"c"], [b"7"]),
    ([b"e"], [b"8"]),
]


def run(layout: StoreLayout, batch: int, keys: list[bytes], values: list[bytes | None], store: str = "s", partition: int = 0) -> list[bytes | None]:
    with StoreSession(layout, store, partition, batch) as session:
        return session.get_and_put(keys, values)


def dump(layout: StoreLayout, batch: int, store: str = "s", partition: int = 0, prefix: bytes = b"") -> dict[bytes, bytes]:
    with StoreSession(layout, store, partition, batch) as session:
        return dict(session.prefix_items(prefix))

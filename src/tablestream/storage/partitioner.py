"""Kafka's default partitioner, bit for bit.

Kafka's Java producer (and Spark's Kafka sink) place a keyed record in partition
``toPositive(murmur2(serializedKey)) % numPartitions``; tablestream does the same so
topics it writes are co-partitioned with topics any Kafka producer writes.
"""

from __future__ import annotations

import random

import numpy as np

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: a signed 32-bit hash of ``data``.

    >>> murmur2(b"21")
    -973932308
    """
    length = len(data)
    h = (_SEED ^ length) & _MASK
    n4 = length // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = (h * _M) & _MASK
        h ^= k
    rest = length % 4
    tail = 4 * n4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for a serialized key."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def partitions_for_keys(keys: list[bytes | None], partitions: int) -> np.ndarray:
    """Vectorized :func:`partition_for_key` over many keys; ``None`` keys give -1.

    Keys are grouped by length so each group hashes as one numpy computation.
    """
    out = np.full(len(keys), -1, dtype=np.int32)
    by_length: dict[int, list[int]] = {}
    for i, key in enumerate(keys):
        if key is not None:
            by_length.setdefault(len(key), []).append(i)
    m = np.uint32(_M)
    for length, rows in by_length.items():
        buf = np.frombuffer(b"".join(keys[i] for i in rows), dtype=np.uint8).reshape(len(rows), length)
        h = np.full(len(rows), (_SEED ^ length) & _MASK, dtype=np.uint32)
        n4 = length // 4
        if n4:
            words = buf[:, : 4 * n4].copy().view("<u4").astype(np.uint32)
            for j in range(n4):
                k = words[:, j] * m
                k ^= k >> np.uint32(24)
                k *= m
                h *= m
                h ^= k
        rest = length % 4
        tail = 4 * n4
        if rest == 3:
            h ^= buf[:, tail + 2].astype(np.uint32) << np.uint32(16)
        if rest >= 2:
            h ^= buf[:, tail + 1].astype(np.uint32) << np.uint32(8)
        if rest >= 1:
            h ^= buf[:, tail].astype(np.uint32)
            h *= m
        h ^= h >> np.uint32(13)
        h *= m
        h ^= h >> np.uint32(15)
        out[rows] = ((h & np.uint32(0x7FFFFFFF)) % np.uint32(partitions)).astype(np.int32)
    return out


def spread_keyless(count: int, partitions: int, run_length: int = 100) -> np.ndarray:
    """Partitions for ``count`` records without a key, spread as Kafka's sticky
    partitioner spreads them: runs of ``run_length`` records stick to one partition,
    starting from a random one and moving on round-robin."""
    start = random.randrange(partitions)
    return ((start + np.arange(count) // run_length) % partitions).astype(np.int32)

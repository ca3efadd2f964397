"""Subscription keys: the foreign key, length-prefixed, then the left key."""

from __future__ import annotations

import pyarrow as pa

from tablestream.runtime.kernels.foreign_key.subscriptions import (
    subscription_key,
    subscription_keys,
    subscription_prefix,
)


def test_subscription_key_bytes():
    """Four bytes of foreign-key length (big-endian), the foreign key, the left key."""
    assert subscription_prefix(b"ab") == b"\x00\x00\x00\x02ab"
    assert subscription_key(b"ab", b"lk") == b"\x00\x00\x00\x02ablk"
    assert subscription_key(b"", b"lk") == b"\x00\x00\x00\x00lk"


def test_a_foreign_keys_prefix_covers_none_of_a_longer_ones_keys():
    """A foreign key that starts another one does not find its subscribers."""
    assert not subscription_key(b"abc", b"x").startswith(subscription_prefix(b"ab"))
    assert subscription_key(b"ab", b"cx").startswith(subscription_prefix(b"ab"))


def test_subscription_keys_over_arrays():
    """The Arrow form gives the per-row keys."""
    fks = pa.array([b"ab", b"", b"xyz"], pa.binary())
    lks = pa.array([b"1", b"2", b""], pa.binary())
    assert subscription_keys(fks, lks).to_pylist() == [
        b"\x00\x00\x00\x02ab1", b"\x00\x00\x00\x002", b"\x00\x00\x00\x03xyz",
    ]

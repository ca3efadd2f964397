"""Subscriptions of left rows to the right row their foreign key names, keyed by the
foreign key (length-prefixed, so a prefix scan finds exactly one foreign key's
subscribers) and then the left key; and the kinds and roles of the rows the shuffled
layout's stages exchange."""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_LEN = struct.Struct(">I")

# Kinds of the rows entering the shuffled layout's foreign-key stage.
RIGHT_CHANGE = 0  # a right table change (``vb`` its new value)
OLD_LOOKUP = 1  # a changed left row's old foreign key (``unsubscribe`` when it leaves it)
SUBSCRIBE = 2  # a left row's new foreign key (``vb`` its new value)
LEFT_CHANGE = 3  # the left change itself, passed through to meet the rows above

# Roles of the rows leaving it, by left key.
ROLE_OLD = 0  # the right row the old foreign key had before the batch
ROLE_NEW = 1  # the right row the new foreign key has after the batch
ROLE_RIGHT = 2  # an unchanged subscriber of a changed right row
ROLE_LEFT = 3  # the left change


def subscription_key(foreign_key: bytes, left_key: bytes) -> bytes:
    """Subscriptions are keyed by the foreign key (length-prefixed, so a prefix scan
    finds exactly one foreign key's subscribers) and then the left key."""
    return subscription_prefix(foreign_key) + left_key



def subscription_prefix(foreign_key: bytes) -> bytes:
    return _LEN.pack(len(foreign_key)) + foreign_key



def subscription_keys(foreign_keys: pa.Array, left_keys: pa.Array) -> pa.Array:
    """:func:`subscription_key` over Arrow arrays."""
    lengths = pc.binary_length(foreign_keys).to_numpy(zero_copy_only=False).astype(">u4")
    prefixes = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(_LEN.size), len(lengths), [None, pa.py_buffer(np.ascontiguousarray(lengths).view(np.uint8))]
    )
    return pc.binary_join_element_wise(prefixes.cast(pa.binary()), foreign_keys, left_keys, b"")

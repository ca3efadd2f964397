"""A user's reduce or aggregate per group (Kafka Streams' KTableAggregate), with the
user's callables run in the ordering key's order."""

from __future__ import annotations

import json

import pyarrow as pa

from ..state import StoreSession
from .codec import decode_timestamped, encode_timestamped
from .order import ORDER_COLUMNS

SCHEMA = pa.schema([("gkb", pa.binary()), ("old", pa.string()), ("new", pa.string()), ("ts", pa.int64())])


class FoldKernel:
    """Kafka Streams' reduce/aggregate per group, with the user's callables, in order.

    Rows: ``gkb, sign, vj (the value as JSON text), skb, gkj (group key as JSON), ts``
    and the ordering key. For each source change the retraction (sign -1) runs before
    the addition, as KTableAggregate does. A table aggregate is deleted when it becomes
    null (the subtractor returned None). Out: ``gkb, old, new (JSON text), ts``.
    """

    def __init__(self, *, initializer, adder, subtractor, reduce: bool, adder_arity, subtractor_arity):
        self.initializer = initializer
        self.adder = adder
        self.subtractor = subtractor
        self.reduce = reduce
        self.adder_arity = adder_arity
        self.subtractor_arity = subtractor_arity

    def __call__(self, table: pa.Table, session: StoreSession) -> pa.Table:
        ordered = table.sort_by([(c, "ascending") for c in ORDER_COLUMNS] + [("sign", "ascending")])
        groups = list(dict.fromkeys(ordered.column("gkb").to_pylist()))
        stored = dict(zip(groups, session.get_before(groups), strict=True))
        state: dict[bytes, tuple[object, int] | None] = {}
        for g, raw in stored.items():
            text, ts = decode_timestamped(raw)
            state[g] = None if text is None else (json.loads(text), ts)
        before = dict(state)
        # Each group's last change's timestamp (a deletion's too), and for a group the
        # subtractor deleted, the change that did and its timestamp: an addition of the
        # same change starts from that timestamp, as KTableAggregate's does.
        stamps: dict[bytes, int] = {}
        deleted: dict[bytes, tuple[tuple, int]] = {}
        positions = zip(*(ordered.column(c).to_pylist() for c in ORDER_COLUMNS), strict=True)
        for (gkb, sign, vj, skb, gkj, ts), at in zip(
            zip(*(ordered.column(c).to_pylist() for c in ("gkb", "sign", "vj", "skb", "gkj", "ts")), strict=True),
            positions,
            strict=True,
        ):
            value = None if vj is None else json.loads(vj)
            key = None if gkj is None else json.loads(gkj)
            source_key = None if skb is None else json.loads(skb)["v"]
            current = state.get(gkb)
            agg, agg_ts = current if current is not None else (None, None)
            if current is None and gkb in deleted and deleted[gkb][0] == at:
                agg_ts = deleted[gkb][1]
            if sign < 0:
                if agg is None:
                    continue
                agg = self._apply(self.subtractor, self.subtractor_arity, key, value, agg, source_key)
                new_ts = max(ts, agg_ts)
            else:
                if agg is None and not self.reduce:
                    agg = self.initializer()
                if agg is None:
                    agg = value
                else:
                    agg = self._apply(self.adder, self.adder_arity, key, value, agg, source_key)
                new_ts = ts if agg_ts is None else max(ts, agg_ts)
            state[gkb] = None if agg is None else (agg, new_ts)
            stamps[gkb] = new_ts
            if agg is None:
                deleted[gkb] = (at, new_ts)
        out_g, out_old, out_new, out_ts, keys, writes = [], [], [], [], [], []
        for g in groups:
            old, new = before.get(g), state.get(g)
            old_text = None if old is None else json.dumps(old[0], separators=(",", ":"), ensure_ascii=False)
            new_text = None if new is None else json.dumps(new[0], separators=(",", ":"), ensure_ascii=False)
            keys.append(g)
            writes.append(None if new is None else encode_timestamped(new_text.encode(), new[1]))
            if old_text == new_text:
                continue
            out_g.append(g)
            out_old.append(old_text)
            out_new.append(new_text)
            out_ts.append(stamps[g])
        session.put(keys, writes)
        return pa.table(
            {
                "gkb": pa.array(out_g, pa.binary()),
                "old": pa.array(out_old, pa.string()),
                "new": pa.array(out_new, pa.string()),
                "ts": pa.array(out_ts, pa.int64()),
            },
            schema=SCHEMA,
        )

    def _apply(self, fn, arity, key, value, agg, source_key):
        if self.reduce:
            return fn(agg, value)
        return fn(key, value, agg, source_key) if arity == 4 else fn(key, value, agg)

"""A user's reduce or aggregate: the user's callables run per group in the ordering
key's order, inside the aggregate's stage (:mod:`tablestream.runtime.kernels.fold`)."""

from __future__ import annotations

from pyspark.sql import functions as F

from ....plan import aggregate as agg
from ....plan.expr import ExprRef
from ...batch import BatchContext
from ...expressions import JSON_TEXT
from ...frames import ORDER, Frame, json_text, named, result_order, select, undeclared_text
from ...kernels import fold
from ...physical import PhysicalPlan
from ..base import UnsupportedNodeError
from .group_by import AggregateRule


class FoldRule(AggregateRule):
    nodes = (agg.Reduce, agg.Aggregate)

    def __init__(self, node, physical: PhysicalPlan):
        super().__init__(node, physical)
        initializer = getattr(node, "initializer", None)
        for expr in (initializer, node.adder, node.subtractor):
            if expr is not None and not (isinstance(expr, ExprRef) and expr.kind == "callable"):
                raise UnsupportedNodeError(f"{node.name}: reduce and aggregate take Python callables")
        resolve = self.resolve
        self.kernel = fold.FoldKernel(
            initializer=resolve(initializer) if initializer is not None else None,
            adder=resolve(node.adder),
            subtractor=resolve(node.subtractor) if node.subtractor is not None else None,
            reduce=isinstance(node, agg.Reduce),
            adder_arity=node.adder.arity,
            subtractor_arity=node.subtractor.arity if node.subtractor is not None else None,
        )
        self.shape = JSON_TEXT

    def apply(self, batch: BatchContext, frame: Frame) -> Frame:
        shape = frame.value
        rows = self.signed_rows(
            frame, {"v": lambda side: F.col(side) if shape.json_text else json_text(F.col(side), shape.dtype)}
        )
        if not hasattr(self, "stage_in"):
            self.key_type = rows.schema["gk"].dataType
            # The group key as the user's callables receive it (an undeclared key as it reads).
            gkj = undeclared_text(F.col("gk")) if frame.key_undeclared else json_text(F.col("gk"), self.key_type)
            self.stage_in = named([
                "gkb", "sign", F.col("v").alias("vj"), "skb", gkj.alias("gkj"),
                "ts", *ORDER,
            ])
            self.columns = named(
                [self.group_key(frame, self.key_type).alias("key"), "old", "new", "ts", *result_order()]
            )
        stage = self.run_stage(batch, rows, self.stage_in, self.kernel, fold.SCHEMA)
        changes = batch.persist(stage, self.node.name)
        return self.result(batch, select(changes, self.columns), frame)

"""Sinks: a stream's records to a topic, serialized in the sink's formats when the
batch's outputs are collected (:mod:`tablestream.runtime.output`)."""

from __future__ import annotations

from ...plan import sinks
from ...storage.formats import get_format
from ..batch import BatchContext, ToTopicSpec
from ..frames import Frame
from ..physical import PhysicalPlan
from .base import Rule


class ToTopicRule(Rule):
    nodes = (sinks.ToTopic,)
    consumer = True

    def __init__(self, node: sinks.ToTopic, physical: PhysicalPlan):
        super().__init__(node, physical)
        self.spec = ToTopicSpec(
            node.topic,
            get_format(node.key_format, node.key_schema) if node.key_format else None,
            get_format(node.value_format, node.value_schema) if node.value_format else None,
        )

    def apply(self, batch: BatchContext, frame: Frame) -> None:
        batch.output.records.setdefault(self.node.topic, []).append((frame, self.spec))

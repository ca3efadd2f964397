"""Testing tools shipped with tablestream: a topology test driver and a real Kafka broker."""

from .driver import TestDriver, TestInputTopic, TestOutputTopic, TestRecord

__all__ = ["TestDriver", "TestInputTopic", "TestOutputTopic", "TestRecord"]

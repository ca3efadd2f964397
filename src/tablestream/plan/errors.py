"""Errors raised while building a plan. Each is also a ``TypeError`` or ``ValueError`` where
Python code would expect one, so ``except ValueError`` keeps working for callers."""

from __future__ import annotations

from tablestream.errors import TablestreamError


class PlanError(TablestreamError):
    """A plan that cannot be built as asked."""


class TopologyError(PlanError):
    """An invalid topology, as Kafka Streams' ``TopologyException`` reports it."""

    def __init__(self, detail: str):
        super().__init__(f"Invalid topology: {detail}")
        self.detail = detail


class InvalidNameError(PlanError, ValueError):
    """A processor, store or topic name Kafka would reject."""


class InvalidArgumentError(PlanError, ValueError):
    """An argument with the right type but a value that cannot be used."""


class InvalidTypeError(PlanError, TypeError):
    """An argument of a type the method does not accept."""


class InvalidExpressionError(PlanError, ValueError):
    """SQL expression text that does not parse as one Spark SQL expression."""


class ArityError(PlanError, TypeError):
    """A callable whose parameters do not fit the functional interface it is used as."""


class JoinTypeError(PlanError, TypeError):
    """A join whose two sides have key types that can never match (ksqlDB's "types
    don't match")."""

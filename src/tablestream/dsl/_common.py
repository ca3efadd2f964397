"""Argument checks shared by the DSL's public methods."""

from __future__ import annotations

from typing import Any

from tablestream.errors import SchemaError
from tablestream.plan.base import FORMATS, PlanNode
from tablestream.plan.builder import PlanBuilder
from tablestream.plan.errors import (
    InvalidArgumentError,
    InvalidExpressionError,
    InvalidNameError,
    InvalidTypeError,
)
from tablestream.plan.expr import SqlExpr
from tablestream.plan.naming import validate_name
from tablestream.schema import parse_schema_or_type


class PlanFacade:
    """What every DSL facade is: the name of a plan node in a plan being built."""

    __slots__ = ("_name", "_plan")

    def __init__(self, plan: PlanBuilder, name: str) -> None:
        self._plan = plan
        self._name = name

    @property
    def name(self) -> str:
        """The name of the plan node this facade's records come from."""
        return self._name

    @property
    def node(self) -> PlanNode:
        """The plan node this facade's records come from."""
        return self._plan.node(self._name)

    @property
    def plan(self) -> PlanBuilder:
        """The plan this facade belongs to."""
        return self._plan


def check_name(name: str | None, method: str, what: str = "name") -> str | None:
    """``None`` (generate one) or a legal processor/store name."""
    if name is None:
        return None
    try:
        return validate_name(name, what.capitalize())
    except InvalidNameError as error:
        raise InvalidNameError(f"{method}: {error}") from None


def check_topic(topic: Any, method: str) -> str:
    if topic is None:
        raise InvalidTypeError(f"{method}: topic can't be None")
    try:
        return validate_name(topic, "Topic name")
    except InvalidNameError as error:
        raise InvalidNameError(f"{method}: {error}") from None


def check_format(value: Any, method: str, what: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or value.upper() not in FORMATS:
        raise InvalidArgumentError(
            f"{method}: unknown {what} {value!r}; ksqlDB formats are {', '.join(FORMATS)}"
        )
    return value.upper()


def check_partitions(partitions: Any, method: str) -> int | None:
    if partitions is None:
        return None
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise InvalidTypeError(
            f"{method}: partitions must be an int, got {type(partitions).__name__}"
        )
    if partitions < 1:
        raise InvalidArgumentError(f"{method}: partitions must be at least 1, got {partitions}")
    return partitions


def schema_text(schema: Any, method: str, what: str) -> str | None:
    """A ksqlDB column list (``"id BIGINT, name STRING"``) or a single type (``"BIGINT"``),
    from text or a pyspark StructType; text is parsed here, so a typo fails where it was
    written, not when the application runs."""
    if schema is None:
        return None
    if isinstance(schema, str):
        if not schema.strip():
            raise InvalidArgumentError(f"{method}: {what} is empty")
        try:
            parse_schema_or_type(schema)
        except SchemaError as error:
            raise SchemaError(f"{method}: {what}: {error}") from None
        return schema
    if _is_spark_type(schema, "StructType"):
        from tablestream.storage.formats.spark_types import ksql_type_name

        return ", ".join(f"{f.name} {ksql_type_name(f.dataType)}" for f in schema.fields)
    raise InvalidTypeError(
        f"{method}: {what} must be a ksqlDB column list (str) or a pyspark StructType, "
        f"got {type(schema).__name__}"
    )


def check_source_format(fmt: str, schema: str | None, method: str, what: str) -> None:
    """A source's format must be one the runtime reads, with the schema it needs (AVRO
    and DELIMITED need one; KAFKA holds a single primitive). The formats are asked
    here, not when the DSL is imported (it imports neither storage nor Spark)."""
    from tablestream.storage.formats import FORMATS as READABLE_FORMATS
    from tablestream.storage.formats import get_format

    if fmt not in READABLE_FORMATS:
        raise InvalidArgumentError(
            f"{method}: {what} {fmt} cannot be read yet; readable formats are "
            f"{', '.join(READABLE_FORMATS)}"
        )
    try:
        get_format(fmt, schema)
    except SchemaError as error:
        raise SchemaError(f"{method}: {what}: {error}") from None


def _is_spark_type(obj: object, name: str) -> bool:
    cls = type(obj)
    return cls.__name__ == name and cls.__module__.startswith("pyspark.sql")


def timestamp_sql(value: Any, method: str, argument: str) -> SqlExpr:
    """A record's timestamp as a SQL expression (a timestamp extractor, a new timestamp):
    SQL only, since it is computed with the batch's projections, without a Python worker."""
    if not isinstance(value, str):
        raise InvalidTypeError(f"{method}: {argument} must be a SQL expression (str), got {type(value).__name__}")
    try:
        return SqlExpr(value)
    except InvalidExpressionError as error:
        raise InvalidExpressionError(f"{method}: {argument.replace('_', ' ')}: {error}") from None

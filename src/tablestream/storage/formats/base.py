"""The Format interface: one format (KAFKA, JSON, AVRO, DELIMITED) with one schema,
read and written from Python (one value at a time) and from Spark (Columns)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from ...errors import SerializationError
from ...schema import Schema, SqlType
from .spark_types import to_spark_type

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType


class Decoded(NamedTuple):
    """What :meth:`Format.decode_checked` returns: three Columns over the same bytes.

    ``value``: the decoded value, null for a tombstone and for bytes that failed;
    ``failed``: a boolean that is never null (false for a tombstone), computed with
    Spark's own functions only, so filtering on it runs no Python;
    ``error``: null unless ``failed``, else why (computed by the Python deserializer,
    for the failed rows only).
    """

    value: Column
    failed: Column
    error: Column


class Format(ABC):
    """A serialization format with its schema, for keys or values.

    Python side: :meth:`serialize` and :meth:`deserialize` (``None`` is a Kafka null,
    i.e. a tombstone for values; a struct value is a ``dict``). Spark side:
    :meth:`spark_type`, :meth:`decode`/:meth:`decode_checked` and :meth:`encode` build
    Columns from Spark's own functions, with no Python UDF on the path of good records.
    Both sides read each other's bytes and agree on the values.
    """

    name: ClassVar[str]

    def __init__(self, schema: Schema | SqlType | None):
        self.schema = schema

    # -- description
    @property
    def sql_type(self) -> SqlType | None:
        """The type of a value: a struct for a column list, else the single type."""
        return self.schema.as_struct() if isinstance(self.schema, Schema) else self.schema

    @property
    def wrapped(self) -> bool:
        """True when the value is a record of named columns (a ``dict`` in Python)."""
        return isinstance(self.schema, Schema)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"

    def describe(self) -> str:
        return f"{self.name}" + (f" '{self.schema}'" if self.schema is not None else "")

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash((type(self), self.schema))

    # -- Python side
    @abstractmethod
    def serialize(self, value: Any) -> bytes | None:
        """Bytes of ``value``; ``None`` gives ``None``. Raises SerializationError."""

    @abstractmethod
    def deserialize(self, data: bytes | None) -> Any:
        """Value of ``data``; ``None`` gives ``None``. Raises SerializationError."""

    def failure_reason(self, data: bytes) -> str:
        """Why ``data`` does not decode (the text of the SerializationError)."""
        try:
            self.deserialize(data)
        except SerializationError as e:
            return str(e)
        except Exception as e:  # a bug in a reader must still leave a readable reason
            return f"{type(e).__name__}: {e}"
        return f"cannot be read as {self.describe()}"

    # -- Spark side
    def spark_type(self) -> DataType:
        """The Spark type values decode to."""
        assert self.schema is not None
        return to_spark_type(self.schema)

    def decode(self, col: Column | str) -> tuple[Column, Column]:
        """``(value, error)`` Columns for a binary Column: ``error`` is null when the bytes
        decoded (and for a null input: a tombstone), else the reason."""
        decoded = self.decode_checked(col)
        return decoded.value, decoded.error

    def decode_valid(self, col: Column | str) -> Column:
        """The values of bytes already known to decode (a table's stored values, checked
        when their record was read): only the parse, without the checks."""
        return self.decode(col)[0]

    def decode_checked(self, col: Column | str) -> Decoded:
        """Like :meth:`decode`, plus the boolean ``failed`` Column (see :class:`Decoded`)."""
        from pyspark.sql import functions as F

        raw = F.col(col) if isinstance(col, str) else col
        value, failed = self._decode(raw)
        failed = raw.isNotNull() & F.coalesce(failed, F.lit(False))
        value = F.when(raw.isNotNull() & ~failed, value)
        return Decoded(value, failed, self.failure_reasons(raw, failed))

    def failure_reasons(self, raw: Column, failed: Column) -> Column:
        """The reasons of the failed rows: a vectorized Arrow UDF that runs this format's
        Python deserializer on the failed rows' bytes (null for every other row)."""
        from pyspark.sql import functions as F

        return F.when(failed, _reason_udf(self)(F.when(failed, raw)))

    @abstractmethod
    def _decode(self, raw: Column) -> tuple[Column, Column]:
        """``(value, failed)`` for a non-null input; ``failed`` may be null for a null input."""

    @abstractmethod
    def encode(self, col: Column | str) -> Column:
        """A binary Column of the values in ``col`` (null stays null). ``col`` is cast to
        :meth:`spark_type` first, so an INT column writes as BIGINT; struct fields are
        matched by position, as Spark casts structs."""


def _reason_udf(fmt: Format):
    import pyarrow as pa
    from pyspark.sql.functions import arrow_udf

    def reasons(data):
        return pa.array(
            [None if b is None else fmt.failure_reason(b) for b in data.to_pylist()],
            type=pa.string(),
        )

    # Real objects, not the strings postponed annotations would give: pyspark reads
    # the hints to pick the UDF kind (Arrow arrays in, an Arrow array out).
    reasons.__annotations__ = {"data": pa.Array, "return": pa.Array}
    return arrow_udf(reasons, "string")

"""KAFKA: one primitive, laid out exactly as Kafka's own serializers write it.

=========  =======================================  ==================================
type       bytes                                    Kafka class
=========  =======================================  ==================================
STRING     UTF-8                                    ``StringSerializer``
INT        4 bytes, big-endian two's complement     ``IntegerSerializer``
BIGINT     8 bytes, big-endian two's complement     ``LongSerializer``
DOUBLE     8 bytes, big-endian IEEE 754             ``DoubleSerializer``
BYTES      as is                                    ``ByteArraySerializer``
=========  =======================================  ==================================

Without a declared type the Python side infers one per value (``str`` -> STRING,
``int`` -> BIGINT, ``float`` -> DOUBLE, ``bytes`` as is) and reads bytes back as a
UTF-8 string; the Spark side reads and writes such a key or value as a STRING (a
numeric column is written as its decimal text: declare the type to get Kafka's
binary numbers).
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING, Any

from ...errors import SchemaError, SerializationError
from ...schema import BIGINT, BYTES, DOUBLE, INT, STRING, PrimitiveType, Schema, SqlType
from ..undeclared import undeclared_key
from .base import Format
from .values import BIGINT_RANGE, INT_RANGE, show

if TYPE_CHECKING:
    from pyspark.sql import Column
    from pyspark.sql.types import DataType

SUPPORTED = (INT, BIGINT, DOUBLE, STRING, BYTES)
_WIDTH = {"INT": 4, "BIGINT": 8, "DOUBLE": 8}
_PACK = {"INT": ">i", "BIGINT": ">q", "DOUBLE": ">d"}


class KafkaFormat(Format):
    """``KAFKA``; ``schema`` is one of INT, BIGINT, DOUBLE, STRING, BYTES, a one-column
    list such as ``"id BIGINT"`` (the value is then the bare primitive, as in ksqlDB),
    or ``None``.

    >>> KafkaFormat(BIGINT).serialize(42)
    b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00*'
    >>> KafkaFormat(INT).deserialize(b"\\xff\\xff\\xff\\xff")
    -1
    """

    name = "KAFKA"

    def __init__(self, schema: Schema | SqlType | None):
        if isinstance(schema, Schema):
            if len(schema) != 1:
                raise SchemaError(
                    f"The KAFKA format holds a single primitive, but the schema '{schema}' has {len(schema)} columns"
                )
            schema = schema.columns[0].type
        if schema is not None and schema not in SUPPORTED:
            raise SchemaError(
                f"The KAFKA format does not support type {schema} (it supports INT, BIGINT, DOUBLE, STRING and BYTES)"
            )
        super().__init__(schema)

    @property
    def type(self) -> PrimitiveType | None:
        return self.schema  # type: ignore[return-value]

    # -- Python side
    def serialize(self, value: Any) -> bytes | None:
        if value is None:
            return None
        t = self.type
        if t is None:
            return _serialize_inferred(value)
        name = t.name
        if name == "STRING":
            if isinstance(value, str):
                return _utf8(value)
        elif name == "BYTES":
            if isinstance(value, (bytes, bytearray, memoryview)):
                return bytes(value)
        elif name == "DOUBLE":
            if isinstance(value, (float, int)) and not isinstance(value, bool):
                try:
                    return struct.pack(">d", float(value))
                except OverflowError:
                    raise SerializationError(
                        f"expected DOUBLE, got {show(value)} (out of range)"
                    ) from None
        elif isinstance(value, int) and not isinstance(value, bool):
            low, high = INT_RANGE if name == "INT" else BIGINT_RANGE
            if not low <= value <= high:
                raise SerializationError(f"expected {name}, got {value} (out of range)")
            return struct.pack(_PACK[name], value)
        raise SerializationError(f"expected {name}, got {show(value)}")

    def deserialize(self, data: bytes | None) -> Any:
        if data is None:
            return None
        data = bytes(data)
        t = self.type
        name = "STRING" if t is None else t.name
        if name == "STRING":
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise SerializationError(f"invalid UTF-8: {e}") from None
        if name == "BYTES":
            return data
        if len(data) != _WIDTH[name]:
            raise SerializationError(f"a KAFKA {name} has {_WIDTH[name]} bytes, got {len(data)}")
        return struct.unpack(_PACK[name], data)[0]

    # -- Spark side
    def spark_type(self) -> DataType:
        from pyspark.sql import types as T

        if self.type is None:
            return T.StringType()
        return super().spark_type()

    def _decode(self, raw: Column) -> tuple[Column, Column]:
        from pyspark.sql import functions as F

        name = "STRING" if self.type is None else self.type.name
        if name == "STRING":
            return raw.cast("string"), ~F.is_valid_utf8(raw)
        if name == "BYTES":
            return raw, F.lit(False)
        failed = F.length(raw) != _WIDTH[name]
        if name == "BIGINT":
            # conv with a negative target base reads the 64 bits as a signed number.
            return F.conv(F.hex(raw), 16, -10).cast("bigint"), failed
        if name == "INT":
            unsigned = F.conv(F.hex(raw), 16, 10).cast("bigint")
            signed = F.when(unsigned >= 2**31, unsigned - 2**32).otherwise(unsigned)
            return signed.cast("int"), failed
        # DOUBLE: Avro writes a double as its 8 IEEE bytes little-endian; reverse them.
        from pyspark.sql.avro.functions import from_avro

        little = F.unhex(_reverse_bytes_hex(F.hex(raw), 8))
        return F.when(~failed, from_avro(little, '"double"')), failed

    def encode(self, col: Column | str) -> Column:
        from pyspark.sql import functions as F

        c = F.col(col) if isinstance(col, str) else col
        name = "STRING" if self.type is None else self.type.name
        if name == "STRING":
            return c.cast("string").cast("binary")
        if name == "BYTES":
            return c.cast("binary")
        if name == "BIGINT":
            return F.unhex(F.lpad(F.hex(c.cast("bigint")), 16, "0"))
        if name == "INT":
            return F.unhex(F.substring(F.lpad(F.hex(c.cast("int").cast("bigint")), 16, "0"), 9, 8))
        from pyspark.sql.avro.functions import to_avro

        d = c.cast("double")
        big = F.unhex(_reverse_bytes_hex(F.hex(to_avro(d, '"double"')), 8))
        # Kafka's DoubleSerializer writes the canonical NaN (Double.doubleToLongBits).
        return F.when(F.isnan(d), F.lit(struct.pack(">d", math.nan))).otherwise(big)


class UndeclaredKafkaKey(KafkaFormat):
    """KAFKA keys without a declared type, as a source reads them: any UTF-8 text, and
    8 bytes of any kind (most integers' 8 bytes are not UTF-8: 200 is ``00 .. 00 C8``).
    The Spark column holds the record's bytes as a STRING (Spark does not check that a
    STRING is UTF-8); the runtime reads them as
    :func:`~tablestream.storage.undeclared.undeclared_key` does.

    >>> UndeclaredKafkaKey().deserialize((200).to_bytes(8, "big"))
    200
    """

    def __init__(self) -> None:
        super().__init__(None)

    def deserialize(self, data: bytes | None) -> Any:
        if data is not None and len(data) == 8:
            return undeclared_key(bytes(data))
        return super().deserialize(data)

    def _decode(self, raw: Column) -> tuple[Column, Column]:
        from pyspark.sql import functions as F

        return raw.cast("string"), ~F.is_valid_utf8(raw) & (F.length(raw) != 8)


def _reverse_bytes_hex(hex_col: Column, width: int) -> Column:
    from pyspark.sql import functions as F

    return F.concat(*[F.substring(hex_col, 2 * i + 1, 2) for i in reversed(range(width))])


def _utf8(value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise SerializationError(f"cannot encode the string as UTF-8: {e}") from None


def _serialize_inferred(value: Any) -> bytes:
    if isinstance(value, str):
        return _utf8(value)
    if isinstance(value, bool):
        raise SerializationError(
            "the KAFKA format has no BOOLEAN: declare a type, or pass str, int, float or bytes"
        )
    if isinstance(value, int):
        if not BIGINT_RANGE[0] <= value <= BIGINT_RANGE[1]:
            raise SerializationError(f"expected BIGINT, got {value} (out of range)")
        return struct.pack(">q", value)
    if isinstance(value, float):
        return struct.pack(">d", value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise SerializationError(
        f"the KAFKA format without a declared type takes str, int, float or bytes, got {type(value).__name__}"
    )

"""Reading KAFKA-format bytes whose type was never declared."""

from __future__ import annotations

from ..errors import SerializationError

#: A Java regular expression (Spark's ``rlike``) that finds a character Python's
#: ``str.isprintable`` rejects: the Unicode categories "Other" and "Separator" but the
#: space, so Spark reads undeclared bytes as :func:`undeclared_kafka_value` does.
NON_PRINTABLE = r"[\p{C}\p{Z}&&[^ ]]"


def undeclared_kafka_value(data: bytes) -> str | int:
    """Read a KAFKA-format key or value whose type was not declared, as ``produce``
    writes it: printable UTF-8 text is a STRING; other 8-byte values are a BIGINT
    (Kafka's LongSerializer). Declare the type (``--key-schema BIGINT``) to read
    exactly that type.

    >>> undeclared_kafka_value(b"alice"), undeclared_kafka_value((42).to_bytes(8, "big"))
    ('alice', 42)
    """
    try:
        text = data.decode("utf-8")
        if text.isprintable():
            return text
    except UnicodeDecodeError:
        pass
    if len(data) == 8:
        return int.from_bytes(data, "big", signed=True)
    raise SerializationError(
        f"{len(data)} bytes that are neither printable UTF-8 text nor a BIGINT; declare the type"
    )

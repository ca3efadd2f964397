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
    value = _printable_or_bigint(data)
    if value is None:
        raise SerializationError(
            f"{len(data)} bytes that are neither printable UTF-8 text nor a BIGINT; declare the type"
        )
    return value


def undeclared_key(data: bytes) -> str | int:
    """An undeclared KAFKA key as the runtime holds it (a source reads any UTF-8 text, and
    8 bytes of any kind): as :func:`undeclared_kafka_value` reads it, and other text as a
    STRING. A Python callable receives a record's key so.

    >>> undeclared_key((200).to_bytes(8, "big")), undeclared_key(b"\\x01\\x02")
    (200, '\\x01\\x02')
    """
    value = _printable_or_bigint(data)
    return data.decode("utf-8") if value is None else value


def _printable_or_bigint(data: bytes) -> str | int | None:
    try:
        text = data.decode("utf-8")
        if text.isprintable():
            return text
    except UnicodeDecodeError:
        pass
    if len(data) == 8:
        return int.from_bytes(data, "big", signed=True)
    return None

"""Python values of SQL types: checking what users give, converting what formats read.

The Python value of each type (what ``deserialize`` returns and ``serialize`` takes):

=============  ===========================================================
BOOLEAN        ``bool``
INT, BIGINT    ``int`` (range-checked: 32 and 64 bits)
DOUBLE         ``float`` (an ``int`` is accepted on input)
STRING         ``str``
BYTES          ``bytes`` (``bytearray``/``memoryview`` accepted on input)
DECIMAL(p,s)   ``decimal.Decimal`` with exactly ``s`` digits after the point
               (input is rounded half-up to ``s`` digits, as Spark does)
DATE           ``datetime.date`` (an ``int`` of days since 1970-01-01 accepted)
TIMESTAMP      ``datetime.datetime`` in UTC, aware, millisecond precision (a naive
               datetime is taken as UTC; an ``int`` of epoch milliseconds accepted)
ARRAY<T>       ``list``
MAP<STRING,T>  ``dict`` with ``str`` keys
STRUCT<...>    ``dict`` of every field (a missing field is ``None``)
=============  ===========================================================

Errors name the field path (``address.zip``, ``tags[2]``, ``attrs['k']``) and the value.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation, localcontext
from typing import Any

from ...errors import SerializationError
from ...schema import (
    ArrayType,
    DecimalType,
    MapType,
    PrimitiveType,
    SqlType,
    StructType,
)

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_DATE = dt.date(1970, 1, 1)
INT_RANGE = (-(2**31), 2**31 - 1)
BIGINT_RANGE = (-(2**63), 2**63 - 1)


def fail(path: str, message: str) -> SerializationError:
    return SerializationError(f"field '{path}': {message}" if path else message)


def show(value: Any) -> str:
    """A short rendering of a bad value for an error message."""
    if isinstance(value, str):
        text = f"'{value}'"
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, float, Decimal)):
        text = str(value)
    elif isinstance(value, (list, dict)):
        try:
            text = json.dumps(value, default=str, separators=(",", ":"), ensure_ascii=False)
        except (TypeError, ValueError):
            text = repr(value)
    else:
        text = f"{type(value).__name__} {value!r}"
    return text if len(text) <= 60 else text[:57] + "..."


def join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def expected(t: SqlType, value: Any, path: str, why: str = "") -> SerializationError:
    return fail(path, f"expected {t}, got {show(value)}{why}")


# --- shared leaf conversions --------------------------------------------------------


def check_int(value: int, t: PrimitiveType, path: str) -> int:
    low, high = INT_RANGE if t.name == "INT" else BIGINT_RANGE
    if not low <= value <= high:
        raise expected(t, value, path, " (out of range)")
    return value


def to_decimal(value: Decimal, t: DecimalType, path: str, shown: Any = None) -> Decimal:
    """Round half-up to the scale (as Spark does) and check the precision."""
    shown = value if shown is None else shown
    if not value.is_finite():
        raise expected(t, shown, path)
    with localcontext() as ctx:
        ctx.prec = 200  # the default 28 digits cannot hold DECIMAL(38, s)
        try:
            rounded = value.quantize(Decimal(1).scaleb(-t.scale), rounding=ROUND_HALF_UP)
        except InvalidOperation:
            raise expected(t, shown, path, " (does not fit)") from None
    if len(rounded.as_tuple().digits) > t.precision:
        raise expected(t, shown, path, " (does not fit)")
    return rounded


def days_to_date(days: int, t: SqlType, path: str) -> dt.date:
    try:
        return EPOCH_DATE + dt.timedelta(days=days)
    except OverflowError:
        raise expected(t, days, path, " (out of range)") from None


def date_to_days(value: dt.date) -> int:
    return (value - EPOCH_DATE).days


def millis_to_timestamp(millis: int, t: SqlType, path: str) -> dt.datetime:
    try:
        return EPOCH + dt.timedelta(milliseconds=millis)
    except OverflowError:
        raise expected(t, millis, path, " (out of range)") from None


def timestamp_to_millis(value: dt.datetime) -> int:
    delta = value - EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


# --- checking a Python value before writing it ------------------------------------------


def normalize(value: Any, t: SqlType, path: str = "") -> Any:
    """Check ``value`` against ``t`` and return its canonical Python value (see module doc)."""
    if value is None:
        return None
    if isinstance(t, PrimitiveType):
        return _normalize_primitive(value, t, path)
    if isinstance(t, DecimalType):
        if isinstance(value, bool):
            raise expected(t, value, path)
        if isinstance(value, Decimal):
            return to_decimal(value, t, path)
        if isinstance(value, int):
            return to_decimal(Decimal(value), t, path)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise expected(t, value, path)
            return to_decimal(Decimal(repr(value)), t, path, value)
        if isinstance(value, str):
            try:
                return to_decimal(Decimal(value.strip()), t, path, value)
            except InvalidOperation:
                raise expected(t, value, path) from None
        raise expected(t, value, path)
    if isinstance(t, ArrayType):
        if not isinstance(value, (list, tuple)):
            raise expected(t, value, path)
        return [normalize(v, t.element, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(t, MapType):
        if not isinstance(value, Mapping):
            raise expected(t, value, path)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise fail(path, f"MAP keys must be strings, got {show(k)}")
            out[k] = normalize(v, t.value, f"{path}['{k}']")
        return out
    if isinstance(t, StructType):
        if not isinstance(value, Mapping):
            raise (
                expected(t, value, path)
                if path
                else SerializationError(
                    f"expected a dict of the columns ({', '.join(t.names)}), got {show(value)}"
                )
            )
        names = t.names
        unknown = [k for k in value if k not in names]
        if unknown:
            raise (
                fail(path, f"unknown field '{unknown[0]}' (fields: {', '.join(names)})")
                if path
                else SerializationError(
                    f"unknown column '{unknown[0]}' (columns: {', '.join(names)})"
                )
            )
        return {f.name: normalize(value.get(f.name), f.type, join(path, f.name)) for f in t.fields}
    raise fail(path, f"unsupported type {t}")


def _normalize_primitive(value: Any, t: PrimitiveType, path: str) -> Any:
    name = t.name
    if name == "BOOLEAN":
        if isinstance(value, bool):
            return value
    elif name in ("INT", "BIGINT"):
        if isinstance(value, int) and not isinstance(value, bool):
            return check_int(int(value), t, path)
    elif name == "DOUBLE":
        if isinstance(value, float):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:
                raise expected(t, value, path, " (out of range)") from None
    elif name == "STRING":
        if isinstance(value, str):
            return value
    elif name == "BYTES":
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value)
    elif name == "DATE":
        if isinstance(value, dt.datetime):
            raise fail(
                path, f"expected DATE (a datetime.date), got the datetime {value.isoformat()}"
            )
        if isinstance(value, dt.date):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return days_to_date(value, t, path)
    elif name == "TIMESTAMP":
        if isinstance(value, dt.datetime):
            aware = value.replace(tzinfo=dt.timezone.utc) if value.tzinfo is None else value
            return millis_to_timestamp(timestamp_to_millis(aware), t, path)
        if isinstance(value, int) and not isinstance(value, bool):
            return millis_to_timestamp(value, t, path)
    raise expected(t, value, path)


# --- JSON ---------------------------------------------------------------------------

_JSON_WS = " \t\n\r"
DOUBLE_WORDS = {
    "NaN": math.nan,
    "Infinity": math.inf,
    "+Infinity": math.inf,
    "+INF": math.inf,
    "-Infinity": -math.inf,
    "-INF": -math.inf,
}


class _Object(dict):
    """A JSON object that keeps the members a later one of the same name replaced
    (``replaced``): Spark's ``from_json`` converts every occurrence of a field or map
    key, so an invalid earlier one makes the record invalid though the last one wins."""

    replaced: tuple[tuple[str, Any], ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> dict:
    obj = _Object(pairs)
    if len(obj) < len(pairs):
        last = {name: i for i, (name, _) in enumerate(pairs)}
        obj.replaced = tuple(pair for i, pair in enumerate(pairs) if last[pair[0]] != i)
    return obj


_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=float, object_pairs_hook=_object)


class _NonNumeric(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _NonNumeric(name)


# Without a schema the check is Spark's try_parse_json, which rejects NaN and Infinity.
_PLAIN_DECODER = json.JSONDecoder(parse_constant=_reject_constant)


def json_error(e: json.JSONDecodeError) -> SerializationError:
    return SerializationError(f"line {e.lineno} column {e.colno}: {e.msg}")


def load_json(text: str, *, exact_numbers: bool, trailing: str) -> Any:
    """Parse one JSON document, reading past its end as Jackson (Spark, ksqlDB) does.

    ``trailing`` says what may follow the first complete value: ``"none"``; ``"object"``
    (anything after a top-level object, as ``from_json`` reads a record); ``"any"``
    (anything after any value, as ``try_parse_json`` reads, except that a number must be
    followed by whitespace, as Jackson requires at the root).
    """
    decoder = _DECODER if exact_numbers else _PLAIN_DECODER
    start = len(text) - len(text.lstrip(_JSON_WS))
    try:
        value, end = decoder.raw_decode(text, start)
        after = text[end:]
        rest = after.lstrip(_JSON_WS)
        if rest:
            number = isinstance(value, (int, float, Decimal)) and not isinstance(value, bool)
            allowed = (trailing == "object" and isinstance(value, dict)) or (
                trailing == "any" and not (number and rest == after)
            )
            if not allowed:
                raise json.JSONDecodeError("Extra data", text, end + len(after) - len(rest))
    except json.JSONDecodeError as e:
        raise json_error(e) from None
    except _NonNumeric as e:
        raise SerializationError(f"{e} is not valid JSON") from None
    except RecursionError:
        raise SerializationError("JSON nested too deeply") from None
    return value


def from_json_value(value: Any, t: SqlType, path: str = "") -> Any:
    """Convert a parsed JSON value (numbers as int/Decimal) to the Python value of ``t``,
    accepting what Spark's ``from_json`` accepts."""
    if value is None:
        return None
    if isinstance(t, PrimitiveType):
        name = t.name
        if name == "BOOLEAN":
            if isinstance(value, bool):
                return value
        elif name in ("INT", "BIGINT"):
            if isinstance(value, int) and not isinstance(value, bool):
                return check_int(value, t, path)
        elif name == "DOUBLE":
            if isinstance(value, (int, Decimal, float)) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, str) and value in DOUBLE_WORDS:
                return DOUBLE_WORDS[value]
        elif name == "STRING":
            if isinstance(value, str):
                return value
            # Spark keeps the JSON text of a non-string value (ksqlDB does the same).
            return json.dumps(_floats(value), separators=(",", ":"), ensure_ascii=False)
        elif name == "BYTES":
            if isinstance(value, str):
                decoded = decode_base64(value)
                if decoded is not None:
                    return decoded
                raise fail(path, f"expected BYTES (base64), got {show(value)}")
        elif name == "DATE":
            if isinstance(value, int) and not isinstance(value, bool):
                return days_to_date(value, t, path)
        elif name == "TIMESTAMP":
            if isinstance(value, int) and not isinstance(value, bool):
                return millis_to_timestamp(value, t, path)
        raise expected(t, value, path)
    if isinstance(t, DecimalType):
        if isinstance(value, (int, Decimal)) and not isinstance(value, bool):
            return to_decimal(Decimal(value), t, path)
        if isinstance(value, str):
            try:
                parsed = Decimal(value)
            except InvalidOperation:
                raise expected(t, value, path) from None
            return to_decimal(parsed, t, path, value)
        raise expected(t, value, path)
    if isinstance(t, ArrayType):
        if not isinstance(value, list):
            raise expected(t, value, path)
        return [from_json_value(v, t.element, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(t, MapType):
        if not isinstance(value, dict):
            raise expected(t, value, path)
        for k, replaced in getattr(value, "replaced", ()):
            from_json_value(replaced, t.value, f"{path}['{k}']")
        return {k: from_json_value(v, t.value, f"{path}['{k}']") for k, v in value.items()}
    if isinstance(t, StructType):
        if not isinstance(value, dict):
            if not path:
                raise SerializationError(f"expected a JSON object, got {show(_floats(value))}")
            raise expected(t, value, path)
        replaced = getattr(value, "replaced", ())
        if replaced:
            types = {f.name: f.type for f in t.fields}
            for name, earlier in replaced:
                if name in types:
                    from_json_value(earlier, types[name], join(path, name))
        return {
            f.name: from_json_value(value.get(f.name), f.type, join(path, f.name)) for f in t.fields
        }
    raise fail(path, f"unsupported type {t}")


def _floats(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value


def emit_json(value: Any, t: SqlType) -> str:
    """JSON text of a normalized value, laid out as Spark's ``to_json`` writes it
    (compact, fields in schema order, explicit nulls, NaN/Infinity as strings)."""
    if value is None:
        return "null"
    if isinstance(t, PrimitiveType):
        name = t.name
        if name == "BOOLEAN":
            return "true" if value else "false"
        if name in ("INT", "BIGINT"):
            return str(value)
        if name == "DOUBLE":
            return format_double_json(value)
        if name == "STRING":
            return json.dumps(value, ensure_ascii=False)
        if name == "BYTES":
            return '"' + base64.b64encode(value).decode("ascii") + '"'
        if name == "DATE":
            return str(date_to_days(value))
        if name == "TIMESTAMP":
            return str(timestamp_to_millis(value))
    if isinstance(t, DecimalType):
        return format(value, "f")
    if isinstance(t, ArrayType):
        return "[" + ",".join(emit_json(v, t.element) for v in value) + "]"
    if isinstance(t, MapType):
        return (
            "{"
            + ",".join(
                json.dumps(k, ensure_ascii=False) + ":" + emit_json(v, t.value)
                for k, v in value.items()
            )
            + "}"
        )
    if isinstance(t, StructType):
        return (
            "{"
            + ",".join(
                json.dumps(f.name, ensure_ascii=False) + ":" + emit_json(value[f.name], f.type)
                for f in t.fields
            )
            + "}"
        )
    raise SerializationError(f"unsupported type {t}")


def format_double_json(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return repr(value)


def emit_any_json(value: Any, path: str = "") -> str:
    """JSON text of an arbitrary Python value (a JSON topic without a declared schema)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise fail(path, f"{value} is not valid JSON")
        return repr(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise fail(path, f"{value} is not valid JSON")
        return format(value, "f")
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(emit_any_json(v, f"{path}[{i}]") for i, v in enumerate(value)) + "]"
    if isinstance(value, Mapping):
        parts = []
        for k, v in value.items():
            if not isinstance(k, str):
                raise fail(path, f"JSON object keys must be strings, got {show(k)}")
            parts.append(json.dumps(k, ensure_ascii=False) + ":" + emit_any_json(v, join(path, k)))
        return "{" + ",".join(parts) + "}"
    raise fail(path, f"cannot write {type(value).__name__} as JSON")


# --- text forms (DELIMITED) ---------------------------------------------------------------

# Number texts both sides accept (Python's int()/float() and Spark's casts each take
# more, e.g. "1_000" and "1.5d"); spaces around are allowed, other whitespace is not.
INT_TEXT = r" *[+-]?[0-9]+ *"
DOUBLE_TEXT = r" *(?:[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?)|[nN][aA][nN]) *"
DECIMAL_TEXT = r" *[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)? *"
BASE64_TEXT = r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?"
_INT = re.compile(INT_TEXT)
_DOUBLE = re.compile(DOUBLE_TEXT)
_DECIMAL = re.compile(DECIMAL_TEXT)
_BASE64 = re.compile(BASE64_TEXT)


def decode_base64(text: str) -> bytes | None:
    if not _BASE64.fullmatch(text):
        return None
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        return None


def to_text(value: Any, t: SqlType) -> str:
    """Text form of a normalized primitive value, as ksqlDB's DELIMITED writes it:
    DATE as epoch days, TIMESTAMP as epoch millis, BYTES as base64, DECIMAL plain."""
    if value is None:
        return ""
    if isinstance(t, DecimalType):
        return format(value, "f")
    name = t.name  # type: ignore[attr-defined]
    if name == "BOOLEAN":
        return "true" if value else "false"
    if name == "DOUBLE":
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if name == "BYTES":
        return base64.b64encode(value).decode("ascii")
    if name == "DATE":
        return str(date_to_days(value))
    if name == "TIMESTAMP":
        return str(timestamp_to_millis(value))
    return str(value)


def from_text(text: str, t: SqlType, path: str) -> Any:
    """Parse one non-empty DELIMITED field."""
    if isinstance(t, DecimalType):
        if not _DECIMAL.fullmatch(text):
            raise expected(t, text, path)
        return to_decimal(Decimal(text.strip(" ")), t, path, text)
    name = t.name  # type: ignore[attr-defined]
    if name == "STRING":
        return text
    if name == "BOOLEAN":
        word = text.strip(" ").lower()
        if word in ("true", "false"):
            return word == "true"
    elif name in ("INT", "BIGINT"):
        if _INT.fullmatch(text):
            value = int(text.strip(" "))
            low, high = INT_RANGE if name == "INT" else BIGINT_RANGE
            if not low <= value <= high:
                raise expected(t, text, path, " (out of range)")
            return value
    elif name == "DOUBLE":
        if _DOUBLE.fullmatch(text):
            return float(text.strip(" "))
    elif name == "BYTES":
        decoded = decode_base64(text)
        if decoded is not None:
            return decoded
        raise fail(path, f"expected BYTES (base64), got {show(text)}")
    elif name == "DATE":
        if _INT.fullmatch(text) and INT_RANGE[0] <= int(text.strip(" ")) <= INT_RANGE[1]:
            return days_to_date(int(text.strip(" ")), t, path)
    elif name == "TIMESTAMP":
        if _INT.fullmatch(text) and BIGINT_RANGE[0] <= int(text.strip(" ")) <= BIGINT_RANGE[1]:
            return millis_to_timestamp(int(text.strip(" ")), t, path)
    raise expected(t, text, path)

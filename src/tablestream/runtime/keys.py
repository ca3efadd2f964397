"""Join keys on Spark: the bytes by which a key or a foreign key meets the keys of the
table it looks up, converted to that table's key type (the rule of
:mod:`tablestream.plan.keys`: a string to STRING, an integer to INT or BIGINT in range,
a floating-point number to DOUBLE, another type to itself).

A side's keys take one of three forms in a frame (:class:`KeyForm`): typed Spark
values; ``undeclared`` KAFKA keys (a STRING column holding the record's bytes, UTF-8 or
not, read as :func:`~tablestream.storage.undeclared.undeclared_key` reads them:
printable text is a STRING, other 8 bytes a BIGINT); or JSON text (a Python callable's
result, a schemaless JSON key). Two sides of one form meet on the bytes they always had
(an undeclared key's canonical bytes are those of the value it reads as, equal exactly
when its bytes are); across forms the converted value's canonical bytes
(:func:`~tablestream.runtime.frames.canonical_bytes`) are compared, and a value that does
not convert matches nothing and gets a reason for the processing log. Every conversion
is made of Spark's own functions (no Python on the path of a record).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
)

from ..plan.base import PlanNode
from ..plan.errors import JoinTypeError
from ..plan.keys import (
    UNDECLARED,
    KeyType,
    families_match,
    join_sides,
    mismatch_message,
    record_positions,
)
from ..plan.topology import Topology
from .expressions import ValueShape
from .frames import (
    Frame,
    canonical_bytes,
    json_text,
    key_from_bytes,
    named,
    nullable,
    select,
    undeclared_bigint,
    undeclared_bytes,
    undeclared_long,
    undeclared_of_long,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from .batch import BatchContext
    from .physical import PhysicalPlan

_INTEGERS = {ByteType: 8, ShortType: 16, IntegerType: 32, LongType: 64}
_NAMES = {
    StringType: "STRING", IntegerType: "INT", LongType: "BIGINT", DoubleType: "DOUBLE",
    BooleanType: "BOOLEAN", BinaryType: "BYTES",
}
# Where a key that does not convert waits in a table-table join: beside the converted
# keys (canonical bytes start with '{'), never meeting them.
_OWN_KEY = b"\x00"


@dataclass(frozen=True)
class KeyForm:
    """How one side's keys (or foreign keys) are held in a frame."""

    kind: Literal["typed", "undeclared", "json"]
    dtype: DataType = StringType()

    @property
    def family(self) -> str | None:
        """The family of the values (:func:`tablestream.plan.keys.family`); None for JSON,
        whose values have each their own."""
        if self.kind == "json":
            return None
        if self.kind == "undeclared":
            return UNDECLARED
        if type(self.dtype) in _INTEGERS:
            return "INTEGER"
        if isinstance(self.dtype, (DoubleType, FloatType)):
            return "DOUBLE"
        if isinstance(self.dtype, StringType):
            return "STRING"
        return type_name(self.dtype)

    def __str__(self) -> str:
        if self.kind == "typed":
            return type_name(self.dtype)
        return UNDECLARED if self.kind == "undeclared" else "JSON"


def type_name(dtype: DataType) -> str:
    """A Spark type by its ksqlDB name (``STRUCT<id BIGINT>``)."""
    if isinstance(dtype, StructType):
        return f"STRUCT<{', '.join(f'{f.name} {type_name(f.dataType)}' for f in dtype.fields)}>"
    if isinstance(dtype, ArrayType):
        return f"ARRAY<{type_name(dtype.elementType)}>"
    if isinstance(dtype, MapType):
        return f"MAP<{type_name(dtype.keyType)}, {type_name(dtype.valueType)}>"
    return _NAMES.get(type(dtype)) or dtype.simpleString().upper()


def frame_form(frame: Frame, known: KeyType) -> KeyForm:
    """The form of a frame's keys, given what the plan knows of them."""
    if frame.key_json or known.form == "json":
        return KeyForm("json")
    if frame.key_undeclared:
        return KeyForm("undeclared")
    return KeyForm("typed", frame.key_type)


def value_form(shape: ValueShape) -> KeyForm:
    """The form of an expression's results (a foreign key, a selected key)."""
    return KeyForm("json") if shape.json_text else KeyForm("typed", shape.dtype)


def join_keys(node: PlanNode, topology: Topology, source: KeyForm | Frame, target: Frame, what: str) -> JoinKeys:
    """The :class:`JoinKeys` of a join node: ``source`` is the frame whose keys look up
    ``target``'s, or the form of the expression that gives them (a foreign key)."""
    (source_name, source_type), (target_name, target_type) = join_sides(node, topology.node)
    form = frame_form(source, source_type) if isinstance(source, Frame) else source
    return JoinKeys(node.name, form, frame_form(target, target_type), (source_name, target_name), what)


# ------------------------------------------------------------------------- reading


def _wrapped(text: Column) -> Column:
    """``{"v":<text>}``: JSON text as canonical bytes (a JSON ``null`` is no key)."""
    return F.when(text.isNotNull() & (text != F.lit("null")), F.concat(F.lit('{"v":'), text, F.lit("}")).cast("binary"))


def _parsed(text: Column, dtype: DataType) -> Column:
    return F.from_json(F.concat(F.lit('{"v":'), text, F.lit("}")), StructType([StructField("v", dtype)])).getField("v")


_JSON_INTEGER = r"^\s*-?[0-9]+\s*$"
_JSON_FRACTION = r"^\s*-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?\s*$"


def _json_family(text: Column) -> Column:
    """The family of a JSON value, by its text (for the conversions and the reasons)."""
    first = F.substring(F.ltrim(text), 1, 1)
    return (
        F.when(first == '"', F.lit("STRING"))
        .when(text.rlike(_JSON_INTEGER), F.lit("INTEGER"))
        .when(text.rlike(_JSON_FRACTION), F.lit("DOUBLE"))
        .when(first == "{", F.lit("STRUCT"))
        .when(first == "[", F.lit("ARRAY"))
        .when(first.isin("t", "f"), F.lit("BOOLEAN"))
        .otherwise(F.lit("JSON"))
    )


# ------------------------------------------------------------------------- conversion


@dataclass(frozen=True)
class Converted:
    """A side's keys as join bytes: ``bytes`` (null where there is no key or it does
    not convert) and ``error`` (the reason where a key does not convert; None when every
    key converts)."""

    bytes: Column
    error: Column | None


class JoinKeys:
    """How one join matches: the ``source`` side's keys (a stream's, a left table's, a
    foreign key) converted to the ``target`` table's key type. ``names`` name both sides
    in errors (``orders.product``, ``products.KEY``); ``node`` prefixes the reasons.

    Raises :class:`~tablestream.plan.errors.JoinTypeError` when no key of one type can
    match the other (the plan checked what it could type; Spark types the rest)."""

    def __init__(self, node: str, source: KeyForm, target: KeyForm, names: tuple[str, str], what: str):
        self.node, self.source, self.target, self.names, self.what = node, source, target, names, what
        families = source.family, target.family
        if None not in families and not families_match(*families):  # type: ignore[arg-type]
            raise JoinTypeError(mismatch_message(names[0], str(source), names[1], str(target)))

    @property
    def same(self) -> bool:
        """Both sides already meet on the bytes they have (no conversion)."""
        s, t = self.source, self.target
        if s.kind != t.kind:
            return False
        return s.kind != "typed" or nullable(s.dtype) == nullable(t.dtype)

    def target_bytes(self, col: Column) -> Column:
        """The looked-up table's own keys as join bytes."""
        return _own_bytes(col, self.target)

    def source_bytes(self, col: Column) -> Converted:
        """The source side's keys converted to the target's type."""
        s, t = self.source, self.target
        if self.same or t.kind == "json":
            return Converted(_own_bytes(col, s), None)
        convert = {"typed": self._typed_source, "undeclared": self._undeclared_source, "json": self._json_source}
        converted, total = convert[s.kind](col)
        if total:
            return Converted(converted, None)
        present = col.isNotNull() & (col != F.lit("null")) if s.kind == "json" else col.isNotNull()
        return Converted(converted, F.when(present & converted.isNull(), self._reason(col)))

    def _fits(self, value: Column, bits: int) -> Column | None:
        """Whether an integer of ``bits`` fits the target's integer type (None: always)."""
        target_bits = 64 if self.target.kind == "undeclared" else _INTEGERS[type(self.target.dtype)]
        if bits <= target_bits:
            return None
        return value.between(-(2 ** (target_bits - 1)), 2 ** (target_bits - 1) - 1)

    def _typed_source(self, col: Column) -> tuple[Column, bool]:
        family = self.source.family
        if family == "INTEGER":
            fits = self._fits(col, _INTEGERS[type(self.source.dtype)])
            value = canonical_bytes(col.cast("bigint"))
            return (value, True) if fits is None else (F.when(fits, value), False)
        if family == "DOUBLE":
            return canonical_bytes(col.cast(self.target.dtype)), True
        return canonical_bytes(col), True  # a STRING, or a type equal to the target's

    def _undeclared_source(self, col: Column) -> tuple[Column, bool]:
        bigint = undeclared_bigint(col)
        if self.target.family == "STRING":
            return F.when(~bigint, canonical_bytes(col)), False
        value = undeclared_long(col)
        fits = self._fits(value, 64)
        return F.when(bigint if fits is None else bigint & fits, canonical_bytes(value)), False

    def _json_source(self, col: Column) -> tuple[Column, bool]:
        family = _json_family(col)
        target = self.target
        if target.kind == "undeclared":
            return (
                F.when(family == "STRING", canonical_bytes(_parsed(col, StringType())))
                .when(family == "INTEGER", canonical_bytes(_parsed(col, LongType()))),
                False,
            )
        expected = target.family if target.family in ("STRING", "INTEGER", "DOUBLE") else None
        value = canonical_bytes(_parsed(col, target.dtype))
        return (value if expected is None else F.when(family == expected, value)), False

    def _reason(self, col: Column) -> Column:
        """Why a key does not convert: the key as JSON, its type, the target's."""
        s = self.source
        if s.kind == "typed":
            shown, kind = json_text(col, s.dtype), F.lit(str(s))
        elif s.kind == "undeclared":
            bigint = undeclared_bigint(col)
            shown = F.when(bigint, undeclared_long(col).cast("string")).otherwise(json_text(col, StringType()))
            kind = F.when(bigint, F.lit("BIGINT")).otherwise(F.lit("STRING"))
        else:
            family = _json_family(col)
            shown, kind = col, F.when(family == "INTEGER", F.lit("BIGINT")).otherwise(family)
        table = self.names[1].rpartition(".")[0]
        return F.concat(
            F.lit(f"{self.node}: {self.what} "), shown, F.lit(" ("), kind,
            F.lit(f") cannot match a key of {table} ({self.target})"),
        )

    # ------------------------------------------------------------ table-table joins
    def source_or_own(self, col: Column, own: Column) -> Converted:
        """A left table's keys as join bytes: converted, or where a key does not
        convert its own bytes ``own`` behind a marker, so its row is kept (a left or
        outer join still has a result for it) and meets no right row."""
        converted = self.source_bytes(col)
        if converted.error is None:
            return converted
        kept = F.coalesce(converted.bytes, F.concat(F.lit(_OWN_KEY), own))
        return Converted(kept, converted.error)

    def back(self, kb: Column, frame: Frame) -> Column:
        """The key in the source frame's form of the join bytes ``kb`` (the result key of
        a table-table join; null for a right key no left key can equal)."""
        if self.same:
            return key_from_bytes(kb, frame)
        own = key_from_bytes(F.substring(kb, 2, 2**31 - 1), frame)
        return F.when(F.substring(kb, 1, 1) == F.lit(_OWN_KEY), own).otherwise(_json_as(canonical_text(kb), self.source))

    def back_reason(self, kb: Column) -> Column:
        """Why a right key has no left key of its value (see :meth:`back`)."""
        inner = canonical_text(kb)
        family = _json_family(inner)
        table = self.names[1].rpartition(".")[0]
        left = self.names[0].rpartition(".")[0]
        return F.concat(
            F.lit(f"{self.node}: the key "), inner, F.lit(" ("), F.when(family == "INTEGER", F.lit("BIGINT")).otherwise(family),
            F.lit(f") of {table} cannot be a key of {left} ({self.source})"),
        )


def _own_bytes(col: Column, form: KeyForm) -> Column:
    """A side's keys as the bytes they meet keys of their own form on."""
    if form.kind == "json":
        return _wrapped(col)
    return undeclared_bytes(col) if form.kind == "undeclared" else canonical_bytes(col)


def canonical_text(col: Column) -> Column:
    """The JSON text of the value canonical bytes hold (``{"v":<text>}``)."""
    text = col.cast("string")
    return F.substring(text, F.lit(6), F.length(text) - F.lit(6))


def _json_as(text: Column, form: KeyForm) -> Column:
    """A JSON value (text) in a side's form; null when it has no value of that type."""
    if form.kind == "json":
        return text
    family = _json_family(text)
    if form.kind == "undeclared":
        return F.when(family == "STRING", _parsed(text, StringType())).when(
            family == "INTEGER", undeclared_of_long(_parsed(text, LongType()))
        )
    value = _parsed(text, form.dtype)
    return F.when(family == form.family, value) if form.family in ("STRING", "INTEGER", "DOUBLE") else value


# ------------------------------------------------------------------------- the processing log


def record_bytes(col: Column, dtype: DataType, *, json: bool = False) -> Column:
    """A key or value as a processing-log entry holds it: a string's bytes (an
    undeclared KAFKA key's own), the JSON text of anything else."""
    if json or isinstance(dtype, StringType):
        return col.cast("binary")
    return json_text(col, dtype).cast("binary")


Log = tuple[Column, list[Column]]  # which rows go to the processing log, and their columns


def key_columns(
    converted: Converted, column: str, frame: Frame, value: str, physical: PhysicalPlan, name: str
) -> tuple[dict[str, Column], Log | None]:
    """Columns that add a side's join bytes (``column``) to node ``name``'s ``frame``
    and, when a key may not convert, the reason (``<column>_error``); then the
    :data:`Log` of the rows with a ``value`` whose key does not convert (None when
    every key converts)."""
    columns = {column: converted.bytes}
    if converted.error is None:
        return columns, None
    error = F.col(f"{column}_error")
    columns[f"{column}_error"] = converted.error
    return columns, (F.col(value).isNotNull() & error.isNotNull(), named(log_columns(error, frame, value, physical, name)))


def logged(batch: BatchContext, rows: DataFrame, log: Log | None) -> DataFrame:
    """``rows`` (with :func:`key_columns`), their :data:`Log` entries added to the
    batch's processing log; the rows are then kept once for the log and the join."""
    if log is None:
        return rows
    rows = batch.persist(rows)
    batch.output.errors.append(select(rows.where(log[0]), log[1]))
    return rows


def log_columns(error: Column, frame: Frame, value: str, physical: PhysicalPlan, name: str) -> list[Column]:
    """The processing-log columns (:data:`~tablestream.storage.processing_log.ERROR_COLUMNS`)
    of a row of node ``name``'s ``frame`` whose key does not convert: the record's topic,
    partition and offset when its rows carry them (else null), its timestamp, ``error``,
    and its key and value (column ``value``) as :func:`record_bytes` holds them."""
    if record_positions(physical.topology.node, name):
        where = [
            F.element_at(F.array(*[F.lit(t) for t in physical.topics]), F.col("o_src") + 1).alias("topic"),
            F.col("o_part").cast("int").alias("partition"),
            F.col("o_off").cast("bigint").alias("offset"),
        ]
    else:
        where = [F.lit(None).cast(t).alias(c) for c, t in (("topic", "string"), ("partition", "int"), ("offset", "bigint"))]
    return [
        *where,
        F.col("ts").cast("bigint").alias("timestamp"),
        error.alias("error"),
        record_bytes(F.col("key"), frame.key_type, json=frame.key_json).alias("key"),
        record_bytes(F.col(value), frame.value.dtype, json=frame.value.json_text).alias("value"),
    ]

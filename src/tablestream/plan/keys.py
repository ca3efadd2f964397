"""The types of join keys, as far as the plan knows them, and the rule that says which
can match.

Every join compares a key (a stream's, a left table's) or a foreign key with the keys
of the table it looks up, converted to that table's key type. Values of one *kind*
convert: a string to ``STRING``, an integer to ``INT`` or ``BIGINT`` (in range), a
floating-point number to ``DOUBLE``; other types only to themselves. A ``KAFKA`` key
without a key schema is read as ``produce`` writes it (printable UTF-8 text a
``STRING``, other 8 bytes a ``BIGINT``; :mod:`tablestream.storage.undeclared`), so it
meets strings and integers.

When both types are known while the plan is built and no value of one can match the
other, the join is refused here, as ksqlDB refuses it (its text is ``Invalid join
condition: types don't match. Got LEFT_TABLE.FK{STRING} = RIGHT_TABLE.ID{BIGINT}.``).
A Python callable's result and a Spark Column have no type until the job runs: the
runtime applies the same rule to the Spark types before the first batch
(:mod:`tablestream.runtime.keys`), and sends each value that does not convert to the
processing log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from tablestream.errors import SchemaError
from tablestream.plan import aggregate, joins, sources, stateless
from tablestream.plan.base import PlanNode
from tablestream.plan.errors import JoinTypeError
from tablestream.plan.expr import RECORD, Expr, ExprRef, KeyValueExpr, SqlExpr, record_column
from tablestream.schema import (
    BIGINT,
    INT,
    PrimitiveType,
    Schema,
    SqlType,
    StructType,
    parse_schema_or_type,
)

__all__ = [
    "KeyType",
    "check_join",
    "expression_type",
    "family",
    "families_match",
    "join_sides",
    "key_type",
    "mismatch_message",
    "record_positions",
]

NodeOf = Callable[[str], PlanNode]

# Families of values that convert into each other's types.
STRING_FAMILY, INTEGER_FAMILY, DOUBLE_FAMILY = "STRING", "INTEGER", "DOUBLE"
UNDECLARED = "STRING or BIGINT (KAFKA, no key_schema)"

# Nodes whose records keep their parent's key (and, but for value mappers, their value).
_SAME_KEY = (
    stateless.Filter, stateless.Peek, stateless.MapValues, stateless.FlatMapValues, stateless.Split,
    stateless.Branch, stateless.Repartition, stateless.TableFilter, stateless.TableMapValues,
    stateless.ToStream, stateless.ToTable, joins.StreamTableJoin, joins.StreamGlobalTableJoin,
    aggregate.AggregateNode,
)
_SAME_VALUE = (
    stateless.Filter, stateless.Peek, stateless.Split, stateless.Branch, stateless.Repartition,
    stateless.TableFilter, stateless.ToStream, stateless.ToTable,
)
_SOURCES = (sources.StreamSource, sources.TableSource, sources.GlobalTableSource)


@dataclass(frozen=True, slots=True)
class KeyType:
    """What the plan knows of a key: ``declared`` (``type``), ``undeclared`` (a KAFKA
    key without schema: a STRING or a BIGINT as read), ``json`` (JSON text of any value:
    a Python callable's result, a schemaless JSON key) or ``computed`` (a Spark
    expression: typed only when the job runs). ``of`` names the stream or table it
    belongs to (its topic when it is a source's key), for messages."""

    form: Literal["declared", "undeclared", "json", "computed"]
    type: SqlType | None = None
    of: str = ""

    def __str__(self) -> str:
        if self.form == "declared":
            return str(self.type)
        return UNDECLARED if self.form == "undeclared" else self.form


def family(t: SqlType) -> str:
    """The family of values a declared type holds (another type is its own family).

    >>> family(BIGINT), family(parse_schema_or_type("INT")), family(parse_schema_or_type("STRUCT<a INT>"))
    ('INTEGER', 'INTEGER', 'STRUCT<a INT>')
    """
    if isinstance(t, PrimitiveType) and t.name in ("INT", "BIGINT"):
        return INTEGER_FAMILY
    if isinstance(t, PrimitiveType) and t.name in ("STRING", "DOUBLE"):
        return t.name
    return str(t)


def families_match(source: str, target: str) -> bool:
    """Whether a value of the family ``source`` can match a key of the family ``target``;
    :data:`UNDECLARED` on either side stands for the strings and integers it holds.

    >>> families_match("INTEGER", UNDECLARED), families_match("DOUBLE", "INTEGER")
    (True, False)
    """
    if source == UNDECLARED or target == UNDECLARED:
        other = target if source == UNDECLARED else source
        return other in (UNDECLARED, STRING_FAMILY, INTEGER_FAMILY)
    return source == target


def mismatch_message(source: str, source_type: str, target: str, target_type: str) -> str:
    """ksqlDB's error for a join whose two sides can never match, and the way out.

    >>> mismatch_message("orders.product", "STRING", "products.KEY", "BIGINT")  # doctest: +NORMALIZE_WHITESPACE
    "Invalid join condition: types don't match. Got orders.product{STRING} = products.KEY{BIGINT}.
    Declare the key_schema and value_schema the records are written with, or convert one side (CAST)."
    """
    return (
        f"Invalid join condition: types don't match. Got {source}{{{source_type}}} = {target}{{{target_type}}}. "
        "Declare the key_schema and value_schema the records are written with, or convert one side (CAST)."
    )


# ----------------------------------------------------------------------------- key types


def key_type(node_of: NodeOf, name: str) -> KeyType:
    """The type of the keys of node ``name``'s records or rows."""
    node = node_of(name)
    if isinstance(node, _SOURCES):
        return _source_key(node)
    if isinstance(node, _SAME_KEY):
        return key_type(node_of, node.parent)
    if isinstance(node, (joins.TableTableJoin, joins.ForeignKeyJoin)):
        return key_type(node_of, node.left)
    if isinstance(node, stateless.SelectKey):
        return _retyped(expression_type(node.selector, node_of, node.parent), name)
    if isinstance(node, (stateless.Map, aggregate.TableGroupBy)):
        mapper = node.mapper
        if isinstance(mapper, KeyValueExpr):
            return _retyped(expression_type(mapper.key, node_of, node.parent), name)
        return KeyType("json", of=name)
    if isinstance(node, stateless.FlatMap):
        return KeyType("json" if _is_callable(node.mapper) else "computed", of=name)
    if isinstance(node, stateless.Merge):
        parents = [key_type(node_of, p) for p in node.parents]
        same = all((p.form, p.type) == (parents[0].form, parents[0].type) for p in parents)
        return KeyType(parents[0].form, parents[0].type, name) if same else KeyType("computed", of=name)
    return KeyType("computed", of=name)


def _retyped(t: KeyType, of: str) -> KeyType:
    return KeyType(t.form, t.type, of)


def _source_key(node: sources.StreamSource | sources.TableSource | sources.GlobalTableSource) -> KeyType:
    of = node.topics[0] if len(node.topics) == 1 else node.name
    if node.key_schema is None:
        form = {"KAFKA": "undeclared", "JSON": "json"}.get(node.key_format, "computed")
        return KeyType(form, of=of)  # type: ignore[arg-type]
    t = _declared(node.key_schema, unwrap=node.key_format == "KAFKA")
    return KeyType("computed", of=of) if t is None else KeyType("declared", t, of)


def _declared(schema: str, *, unwrap: bool) -> SqlType | None:
    """A schema's type (a column list is a struct, KAFKA's one column its type)."""
    try:
        parsed = parse_schema_or_type(schema)
    except SchemaError:
        return None  # the source rule reports it
    if isinstance(parsed, Schema):
        return parsed.columns[0].type if unwrap and len(parsed) == 1 else parsed.as_struct()
    return parsed


def value_type(node_of: NodeOf, name: str) -> SqlType | None:
    """The declared type of node ``name``'s values, when it is known."""
    node = node_of(name)
    if isinstance(node, _SOURCES):
        if node.value_schema is None:
            return None
        return _declared(node.value_schema, unwrap=node.value_format == "KAFKA")
    if isinstance(node, _SAME_VALUE):
        return value_type(node_of, node.parent)
    return None


def expression_type(expr: Expr, node_of: NodeOf, name: str) -> KeyType:
    """The type of ``expr`` (a foreign key, a key selector) over node ``name``'s records:
    a field of a declared value, ``key`` (undeclared when the key is), ``rowtime`` or a
    CAST is typed here; a callable gives JSON; anything else only Spark types."""
    if isinstance(expr, ExprRef):
        return KeyType("json" if expr.kind == "callable" else "computed", of=key_type(node_of, name).of)
    key = key_type(node_of, name)
    tree = expr.tree()
    if key.form == "undeclared" and record_column(tree) == "key":
        return KeyType("undeclared", of=key.of)  # the key as it is
    t = _sql_type(tree, node_of, name)
    return KeyType("computed", of=key.of) if t is None else KeyType("declared", t, key.of)


_CASTS = {
    exp.DataType.Type.TEXT: "STRING", exp.DataType.Type.VARCHAR: "STRING", exp.DataType.Type.CHAR: "STRING",
    exp.DataType.Type.INT: "INT", exp.DataType.Type.BIGINT: "BIGINT", exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
}


def _sql_type(tree: exp.Expr, node_of: NodeOf, name: str) -> SqlType | None:
    if isinstance(tree, exp.Cast):
        cast = _CASTS.get(tree.to.this)
        return None if cast is None else parse_schema_or_type(cast)  # type: ignore[return-value]
    if not isinstance(tree, exp.Column):
        return None
    field = tree.name.lower()
    table = tree.table.lower() if tree.table else ""
    value = value_type(node_of, name)
    if table == RECORD:
        if field in ("partition", "offset"):
            return INT if field == "partition" else BIGINT
        table = ""  # the record's own column (below), never a field of the value
    elif not table and isinstance(value, StructType) and any(f.name.lower() == field for f in value.fields):
        table = "value"  # a field of the value takes the bare name, as at run time
    if not table:
        if field == "key":
            key = key_type(node_of, name)
            return key.type if key.form == "declared" else None
        if field == "rowtime":
            return BIGINT
        if field == "value":
            return value
    elif table != "value":
        return None
    if isinstance(value, StructType):
        for f in value.fields:
            if f.name.lower() == field:
                return f.type
    return None


def _is_callable(expr: Expr) -> bool:
    return isinstance(expr, ExprRef) and expr.kind == "callable"


# ----------------------------------------------------------------------------- joins


def join_sides(node: PlanNode, node_of: NodeOf) -> tuple[tuple[str, KeyType], tuple[str, KeyType]]:
    """A join's two sides for the key rule: what is converted (named for messages, with
    its type) and the keys of the table it looks up."""
    if isinstance(node, joins.ForeignKeyJoin):
        source = expression_type(node.foreign_key, node_of, node.left)
        return (f"{source.of}.{_expr_name(node.foreign_key)}", source), _key_side(node_of, node.right)
    if isinstance(node, joins.StreamGlobalTableJoin):
        source = expression_type(node.key_selector, node_of, node.parent)
        return (f"{source.of}.{_expr_name(node.key_selector)}", source), _key_side(node_of, node.table)
    if isinstance(node, joins.StreamTableJoin):
        return _key_side(node_of, node.parent), _key_side(node_of, node.table)
    if isinstance(node, joins.TableTableJoin):
        return _key_side(node_of, node.left), _key_side(node_of, node.right)
    raise TypeError(f"{node.name} is not a join")


def _key_side(node_of: NodeOf, name: str) -> tuple[str, KeyType]:
    t = key_type(node_of, name)
    return f"{t.of}.KEY", t


def _expr_name(expr: Expr) -> str:
    return expr.sql if isinstance(expr, SqlExpr) else expr.description


def _known_family(t: KeyType) -> str | None:
    if t.form == "declared":
        assert t.type is not None
        return family(t.type)
    return UNDECLARED if t.form == "undeclared" else None


def check_join(node: PlanNode, node_of: NodeOf) -> None:
    """Refuse a join whose key types are both known and can never match."""
    (source_name, source), (target_name, target) = join_sides(node, node_of)
    families = _known_family(source), _known_family(target)
    if None in families or families_match(*families):  # type: ignore[arg-type]
        return
    raise JoinTypeError(mismatch_message(source_name, str(source), target_name, str(target)))


def record_positions(node_of: NodeOf, name: str) -> bool:
    """Whether node ``name``'s rows carry the topic, partition and offset of the record
    they come from (an aggregate's or a table join's results do not)."""
    node = node_of(name)
    if isinstance(node, _SOURCES):
        return True
    if isinstance(node, (aggregate.AggregateNode, aggregate.TableGroupBy, joins.TableTableJoin, joins.ForeignKeyJoin)):
        return False
    parents = node.parents if isinstance(node, stateless.Merge) else node.parents[:1]
    return all(record_positions(node_of, p) for p in parents)

"""The logical plan: frozen, printable nodes that the DSL and the SQL front end build and the
runtime compiles, one rule per node class. Imports no pyspark.

Modules by operator family: :mod:`~tablestream.plan.sources`,
:mod:`~tablestream.plan.stateless`, :mod:`~tablestream.plan.aggregate`,
:mod:`~tablestream.plan.sinks`; expressions in :mod:`~tablestream.plan.expr`; the
container in :mod:`~tablestream.plan.topology`, built by
:class:`~tablestream.plan.builder.PlanBuilder`; Kafka's describe() text in
:mod:`~tablestream.plan.describe`.
"""

from tablestream.plan.aggregate import (
    Aggregate,
    AggregateNode,
    Avg,
    CollectList,
    CollectSet,
    Count,
    CountDistinct,
    EarliestByOffset,
    LatestByOffset,
    Max,
    Min,
    NumericAggregate,
    NumericAggregates,
    Reduce,
    Sum,
    TableGroupBy,
)
from tablestream.plan.base import FORMATS, InputKind, PlanNode, UnaryNode
from tablestream.plan.builder import PlanBuilder
from tablestream.plan.describe import (
    GlobalStoreDescription,
    NodeDescription,
    SubtopologyDescription,
    TopologyDescription,
)
from tablestream.plan.errors import (
    ArityError,
    InvalidArgumentError,
    InvalidExpressionError,
    InvalidNameError,
    InvalidTypeError,
    JoinTypeError,
    PlanError,
    TopologyError,
)
from tablestream.plan.expr import Expr, ExprRef, KeyValueExpr, SqlExpr
from tablestream.plan.sinks import ToTopic
from tablestream.plan.sources import GlobalTableSource, StreamSource, TableSource
from tablestream.plan.stateless import (
    Branch,
    Filter,
    FlatMap,
    FlatMapValues,
    Map,
    MapValues,
    Merge,
    Peek,
    Repartition,
    SelectKey,
    Split,
    TableFilter,
    TableMapValues,
    ToStream,
    ToTable,
    WithTimestamp,
)
from tablestream.plan.topology import Store, StoreKind, Topology

__all__ = [
    "FORMATS",
    "Aggregate",
    "AggregateNode",
    "ArityError",
    "Avg",
    "Branch",
    "CollectList",
    "CollectSet",
    "Count",
    "CountDistinct",
    "EarliestByOffset",
    "Expr",
    "ExprRef",
    "Filter",
    "FlatMap",
    "FlatMapValues",
    "GlobalStoreDescription",
    "GlobalTableSource",
    "InputKind",
    "InvalidArgumentError",
    "InvalidExpressionError",
    "InvalidNameError",
    "InvalidTypeError",
    "JoinTypeError",
    "KeyValueExpr",
    "LatestByOffset",
    "Map",
    "MapValues",
    "Max",
    "Merge",
    "Min",
    "NumericAggregate",
    "NumericAggregates",
    "NodeDescription",
    "Peek",
    "PlanBuilder",
    "PlanError",
    "PlanNode",
    "Reduce",
    "Repartition",
    "SelectKey",
    "Split",
    "SqlExpr",
    "Store",
    "StoreKind",
    "StreamSource",
    "SubtopologyDescription",
    "Sum",
    "TableFilter",
    "TableGroupBy",
    "TableMapValues",
    "TableSource",
    "ToStream",
    "ToTable",
    "ToTopic",
    "Topology",
    "TopologyDescription",
    "TopologyError",
    "UnaryNode",
    "WithTimestamp",
]

"""Arguments the DSL rejects, with the exact messages users see."""

from __future__ import annotations

import functools

import pytest

from tablestream.dsl import StreamsBuilder
from tablestream.dsl.functions import VALUE_MAPPER, is_spark_column, prepare
from tablestream.errors import SchemaError
from tablestream.plan import (
    ArityError,
    InvalidArgumentError,
    InvalidExpressionError,
    InvalidNameError,
    InvalidTypeError,
    TopologyError,
)
from tablestream.plan.errors import PlanError

from .fakes import FakeColumn


@pytest.fixture
def builder() -> StreamsBuilder:
    return StreamsBuilder()


@pytest.fixture
def stream(builder):
    return builder.stream("orders")


def message(error_type, call) -> str:
    with pytest.raises(error_type) as error:
        call()
    return str(error.value)


# --- arity of callables ------------------------------------------------------------------


def test_predicate_with_one_parameter(stream):
    assert message(ArityError, lambda: stream.filter(lambda value: True)) == (
        "KStream.filter(): predicate <lambda>(value) takes 1 parameter; it must take (key, value) -> bool"
    )


def test_value_mapper_with_three_parameters(stream):
    assert message(ArityError, lambda: stream.map_values(lambda a, b, c: a)) == (
        "KStream.map_values(): value mapper <lambda>(a, b, c) takes 3 parameters; "
        "it must take (value) or (key, value) -> new value"
    )


def test_key_value_mapper_arity(builder):
    table = builder.table("users")
    assert message(ArityError, lambda: table.group_by(lambda value: (value, value))) == (
        "KTable.group_by(): key-value mapper <lambda>(value) takes 1 parameter; "
        "it must take (key, value) -> (new key, new value)"
    )


def test_initializer_takes_no_parameter(stream):
    assert message(
        ArityError, lambda: stream.group_by_key().aggregate(lambda x: 0, lambda k, v, a: a)
    ) == (
        "KGroupedStream.aggregate(): initializer <lambda>(x) takes 1 parameter; "
        "it must take () -> initial aggregate"
    )


@pytest.mark.parametrize("adder", [lambda k, v: 0, lambda k, v, a, s, extra: 0])
def test_adder_takes_three_or_four(builder, adder):
    grouped = builder.table("users").group_by(lambda k, v: (k, v))
    count = adder.__code__.co_argcount
    names = ", ".join(adder.__code__.co_varnames[:count])
    assert message(ArityError, lambda: grouped.aggregate(lambda: 0, adder, lambda k, v, a: a)) == (
        f"KGroupedTable.aggregate(): adder <lambda>({names}) takes {count} parameters; "
        "it must take (key, value, aggregate[, source_key]) -> new aggregate"
    )


def test_table_reduce_subtractor(builder):
    grouped = builder.table("users").group_by(lambda k, v: (k, v))
    assert message(ArityError, lambda: grouped.reduce(lambda a, v: a, lambda k, v, a: a)) == (
        "KGroupedTable.reduce(): subtractor <lambda>(k, v, a) takes 3 parameters; "
        "it must take (aggregate, old value) -> new aggregate"
    )


def test_required_keyword_only_parameter(stream):
    assert message(ArityError, lambda: stream.peek(lambda k, v, *, sink: None)) == (
        "KStream.peek(): action <lambda>(k, v, *, sink) has a required keyword-only parameter 'sink'; "
        "it must take (key, value) -> None"
    )


def test_too_many_required_parameters_with_varargs(stream):
    assert message(ArityError, lambda: stream.filter(lambda a, b, c, *rest: True)) == (
        "KStream.filter(): predicate <lambda>(a, b, c, *rest) takes at least 3 parameters; "
        "it must take (key, value) -> bool"
    )


def test_optional_parameters_count_as_given(stream):
    def mapper(value, key=None, extra=None):
        return value

    assert message(ArityError, lambda: stream.filter(lambda k, v, w, x=4: True)) == (
        "KStream.filter(): predicate <lambda>(k, v, w, x) takes 3 to 4 parameters; "
        "it must take (key, value) -> bool"
    )
    assert stream.filter(lambda k=1, v=2, w=3: True).node.predicate.arity == 2
    # Called with as many arguments as it declares, up to the most the interface allows.
    assert stream.map_values(mapper).node.mapper.arity == 2
    assert stream.map_values(lambda *args: args).node.mapper.arity == 2
    assert stream.group_by_key().aggregate(lambda *a: 0, lambda *a: 0).node.adder.arity == 4


def test_callable_objects_and_partials(stream):
    class Positive:
        def __call__(self, key, value):
            return value > 0

    def between(low, key, value):
        return value > low

    assert stream.filter(Positive()).node.predicate.description == "Positive(key, value)"
    assert (
        stream.filter(functools.partial(between, 0)).node.predicate.description
        == "partial(key, value)"
    )


def test_callable_without_readable_signature(stream):
    class Opaque:
        __signature__ = "not a signature"

        def __call__(self, *args):
            return True

    assert message(ArityError, lambda: stream.filter(Opaque())) == (
        "KStream.filter(): cannot read the parameters of predicate Opaque; "
        "pass a lambda or def taking (key, value) -> bool"
    )


# --- types ---------------------------------------------------------------------------------


def test_none_is_rejected(stream):
    assert (
        message(InvalidTypeError, lambda: stream.filter(None))
        == "KStream.filter(): predicate can't be None"
    )


def test_wrong_type(stream):
    assert message(InvalidTypeError, lambda: stream.filter(42)) == (
        "KStream.filter(): predicate must be a SQL expression (str), a Spark Column or a callable "
        "(key, value) -> bool; got int"
    )


def test_action_must_be_callable(stream):
    assert message(InvalidTypeError, lambda: stream.peek("print(value)")) == (
        "KStream.peek(): action must be a callable (key, value) -> None; got a str"
    )
    assert message(InvalidTypeError, lambda: stream.peek(FakeColumn("x"))) == (
        "KStream.peek(): action must be a callable (key, value) -> None; got a Spark Column"
    )


FOLD_HINT = (
    "reduce and aggregate take Python callables; for a SQL expression or a Spark Column "
    "use count(), sum(), avg(), min() or max()"
)


@pytest.mark.parametrize(
    "call, expected",
    [
        (
            lambda s, x: s.group_by_key().reduce(x),
            "KGroupedStream.reduce(): reducer must be a callable "
            "(aggregate, value) -> new aggregate",
        ),
        (
            lambda s, x: s.group_by_key().aggregate(x, lambda k, v, a: a),
            "KGroupedStream.aggregate(): initializer must be a callable () -> initial aggregate",
        ),
        (
            lambda s, x: s.group_by_key().aggregate(lambda: 0, x),
            "KGroupedStream.aggregate(): aggregator must be a callable "
            "(key, value, aggregate[, source_key]) -> new aggregate",
        ),
        (
            lambda s, x: s.to_table().group_by(lambda k, v: (k, v)).reduce(x, lambda a, v: a),
            "KGroupedTable.reduce(): adder must be a callable (aggregate, value) -> new aggregate",
        ),
        (
            lambda s, x: s.to_table().group_by(lambda k, v: (k, v)).reduce(lambda a, v: a, x),
            "KGroupedTable.reduce(): subtractor must be a callable "
            "(aggregate, old value) -> new aggregate",
        ),
        (
            lambda s, x: (
                s.to_table()
                .group_by(lambda k, v: (k, v))
                .aggregate(x, lambda k, v, a: a, lambda k, v, a: a)
            ),
            "KGroupedTable.aggregate(): initializer must be a callable () -> initial aggregate",
        ),
        (
            lambda s, x: (
                s.to_table()
                .group_by(lambda k, v: (k, v))
                .aggregate(lambda: 0, x, lambda k, v, a: a)
            ),
            "KGroupedTable.aggregate(): adder must be a callable "
            "(key, value, aggregate[, source_key]) -> new aggregate",
        ),
        (
            lambda s, x: (
                s.to_table()
                .group_by(lambda k, v: (k, v))
                .aggregate(lambda: 0, lambda k, v, a: a, x)
            ),
            "KGroupedTable.aggregate(): subtractor must be a callable "
            "(key, value, aggregate[, source_key]) -> new aggregate",
        ),
    ],
)
def test_reduce_and_aggregate_refuse_sql_and_columns(stream, call, expected):
    assert message(InvalidTypeError, lambda: call(stream, "aggregate + 1")) == (
        f"{expected}; got a str ({FOLD_HINT})"
    )
    assert message(InvalidTypeError, lambda: call(stream, FakeColumn("x"))) == (
        f"{expected}; got a Spark Column ({FOLD_HINT})"
    )


def test_builtin_aggregate_column_is_sql_or_column(stream):
    assert message(InvalidTypeError, lambda: stream.group_by_key().sum(lambda v: v)) == (
        "KGroupedStream.sum(): column must be a SQL expression (str) or a Spark Column; got function"
    )


def test_key_value_mapper_shapes(stream):
    assert message(InvalidTypeError, lambda: stream.map("key")) == (
        "KStream.map(): key-value mapper must be a callable (key, value) -> (new key, new value) "
        "or a pair (key expression, value expression); got str"
    )
    assert message(InvalidTypeError, lambda: stream.map(("key", lambda v: v))) == (
        "KStream.map(): value expression must be a SQL expression (str) or a Spark Column; got function"
    )


def test_errors_are_also_builtin_exception_types(stream):
    with pytest.raises(TypeError):
        stream.filter(lambda v: v)
    with pytest.raises(ValueError):
        stream.filter("amount >")
    with pytest.raises(PlanError):
        stream.filter(42)


def test_spark_column_detection_needs_no_pyspark():
    assert is_spark_column(FakeColumn("a"))
    assert not is_spark_column("a")
    assert not is_spark_column(type("Column", (), {})())  # a Column from another library


def test_prepare_is_usable_directly():
    assert prepare("x + 1", VALUE_MAPPER, "m()").sql.sql == "x + 1"


# --- SQL text -------------------------------------------------------------------------------


def test_unparsable_sql(stream):
    assert message(InvalidExpressionError, lambda: stream.filter("amount >")) == (
        "KStream.filter(): predicate: Invalid SQL expression 'amount >': "
        "Required keyword: 'expression' missing for GT (line 1, column 8)"
    )


def test_sql_statement_is_not_an_expression(stream):
    assert message(
        InvalidExpressionError, lambda: stream.map_values("SELECT amount FROM orders")
    ) == (
        "KStream.map_values(): value mapper: Invalid SQL expression 'SELECT amount FROM orders': "
        "a query or statement is not an expression"
    )


def test_sql_pair_element(stream):
    assert message(InvalidExpressionError, lambda: stream.map(("customer", "amount *"))) == (
        "KStream.map(): value expression: Invalid SQL expression 'amount *': "
        "Required keyword: 'expression' missing for Mul (line 1, column 8)"
    )


# --- names, topics, formats, other arguments -------------------------------------------------


def test_illegal_name(stream):
    assert message(InvalidNameError, lambda: stream.filter("true", name="big orders")) == (
        "KStream.filter(): Name 'big orders' is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'"
    )


def test_empty_store_name(builder):
    assert message(
        InvalidNameError, lambda: builder.table("users").filter("true", materialized_as="")
    ) == ("KTable.filter(): Store name is illegal: it is empty")


def test_topics(builder):
    assert message(InvalidArgumentError, lambda: builder.stream([])) == (
        "StreamsBuilder.stream(): topics must not be empty"
    )
    assert message(InvalidArgumentError, lambda: builder.stream(["a", "a"])) == (
        "StreamsBuilder.stream(): topics must not repeat, got ['a', 'a']"
    )
    assert message(InvalidTypeError, lambda: builder.stream(5)) == (
        "StreamsBuilder.stream(): topics must be a topic name or a list of them, got int"
    )
    assert message(InvalidNameError, lambda: builder.table("bad topic")) == (
        "StreamsBuilder.table(): Topic name 'bad topic' is illegal: "
        "it may contain only ASCII letters, digits, '.', '_' and '-'"
    )
    assert (
        message(InvalidTypeError, lambda: builder.stream("a").to(None))
        == "KStream.to(): topic can't be None"
    )


def test_formats_and_schemas(builder):
    assert message(InvalidArgumentError, lambda: builder.stream("t", value_format="xml")) == (
        "StreamsBuilder.stream(): unknown value format 'xml'; ksqlDB formats are "
        "AVRO, DELIMITED, JSON, JSON_SR, KAFKA, NONE, PROTOBUF, PROTOBUF_NOSR"
    )
    assert message(InvalidArgumentError, lambda: builder.stream("t").to("u", key_format="csv")) == (
        "KStream.to(): unknown key format 'csv'; ksqlDB formats are "
        "AVRO, DELIMITED, JSON, JSON_SR, KAFKA, NONE, PROTOBUF, PROTOBUF_NOSR"
    )
    assert message(InvalidTypeError, lambda: builder.stream("t", value_schema=5)) == (
        "StreamsBuilder.stream(): value schema must be a ksqlDB column list (str) or a pyspark StructType, got int"
    )
    assert message(InvalidArgumentError, lambda: builder.stream("t", key_schema=" ")) == (
        "StreamsBuilder.stream(): key schema is empty"
    )


SOURCE_SCHEMA_ERRORS = [
    pytest.param(
        lambda b: b.stream("orders", value_schema="order_id BIGNIT"),
        "StreamsBuilder.stream(): value schema: Invalid schema 'order_id BIGNIT': "
        "unknown type 'BIGNIT' for column 'order_id' at character 10",
        id="value-schema-typo",
    ),
    pytest.param(
        lambda b: b.table("users", key_schema="id BIGINT NOT NULL"),
        "StreamsBuilder.table(): key schema: Invalid schema 'id BIGINT NOT NULL': "
        "unexpected 'NOT' at character 11 (expected ',')",
        id="key-schema",
    ),
    pytest.param(
        lambda b: b.global_table("countries", value_schema="code STRING,"),
        "StreamsBuilder.global_table(): value schema: Invalid schema 'code STRING,': "
        "expected a column after the last ','",
        id="global-table",
    ),
    pytest.param(
        lambda b: b.stream("t").to("u", value_schema="a FLOAT"),
        "KStream.to(): value schema: Invalid schema 'a FLOAT': "
        "FLOAT is not a ksqlDB type (use DOUBLE) for column 'a' at character 3",
        id="sink-schema",
    ),
    pytest.param(
        lambda b: b.stream("orders", value_format="avro"),
        "StreamsBuilder.stream(): value format: The AVRO format needs a schema "
        "(there is no Schema Registry to infer it from)",
        id="avro-without-schema",
    ),
    pytest.param(
        lambda b: b.table("users", key_format="DELIMITED"),
        "StreamsBuilder.table(): key format: The DELIMITED format needs a schema",
        id="delimited-without-schema",
    ),
    pytest.param(
        lambda b: b.stream("orders", key_schema="id BIGINT, region STRING"),
        "StreamsBuilder.stream(): key format: The KAFKA format holds a single primitive, "
        "but the schema 'id BIGINT, region STRING' has 2 columns",
        id="kafka-key-with-columns",
    ),
    pytest.param(
        lambda b: b.stream("orders", value_format="delimited", value_schema="tags ARRAY<STRING>"),
        "StreamsBuilder.stream(): value format: The DELIMITED format does not support "
        "type ARRAY<STRING> (column 'tags')",
        id="delimited-array",
    ),
]


@pytest.mark.parametrize(("program", "expected"), SOURCE_SCHEMA_ERRORS)
def test_schemas_and_formats_are_checked_where_they_are_declared(builder, program, expected):
    assert message(SchemaError, lambda: program(builder)) == expected


def test_a_format_the_runtime_cannot_read_is_refused_at_the_source(builder):
    assert message(InvalidArgumentError, lambda: builder.stream("t", value_format="protobuf")) == (
        "StreamsBuilder.stream(): value format PROTOBUF cannot be read yet; readable formats "
        "are KAFKA, JSON, AVRO, DELIMITED"
    )


def test_partitions(stream):
    assert message(InvalidArgumentError, lambda: stream.repartition(partitions=0)) == (
        "KStream.repartition(): partitions must be at least 1, got 0"
    )
    assert message(InvalidTypeError, lambda: stream.repartition(partitions=True)) == (
        "KStream.repartition(): partitions must be an int, got bool"
    )


def test_replicate_right_needs_a_foreign_key(builder):
    a, b = builder.table("a"), builder.table("b")
    assert message(InvalidArgumentError, lambda: a.join(b, "right", replicate_right=True)) == (
        "KTable.join(): replicate_right applies to foreign-key joins only"
    )
    assert message(InvalidArgumentError, lambda: a.left_join(b, "right", replicate_right=True)) == (
        "KTable.left_join(): replicate_right applies to foreign-key joins only"
    )
    assert message(InvalidArgumentError, lambda: a.join(b, "right", foreign_key="fk", replicate_right="yes")) == (
        "KTable.join(): replicate_right must be True, False or None (chosen), got 'yes'"
    )


def test_merge_arguments(stream):
    other = StreamsBuilder().stream("other")
    assert message(InvalidArgumentError, lambda: stream.merge(other)) == (
        "KStream.merge(): stream belongs to another StreamsBuilder"
    )
    assert message(InvalidTypeError, lambda: stream.merge("other")) == (
        "KStream.merge(): stream must be a KStream, got str"
    )


def test_closed_split(stream):
    branched = stream.split()
    branched.default_branch()
    assert message(InvalidArgumentError, lambda: branched.branch("true")) == (
        "BranchedKStream.branch(): the split KSTREAM-BRANCH-0000000001 is already closed "
        "by default_branch() or no_default_branch()"
    )


def test_duplicate_processor_name(stream):
    stream.filter("true", name="f")
    assert message(TopologyError, lambda: stream.map_values("value", name="f")) == (
        "Invalid topology: Processor f is already added."
    )


def test_duplicate_store_name(stream):
    stream.group_by_key().count(materialized_as="counts")
    assert message(
        TopologyError, lambda: stream.group_by_key().count(materialized_as="counts")
    ) == ("Invalid topology: StateStore counts is already added.")


def test_rejected_call_spends_no_name(builder, stream):
    with pytest.raises(ArityError):
        stream.filter(lambda v: v)
    with pytest.raises(InvalidArgumentError):
        stream.to("out", value_format="xml")
    assert stream.filter("true").name == "KSTREAM-FILTER-0000000001"

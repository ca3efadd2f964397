"""Errors a user can cause are found when an application or a test driver is created
(the topology analyzed on an empty batch); a running batch's failure is one line."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException
from pyspark.sql import functions as F

from tablestream.dsl import StreamsBuilder
from tablestream.errors import CoPartitioningError, SchemaError, SerializationError
from tablestream.runtime.app import Application
from tablestream.runtime.expressions import ExpressionError
from tablestream.runtime.layout import ApplicationError
from tablestream.storage.embedded import EmbeddedStore
from tablestream.storage.topic import Record, TopicConfig
from tablestream.testing.driver import TestDriver

pytestmark = pytest.mark.spark

ORDERS = "id BIGINT, customer STRING, amount BIGINT"
CUSTOMERS = "name STRING, region STRING"
SEARCH_PATH = "[`system`.`builtin`, `system`.`session`, `spark_catalog`.`default`]"


def orders(b: StreamsBuilder):
    return b.stream("orders", value_schema=ORDERS)


def customers(b: StreamsBuilder):
    return b.table("customers", value_schema=CUSTOMERS)


# ------------------------------------------------------------------ found at creation
SPARK_ERRORS = [
    pytest.param(
        lambda b: orders(b).map_values("foo(amount)").to("out"),
        "KSTREAM-MAPVALUES-0000000001: expression 'foo(amount)': "
        f"Cannot resolve routine `foo` on search path {SEARCH_PATH}.",
        id="unknown-function",
    ),
    pytest.param(
        lambda b: orders(b).map_values("value.amout * 2").to("out"),
        "KSTREAM-MAPVALUES-0000000001: expression 'value.amout * 2': "
        "No such struct field `amout` in `id`, `customer`, `amount`.",
        id="struct-field",
    ),
    pytest.param(
        lambda b: orders(b).filter("customer > array(1)").to("out"),
        "KSTREAM-FILTER-0000000001: expression 'customer > array(1)': "
        'Cannot resolve "(customer > array(1))" due to data type mismatch: the left and right '
        'operands of the binary operator have incompatible types ("STRING" and "ARRAY<INT>").',
        id="type-mismatch",
    ),
    pytest.param(
        lambda b: orders(b).map(("customer", "struct(id, amount * 2 AS twice)"))
        .map_values("nofn(twice)").to("out"),
        "KSTREAM-MAPVALUES-0000000002: expression 'nofn(twice)': "
        f"Cannot resolve routine `nofn` on search path {SEARCH_PATH}.",
        id="after-a-map",
    ),
    pytest.param(
        lambda b: orders(b).select_key("customer")
        .join(customers(b), "struct(left.amount AS amount, right.nam AS name)").to("out"),
        "KSTREAM-JOIN-0000000005: expression 'struct(left.amount AS amount, right.nam AS name)': "
        "No such struct field `nam` in `name`, `region`.",
        id="joiner-field",
    ),
    pytest.param(
        lambda b: orders(b).select_key("customer").join(customers(b), "right + 1").to("out"),
        "KSTREAM-JOIN-0000000005: expression 'right + 1': "
        'Cannot resolve "(right + 1)" due to data type mismatch: the left and right operands of '
        'the binary operator have incompatible types ("STRUCT<name: STRING, region: STRING>" '
        'and "INT").',
        id="joiner-type",
    ),
    pytest.param(
        lambda b: orders(b).join(
            b.global_table("customers", value_schema=CUSTOMERS), "right.region",
            key_selector="upper(nofn(customer))",
        ).to("out"),
        "KSTREAM-JOIN-0000000004: expression 'upper(nofn(customer))': "
        f"Cannot resolve routine `nofn` on search path {SEARCH_PATH}.",
        id="key-selector",
    ),
    pytest.param(
        lambda b: orders(b).group_by("customer").sum("amount * ratio").to_stream().to("out"),
        "KSTREAM-AGGREGATE-0000000003: expression 'amount * ratio': unknown column 'ratio' "
        "(columns: key, value, rowtime, id, customer, amount)",
        id="aggregated-column",
    ),
    pytest.param(
        lambda b: orders(b).map_values(F.col("value.amout")).to("out"),
        "KSTREAM-MAPVALUES-0000000001: column Column<'value.amout'>: "
        "No such struct field `amout` in `id`, `customer`, `amount`.",
        id="spark-column",
    ),
    pytest.param(
        lambda b: orders(b).filter("amount + 1").to("out"),
        "KSTREAM-FILTER-0000000001: predicate 'amount + 1' is BIGINT, not BOOLEAN",
        id="predicate-type",
    ),
    pytest.param(
        lambda b: customers(b).filter("region").to_stream().to("out"),
        "KTABLE-FILTER-0000000003: predicate 'region' is STRING, not BOOLEAN",
        id="table-predicate-type",
    ),
    pytest.param(
        lambda b: orders(b).split().branch("amount > 10").branch("customer").default_branch(),
        "KSTREAM-BRANCH-00000000012: predicate 'customer' is STRING, not BOOLEAN",
        id="branch-predicate-type",
    ),
]


@pytest.mark.parametrize(("program", "message"), SPARK_ERRORS)
def test_an_expression_spark_cannot_analyze_fails_when_the_driver_is_created(
    spark, program, message
):
    b = StreamsBuilder()
    program(b)
    with pytest.raises(ExpressionError) as error:
        TestDriver(b.build(), spark=spark)
    assert str(error.value) == message


def test_spark_s_error_is_the_cause(spark):
    b = StreamsBuilder()
    orders(b).map_values("foo(amount)").to("out")
    with pytest.raises(ExpressionError) as error:
        TestDriver(b.build(), spark=spark)
    assert isinstance(error.value.__cause__, AnalysisException)
    assert error.value.__cause__.getCondition() == "UNRESOLVED_ROUTINE"


def test_a_sink_whose_format_cannot_write_the_records_fails_when_the_driver_is_created(spark):
    b = StreamsBuilder()
    orders(b).to("out", value_format="JSON", value_schema="id STRING, total ARRAY<INT>")
    with pytest.raises(SchemaError) as error:
        TestDriver(b.build(), spark=spark)
    assert str(error.value) == (
        "KSTREAM-SINK-0000000001: topic 'out': Cannot resolve \"value\" due to data type mismatch: "
        'cannot cast "STRUCT<id: BIGINT, customer: STRING, amount: BIGINT>" to '
        '"STRUCT<id: STRING, total: ARRAY<INT>>".'
    )


def test_a_sink_format_that_needs_a_schema_names_the_sink(spark):
    b = StreamsBuilder()
    orders(b).to("out", value_format="AVRO")
    with pytest.raises(SchemaError) as error:
        TestDriver(b.build(), spark=spark)
    assert str(error.value) == (
        "KSTREAM-SINK-0000000001: The AVRO format needs a schema "
        "(there is no Schema Registry to infer it from)"
    )


def test_a_null_predicate_counts_as_false(spark):
    """As SQL's WHERE: ``filter`` drops a record whose predicate is null and
    ``filter_not`` keeps it."""
    b = StreamsBuilder()
    orders(b).filter("amount > 10").to("big")
    orders(b).filter_not("amount > 10").to("not-big")
    with TestDriver(b.build(), spark=spark, batched=True) as driver:
        topic = driver.create_input_topic("orders")
        topic.pipe_input("o1", {"id": 1, "customer": "ada", "amount": 20}, 1)
        topic.pipe_input("o2", {"id": 2, "customer": "bob", "amount": None}, 2)
        topic.pipe_input("o3", {"id": 3, "customer": "cy", "amount": 5}, 3)
        big, not_big = driver.create_output_topic("big"), driver.create_output_topic("not-big")
        assert [(r.key, r.value["id"], r.timestamp) for r in big.read_records()] == [("o1", 1, 1)]
        assert sorted((r.key, r.value["id"], r.timestamp) for r in not_big.read_records()) == [
            ("o2", 2, 2),
            ("o3", 3, 3),
        ]


def test_analysis_runs_no_spark_job(spark):
    """Every rule of a topology with a stream-table join, a replicated foreign-key join,
    aggregations, filters and a split analyzed without a job."""
    b = StreamsBuilder()
    stream = orders(b).filter("amount > 0")
    by_customer = stream.select_key("customer")
    by_customer.join(customers(b), "struct(left.amount AS amount, right.region AS region)").to("enriched")
    lines = b.table("lines", value_schema="product STRING, qty BIGINT")
    products = b.table("products", value_schema="price DOUBLE")
    lines.join(products, "left.qty * right.price", foreign_key="product", replicate_right=True).to_stream().to("priced")
    stream.group_by("customer").sum("amount", materialized_as="revenue")
    branches = stream.split().branch("amount > 100").default_branch()
    for branch in branches.values():
        branch.map_values("amount").to("amounts")
    sc = spark.sparkContext
    sc.setJobGroup("tablestream-analysis", "analysis")
    try:
        with TestDriver(b.build(), spark=spark, partitions=2):
            pass
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    assert list(sc.statusTracker().getJobIdsForGroup("tablestream-analysis")) == []


# ------------------------------------------------------------------ applications
def _store(tmp_path, **partitions: int) -> EmbeddedStore:
    store = EmbeddedStore(tmp_path / "home")
    for topic, count in partitions.items():
        store.create_topic(TopicConfig(topic, partitions=count))
    return store


def test_co_partitioning_is_checked_when_the_application_is_created(tmp_path, spark):
    """ksqlDB's message, raised by ``Application(...)`` before anything is created."""
    store = _store(tmp_path, S1=1, T3=2)
    b = StreamsBuilder()
    b.stream("S1", value_schema=ORDERS).join(
        b.table("T3", value_schema=CUSTOMERS), "right.region", strict=True
    ).to("out")
    with pytest.raises(CoPartitioningError) as error:
        Application(b.build(), "strict-app", store=store, spark=spark)
    assert str(error.value) == (
        "Can't join `S1` with `T3` since the number of partitions don't match. "
        "`S1` partitions = 1; `T3` partitions = 2. "
        "Please repartition either one so that the number of partitions match."
    )
    assert "out" not in store.list_topics()
    assert not (tmp_path / "home" / "apps" / "strict-app").exists()


def test_an_application_is_analyzed_when_it_is_created(tmp_path, spark):
    store = _store(tmp_path, orders=1)
    b = StreamsBuilder()
    orders(b).filter("amount + 1").to("out")
    with pytest.raises(ExpressionError) as error:
        Application(b.build(), "bad-filter", store=store, spark=spark)
    assert str(error.value) == "KSTREAM-FILTER-0000000001: predicate 'amount + 1' is BIGINT, not BOOLEAN"
    assert "out" not in store.list_topics()


def _run_failing(tmp_path, spark, value, app_id: str, after_create=None) -> ApplicationError:
    store = _store(tmp_path, orders=1)
    b = StreamsBuilder()
    orders(b).map_values(value).to("out")
    app = Application(b.build(), app_id, store=store, spark=spark)
    if after_create is not None:
        after_create(store)
    store.produce("orders", [Record(b"o1", b'{"id": 1, "customer": "ada", "amount": 10}', 1_000)])
    with pytest.raises(ApplicationError) as error:
        app.run_until_caught_up()
    return error.value


def test_a_tablestream_error_raised_in_a_spark_task_is_one_line(tmp_path, spark):
    """Raised by a Python UDF on an executor; the PySpark exception with the worker's
    traceback is the cause."""

    def fail(values: pa.Array) -> pa.Array:
        raise SerializationError("store 'x' partition 0: damaged changelog file 3.log")

    udf = F.arrow_udf(fail, "string")
    error = _run_failing(tmp_path, spark, udf(F.col("value.customer")), "udf-app")
    assert str(error) == (
        "Application 'udf-app' failed in batch 0: store 'x' partition 0: damaged changelog file 3.log"
    )
    assert "tablestream.errors.SerializationError" in str(error.__cause__)


def test_a_tablestream_error_raised_in_the_batch_function_is_one_line(tmp_path, spark):
    """The output topic deleted after the application was created: the commit of batch 0
    (in ``process_batch``, on the driver) raises, and that error is the cause."""
    error = _run_failing(
        tmp_path, spark, "amount", "commit-app", after_create=lambda store: store.delete_topic("out")
    )
    assert str(error) == "Application 'commit-app' failed in batch 0: Unknown topic 'out'"
    assert type(error.__cause__).__name__ == "UnknownTopicError"


def test_another_error_is_its_type_and_first_line(tmp_path, spark):
    def divide(values: pa.Array) -> pa.Array:
        return pa.array([str(1 / 0) for _ in values.to_pylist()])

    udf = F.arrow_udf(divide, "string")
    error = _run_failing(tmp_path, spark, udf(F.col("value.customer")), "zero-app")
    assert str(error) == "Application 'zero-app' failed in batch 0: ZeroDivisionError: division by zero"

# Entry points: `make demo`, `make test` and `make bench`. Each installs what it needs first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# Tests run in two processes (pytest-xdist), each with its own SparkSession; the
# integration tests share one of them (one broker, one cluster). PYTEST_WORKERS=0: one.
PYTEST_WORKERS ?= 2
XDIST := -n $(PYTEST_WORKERS)

.PHONY: install kafka-jars demo test test-fast test-slow bench lint clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev]"
	touch $@

install: $(VENV)/.installed

# Apache Kafka broker jars (from Maven Central) for the integration tests.
kafka-jars: install
	$(PY) -m tablestream.testing.kafka_broker fetch

demo: install
	$(VENV)/bin/tablestream demo

# Every tier but the slow one (the CI profile): plan, kernels, stores, Spark, scenarios, properties,
# runtime (crash test included), the real-broker integration tests and the tests on a Spark
# standalone cluster.
test: install kafka-jars
	$(VENV)/bin/pytest -q -m "not slow" $(XDIST) $(PYTEST_ARGS)

# No broker, no cluster, no slow tier.
test-fast: install
	$(VENV)/bin/pytest -q -m "not kafka and not cluster and not slow" $(XDIST) $(PYTEST_ARGS)

# The slow tier: property tests with ten times the examples.
test-slow: install
	$(VENV)/bin/pytest -q -m slow $(XDIST) $(PYTEST_ARGS)

# Every workload against every peer, results checked against DuckDB (docs/performance.md).
# The Flink and SDP peers' venvs (bench/.venv-flink, bench/.venv-sdp) are made on first use.
# BENCH_ARGS: --scale N, --quick, --workloads W1,W3, --peers spark_batch,flink.
BENCH_ARGS ?=
bench: install
	nice -n 19 $(PY) bench/run.py $(BENCH_ARGS)

lint: install
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf $(VENV) bench/.venv-flink bench/.venv-sdp .tablestream .pytest_cache .hypothesis

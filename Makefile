# Two entry points: `make demo` and `make test`. Both install what they need first.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=

.PHONY: install kafka-jars demo test test-fast test-slow lint clean

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
	$(VENV)/bin/pytest -q -m "not slow" $(PYTEST_ARGS)

# No broker, no cluster, no slow tier.
test-fast: install
	$(VENV)/bin/pytest -q -m "not kafka and not cluster and not slow" $(PYTEST_ARGS)

# The slow tier: property tests with ten times the examples.
test-slow: install
	$(VENV)/bin/pytest -q -m slow $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check src tests bench

clean:
	rm -rf $(VENV) .tablestream .pytest_cache .hypothesis

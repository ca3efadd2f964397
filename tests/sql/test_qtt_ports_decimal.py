"""ksqlDB's query-validation tests of DECIMAL values (``decimal.json``) and of an
average computed in a projection (``average.json``), ported as in ``test_qtt_ports.py``:
arithmetic keeps ksqlDB's result scales, and a comparison with a null is false.

Source: confluentinc/ksql, ``ksqldb-functional-tests/src/test/resources/
query-validation-tests/decimal.json`` and ``average.json``.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from .test_qtt_ports import Port, check

pytestmark = pytest.mark.spark

def _port(name: str, columns: str, projection: str, inputs: list[dict], results: list, differs: str = "") -> Port:
    """A case of ``decimal.json``: a stream of ``columns`` (AVRO, no key) projected as
    ``projection`` (aliased ``RESULT`` unless it names its alias), each input giving one
    output of ``results`` (a value, or the output's whole value as a dict)."""
    return Port(
        "decimal",
        name,
        [
            f"CREATE STREAM TEST ({columns}) WITH (kafka_topic='test', value_format='AVRO');",
            f"CREATE STREAM TEST2 AS SELECT {projection} FROM TEST;",
        ],
        inputs=[("test", None, _decimals(i), 0) for i in inputs],
        outputs=[("TEST2", None, _decimals(r if isinstance(r, dict) else {"RESULT": r}), None) for r in results],
        differs=differs,
    )


def _decimals(value: dict) -> dict:
    """JSON's decimal strings as the Decimals AVRO reads and writes."""
    return {k: Decimal(v) if isinstance(v, str) else v for k, v in value.items()}


TWO = "a DECIMAL(4,2), b DECIMAL(4,2)"
ARITHMETIC = [{"A": "10.10", "B": "02.00"}, {"A": "10.10", "B": "-02.00"}, {"A": "10.10", "B": "00.00"}]
COMPARED = [{"A": "10.01", "B": "10.01"}, {"A": "10.01", "B": "12.01"}, {"A": None, "B": "10.01"}, {"A": None, "B": None}]
ORDERED = [{"A": "10.01", "B": "03.01"}, *COMPARED]
BY_ZERO = "a {} by zero sends its record to the processing log (ksqlDB outputs null; docs/sql.md)"

PORTS = [
    _port("negation", "dec DECIMAL(7,5)", "-dec AS negated", [{"DEC": "10.12345"}], [{"NEGATED": "-10.12345"}]),
    _port("addition", TWO, "(a + b) AS RESULT",
          [{"A": "10.01", "B": "5.10"}, {"A": "10.01", "B": "-5.00"}, {"A": "10.01", "B": "0.00"}], ["15.11", "5.01", "10.01"]),
    _port("addition with double", "a DECIMAL(4,2), b DOUBLE", "(a + b) AS RESULT",
          [{"A": "10.01", "B": 5.1}, {"A": "10.01", "B": -5.0}, {"A": "10.01", "B": 0.0}], [15.11, 5.01, 10.01]),
    _port("addition with int", "a DECIMAL(4,2), b INT", "(a + b) AS RESULT",
          [{"A": "10.01", "B": 5}, {"A": "10.01", "B": -5}, {"A": "10.01", "B": 0}], ["15.01", "5.01", "10.01"]),
    _port("addition 3 columns", TWO, "(a + a + b) AS RESULT", [{"A": "10.01", "B": "5.10"}], ["25.12"]),
    _port("subtraction", TWO, "(a - b) AS RESULT",
          [{"A": "10.10", "B": "5.10"}, {"A": "10.10", "B": "-5.00"}, {"A": "10.10", "B": "0.00"}], ["5.00", "15.10", "10.10"]),
    _port("multiplication", TWO, "(a * b) AS RESULT", ARITHMETIC, ["20.2000", "-20.2000", "0.0000"]),
    # ksqlDB's third output, a null, is left out.
    _port("division", TWO, "(a / b) AS RESULT", ARITHMETIC, ["5.0500000", "-5.0500000"], BY_ZERO.format("division")),
    _port("mod", TWO, "(a % b) AS RESULT", ARITHMETIC, ["0.10", "0.10"], BY_ZERO.format("modulo")),
    _port("equal - decimal decimal", TWO, "(a = b) AS RESULT", COMPARED, [True, False, False, False]),
    _port("not equal - decimal decimal", TWO, "(a <> b) AS RESULT", COMPARED, [False, True, False, False]),
    _port("is distinct - decimal decimal", TWO, "(a IS DISTINCT FROM b) AS RESULT", COMPARED, [False, True, True, False]),
    _port("less than - decimal decimal", TWO, "(a < b) AS RESULT", COMPARED, [False, True, False, False]),
    _port("less than - decimal decimal differing scale", "a DECIMAL(4,2), b DECIMAL(5,3)", "(a < b) AS RESULT",
          [{"A": "10.01", "B": "10.010"}, {"A": "10.01", "B": "10.012"}, {"A": None, "B": "10.010"}, {"A": None, "B": None}],
          [False, True, False, False]),
    _port("LEQ - decimal decimal", TWO, "(a <= b) AS RESULT", ORDERED, [False, True, True, False, False]),
    _port("GEQ - decimal decimal", TWO, "(a >= b) AS RESULT", ORDERED, [True, True, False, False, False]),
    _port("greater than - decimal decimal", TWO, "(a > b) AS RESULT", ORDERED, [True, False, False, False, False]),
    Port(
        'average',
        'calculate average in select',
        [
            "CREATE STREAM TEST (ID BIGINT KEY, NAME varchar, VALUE bigint) WITH (kafka_topic='test_topic', value_format='DELIMITED');",
            'CREATE TABLE AVG AS select ID, abs(sum(value)/count(id)) * 10 as avg from test GROUP BY id;',
        ],
        inputs=[
            ('test_topic', 0, 'zero,-50', 0),
            ('test_topic', 0, 'zero,-10', 0),
            ('test_topic', 0, 'zero,-15', 0),
            ('test_topic', 1, 'one,100', 0),
            ('test_topic', 1, 'one,10', 0),
        ],
        outputs=[
            ('AVG', 0, '500', None),
            ('AVG', 0, '300', None),
            ('AVG', 0, '250', None),
            ('AVG', 1, '1000', None),
            ('AVG', 1, '550', None),
        ],
    ),
]


@pytest.mark.parametrize("port", PORTS, ids=str)
def test_ported_case(spark, port: Port):
    check(spark, port)

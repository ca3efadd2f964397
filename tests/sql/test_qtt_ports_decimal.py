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

PORTS = [
    Port(
        'decimal',
        'negation',
        [
            "CREATE STREAM TEST (dec DECIMAL(7,5)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT -dec AS negated FROM TEST;',
        ],
        inputs=[
            ('test', None, {'DEC': Decimal('10.12345')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'NEGATED': Decimal('-10.12345')}, None),
        ],
    ),
    Port(
        'decimal',
        'addition',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a + b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('5.10')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('-5.00')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('0.00')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('15.11')}, None),
            ('TEST2', None, {'RESULT': Decimal('5.01')}, None),
            ('TEST2', None, {'RESULT': Decimal('10.01')}, None),
        ],
    ),
    Port(
        'decimal',
        'addition with double',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DOUBLE) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a + b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': 5.1}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': -5.0}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': 0.0}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': 15.11}, None),
            ('TEST2', None, {'RESULT': 5.01}, None),
            ('TEST2', None, {'RESULT': 10.01}, None),
        ],
    ),
    Port(
        'decimal',
        'addition with int',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b INT) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a + b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': 5}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': -5}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': 0}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('15.01')}, None),
            ('TEST2', None, {'RESULT': Decimal('5.01')}, None),
            ('TEST2', None, {'RESULT': Decimal('10.01')}, None),
        ],
    ),
    Port(
        'decimal',
        'addition 3 columns',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a + a + b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('5.10')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('25.12')}, None),
        ],
    ),
    Port(
        'decimal',
        'subtraction',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a - b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('5.10')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('-5.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('0.00')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('5.00')}, None),
            ('TEST2', None, {'RESULT': Decimal('15.10')}, None),
            ('TEST2', None, {'RESULT': Decimal('10.10')}, None),
        ],
    ),
    Port(
        'decimal',
        'multiplication',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a * b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('-02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('00.00')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('20.2000')}, None),
            ('TEST2', None, {'RESULT': Decimal('-20.2000')}, None),
            ('TEST2', None, {'RESULT': Decimal('0.0000')}, None),
        ],
    ),
    Port(
        'decimal',
        'division',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a / b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('-02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('00.00')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('5.0500000')}, None),
            ('TEST2', None, {'RESULT': Decimal('-5.0500000')}, None),
        ],
        differs='a division by zero sends its record to the processing log (ksqlDB outputs null; docs/sql.md)',
    ),
    Port(
        'decimal',
        'mod',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a % b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('-02.00')}, 0),
            ('test', None, {'A': Decimal('10.10'), 'B': Decimal('00.00')}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': Decimal('0.10')}, None),
            ('TEST2', None, {'RESULT': Decimal('0.10')}, None),
        ],
        differs='a modulo by zero sends its record to the processing log (ksqlDB outputs null; docs/sql.md)',
    ),
    Port(
        'decimal',
        'equal - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a = b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'not equal - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a <> b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'is distinct - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a IS DISTINCT FROM b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'less than - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a < b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'less than - decimal decimal differing scale',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(5,3)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a < b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.010')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.012')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.010')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'LEQ - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a <= b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('03.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'GEQ - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a >= b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('03.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
    Port(
        'decimal',
        'greater than - decimal decimal',
        [
            "CREATE STREAM TEST (a DECIMAL(4,2), b DECIMAL(4,2)) WITH (kafka_topic='test', value_format='AVRO');",
            'CREATE STREAM TEST2 AS SELECT (a > b) AS RESULT FROM TEST;',
        ],
        inputs=[
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('03.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': Decimal('10.01'), 'B': Decimal('12.01')}, 0),
            ('test', None, {'A': None, 'B': Decimal('10.01')}, 0),
            ('test', None, {'A': None, 'B': None}, 0),
        ],
        outputs=[
            ('TEST2', None, {'RESULT': True}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
            ('TEST2', None, {'RESULT': False}, None),
        ],
    ),
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

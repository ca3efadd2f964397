"""Kafka client settings given once, translated for Spark's Java client and librdkafka,
and never shown."""

from __future__ import annotations

import pytest

from tablestream.storage.kafka import KafkaStore, KafkaStoreError
from tablestream.storage.kafka_options import KafkaOptions, KafkaOptionsError

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="app" password="pa\\"ss-7731";'
)


def test_settings_both_clients_know_go_to_both():
    options = KafkaOptions({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "client.id": "rev", "linger.ms": 5})
    assert options.spark() == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.client.id": "rev",
        "kafka.linger.ms": "5",
    }
    assert options.librdkafka() == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "client.id": "rev", "linger.ms": "5"
    }


def test_a_plain_jaas_config_gives_librdkafka_user_and_password():
    options = KafkaOptions({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS})
    assert options.spark()["kafka.sasl.jaas.config"] == PLAIN_JAAS
    assert options.librdkafka() == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "app",
        "sasl.password": 'pa"ss-7731',
    }


def test_librdkafka_user_and_password_give_spark_a_jaas_config():
    options = KafkaOptions({"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "app", "sasl.password": 'a"b'})
    assert options.spark() == {
        "kafka.sasl.mechanism": "SCRAM-SHA-256",
        "kafka.sasl.jaas.config": (
            'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="a\\"b";'
        ),
    }
    assert options.librdkafka() == {"sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "app", "sasl.password": 'a"b'}


def test_both_spellings_given_each_client_takes_its_own():
    options = KafkaOptions(
        {"sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS, "sasl.username": "other", "sasl.password": "pw2"}
    )
    assert options.spark() == {"kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": PLAIN_JAAS}
    assert options.librdkafka() == {"sasl.mechanism": "PLAIN", "sasl.username": "other", "sasl.password": "pw2"}


def test_pem_stores_are_translated_both_ways():
    java = KafkaOptions(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": "/etc/kafka/ca.pem",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": "/etc/kafka/client.pem",
            "ssl.key.password": "kp",
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert java.librdkafka() == {
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/kafka/ca.pem",
        "ssl.certificate.location": "/etc/kafka/client.pem",
        "ssl.key.location": "/etc/kafka/client.pem",
        "ssl.key.password": "kp",
        "ssl.endpoint.identification.algorithm": "none",
    }
    librdkafka = KafkaOptions({"security.protocol": "SSL", "ssl.ca.location": "/etc/kafka/ca.pem", "enable.ssl.certificate.verification": False})
    assert librdkafka.spark() == {
        "kafka.security.protocol": "SSL",
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/kafka/ca.pem",
        "kafka.ssl.endpoint.identification.algorithm": "",
    }
    pkcs12 = KafkaOptions({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/k.p12", "ssl.keystore.password": "sp"})
    assert pkcs12.librdkafka() == {"ssl.keystore.location": "/k.p12", "ssl.keystore.password": "sp"}


def test_stores_librdkafka_cannot_read_are_refused_in_one_line():
    with pytest.raises(KafkaOptionsError) as truststore:
        KafkaOptions({"ssl.truststore.location": "/etc/kafka/trust.jks", "ssl.truststore.password": "tp"})
    assert str(truststore.value) == (
        "Kafka option 'ssl.truststore.location' is a JKS truststore, which tablestream's Kafka client "
        "(librdkafka) cannot read: give the CA certificates as a PEM file in 'ssl.ca.location' too "
        "(or use ssl.truststore.type PEM)"
    )
    with pytest.raises(KafkaOptionsError) as keystore:
        KafkaOptions({"ssl.keystore.location": "/etc/kafka/key.jks"})
    assert str(keystore.value) == (
        "Kafka option 'ssl.keystore.location' is a JKS keystore, which tablestream's Kafka client "
        "(librdkafka) cannot read: use a PKCS12 or PEM keystore (ssl.keystore.type), or give "
        "'ssl.certificate.location' and 'ssl.key.location' too"
    )
    with pytest.raises(KafkaOptionsError) as mechanism:
        KafkaOptions({"sasl.mechanism": "GSSAPI", "sasl.username": "u", "sasl.password": "p"})
    assert str(mechanism.value) == (
        "Kafka options 'sasl.username'/'sasl.password' need sasl.mechanism PLAIN, SCRAM-SHA-256 or "
        "SCRAM-SHA-512 for Spark's Kafka client (got 'GSSAPI'); give Spark its own 'sasl.jaas.config' too"
    )
    assert KafkaOptions({"ssl.truststore.location": "/t.jks", "ssl.ca.location": "/ca.pem"}).librdkafka() == {
        "ssl.ca.location": "/ca.pem"
    }


def test_secrets_are_hidden_in_reprs_and_texts():
    options = KafkaOptions(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.key.password": "kp-5512",
            "sasl.oauthbearer.client.secret": "oauth-9921",
        }
    )
    assert repr(options) == (
        "KafkaOptions(security.protocol='SASL_SSL', sasl.mechanism='PLAIN', sasl.jaas.config=<hidden>, ssl.key.password=<hidden>, "
        "sasl.oauthbearer.client.secret=<hidden>)"
    )
    text = f"failed: {PLAIN_JAAS} / pa\"ss-7731 / kp-5512 / oauth-9921"
    assert options.redact(text) == "failed: <hidden> / <hidden> / <hidden> / <hidden>"
    assert repr(KafkaStore("127.0.0.1:1", kafka_options=options)) == (
        "KafkaStore('127.0.0.1:1', security.protocol='SASL_SSL', sasl.mechanism='PLAIN', sasl.jaas.config=<hidden>, "
        "ssl.key.password=<hidden>, sasl.oauthbearer.client.secret=<hidden>)"
    )


def test_a_setting_librdkafka_refuses_is_one_line_without_its_value():
    with pytest.raises(KafkaStoreError) as refused:
        KafkaStore("127.0.0.1:1", kafka_options={"sasl.mechanism": "PLAIN", "no.such.setting": "zz-4410"})
    assert str(refused.value) == (
        "Kafka client settings refused by tablestream's Kafka client (librdkafka): "
        'No such configuration property: "no.such.setting"'
    )


def test_default_api_timeout_goes_to_spark_only():
    options = KafkaOptions({"default.api.timeout.ms": "15000", "request.timeout.ms": "10000"})
    assert options.spark() == {"kafka.default.api.timeout.ms": "15000", "kafka.request.timeout.ms": "10000"}
    assert options.librdkafka() == {"request.timeout.ms": "10000"}


def test_a_spark_kafka_client_timeout_is_told_as_the_cluster_not_answering():
    store = KafkaStore("127.0.0.1:1", kafka_options={"sasl.password": "pw-5521", "sasl.mechanism": "PLAIN"})
    spark_failure = RuntimeError(
        "Job aborted due to stage failure: Task 0 in stage 45.0 failed 1 times\n"
        "Caused by: org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired before "
        "the position for partition events-0 could be determined\n\tat org.apache.kafka.clients.consumer..."
    )
    wrapped = ValueError("An error occurred while calling o1776.getResult.")
    wrapped.__cause__ = spark_failure
    assert str(store.client_timeout(wrapped)) == (
        "Kafka at 127.0.0.1:1 did not answer in time (Timeout of 60000ms expired before the position for "
        "partition events-0 could be determined): start the application again once the cluster answers; "
        "it goes on from its last committed batch"
    )
    polled = RuntimeError(
        "Lost task 0.0 in stage 9.0: java.util.concurrent.TimeoutException: Cannot fetch record for offset "
        "1500 in 120000 milliseconds\n\tat org.apache.spark.sql.kafka010..."
    )
    assert str(store.client_timeout(polled)) == (
        "Kafka at 127.0.0.1:1 did not answer in time (Cannot fetch record for offset 1500 in 120000 "
        "milliseconds): start the application again once the cluster answers; it goes on from its last "
        "committed batch"
    )
    assert store.client_timeout(RuntimeError("org.apache.kafka.common.errors.SaslAuthenticationException: no")) is None
    assert str(store.unreachable("sasl login pw-5521 timed out")) == (
        "Kafka at 127.0.0.1:1 did not answer in time (sasl login <hidden> timed out): start the application "
        "again once the cluster answers; it goes on from its last committed batch"
    )

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

"""Kafka client settings for both of tablestream's Kafka clients, kept out of sight.

An application on Kafka talks to the cluster through two clients: Spark's Kafka source
(Kafka's Java client, given each setting as a ``kafka.<name>`` source option) and
tablestream's own producer, admin and consumer (confluent-kafka, i.e. librdkafka).
:class:`KafkaOptions` takes the settings once, by Kafka's names, and gives each client
its share: a setting both clients know (``security.protocol``, ``sasl.mechanism``,
``ssl.key.password``, ``client.id``, ...) goes to both; a setting one client spells
differently is translated for the other:

=========================================================  ==============================================
Java client (Spark)                                        librdkafka (tablestream's producer and admin)
=========================================================  ==============================================
``sasl.jaas.config`` with ``PlainLoginModule`` or          ``sasl.username``, ``sasl.password``
``ScramLoginModule`` (``username=".." password=".."``)
``ssl.truststore.location`` with ``ssl.truststore.type``   ``ssl.ca.location``
``PEM``
``ssl.keystore.location`` with ``ssl.keystore.type``       ``ssl.certificate.location`` and
``PEM`` (key and certificate chain in one file)            ``ssl.key.location`` (the same file)
``ssl.endpoint.identification.algorithm`` ``""``           ``ssl.endpoint.identification.algorithm``
                                                           ``none``
=========================================================  ==============================================

and the other way round (``sasl.username``/``sasl.password`` with a PLAIN or SCRAM
mechanism become Spark's ``sasl.jaas.config``; ``ssl.ca.location`` a PEM truststore).
A setting given in both spellings is used as given by each client. Settings only the
Java client has (other JAAS login modules, JKS stores, callback handler classes, ...)
are given to Spark only; a store librdkafka cannot read (a ``JKS`` keystore, a ``JKS``
or ``PKCS12`` truststore without ``ssl.ca.location``) is refused at once.

Values of secret settings (passwords, JAAS configurations, keys, tokens) never appear
in a repr or in an error text: :meth:`KafkaOptions.redact` removes them from any text
that reaches the user.

>>> options = KafkaOptions({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
...     "sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule '
...                         'required username="app" password="s3cret";'})
>>> options
KafkaOptions(security.protocol='SASL_SSL', sasl.mechanism='PLAIN', sasl.jaas.config=<hidden>)
>>> sorted(options.librdkafka())
['sasl.mechanism', 'sasl.password', 'sasl.username', 'security.protocol']
>>> options.redact("login failed for s3cret")
'login failed for <hidden>'
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ..errors import TablestreamError

__all__ = ["KafkaOptions", "KafkaOptionsError"]

HIDDEN = "<hidden>"

# Settings only Kafka's Java client knows: Spark gets them, librdkafka does not (it
# refuses names it does not know). The ones with a librdkafka equivalent are translated.
_JAVA_ONLY = frozenset(
    {
        "sasl.jaas.config",
        "default.api.timeout.ms",  # how long the source's consumer and admin calls wait
        "sasl.login.class",
        "sasl.login.callback.handler.class",
        "sasl.client.callback.handler.class",
        "sasl.kerberos.ticket.renew.window.factor",
        "sasl.kerberos.ticket.renew.jitter",
        "security.providers",
        "ssl.protocol",
        "ssl.provider",
        "ssl.enabled.protocols",
        "ssl.keystore.type",
        "ssl.keystore.key",
        "ssl.keystore.certificate.chain",
        "ssl.keymanager.algorithm",
        "ssl.trustmanager.algorithm",
        "ssl.truststore.type",
        "ssl.truststore.location",
        "ssl.truststore.password",
        "ssl.truststore.certificates",
        "ssl.secure.random.implementation",
        "ssl.engine.factory.class",
    }
)
_JAVA_ONLY_PREFIXES = ("sasl.login.",)

# Settings only librdkafka knows: tablestream's clients get them, Spark does not (the
# Java client would ignore them, and a secret has no business in Spark's options).
_LIBRDKAFKA_ONLY = frozenset(
    {
        "sasl.username",
        "sasl.password",
        "sasl.mechanisms",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.certificate.pem",
        "ssl.key.location",
        "ssl.key.pem",
        "enable.ssl.certificate.verification",
    }
)

_SECRET = re.compile(r"password|secret|jaas|token|credential|(^|\.)key(\.pem)?$|\.keystore\.key$")
_JAAS_MODULE = re.compile(r"^\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_JAAS_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


class KafkaOptionsError(TablestreamError):
    """Kafka client settings that tablestream's two Kafka clients cannot both be given."""


def _is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def _jaas_credentials(jaas: str) -> tuple[str, dict[str, str]]:
    """The login module of a JAAS configuration and its quoted options."""
    module = _JAAS_MODULE.match(jaas)
    options = {k: re.sub(r"\\(.)", r"\1", v) for k, v in _JAAS_OPTION.findall(jaas)}
    return (module.group(1) if module else ""), options


def _jaas_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


class KafkaOptions:
    """Kafka client settings by Kafka's names (see the module's table of translations).

    ``options`` maps setting names to values (converted to text; a bool becomes
    ``true``/``false``). :meth:`spark` gives Spark's Kafka source options (``kafka.``
    prefixed), :meth:`librdkafka` the settings of tablestream's own clients.

    >>> KafkaOptions({"sasl.username": "app", "sasl.password": "pw", "sasl.mechanism": "SCRAM-SHA-512",
    ...               "security.protocol": "SASL_SSL"}).spark()["kafka.sasl.jaas.config"]
    'org.apache.kafka.common.security.scram.ScramLoginModule required username="app" password="pw";'
    """

    def __init__(self, options: Mapping[str, object] | None = None):
        self._options: dict[str, str] = {}
        for name, value in (options or {}).items():
            if not isinstance(name, str) or not name:
                raise KafkaOptionsError(f"Kafka option names are text, got {name!r}")
            if value is None:
                raise KafkaOptionsError(f"Kafka option '{name}' has no value")
            text = ("true" if value else "false") if isinstance(value, bool) else str(value)
            self._options[name] = text
        self._secrets = self._secret_values()
        self._java = self._for_java()
        self._librdkafka = self._for_librdkafka()

    # ---------------------------------------------------------------- the two clients
    def spark(self) -> dict[str, str]:
        """Options of Spark's Kafka source: each setting as ``kafka.<name>``."""
        return {f"kafka.{name}": value for name, value in self._java.items()}

    def librdkafka(self) -> dict[str, str]:
        """Settings of tablestream's producer, admin and consumer (librdkafka's names)."""
        return dict(self._librdkafka)

    @property
    def names(self) -> tuple[str, ...]:
        """The settings given, in their order."""
        return tuple(self._options)

    def __bool__(self) -> bool:
        return bool(self._options)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KafkaOptions) and other._options == self._options

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._options.items())))

    # ---------------------------------------------------------------- secrets
    def __repr__(self) -> str:
        shown = ", ".join(
            f"{name}={HIDDEN if _is_secret(name) else repr(value)}" for name, value in self._options.items()
        )
        return f"KafkaOptions({shown})"

    def redact(self, text: str) -> str:
        """``text`` with every secret value given (and every credential inside a JAAS
        configuration) replaced by ``<hidden>``."""
        for secret in self._secrets:
            text = text.replace(secret, HIDDEN)
        return text

    def _secret_values(self) -> list[str]:
        secrets = [v for n, v in self._options.items() if _is_secret(n) and v]
        jaas = self._options.get("sasl.jaas.config")
        if jaas:
            _, credentials = _jaas_credentials(jaas)
            secrets += [v for k, v in credentials.items() if v and k != "username"]
        # Longest first: a secret that contains another is hidden whole.
        return sorted(set(secrets), key=len, reverse=True)

    # ---------------------------------------------------------------- translations
    def _for_java(self) -> dict[str, str]:
        given = self._options
        out = {n: v for n, v in given.items() if n not in _LIBRDKAFKA_ONLY}
        if "sasl.mechanisms" in given and "sasl.mechanism" not in given:
            out["sasl.mechanism"] = given["sasl.mechanisms"]
        mechanism = (given.get("sasl.mechanism") or given.get("sasl.mechanisms") or "").upper()
        if "sasl.username" in given and "sasl.jaas.config" not in given:
            module = _JAAS_MODULES.get(mechanism)
            if module is None:
                raise KafkaOptionsError(
                    f"Kafka options 'sasl.username'/'sasl.password' need sasl.mechanism PLAIN, SCRAM-SHA-256 "
                    f"or SCRAM-SHA-512 for Spark's Kafka client (got '{mechanism or 'none'}'); "
                    "give Spark its own 'sasl.jaas.config' too"
                )
            user = _jaas_quote(given["sasl.username"])
            password = _jaas_quote(given.get("sasl.password", ""))
            out["sasl.jaas.config"] = f'{module} required username="{user}" password="{password}";'
        if "ssl.ca.location" in given and "ssl.truststore.location" not in given:
            out["ssl.truststore.type"] = "PEM"
            out["ssl.truststore.location"] = given["ssl.ca.location"]
        if given.get("enable.ssl.certificate.verification", "true").lower() == "false":
            out.setdefault("ssl.endpoint.identification.algorithm", "")
        if out.get("ssl.endpoint.identification.algorithm") == "none":
            out["ssl.endpoint.identification.algorithm"] = ""
        return out

    def _for_librdkafka(self) -> dict[str, str]:
        given = self._options
        out = {
            n: v
            for n, v in given.items()
            if n not in _JAVA_ONLY and not n.startswith(_JAVA_ONLY_PREFIXES)
        }
        jaas = given.get("sasl.jaas.config")
        if jaas and "sasl.username" not in given:
            module, credentials = _jaas_credentials(jaas)
            if module.endswith(("PlainLoginModule", "ScramLoginModule")) and "username" in credentials:
                out["sasl.username"] = credentials["username"]
                out["sasl.password"] = credentials.get("password", "")
        truststore_type = given.get("ssl.truststore.type", "JKS").upper()
        if "ssl.truststore.location" in given and "ssl.ca.location" not in given:
            if truststore_type != "PEM":
                raise KafkaOptionsError(
                    f"Kafka option 'ssl.truststore.location' is a {truststore_type} truststore, which "
                    "tablestream's Kafka client (librdkafka) cannot read: give the CA certificates as a "
                    "PEM file in 'ssl.ca.location' too (or use ssl.truststore.type PEM)"
                )
            out["ssl.ca.location"] = given["ssl.truststore.location"]
        keystore_type = given.get("ssl.keystore.type", "JKS").upper()
        if "ssl.keystore.location" in given:
            if keystore_type == "PEM":
                del out["ssl.keystore.location"]
                out.pop("ssl.keystore.password", None)
                out.setdefault("ssl.certificate.location", given["ssl.keystore.location"])
                out.setdefault("ssl.key.location", given["ssl.keystore.location"])
            elif keystore_type != "PKCS12" and "ssl.certificate.location" not in given:
                raise KafkaOptionsError(
                    f"Kafka option 'ssl.keystore.location' is a {keystore_type} keystore, which "
                    "tablestream's Kafka client (librdkafka) cannot read: use a PKCS12 or PEM keystore "
                    "(ssl.keystore.type), or give 'ssl.certificate.location' and 'ssl.key.location' too"
                )
        if out.get("ssl.endpoint.identification.algorithm") == "":
            out["ssl.endpoint.identification.algorithm"] = "none"
        return out

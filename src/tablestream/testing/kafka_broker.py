"""A real single-node Apache Kafka 4.4.0 broker (KRaft mode) for tests and local development.

The broker's jars come from Maven Central through ``mvn`` (once; they are cached), and
the broker listens on 127.0.0.1 only, on ports picked at start-up::

    python -m tablestream.testing.kafka_broker fetch   # download the jars (~43 MB)
    python -m tablestream.testing.kafka_broker run     # start a broker until Ctrl-C

From Python:

>>> with KafkaBroker() as broker:                      # doctest: +SKIP
...     print(broker.bootstrap_servers)
127.0.0.1:41234

Every replication factor and min ISR is 1, topics are never auto-created, and the log
directories live in a temporary directory the broker owns and removes on ``stop()``.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import contextlib
import fcntl
import hashlib
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

KAFKA_VERSION = "4.4.0"
SCALA_VERSION = "2.13"
LOG4J_BRIDGE_VERSION = "2.25.5"  # without the slf4j -> log4j2 bridge the broker logs nothing
KAFKA_HOME_ENV = "TABLESTREAM_KAFKA_HOME"
READY_LINE = "Kafka Server started"

_MARKER = ".fetch-complete"
_LOG_TAIL_LINES = 40

_POM = f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0"
         xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
         xsi:schemaLocation="http://maven.apache.org/POM/4.0.0 https://maven.apache.org/xsd/maven-4.0.0.xsd">
  <modelVersion>4.0.0</modelVersion>
  <groupId>tablestream</groupId>
  <artifactId>kafka-broker-jars</artifactId>
  <version>{KAFKA_VERSION}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_{SCALA_VERSION}</artifactId>
      <version>{KAFKA_VERSION}</version>
    </dependency>
    <dependency>
      <groupId>org.apache.logging.log4j</groupId>
      <artifactId>log4j-slf4j-impl</artifactId>
      <version>{LOG4J_BRIDGE_VERSION}</version>
    </dependency>
  </dependencies>
</project>
"""

_LOG4J2 = """status = warn
name = tablestream-kafka-broker
appender.out.type = Console
appender.out.name = STDOUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = STDOUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.controller.name = kafka.controller
logger.controller.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.cleaner.name = kafka.log.LogCleaner
logger.cleaner.level = INFO
"""


class BrokerError(RuntimeError):
    """The broker's jars could not be fetched, or the broker could not start or stop."""


class ToolMissingError(BrokerError):
    """``java`` or ``mvn`` is not installed (or not on ``PATH``)."""


def default_kafka_home() -> Path:
    """Where the broker's jars are cached: ``$TABLESTREAM_KAFKA_HOME``, else
    ``~/.cache/tablestream/kafka-4.4.0`` (``$XDG_CACHE_HOME`` replaces ``~/.cache``)."""
    if os.environ.get(KAFKA_HOME_ENV):
        return Path(os.environ[KAFKA_HOME_ENV]).expanduser()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tablestream" / f"kafka-{KAFKA_VERSION}"


def _pom_digest() -> str:
    return hashlib.sha256(_POM.encode()).hexdigest()[:16]


def _fetched_jars(home: Path) -> list[Path] | None:
    """The jars a completed fetch recorded, or ``None`` if the fetch is missing/incomplete."""
    marker = home / _MARKER
    if not marker.exists():
        return None
    lines = marker.read_text().splitlines()
    if not lines or lines[0] != f"pom {_pom_digest()}":
        return None
    jars = [home / "libs" / name for name in lines[1:] if name]
    if not jars or not all(jar.is_file() for jar in jars):
        return None
    return jars


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path``, so two processes never fetch into one directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(text: str, lines: int = _LOG_TAIL_LINES) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def fetch_broker_jars(dest: str | os.PathLike[str] | None = None) -> Path:
    """Download Kafka's broker jars (and the log4j2 bridge) with Maven; return the ``libs`` dir.

    ``dest`` is the cache directory (default :func:`default_kafka_home`). A small
    ``pom`` project is written there and ``mvn dependency:copy-dependencies`` copies
    every runtime jar into ``dest/libs``. A marker file written after success makes
    later calls return at once; a fetch that was interrupted is redone from scratch.

    >>> libs = fetch_broker_jars()                     # doctest: +SKIP
    >>> sorted(p.name for p in libs.glob("kafka_*.jar"))  # doctest: +SKIP
    ['kafka_2.13-4.4.0.jar']
    """
    home = Path(dest).expanduser() if dest is not None else default_kafka_home()
    libs = home / "libs"
    if _fetched_jars(home) is not None:
        return libs
    with _locked(home / ".fetch.lock"):
        if _fetched_jars(home) is not None:  # another process finished it meanwhile
            return libs
        mvn = shutil.which("mvn")
        if mvn is None:
            raise ToolMissingError(
                "Maven ('mvn') is not on PATH: it is needed once to download the Kafka broker "
                f"jars into {libs} (install it, e.g. 'apt-get install maven', or point "
                f"{KAFKA_HOME_ENV} at a directory with a complete fetch)"
            )
        (home / _MARKER).unlink(missing_ok=True)
        shutil.rmtree(libs, ignore_errors=True)
        (home / "pom.xml").write_text(_POM)
        command = [
            mvn, "-q", "-B", "dependency:copy-dependencies",
            "-DincludeScope=runtime", "-DoutputDirectory=libs",
        ]
        result = subprocess.run(command, cwd=home, capture_output=True, text=True)
        if result.returncode != 0:
            raise BrokerError(
                f"'mvn dependency:copy-dependencies' failed (exit {result.returncode}) in {home}:\n"
                + _tail(result.stdout + result.stderr)
            )
        jars = sorted(p.name for p in libs.glob("*.jar"))
        if not any(name.startswith(f"kafka_{SCALA_VERSION}-{KAFKA_VERSION}") for name in jars):
            raise BrokerError(f"Maven finished but {libs} holds no kafka_{SCALA_VERSION}-{KAFKA_VERSION} jar")
        marker = home / (_MARKER + ".tmp")
        marker.write_text("\n".join([f"pom {_pom_digest()}", *jars]) + "\n")
        marker.replace(home / _MARKER)
    return libs


def _java() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ToolMissingError(
            "Java ('java') is not on PATH and JAVA_HOME is not set: the Kafka broker needs "
            "Java 17 or newer (e.g. 'apt-get install openjdk-17-jre-headless')"
        )
    return java


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, never starting with '-'.

    >>> len(new_cluster_id())
    22
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(secrets.token_bytes(16)).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def server_properties(
    broker_port: int,
    controller_port: int,
    log_dir: Path,
    extra: Mapping[str, str] | None = None,
    *,
    sasl_port: int | None = None,
    sasl_users: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The ``server.properties`` of a single-node KRaft broker on 127.0.0.1; with
    ``sasl_port``, a second client listener there that takes SASL/PLAIN logins of
    ``sasl_users`` (user name to password)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{broker_port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "min.insync.replicas": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "auto.create.topics.enable": "false",
        "delete.topic.enable": "true",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "2",
        "num.recovery.threads.per.data.dir": "1",
        # The cleaner's default 128 MB dedupe buffer is far more than a test broker needs.
        "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
    }
    if sasl_port is not None:
        props["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
        props["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{sasl_port}"
        props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
        props["sasl.enabled.mechanisms"] = "PLAIN"
        users = " ".join(f'user_{name}="{password}"' for name, password in (sasl_users or {}).items())
        props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
            f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
        )
    props.update(extra or {})
    return props


class KafkaBroker:
    """A single-node Kafka broker (KRaft, broker and controller in one JVM) on 127.0.0.1.

    ``libs`` is the directory of broker jars (default: :func:`fetch_broker_jars`, which
    downloads them on first use). ``properties`` override or extend ``server.properties``.
    ``sasl_users`` (user name to password) opens a second listener that takes SASL/PLAIN
    logins (:attr:`sasl_bootstrap_servers`; ``security.protocol`` ``SASL_PLAINTEXT``).

    >>> broker = KafkaBroker().start()                 # doctest: +SKIP
    >>> broker.bootstrap_servers                       # doctest: +SKIP
    '127.0.0.1:41234'
    >>> broker.stop()                                  # doctest: +SKIP
    """

    def __init__(
        self,
        libs: str | os.PathLike[str] | None = None,
        *,
        heap: str = "512m",
        properties: Mapping[str, str] | None = None,
        sasl_users: Mapping[str, str] | None = None,
    ) -> None:
        self._libs = Path(libs) if libs is not None else None
        self._heap = heap
        self._extra = dict(properties or {})
        self._sasl_users = dict(sasl_users) if sasl_users else None
        self.sasl_port: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._work_dir: Path | None = None
        self.port: int | None = None
        self.controller_port: int | None = None
        self.cluster_id: str | None = None

    # -- state ----------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"`` of the running broker."""
        if self.port is None or not self.is_running():
            raise BrokerError("The Kafka broker is not running: call start() first")
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """``"127.0.0.1:PORT"`` of the SASL/PLAIN listener (brokers started with ``sasl_users``)."""
        if self.sasl_port is None or not self.is_running():
            raise BrokerError("The Kafka broker has no SASL listener running: start one with sasl_users")
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def pid(self) -> int | None:
        """The PID of the broker's ``java`` process (``None`` before start / after stop)."""
        return self._process.pid if self._process is not None else None

    @property
    def work_dir(self) -> Path | None:
        """The temporary directory holding config, log and log dirs (removed by ``stop()``,
        kept by ``stop(keep_data=True)``)."""
        return self._work_dir

    @property
    def log_path(self) -> Path | None:
        """The broker's own log (its stdout and stderr)."""
        return self._work_dir / "broker.log" if self._work_dir is not None else None

    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the broker's log ('' when there is none)."""
        path = self.log_path
        if path is None or not path.exists():
            return ""
        return _tail(path.read_text(errors="replace"), lines)

    # -- lifecycle ------------------------------------------------------------------
    def start(self, timeout: float = 60) -> KafkaBroker:
        """Start the broker and wait until it logs ``Kafka Server started``; return ``self``.

        After ``stop(keep_data=True)`` this starts the same broker again: same ports, same
        log directories, so its topics, records, transactions and consumer groups are
        there and clients that knew it reconnect on their own.

        Raises :class:`ToolMissingError` when ``java`` (or, on first use, ``mvn``) is
        missing and :class:`BrokerError` with the end of the broker's log when it does
        not start within ``timeout`` seconds. A port taken between picking and binding
        is retried with new ports (on a restart the ports are kept, and a taken one is
        an error).
        """
        if self.is_running():
            return self
        java = _java()
        libs = self._libs if self._libs is not None else fetch_broker_jars()
        if not any(Path(libs).glob("*.jar")):
            raise BrokerError(f"No jars in {libs}: run 'python -m tablestream.testing.kafka_broker fetch'")
        deadline = time.monotonic() + timeout
        if self._work_dir is not None:  # stopped with its data kept
            try:
                self._launch(java, Path(libs), deadline)
            except _PortTaken:
                self.stop()
                raise BrokerError(
                    f"The Kafka broker could not start again on port {self.port} or {self.controller_port}: "
                    "another process took it while the broker was stopped"
                ) from None
            except BaseException:
                self.stop()
                raise
            return self
        for attempt in range(3):
            try:
                self._start_once(java, Path(libs), deadline)
                atexit.register(self.stop)
                return self
            except _PortTaken:
                self.stop()
                if attempt == 2:
                    raise BrokerError("The Kafka broker could not bind its ports (tried 3 times)") from None
            except BaseException:
                self.stop()
                raise
        raise AssertionError("unreachable")

    def _start_once(self, java: str, libs: Path, deadline: float) -> None:
        self._work_dir = Path(tempfile.mkdtemp(prefix="tablestream-kafka-"))
        self.port, self.controller_port = _free_port(), _free_port()
        while self.controller_port == self.port:
            self.controller_port = _free_port()
        self.sasl_port = None
        if self._sasl_users is not None:
            self.sasl_port = _free_port()
            while self.sasl_port in (self.port, self.controller_port):
                self.sasl_port = _free_port()
        self.cluster_id = new_cluster_id()
        props_path = self._work_dir / "server.properties"
        props = server_properties(
            self.port, self.controller_port, self._work_dir / "data", self._extra,
            sasl_port=self.sasl_port, sasl_users=self._sasl_users,
        )
        props_path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        log4j = self._work_dir / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        fmt = subprocess.run(
            [*self._jvm(java, libs), "kafka.tools.StorageTool", "format", "-t", self.cluster_id, "-c", str(props_path)],
            capture_output=True, text=True, timeout=max(deadline - time.monotonic(), 1),
        )
        if fmt.returncode != 0:
            raise BrokerError(
                f"Formatting the Kafka broker's storage failed (exit {fmt.returncode}):\n"
                + _tail(fmt.stdout + fmt.stderr)
            )
        self._launch(java, libs, deadline)

    def _jvm(self, java: str, libs: Path) -> list[str]:
        assert self._work_dir is not None
        return [
            java,
            f"-Xmx{self._heap}",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self._work_dir / 'log4j2.properties'}",
            f"-Dkafka.logs.dir={self._work_dir}",
            "-cp",
            f"{libs}/*",
        ]

    def _launch(self, java: str, libs: Path, deadline: float) -> None:
        """Run the broker of the work directory's ``server.properties`` (formatted)."""
        assert self._work_dir is not None and self.log_path is not None
        start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            # Popen execs java directly, so Popen.pid is the java PID itself.
            self._process = subprocess.Popen(
                [*self._jvm(java, libs), "kafka.Kafka", str(self._work_dir / "server.properties")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self._work_dir, start_new_session=True,
            )
        (self._work_dir / "broker.pid").write_text(f"{self._process.pid}\n")
        self._watchdog = _start_watchdog(os.getpid(), self._process.pid, self._work_dir)
        self._wait_ready(deadline, start)

    def _wait_ready(self, deadline: float, offset: int = 0) -> None:
        """Wait for the ready line in the log after ``offset`` (a restarted broker's log
        holds the earlier start's)."""
        assert self._process is not None and self.log_path is not None
        seen = b""
        while True:
            with open(self.log_path, "rb") as log:
                log.seek(offset)
                chunk = log.read()
            offset += len(chunk)
            seen = seen[-200:] + chunk
            if READY_LINE.encode() in seen:
                return
            if b"Address already in use" in seen:
                raise _PortTaken()
            if self._process.poll() is not None:
                raise BrokerError(
                    f"The Kafka broker exited with code {self._process.returncode} before it started; "
                    f"last lines of its log:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"The Kafka broker did not log '{READY_LINE}' in time; last lines of its log:\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, timeout: float = 15, *, keep_data: bool = False) -> None:
        """Stop the broker (SIGTERM to its pid, then SIGKILL after ``timeout`` s) and
        remove its directory; with ``keep_data``, keep the directory and the ports, so
        that :meth:`start` starts the same broker again (as a broker restarted in a
        real cluster). The directory is removed at exit if it is not stopped for good.

        >>> broker.stop(keep_data=True); broker.start()   # doctest: +SKIP

        Safe to call more than once.
        """
        atexit.unregister(self.stop)
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                process.wait()
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is not None and watchdog.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                watchdog.kill()
            watchdog.wait()
        if keep_data and self._work_dir is not None:
            atexit.register(self.stop)
            return
        if self._work_dir is not None:
            shutil.rmtree(self._work_dir, ignore_errors=True)
            self._work_dir = None

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running at 127.0.0.1:{self.port}, pid {self.pid}" if self.is_running() else "stopped"
        return f"KafkaBroker({state})"


class _PortTaken(Exception):
    pass


def _start_watchdog(parent_pid: int, broker_pid: int, work_dir: Path) -> subprocess.Popen[bytes]:
    """A tiny shell loop that stops the broker and removes its directory if this Python
    process dies without stopping it (e.g. a killed test run), so no 450 MB JVM is left."""
    script = f"""
while kill -0 {parent_pid} 2>/dev/null && kill -0 {broker_pid} 2>/dev/null; do sleep 1; done
kill -0 {parent_pid} 2>/dev/null && exit 0
kill -TERM {broker_pid} 2>/dev/null
i=0
while kill -0 {broker_pid} 2>/dev/null && [ $i -lt 15 ]; do sleep 1; i=$((i+1)); done
kill -KILL {broker_pid} 2>/dev/null
sleep 1
rm -rf {shlex.quote(str(work_dir))}
"""
    return subprocess.Popen(
        ["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )


def main(argv: list[str] | None = None) -> int:
    """``fetch`` downloads the broker's jars; ``run`` starts a broker until Ctrl-C."""
    parser = argparse.ArgumentParser(
        prog="python -m tablestream.testing.kafka_broker",
        description=f"A single-node Apache Kafka {KAFKA_VERSION} broker (KRaft) on 127.0.0.1.",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fetch = commands.add_parser("fetch", help="download the broker's jars with Maven")
    fetch.add_argument("--dest", help=f"cache directory (default ${KAFKA_HOME_ENV} or {default_kafka_home()})")
    run = commands.add_parser("run", help="start a broker and print its bootstrap address until Ctrl-C")
    run.add_argument("--timeout", type=float, default=60, help="seconds to wait for start-up")
    args = parser.parse_args(argv)
    home = Path(args.dest).expanduser() if getattr(args, "dest", None) else default_kafka_home()
    if _fetched_jars(home) is None:
        print(f"Downloading the Kafka {KAFKA_VERSION} broker jars with Maven into {home / 'libs'} "
              "(~43 MB, once)", file=sys.stderr, flush=True)
    try:
        if args.command == "fetch":
            libs = fetch_broker_jars(home)
            print(f"Kafka {KAFKA_VERSION} broker jars in {libs}")
            return 0
        broker = KafkaBroker()
        try:
            broker.start(timeout=args.timeout)
            print(broker.bootstrap_servers, flush=True)
            print(
                f"Kafka {KAFKA_VERSION} broker running at {broker.bootstrap_servers} "
                f"(pid {broker.pid}, log {broker.log_path}); press Ctrl-C to stop",
                file=sys.stderr, flush=True,
            )
            while broker.is_running():
                time.sleep(0.5)
            print(f"The broker exited; last lines of its log:\n{broker.log_tail()}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("Stopping the broker", file=sys.stderr)
            return 0
        finally:
            broker.stop()
    except BrokerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

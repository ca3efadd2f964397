"""A Spark standalone cluster on 127.0.0.1 for tests: a ``Master`` and workers started
from the pyspark package's ``spark-class``, each worker with its own work directory
and its own Spark local directories (``SPARK_LOCAL_DIRS``), as separate hosts would
have them.

>>> cluster = SparkCluster(tmp_path / "cluster").start()        # doctest: +SKIP
>>> cluster.master_url                                          # doctest: +SKIP
'spark://127.0.0.1:41234'
>>> cluster.kill_worker(0); cluster.start_worker(0)             # doctest: +SKIP
>>> cluster.stop()                                              # doctest: +SKIP

Every process is stopped by its pid: the daemons this class started, and the executor
JVMs the workers started (their children). A watchdog kills the daemons if the test
process dies without stopping them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pyspark

import tablestream

SPARK_HOME = Path(pyspark.__file__).parent
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


class ClusterError(RuntimeError):
    """The cluster did not start, or did not reach the state a test waits for."""


class JavaMissingError(ClusterError):
    """No Java to run Spark's daemons."""


@dataclass(frozen=True)
class Executor:
    """An executor JVM a worker started: the worker's index, the pid, the executor id
    (``--executor-id``) and the application it runs for."""

    worker: int
    pid: int
    executor_id: str
    app_id: str


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses.
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        for child in _children(todo.pop()):
            found.append(child)
            todo.append(child)
    return found


def _cmdline(pid: int) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _kill(pids: list[int], timeout: float = 30) -> None:
    """SIGKILL each of ``pids`` and wait until none runs."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(_alive(pid) for pid in pids):
        if time.monotonic() > deadline:
            raise ClusterError(f"Processes {[p for p in pids if _alive(p)]} still run {timeout} s after SIGKILL")
        time.sleep(0.05)


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class SparkCluster:
    """A standalone cluster of ``workers`` workers, ``cores`` cores and ``memory`` each,
    under ``root`` (daemon logs, and per worker ``worker-<i>/work`` and
    ``worker-<i>/local``). Python workers run this interpreter (``PYSPARK_PYTHON``) and
    import tablestream from where this process imports it (``PYTHONPATH``)."""

    def __init__(self, root: Path, workers: int = 2, cores: int = 1, memory: str = "1g"):
        self.root = Path(root)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.master_port: int | None = None
        self.webui_port: int | None = None
        self._master: subprocess.Popen | None = None
        self._workers: dict[int, subprocess.Popen] = {}
        self._worker_ports: dict[int, int] = {}
        self._watchdog: subprocess.Popen | None = None

    # ------------------------------------------------------------------ facts
    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def work_dir(self, i: int) -> Path:
        return self.root / f"worker-{i}" / "work"

    def local_dir(self, i: int) -> Path:
        return self.root / f"worker-{i}" / "local"

    def env(self) -> dict[str, str]:
        """The environment of the daemons (and of the executors they start)."""
        source = str(Path(tablestream.__file__).resolve().parents[1])
        python_path = os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH", "")) if p)
        return dict(
            os.environ,
            SPARK_HOME=str(SPARK_HOME),
            SPARK_LOCAL_IP="127.0.0.1",
            SPARK_DAEMON_MEMORY="512m",
            PYSPARK_PYTHON=sys.executable,
            PYTHONPATH=python_path,
        )

    def master_state(self) -> dict:
        """The master's JSON (``/json/``): workers, applications."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.webui_port}/json/", timeout=5) as response:
            return json.load(response)

    def alive_worker_ports(self) -> set[int]:
        """The ports of the workers the master holds alive."""
        try:
            workers = self.master_state()["workers"]
        except (OSError, ValueError):  # not listening yet; a half-written answer
            return set()
        return {w["port"] for w in workers if w["state"] == "ALIVE"}

    def executors(self) -> list[Executor]:
        """The executor JVMs the running workers started."""
        found = []
        for i, worker in sorted(self._workers.items()):
            for pid in _children(worker.pid):
                args = _cmdline(pid)
                if EXECUTOR_CLASS in args and _alive(pid):
                    found.append(Executor(i, pid, args[args.index("--executor-id") + 1], args[args.index("--app-id") + 1]))
        return found

    def running_workers(self) -> set[int]:
        """The indexes of the workers running now."""
        return {i for i, worker in self._workers.items() if worker.poll() is None}

    def executor_pids(self) -> list[int]:
        return [e.pid for e in self.executors()]

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float = 180) -> SparkCluster:
        """Start the master and every worker; return once the master holds them all alive."""
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise JavaMissingError("Java ('java') is not on PATH and JAVA_HOME is not set: Spark needs Java 17")
        self.root.mkdir(parents=True, exist_ok=True)
        self.master_port, self.webui_port = free_port(), free_port()
        self._master = self._spawn(
            "master",
            [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(self.master_port), "--webui-port", str(self.webui_port)],
            self.env(),
        )
        for i in range(self.workers):
            self._start_worker(i)
        self._wait(lambda: self.alive_worker_ports() >= set(self._worker_ports.values()), timeout, "every worker registered")
        return self

    def start_worker(self, i: int, timeout: float = 120) -> None:
        """Start worker ``i`` (again), with the same work and local directories; return
        once the master holds it alive."""
        if i in self._workers and self._workers[i].poll() is None:
            raise ClusterError(f"Worker {i} is running")
        self._start_worker(i)
        port = self._worker_ports[i]
        self._wait(lambda: port in self.alive_worker_ports(), timeout, f"worker {i} registered")

    def kill_worker(self, i: int, timeout: float = 60) -> None:
        """SIGKILL worker ``i`` and everything it started (its executors); return once
        the master no longer holds it alive."""
        worker = self._workers.pop(i)
        _kill([worker.pid, *_descendants(worker.pid)])
        worker.wait()
        port = self._worker_ports.pop(i)
        self._write_pids()
        self._wait(lambda: port not in self.alive_worker_ports(), timeout, f"worker {i} gone from the master")

    def kill_executor(self, pid: int) -> None:
        """SIGKILL an executor JVM (one of :meth:`executor_pids`) and its children; its
        worker stays and starts another."""
        if pid not in self.executor_pids():
            raise ClusterError(f"{pid} is not an executor of this cluster")
        _kill([pid, *_descendants(pid)])

    def wait_for_executors(self, workers: set[int], timeout: float = 120) -> list[Executor]:
        """Wait until exactly ``workers`` (indexes) each run an executor; return them."""
        self._wait(lambda: {e.worker for e in self.executors()} == workers, timeout, f"executors on workers {sorted(workers)}")
        return self.executors()

    def stop(self, timeout: float = 20) -> None:
        """Stop the workers (their executors with them), then the master; SIGKILL what
        still runs after ``timeout`` s. Removes the workers' work and local directories."""
        daemons = [*self._workers.values(), *([self._master] if self._master else [])]
        spawned = [pid for d in daemons for pid in _descendants(d.pid)]
        for daemon in daemons:
            if daemon.poll() is None:
                daemon.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for daemon in daemons:
            with contextlib.suppress(subprocess.TimeoutExpired):
                daemon.wait(max(deadline - time.monotonic(), 0.1))
        _kill([d.pid for d in daemons if d.poll() is None] + [p for p in spawned if _alive(p)])
        for daemon in daemons:
            daemon.wait()
        self._workers.clear()
        self._master = None
        if self._watchdog is not None and self._watchdog.poll() is None:
            self._watchdog.kill()
            self._watchdog.wait()
        for i in range(self.workers):
            shutil.rmtree(self.root / f"worker-{i}", ignore_errors=True)

    def logs(self) -> str:
        """The end of each daemon's log, for a failure message."""
        return "\n".join(f"--- {p.name}\n{_tail(p)}" for p in sorted(self.root.glob("*.log")))

    # ------------------------------------------------------------------ helpers
    def _start_worker(self, i: int) -> None:
        for directory in (self.work_dir(i), self.local_dir(i)):
            directory.mkdir(parents=True, exist_ok=True)
        port = free_port()
        env = dict(self.env(), SPARK_WORKER_DIR=str(self.work_dir(i)), SPARK_LOCAL_DIRS=str(self.local_dir(i)))
        self._workers[i] = self._spawn(
            f"worker-{i}",
            [
                WORKER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port()),
                "--cores", str(self.cores), "--memory", self.memory, "--work-dir", str(self.work_dir(i)),
                self.master_url,
            ],
            env,
        )
        self._worker_ports[i] = port

    def _spawn(self, name: str, args: list[str], env: dict[str, str]) -> subprocess.Popen:
        # spark-class execs java: the pid is the daemon's JVM.
        with open(self.root / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
            )
        self._write_pids(extra=process.pid)
        if self._watchdog is None:
            self._watchdog = _start_watchdog(os.getpid(), self.root / "pids")
        return process

    def _write_pids(self, extra: int | None = None) -> None:
        pids = {d.pid for d in self._workers.values()}
        if self._master is not None:
            pids.add(self._master.pid)
        if extra is not None:
            pids.add(extra)
        tmp = self.root / "pids.tmp"
        tmp.write_text(" ".join(map(str, sorted(pids))) + "\n")
        tmp.replace(self.root / "pids")

    def _wait(self, done, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            daemons = {"the Spark master": self._master, **{f"worker {i}": w for i, w in self._workers.items()}}
            for name, daemon in daemons.items():
                if daemon is not None and daemon.poll() is not None:
                    raise ClusterError(f"{name} exited with code {daemon.returncode}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise ClusterError(f"Not reached in {timeout} s: {what}\n{self.logs()}")
            time.sleep(0.2)


def _start_watchdog(parent_pid: int, pid_file: Path) -> subprocess.Popen:
    """A shell loop that SIGKILLs the daemons listed in ``pid_file`` if this process dies
    without stopping them (their executors exit when their worker goes)."""
    script = f"""
while kill -0 {parent_pid} 2>/dev/null; do sleep 1; done
kill -KILL $(cat {shlex.quote(str(pid_file))}) 2>/dev/null
"""
    return subprocess.Popen(
        ["sh", "-c", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )

"""A throw-away standalone ZooKeeper for tests and benchmarks: Debian's ``zookeeper`` package.

    with LocalZookeeper() as zk:          # 127.0.0.1, a free port, a temporary data dir
        target = f"zookeeper://{zk.address}/benchmark.BenchmarkService"

Runs ``org.apache.zookeeper.server.ZooKeeperServerMain`` from /usr/share/java/zookeeper.jar
(its manifest names the jars it needs) with the ``java`` on PATH, in a temporary directory
that ``stop()`` deletes.  Bound to 127.0.0.1 only; no admin HTTP server; only the ``ruok``
and ``srvr`` four-letter words, the first of which says when it is ready.  The JVM dies with
the process that started it (PR_SET_PDEATHSIG), so a killed test run leaves none behind.
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Optional

from .._parent_death import tied_to_parent

__all__ = ["LocalZookeeper", "ZookeeperUnavailable", "ZOOKEEPER_JAR"]

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
# A small, quick-starting JVM: the server holds a few hundred nodes at most here.
_JVM_FLAGS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
              "-Dzookeeper.admin.enableServer=false", "-Djava.net.preferIPv4Stack=true"]


class ZookeeperUnavailable(RuntimeError):
    """ZooKeeper is not installed, or the server did not come up in time."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def four_letter_word(host: str, port: int, word: str, timeout: float = 1.0) -> bytes:
    """Sends a ZooKeeper four-letter command (``ruok``, ``srvr``) and returns the answer."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                return b"".join(chunks)
            chunks.append(data)


class LocalZookeeper:
    """A standalone ZooKeeper server on 127.0.0.1; a context manager, or start()/stop().

    ``tick_ms`` is ZooKeeper's tick: sessions may time out from 2 ticks up, so a short tick
    lets a test expire a provider's session quickly.
    """

    def __init__(self, port: int = 0, tick_ms: int = 500, start_timeout: float = 60.0) -> None:
        self.host = "127.0.0.1"
        self.port = port
        self.tick_ms = tick_ms
        self.start_timeout = start_timeout
        self._dir: Optional[Path] = None
        self._process: Optional[subprocess.Popen] = None

    @property
    def address(self) -> str:
        """``127.0.0.1:PORT``: the connect string for kazoo and zookeeper:// targets."""
        return f"{self.host}:{self.port}"

    @property
    def pid(self) -> Optional[int]:
        """The JVM's process id while it runs."""
        return self._process.pid if self._process is not None else None

    def _write_config(self, workdir: Path) -> Path:
        data = workdir / "data"
        data.mkdir()
        config = workdir / "zoo.cfg"
        config.write_text("\n".join([
            f"tickTime={self.tick_ms}",
            f"dataDir={data}",
            f"clientPort={self.port}",
            f"clientPortAddress={self.host}",
            "maxClientCnxns=0",
            "admin.enableServer=false",
            "4lw.commands.whitelist=ruok,srvr",
            "",
        ]))
        return config

    def start(self) -> "LocalZookeeper":
        """Starts the JVM and waits until the server answers ``ruok`` (ZookeeperUnavailable
        after ``start_timeout`` s, with the end of its log)."""
        if self._process is not None:
            return self
        java = shutil.which("java")
        if java is None or not ZOOKEEPER_JAR.exists():
            raise ZookeeperUnavailable(
                "needs Debian's zookeeper package and a Java runtime (tools/bootstrap.sh "
                f"installs them): java={java}, {ZOOKEEPER_JAR} exists={ZOOKEEPER_JAR.exists()}")
        self._dir = Path(tempfile.mkdtemp(prefix="triple_py-zookeeper-"))
        if not self.port:
            self.port = _free_port()
        config = self._write_config(self._dir)
        log = open(self._dir / "server.log", "wb")
        try:
            self._process = subprocess.Popen(
                tied_to_parent([java, *_JVM_FLAGS, "-cp", str(ZOOKEEPER_JAR), _MAIN,
                                str(config)]),
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self._dir)
        finally:
            log.close()
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        assert self._process is not None and self._dir is not None
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                break
            try:
                if four_letter_word(self.host, self.port, "ruok", timeout=0.5) == b"imok":
                    return
            except OSError:
                pass
            time.sleep(0.1)
        tail = (self._dir / "server.log").read_text(errors="replace")[-2000:]
        state = ("exited with status %s" % self._process.returncode
                 if self._process.poll() is not None else
                 f"did not answer within {self.start_timeout:.0f} s")
        raise ZookeeperUnavailable(f"ZooKeeper on {self.address} {state}; log:\n{tail}")

    def stop(self) -> None:
        """Stops the server (SIGTERM, SIGKILL after 5 s) and deletes its directory.
        Idempotent."""
        process, self._process = self._process, None
        if process is not None:
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=5)
        workdir, self._dir = self._dir, None
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def __enter__(self) -> "LocalZookeeper":
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self._process is not None else "stopped"
        return f"LocalZookeeper({self.address}, {state})"

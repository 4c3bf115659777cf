"""One peer subprocess: start it, wait for ``LISTENING <port>``, stop it.

The peer's stdin is a pipe from this process (so it also exits when this process dies), its
stdout is read for the ``LISTENING`` line (and drained afterwards, so it never blocks), its
stderr goes to a log file that is deleted when the peer exits cleanly (status 0 or SIGTERM)
and kept otherwise. Stopping closes stdin and sends SIGTERM, then SIGKILL after
``STOP_TIMEOUT`` seconds. Peers still running when the interpreter exits are stopped.
"""
from __future__ import annotations

import atexit
import queue
import shlex
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Mapping, Optional, Sequence, Set

STOP_TIMEOUT = 5.0

_live: "Set[PeerProcess]" = set()


class PeerError(RuntimeError):
    """A peer could not be built or started (the message says why, with its log's tail)."""


class RunningPeer:
    """A started peer: ``address`` is "host:port"; ``stop()`` ends it (idempotent)."""

    def __init__(self, name: str, host: str, port: int) -> None:
        self.name = name
        self.host = host
        self.port = port

    @property
    def address(self) -> str:
        """host:port to connect to."""
        return f"{self.host}:{self.port}"

    def alive(self) -> Optional[str]:
        """None while the peer runs; otherwise what happened to it."""
        return None

    def stop(self) -> None:
        """End the peer. Idempotent."""

    def __enter__(self) -> "RunningPeer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class PeerProcess(RunningPeer):
    """A running peer subprocess. Use as a context manager, or call stop()."""

    def __init__(self, name: str, process: subprocess.Popen, host: str, port: int,
                 log_path: Path, tls: bool = False) -> None:
        super().__init__(name, host, port)
        self.tls = tls  # serves TLS (ALPN h2) instead of h2c
        self.process = process
        self.log_path = log_path

    def __repr__(self) -> str:
        tls = ", tls" if self.tls else ""
        return f"Peer({self.name!r}, {self.address}{tls}, pid={self.process.pid})"

    def __enter__(self) -> "PeerProcess":
        return self

    def alive(self) -> Optional[str]:
        code = self.process.poll()
        if code is None:
            return None
        return f"{self.name} peer exited with {code}; log {self.log_path}:\n{log_tail(self.log_path)}"

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s) and reap it. Idempotent."""
        _live.discard(self)
        terminate(self.process)
        if self.process.returncode in (0, -signal.SIGTERM):
            self.log_path.unlink(missing_ok=True)


def log_tail(path: Path, limit: int = 4000) -> str:
    """The last ``limit`` characters of a log file ("" when it cannot be read)."""
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


def terminate(process: subprocess.Popen) -> None:
    """Stop ``process``: EOF on its stdin and SIGTERM, SIGKILL after STOP_TIMEOUT; reap it."""
    if process.poll() is None:
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


@atexit.register
def _stop_all() -> None:
    for peer in list(_live):
        peer.stop()


def _read_lines(stream: IO[str], lines: "queue.Queue[Optional[str]]") -> None:
    """Forward stdout lines to the queue; keep draining so the peer never blocks on it."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def start_process(name: str, command: Sequence[str], *, cwd: Path, log_dir: Path,
                  host: str = "127.0.0.1", timeout: float = 60.0,
                  env: Optional[Mapping[str, str]] = None, tls: bool = False) -> PeerProcess:
    """Start ``command`` (from ``cwd``) and wait up to ``timeout`` s for ``LISTENING <port>``.

    Raises PeerError when the peer exits or stays silent (the message holds the command and
    its log's tail), OSError when the command cannot be started at all.
    """
    log_dir.mkdir(parents=True, exist_ok=True)
    log = tempfile.NamedTemporaryFile(dir=log_dir, prefix=f"{name}-", suffix=".log",
                                      delete=False)
    with log:
        process = subprocess.Popen(list(command), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=log, text=True, cwd=cwd,
                                   env=None if env is None else dict(env))
    lines: "queue.Queue[Optional[str]]" = queue.Queue()
    threading.Thread(target=_read_lines, args=(process.stdout, lines),
                     name=f"{name}-stdout", daemon=True).start()
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PeerError(f"{name} peer did not print LISTENING within {timeout:.0f} s")
            try:
                line = lines.get(timeout=remaining)
            except queue.Empty:
                continue
            if line is None:
                process.wait(STOP_TIMEOUT)
                raise PeerError(f"{name} peer exited with {process.returncode} before listening")
            if line.startswith("LISTENING "):
                peer = PeerProcess(name, process, host, int(line.split()[1]), Path(log.name),
                                   tls=tls)
                _live.add(peer)
                return peer
    except BaseException as exc:
        terminate(process)
        if isinstance(exc, PeerError):
            raise PeerError(f"{exc}; command {shlex.join(command)}; log {log.name}:\n"
                            f"{log_tail(Path(log.name))}") from None
        raise

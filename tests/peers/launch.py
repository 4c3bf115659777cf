"""Start and stop the test peers as subprocesses.

    from peers.launch import start_peer
    with start_peer("go") as peer:          # "grpcio", "go" or "rogue"
        channel = make_channel(peer.address)  # "127.0.0.1:PORT"

Each peer binds 127.0.0.1 on a free port and announces it with `LISTENING <port>`; start_peer
waits for that line (60 s at most). The Go peer is built into `.build/peers/` under the
repository root on first use (tests/peers/build_go.sh). A peer is stopped with SIGTERM, then
SIGKILL; its stdin is a pipe from this process, so it also exits if this process dies.
A peer's stderr goes to a log under `.build/peers/logs/`, kept only if the peer exited with an
error or was killed.
"""
from __future__ import annotations

import atexit
import fcntl
import queue
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, List, Optional

PEERS_DIR = Path(__file__).resolve().parent
ROOT = PEERS_DIR.parents[1]
BUILD_DIR = ROOT / ".build" / "peers"
PYTHON = "/usr/bin/python3"  # Debian's Python: has python3-grpcio and python3-h2
START_TIMEOUT = 60.0
STOP_TIMEOUT = 5.0
PEER_NAMES = ("grpcio", "go", "rogue")

_live: "set[Peer]" = set()


class PeerError(RuntimeError):
    """A peer could not be built or started."""


class Peer:
    """A running peer process. Use as a context manager, or call stop()."""

    def __init__(self, name: str, process: subprocess.Popen, host: str, port: int,
                 log_path: Path) -> None:
        self.name = name
        self.process = process
        self.host = host
        self.port = port
        self.log_path = log_path

    @property
    def address(self) -> str:
        """host:port to connect to."""
        return f"{self.host}:{self.port}"

    def __repr__(self) -> str:
        return f"Peer({self.name!r}, {self.address}, pid={self.process.pid})"

    def __enter__(self) -> "Peer":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL after 5 s) and reap it. Idempotent."""
        _live.discard(self)
        _terminate(self.process)
        if self.process.returncode in (0, -signal.SIGTERM):
            self.log_path.unlink(missing_ok=True)


def _terminate(process: subprocess.Popen) -> None:
    if process.poll() is None:
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


def build_go_peer() -> Path:
    """Build (if out of date) and return the grpc-go peer binary under .build/peers/."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(BUILD_DIR / ".build.lock", "w") as lock:  # one build at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["sh", str(PEERS_DIR / "build_go.sh"), str(BUILD_DIR)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        )
    if result.returncode != 0:
        raise PeerError(f"building the grpc-go peer failed:\n{result.stdout}{result.stderr}")
    return BUILD_DIR / "echo_server"


def peer_command(name: str, host: str, port: int, **options: object) -> List[str]:
    """The command line that starts peer `name`; options become extra flags."""
    flags = {"host": host, "port": port, **options}
    if name == "go":
        return [str(build_go_peer())] + [a for k, v in flags.items() for a in (f"-{k}", str(v))]
    scripts = {"grpcio": "grpcio_server.py", "rogue": "h2_rogue_server.py"}
    if name not in scripts:
        raise ValueError(f"unknown peer {name!r}; expected one of {PEER_NAMES}")
    args = [a for k, v in flags.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    return [PYTHON, str(PEERS_DIR / scripts[name])] + args


def _read_lines(stream: IO[str], lines: "queue.Queue[Optional[str]]") -> None:
    """Forward stdout lines to the queue; keep draining so the peer never blocks on it."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def start_peer(name: str, *, host: str = "127.0.0.1", port: int = 0,
               timeout: float = START_TIMEOUT, **options: object) -> Peer:
    """Start peer `name` ("grpcio", "go", "rogue") and wait until it listens."""
    command = peer_command(name, host, port, **options)
    logs = BUILD_DIR / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = tempfile.NamedTemporaryFile(dir=logs, prefix=f"{name}-", suffix=".log", delete=False)
    with log:
        process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=log, text=True, cwd=ROOT)
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
                peer = Peer(name, process, host, int(line.split()[1]), Path(log.name))
                _live.add(peer)
                return peer
    except BaseException as exc:
        _terminate(process)
        if isinstance(exc, PeerError):
            tail = Path(log.name).read_text(errors="replace")[-4000:]
            raise PeerError(f"{exc}; command {command}; log {log.name}:\n{tail}") from None
        raise

"""Start and stop the test peers as subprocesses.

    from peers.launch import start_peer
    with start_peer("go") as peer:   # "grpcio", "go", "rogue", "connect" or "embedded"
        channel = make_channel(peer.address)  # "127.0.0.1:PORT"

Each peer binds 127.0.0.1 on a free port and announces it with `LISTENING <port>`; start_peer
waits for that line (60 s at most). The Go peer is built into `.build/peers/` under the
repository root on first use (tests/peers/build_go.sh); the Connect peer (Node.js) gets its
npm packages in tests/peers/node/node_modules on first use (tests/peers/node/install.sh).
A peer is stopped with SIGTERM, then SIGKILL; its stdin is a pipe from this process, so it
also exits if this process dies. A peer's stderr goes to a log under `.build/peers/logs/`,
kept only if the peer exited with an error or was killed.

TLS (grpcio and go peers): `start_peer("go", tls_cert=PEM_PATH, tls_key=PEM_PATH)` serves
TLS with ALPN h2; adding `tls_client_ca=PEM_PATH` makes the peer require and verify client
certificates (mTLS). Other keyword options become flags (`compress_responses=True` ->
`--compress-responses`); a None or False option is left out.
"""
from __future__ import annotations

import atexit
import fcntl
import queue
import signal
import subprocess
import sys
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
NODE = "node"  # Node.js 20 (with npm) runs the Connect peer
PEER_NAMES = ("grpcio", "go", "rogue", "connect", "dubbo-js", "embedded")

_live: "set[Peer]" = set()


class PeerError(RuntimeError):
    """A peer could not be built or started."""


class Peer:
    """A running peer process. Use as a context manager, or call stop()."""

    def __init__(self, name: str, process: subprocess.Popen, host: str, port: int,
                 log_path: Path, tls: bool = False) -> None:
        self.name = name
        self.tls = tls  # serves TLS (ALPN h2) instead of h2c
        self.process = process
        self.host = host
        self.port = port
        self.log_path = log_path

    @property
    def address(self) -> str:
        """host:port to connect to."""
        return f"{self.host}:{self.port}"

    def __repr__(self) -> str:
        tls = ", tls" if self.tls else ""
        return f"Peer({self.name!r}, {self.address}{tls}, pid={self.process.pid})"

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


def install_connect_peer(script: str = "connect_server.mjs") -> Path:
    """Install (if out of date) the Node peers' npm packages (Connect and dubbo-js share
    tests/peers/node/package-lock.json); return the peer's script."""
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(BUILD_DIR / ".build.lock", "w") as lock:  # one install at a time across processes
        fcntl.flock(lock, fcntl.LOCK_EX)
        result = subprocess.run(
            ["sh", str(PEERS_DIR / "node" / "install.sh"), str(BUILD_DIR / "npm-cache")],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600,
        )
    if result.returncode != 0:
        raise PeerError(f"installing the Connect peer failed:\n{result.stdout}{result.stderr}")
    return PEERS_DIR / "node" / script


def _flag_args(prefix: str, flags: dict) -> List[str]:
    """Command-line arguments for flags: `key=value` -> `<prefix>key value` (underscores in
    keys become dashes), True -> the bare flag, None and False -> nothing."""
    args: List[str] = []
    for key, value in flags.items():
        if value is None or value is False:
            continue
        flag = prefix + key.replace("_", "-")
        args += [flag] if value is True else [flag, str(value)]
    return args


def peer_command(name: str, host: str, port: int, **options: object) -> List[str]:
    """The command line that starts peer `name`; options become extra flags."""
    flags = {"host": host, "port": port, **options}
    if name == "go":
        return [str(build_go_peer())] + _flag_args("-", flags)
    if name in ("connect", "dubbo-js"):
        script = "connect_server.mjs" if name == "connect" else "dubbo_server.mjs"
        return [NODE, str(install_connect_peer(script))] + _flag_args("--", flags)
    if name == "embedded":  # our C echo server, in a process of its own
        return [sys.executable, "-m", "triple_py.server", "--exit-on-stdin-eof"] + \
            _flag_args("--", flags)
    scripts = {"grpcio": "grpcio_server.py", "rogue": "h2_rogue_server.py"}
    if name not in scripts:
        raise ValueError(f"unknown peer {name!r}; expected one of {PEER_NAMES}")
    return [PYTHON, str(PEERS_DIR / scripts[name])] + _flag_args("--", flags)


def _read_lines(stream: IO[str], lines: "queue.Queue[Optional[str]]") -> None:
    """Forward stdout lines to the queue; keep draining so the peer never blocks on it."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def start_peer(name: str, *, host: str = "127.0.0.1", port: int = 0,
               timeout: float = START_TIMEOUT, tls_cert: Optional[object] = None,
               tls_key: Optional[object] = None, tls_client_ca: Optional[object] = None,
               **options: object) -> Peer:
    """Start peer `name` ("grpcio", "go", "rogue", "connect", "dubbo-js", "embedded") and wait
    until it listens.

    tls_cert / tls_key (PEM file paths, together) make a grpcio or go peer serve TLS;
    tls_client_ca (a PEM file path) also makes it require client certificates.
    """
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("tls_cert and tls_key go together")
    if tls_client_ca is not None and tls_cert is None:
        raise ValueError("tls_client_ca needs tls_cert and tls_key")
    if tls_cert is not None and name not in ("grpcio", "go"):
        raise ValueError(f"the {name!r} peer has no TLS")
    command = peer_command(name, host, port, tls_cert=tls_cert, tls_key=tls_key,
                           tls_client_ca=tls_client_ca, **options)
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
                peer = Peer(name, process, host, int(line.split()[1]), Path(log.name),
                            tls=tls_cert is not None)
                _live.add(peer)
                return peer
    except BaseException as exc:
        _terminate(process)
        if isinstance(exc, PeerError):
            tail = Path(log.name).read_text(errors="replace")[-4000:]
            raise PeerError(f"{exc}; command {command}; log {log.name}:\n{tail}") from None
        raise

"""What the peer catalogues share before a peer can start: the repository root, the
interpreter of the Python peers, one build at a time across processes, the Go echo peer's
build and the Node peers' npm install."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Optional

from .process import PeerError

BUILD_TIMEOUT = 600.0


def repository_root() -> Path:
    """The repository root: $TRIPLE_PY_ROOT, or the checkout this package lives in."""
    env = os.environ.get("TRIPLE_PY_ROOT")
    return Path(env).resolve() if env else Path(__file__).resolve().parents[3]


def peer_python() -> str:
    """The interpreter that runs the Python peers (grpcio, h2): $TRIPLE_PY_PEER_PYTHON, or
    this one. The peers need python3-grpcio, python3-h2 and python3-protobuf: the project's
    .venv sees Debian's packages (--system-site-packages), so its interpreter does."""
    return os.environ.get("TRIPLE_PY_PEER_PYTHON") or sys.executable


def peers_build_dir(root: Path) -> Path:
    """Where the BenchmarkService peers are built and logged (.build/peers/)."""
    return root / ".build" / "peers"


class BuildLock:
    """An exclusive lock on ``lock_path`` across processes (one build at a time)."""

    def __init__(self, lock_path: Path) -> None:
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        self._path = lock_path
        self._file: Optional[IO[str]] = None

    def __enter__(self) -> "BuildLock":
        self._file = open(self._path, "w")
        fcntl.flock(self._file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _peers_lock(root: Path) -> BuildLock:
    return BuildLock(peers_build_dir(root) / ".build.lock")


def _run_script(root: Path, script: Path, argument: Path, what: str) -> None:
    with _peers_lock(root):
        result = subprocess.run(["sh", str(script), str(argument)], stdin=subprocess.DEVNULL,
                                capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    if result.returncode != 0:
        raise PeerError(f"{what} failed:\n{result.stdout}{result.stderr}")


def build_go_echo_peer(root: Path) -> Path:
    """Build (if out of date, tests/peers/build_go.sh) and return the grpc-go BenchmarkService
    peer's binary under .build/peers/. Raises PeerError when the build fails."""
    out = peers_build_dir(root)
    _run_script(root, root / "tests" / "peers" / "build_go.sh", out,
                "building the grpc-go peer")
    return out / "echo_server"


def install_node_packages(root: Path) -> Path:
    """Install (if out of date, tests/peers/node/install.sh) the npm packages the Node peers
    share (Connect, dubbo-js, the interop TestService); return tests/peers/node/.
    Raises PeerError when the install fails."""
    directory = root / "tests" / "peers" / "node"
    _run_script(root, directory / "install.sh", peers_build_dir(root) / "npm-cache",
                "installing the Node peers' npm packages")
    return directory

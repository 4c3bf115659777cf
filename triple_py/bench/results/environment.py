"""What a result depends on besides the code: versions, CPU, load, commit."""
from __future__ import annotations

import os
import platform
import shutil
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, Optional

from ... import _triple, __version__

__all__ = ["environment", "cpu_model", "git_commit", "nghttp2_version", "openssl_version",
           "goos", "goarch", "cpu_count"]

_ROOT = Path(__file__).resolve().parents[3]


def goos() -> str:
    """This machine's operating system as Go names it (``linux``, ``darwin``...)."""
    return platform.system().lower()


def goarch() -> str:
    """This machine's architecture as Go names it (``amd64``, ``arm64``...)."""
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "i686": "386"}.get(machine, machine)


def cpu_count() -> int:
    """The CPUs of this machine (Go's GOMAXPROCS suffix of benchmark names)."""
    return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (platform.processor() elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _core_library(name: str) -> Optional[str]:
    """The version of a library as the core runs it (``_triple.library_versions()``: the
    copy linked into a self-contained wheel, or the system's the loader picked)."""
    try:
        return _triple.library_versions()[name]["linked"]
    except (ImportError, AttributeError, KeyError):
        return None


def nghttp2_version() -> Optional[str]:
    """The core's nghttp2 version."""
    return _core_library("nghttp2")


def openssl_version() -> Optional[str]:
    """The core's OpenSSL version string (OpenSSL_version(OPENSSL_VERSION))."""
    return _core_library("openssl")


def _run(command: list, cwd: Optional[Path] = None) -> Optional[str]:
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=10, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip() if proc.returncode == 0 else None


def git_commit(root: Path = _ROOT) -> Dict[str, Any]:
    """{"commit", "dirty"} of the source tree, when it is a git checkout (read-only git)."""
    if shutil.which("git") is None or not (root / ".git").exists():
        return {"commit": None, "dirty": None}
    commit = _run(["git", "rev-parse", "HEAD"], root)
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], root)
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def environment() -> Dict[str, Any]:
    """Everything worth keeping next to a result (cheap: about 50 ms)."""
    try:
        import grpc
        grpcio = grpc.__version__
    except Exception:  # the reference arms are optional
        grpcio = None

    try:
        core = getattr(_triple, "CORE_VERSION", None)
    except Exception:
        core = None
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None

    h2load = _run(["h2load", "--version"]) if shutil.which("h2load") else None
    return {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": sys.version.split()[0], "python_implementation": platform.python_implementation(),
        "executable": sys.executable, "triple_py": __version__, "triple_core": core,
        "grpcio": grpcio, "nghttp2": nghttp2_version(), "h2load": h2load,
        "openssl": openssl_version(), "python_ssl": ssl.OPENSSL_VERSION,
        "platform": platform.platform(), "machine": platform.machine(),
        "cpu_model": cpu_model(), "cpu_count": os.cpu_count(), "cpu_affinity": affinity,
        "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
        "ci": bool(os.environ.get("CI")), **git_commit(),
    }

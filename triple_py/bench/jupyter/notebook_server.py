"""``make notebook``: Debian's Jupyter Notebook on ``notebooks/`` with the project's kernel.

``python -m triple_py.bench.notebook_server [--port N] [--dir DIR]`` serves DIR: by default
the checkout's ``notebooks/`` when triple_py runs from a checkout, else the current
directory (an installed wheel ships no notebooks; copy them from the repository). It:

1. registers the kernel ``triple-py`` (display name ``triple_py (Python 3.x, <venv>)``)
   that runs this interpreter, the project's .venv, in ``<venv>/share/jupyter/kernels``;
2. starts ``jupyter-notebook`` on 127.0.0.1 (first free port from 8888, or ``--port``)
   with a fresh token, its runtime files and IPython's profile in a temporary directory;
3. prints the URL with its token once the server answers, and waits;
4. on Ctrl-C (or SIGTERM) shuts the kernels down through the server's API, stops the
   server, kills any kernel process left over, and removes the temporary directory. A
   launcher killed outright takes the server along (the server gets SIGTERM when its
   parent dies, and shuts its kernels down); the next launch removes its temporary
   directory.

The server runs in a session of its own, so Ctrl-C reaches only this launcher (Jupyter
itself would stop to ask "Shutdown this notebook server (y/[n])?").
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence

from ..._parent_death import tied_to_parent
from .notebook import KERNEL_NAME, kernel_spec

__all__ = ["NotebookServer", "register_kernel", "kernel_display_name", "remove_stale_scratch",
           "main"]

#: The directory triple_py is imported from (a checkout, or site-packages): it goes first on
#: the kernel's PYTHONPATH, so the kernel imports this triple_py (e.g. an instrumented copy).
PACKAGE_PARENT = Path(__file__).resolve().parents[3]
#: Temporary directories are named <prefix><launcher pid>-<random>.
SCRATCH_PREFIX = "triple-py-jupyter-"


def kernel_display_name(python: str = sys.executable) -> str:
    """``triple_py (Python 3.11, /work/triple_py/.venv)``: which environment it is."""
    prefix = Path(python).absolute().parent.parent
    return f"triple_py (Python {sys.version_info[0]}.{sys.version_info[1]}, {prefix})"


def register_kernel(python: str = sys.executable) -> Path:
    """Writes the ``triple-py`` kernelspec into ``<prefix>/share/jupyter/kernels`` of
    ``python``'s environment; returns the ``share/jupyter`` directory (a JUPYTER_PATH
    entry)."""
    data = Path(python).absolute().parent.parent / "share" / "jupyter"
    with kernel_spec(data / "kernels", python, kernel_display_name(python)):
        pass
    return data


def remove_stale_scratch() -> List[Path]:
    """Removes the temporary directories of launchers that were killed (their pid, in the
    name, is gone); returns them."""
    removed = []
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        pid = path.name[len(SCRATCH_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as reply:
        return reply.read()


class NotebookServer:
    """One Jupyter Notebook server and everything it needs, undone by :meth:`stop`.

    ``start()`` returns once the server answers (or raises RuntimeError); ``url`` is then
    the address with its token. Usable as a context manager.
    """

    def __init__(self, directory: Path, port: Optional[int] = None,
                 python: str = sys.executable, log: Optional[Path] = None) -> None:
        self.directory = Path(directory).resolve()
        self.port = port
        self.python = python
        self.token = secrets.token_hex(24)
        self.log = log
        self.url = ""
        self.base = ""
        self.process: Optional[subprocess.Popen] = None
        self.scratch: Optional[Path] = None

    def __enter__(self) -> "NotebookServer":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _command(self) -> List[str]:
        jupyter = shutil.which("jupyter-notebook")
        if jupyter is None:
            raise RuntimeError("jupyter-notebook is not installed: run `make bootstrap` "
                               "(Debian package jupyter-notebook)")
        port = ["--port", str(self.port), "--port-retries", "0"] if self.port else []
        return [jupyter, "--no-browser", "--ip", "127.0.0.1", *port,
                f"--notebook-dir={self.directory}", f"--NotebookApp.token={self.token}",
                "--NotebookNotary.db_file=:memory:",
                f"--MappingKernelManager.default_kernel_name={KERNEL_NAME}",
                "--NotebookApp.log_level=WARN",
                *(["--allow-root"] if os.geteuid() == 0 else [])]

    def _environment(self, data: Path) -> Dict[str, str]:
        assert self.scratch is not None
        env = dict(os.environ)
        env["JUPYTER_PATH"] = os.pathsep.join(
            [str(data)] + [p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p])
        env["JUPYTER_RUNTIME_DIR"] = str(self.scratch / "runtime")
        env["IPYTHONDIR"] = str(self.scratch / "ipython")
        env["PYTHONPATH"] = os.pathsep.join(
            [str(PACKAGE_PARENT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        return env

    def start(self, timeout: float = 60.0) -> str:
        """Registers the kernel, starts the server, waits until it answers; returns the
        URL with its token."""
        data = register_kernel(self.python)
        remove_stale_scratch()
        self.scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
        output = open(self.log, "ab") if self.log else None
        try:
            self.process = subprocess.Popen(
                tied_to_parent(self._command(), "TERM"), env=self._environment(data),
                cwd=self.directory, stdin=subprocess.DEVNULL, stdout=output, stderr=output,
                start_new_session=True)
        finally:
            if output is not None:
                output.close()
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self.url

    def _server_info(self) -> Optional[Dict[str, object]]:
        assert self.scratch is not None and self.process is not None
        info = self.scratch / "runtime" / f"nbserver-{self.process.pid}.json"
        try:
            return json.loads(info.read_text())
        except (OSError, ValueError):
            return None  # not written yet (or half written)

    def _wait_ready(self, timeout: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter-notebook exited with {self.process.returncode}"
                                   + (f" (see {self.log})" if self.log else ""))
            info = self._server_info()
            if info is not None:
                self.port = int(info["port"])  # type: ignore[arg-type]
                self.base = f"http://127.0.0.1:{self.port}/"
                try:
                    _get(f"{self.base}api/status?token={self.token}")
                except (OSError, urllib.error.URLError):
                    pass
                else:
                    self.url = f"{self.base}tree?token={self.token}"
                    return
            time.sleep(0.1)
        raise RuntimeError(f"jupyter-notebook did not answer within {timeout:g} s")

    def api(self, path: str, method: str = "GET", body: Optional[dict] = None) -> object:
        """A call of the server's REST API (``api/kernels``...), JSON in and out."""
        request = urllib.request.Request(
            f"{self.base}api/{path}", method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": f"token {self.token}",
                     "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            text = reply.read()
        return json.loads(text) if text else None

    def _shutdown_kernels(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            for kernel in self.api("kernels") or []:  # type: ignore[union-attr]
                with contextlib.suppress(OSError):
                    self.api(f"kernels/{kernel['id']}", "DELETE")

    def leftover_kernels(self) -> List[int]:
        """Pids of kernel processes started by this server still alive (their
        connection file is in our runtime directory)."""
        if self.scratch is None:
            return []
        marker = str(self.scratch / "runtime").encode()
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if marker in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
        return pids

    def stop(self, timeout: float = 20.0) -> None:
        """Kernels shut down, server stopped (SIGTERM, then SIGKILL after ``timeout``),
        leftover kernel processes killed, temporary directory removed. Idempotent."""
        process, self.process = self.process, None
        if process is not None:
            if process.poll() is None:
                if self.url:
                    self._shutdown_kernels()
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(process.pid, signal.SIGKILL)
                    process.wait(5)
            for pid in self.leftover_kernels():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        self.url = ""


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP raise KeyboardInterrupt, like Ctrl-C."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt
    previous = {s: signal.signal(s, interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def default_directory() -> Path:
    """The checkout's ``notebooks/`` when triple_py is imported from a checkout, else the
    current directory."""
    notebooks = PACKAGE_PARENT / "notebooks"
    return notebooks if notebooks.is_dir() else Path.cwd()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Starts the server, prints its URL, waits for Ctrl-C; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m triple_py.bench.notebook_server",
        description="Jupyter Notebook with the project's kernel (make notebook).")
    parser.add_argument("--port", type=int, help="port (default: the first free from 8888)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="the folder to serve (default: the checkout's notebooks/, "
                             "or the current directory)")
    args = parser.parse_args(argv)
    if args.dir is None:
        args.dir = default_directory()
    server = NotebookServer(args.dir, args.port)
    with _stop_on_signals():
        try:
            started = time.monotonic()
            url = server.start()
            print(f"Jupyter Notebook on {args.dir} (kernel: {kernel_display_name()}), "
                  f"ready in {time.monotonic() - started:.1f} s:\n\n    {url}\n\n"
                  "Open it in a browser; Ctrl-C stops the server and its kernels.",
                  flush=True)
            while server.process is not None and server.process.poll() is None:
                time.sleep(0.5)
            print("jupyter-notebook exited", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("\nstopping: kernels, server, temporary files", flush=True)
            return 0
        except RuntimeError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())

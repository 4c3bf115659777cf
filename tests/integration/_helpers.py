"""Shared helpers of the triple_py unary integration tests (test_unary_*.py).

Peers come from the fixtures of tests/conftest.py (`grpcio_server`, `go_server`,
`rogue_server`, parametrized `peer`); their behaviour is described in tests/peers/README.md
and tests/peers/h2_rogue_server.py.
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

import triple_py
from peers import UNARY_METHOD

ROOT = Path(__file__).resolve().parents[2]
# The interpreter running the tests (the project venv's in a checkout, the venv the wheel is
# installed in under tools/test_wheel.sh): children running triple_py code use it.
VENV_PYTHON = Path(sys.executable)
MiB = 1024 * 1024
TIMEOUT = 10  # seconds: the deadline of every call that is expected to succeed


# --- calls ---------------------------------------------------------------------------------

def unary(channel: triple_py.Channel, **serializers):
    """The BenchmarkService UnaryCall multi-callable of `channel`."""
    return channel.unary_unary(UNARY_METHOD, **serializers)


def rogue(channel: triple_py.Channel, mode: str):
    """The multi-callable of one rogue-server mode ("/rogue.Rogue/<mode>")."""
    return channel.unary_unary(f"/rogue.Rogue/{mode}")


def rpc_error(call: Callable, *args, **kwargs) -> triple_py.RpcError:
    """The RpcError that call(*args, **kwargs) raises (fails the test if none is raised)."""
    with pytest.raises(triple_py.RpcError) as info:
        call(*args, **kwargs)
    return info.value


def rogue_stats(channel: triple_py.Channel) -> dict:
    """The rogue server's counters (its Stats mode), read through triple_py itself."""
    return json.loads(rogue(channel, "Stats")(b"", timeout=TIMEOUT))


def echoed(metadata) -> list:
    """The x-echo-* pairs of received metadata, sorted."""
    return sorted((k, v) for k, v in metadata if k.startswith("x-echo-"))


# --- protobuf messages of proto/benchmark.proto, built without protoc ---------------------

def _benchmark_file() -> descriptor_pb2.FileDescriptorProto:
    """proto/benchmark.proto's messages as a FileDescriptorProto built by hand."""
    f = descriptor_pb2.FileDescriptorProto(name="benchmark.proto",
                                           package="benchmark", syntax="proto3")
    for name in ("BenchmarkRequest", "BenchmarkResponse"):
        message = f.message_type.add(name=name)
        message.field.add(name="payload", number=1, json_name="payload",
                          type=descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    return f


def benchmark_messages() -> tuple[type, type]:
    """(BenchmarkRequest, BenchmarkResponse) message classes, built at runtime in a
    descriptor pool of their own (other tests load benchmark.proto into the default one)."""
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_benchmark_file())
    classes = []
    for name in ("benchmark.BenchmarkRequest", "benchmark.BenchmarkResponse"):
        descriptor = pool.FindMessageTypeByName(name)
        if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.22
            classes.append(message_factory.GetMessageClass(descriptor))
        else:
            classes.append(message_factory.MessageFactory(pool).GetPrototype(descriptor))
    return classes[0], classes[1]


# --- process state -------------------------------------------------------------------------

def os_thread_count() -> int:
    """The number of OS threads of this process (C threads included)."""
    return len(os.listdir("/proc/self/task"))


def open_fd_count() -> int:
    """The number of open file descriptors of this process (sockets, eventfds included)."""
    return len(os.listdir("/proc/self/fd"))


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.01) -> bool:
    """Polls predicate() until it is true or `timeout` seconds passed; its last value."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= deadline:
            return predicate()
        time.sleep(interval)
    return True


def quiet_stats(counted: Any, quiet: float = 0.1, timeout: float = 2.0) -> dict:
    """counted.stats() (a channel's or a server's) once it has written nothing for `quiet` s.

    Peers send frames of their own (grpc-go pings after receiving data, for example) that the
    client answers on its own schedule, and a server counts a write only after sendmsg has
    returned, so its peer may already hold the bytes: this waits for the counters to settle.
    """
    deadline = time.monotonic() + timeout
    stats = counted.stats()
    while True:
        time.sleep(quiet)
        now = counted.stats()
        if now["bytes_written"] == stats["bytes_written"] or time.monotonic() >= deadline:
            return now
        stats = now


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def reset_peak_rss() -> bool:
    """Resets VmHWM (peak RSS) to the current RSS; False if the kernel refuses."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def peak_rss_bytes() -> int:
    """VmHWM: the peak resident set size of this process."""
    return _status_kib("VmHWM") * 1024


@contextlib.contextmanager
def echo_servers(n: int) -> Iterator[list]:
    """n embedded echo servers on 127.0.0.1 (ephemeral ports), stopped afterwards."""
    from triple_py.testing import EchoServer
    started = [EchoServer().start() for _ in range(n)]
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def closed_port() -> int:
    """A loopback port nobody listens on (bound for a moment, then closed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ThreadCounter(threading.Thread):
    """Counts in a loop until stopped; records the longest pause between iterations."""

    def __init__(self) -> None:
        super().__init__(daemon=True, name="progress-counter")
        self.count = 0
        self.max_gap = 0.0
        self._stop_event = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self._stop_event.is_set():
            self.count += 1
            now = time.monotonic()
            if now - last > self.max_gap:
                self.max_gap = now - last
            last = now

    def stop(self) -> None:
        self._stop_event.set()
        self.join(5)


# --- child processes -----------------------------------------------------------------------

class LineReader:
    """Reads a child's stdout lines on a thread so the test can wait with a timeout."""

    def __init__(self, process: subprocess.Popen) -> None:
        self._lines: "queue.Queue[Optional[tuple[float, str]]]" = queue.Queue()
        threading.Thread(target=self._pump, args=(process.stdout,), daemon=True).start()

    def _pump(self, stream) -> None:
        for line in stream:
            self._lines.put((time.monotonic(), line.rstrip("\n")))
        self._lines.put(None)

    def next_line(self, timeout: float) -> tuple[float, str]:
        """(arrival time, line) of the next line; AssertionError on timeout or EOF."""
        try:
            item = self._lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no output line within {timeout} s") from None
        assert item is not None, "the child closed its stdout"
        return item


def finished_child(child: subprocess.Popen, timeout: float, what: str) -> str:
    """The stdout of ``child`` (started with ``start_new_session=True``) once it exits
    0; fails the test if it runs longer than ``timeout`` seconds (its session is killed:
    children it forked hold its output pipes open) or exits otherwise."""
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"{what} hung for {timeout} s\nstdout:\n{out}\nstderr:\n{err}")
    assert child.returncode == 0, f"{what} exited {child.returncode}\n{out}\n{err}"
    return out


def start_child(code: str, *args: str, **popen: Any) -> subprocess.Popen:
    """Runs `code` in this interpreter with the triple_py this process imported
    (the instrumented copy under tools/test_asan.sh); `popen`: more Popen arguments,
    e.g. start_new_session."""
    package_root = Path(triple_py.__file__).resolve().parents[1]
    # The package this process imported first, then whatever path it was given (the test
    # tools' checkout under tools/test_asan.sh).
    path = os.pathsep.join(p for p in (str(package_root), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, PYTHONPATH=path, PYTHONUNBUFFERED="1")
    return subprocess.Popen([str(VENV_PYTHON), "-c", code, *args], cwd=package_root, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def probe_child(prelude: str, body: str, address: str, hard_timeout: float) -> str:
    """Runs ``prelude`` then ``body`` (dedented) in a child process of its own session,
    with the server's ``address`` as its argument; returns its output, or fails the test
    if it exits non-zero or outlives ``hard_timeout`` (a hang fails this test only)."""
    child = start_child(prelude + textwrap.dedent(body), address, start_new_session=True)
    return finished_child(child, hard_timeout, "probe")


def calls_of(servers) -> List[int]:
    """The calls each embedded server has answered so far."""
    return [s.stats()["calls"] for s in servers]


def wait_all_ready(core, n: int) -> None:
    """Waits (bounded) until ``n`` backends of a balanced core channel are READY: a
    user waits with channel_ready_future (one READY backend); the even spreads below
    also need the others, which connected at the same time."""
    end = time.monotonic() + TIMEOUT
    while len(core._ready) < n:
        assert time.monotonic() < end, f"only {len(core._ready)} of {n} backends READY"
        time.sleep(0.005)

"""The server's CPU time per call, when the server runs in a process of its own.

A client that looks fast may only be moving work onto the server, and on a small machine
client and server share the cores: every microsecond one spends is gone for the other. So
when the harness knows the server's process (a server factory yields a
:class:`ServerProcess` instead of a bare address), it reads that process's CPU time
(user + system, all threads) before and after each arm run and books the difference in the
result's ``cpu`` figures as ``server_s`` and ``server_us_per_call``.

The difference covers the arm's warm-up too, so it is divided by the calls of the whole run
(:meth:`BenchResult.calls_including_warmup`). An in-process server (the embedded
EchoServer of ``make bench``) has no process of its own: its CPU time is in the client's.
"""
from __future__ import annotations

import dataclasses
import os
from typing import Optional, Tuple, Union

from ..record.result import BenchResult

__all__ = ["ServerProcess", "Served", "unpack_served", "process_cpu_seconds", "book_server_cpu"]


@dataclasses.dataclass(frozen=True)
class ServerProcess:
    """A server in a process of its own: where it listens and which process it is."""

    address: str  # host:port
    pid: int


#: What a server factory yields: an address, or a server process.
Served = Union[str, ServerProcess]


def unpack_served(served: Served) -> Tuple[str, Optional[int]]:
    """(host:port, pid) of what a server factory yielded; the pid is None when the
    factory yielded only an address."""
    if isinstance(served, ServerProcess):
        return served.address, served.pid
    return served, None


def process_cpu_seconds(pid: int) -> Optional[float]:
    """User + system CPU time of process ``pid`` (every thread), in seconds, from
    ``/proc/<pid>/stat``; None when it cannot be read (no such process, not Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            stat = f.read()
    except OSError:
        return None
    # The command name (field 2) is in parentheses and may hold spaces: split after it.
    fields = stat.rsplit(")", 1)[-1].split()
    try:
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    except (IndexError, ValueError):
        return None
    return (utime + stime) / os.sysconf("SC_CLK_TCK")


def book_server_cpu(result: BenchResult, before: Optional[float],
                    after: Optional[float]) -> None:
    """Adds ``server_s`` and ``server_us_per_call`` to ``result.cpu`` from two readings of
    :func:`process_cpu_seconds` around the run; does nothing when either is missing."""
    if before is None or after is None:
        return
    seconds = max(0.0, after - before)
    calls = result.calls_including_warmup()
    result.cpu["server_s"] = seconds
    result.cpu["server_us_per_call"] = seconds * 1e6 / calls if calls else 0.0

"""What runs inside a Dask worker for :mod:`~triple_py.bench.distributed`: plain functions,
imported by
name on the worker (triple_py must be installed there; :func:`build_identity` checks it is
the same build as the client's).

:func:`run_share` runs one worker's share of a load with the C load generator in the
worker's process, starting its warm-up at an absolute wall-clock time given on the
worker's own clock, and returns the result with its window start on that clock.
"""
from __future__ import annotations

import hashlib
import os
import socket
import sys
import time
from typing import Any, Dict, Mapping

import triple_py
from triple_py import _triple
from ..arms.loadgen import run_c_spec
from ..interrupts import mark
from ..spec.run_spec import RunSpec

__all__ = ["build_identity", "wall_clock_ns", "run_share", "stop_share"]

_IDENTITY: Dict[str, str] = {}
#: Runs told to stop (run id -> the signal that stopped the client), in this process.
_STOPPED: Dict[str, int] = {}


def build_identity() -> Dict[str, str]:
    """This process's triple_py: version, C core version, a digest of the compiled
    extension and the Python version. Two processes with the same identity run the same
    load generator."""
    if not _IDENTITY:
        with open(_triple.__file__, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:12]
        _IDENTITY.update({"version": getattr(triple_py, "__version__", "?"),
                          "core": _triple.CORE_VERSION, "build": digest,
                          "python": "%d.%d" % sys.version_info[:2]})
    return dict(_IDENTITY)


def wall_clock_ns() -> int:
    """This host's wall clock (``time.time_ns()``), for the clock-offset measurement."""
    return time.time_ns()


def stop_share(run_id: str, signum: int) -> None:
    """Tells this worker's share of run ``run_id`` (running or still to start) to stop
    within 50 ms and return its figures until then, marked with ``signum``."""
    _STOPPED[run_id] = signum


def run_share(spec: Mapping[str, Any], start_wall_ns: int, phase_ns: int,
              run_id: str = "") -> Dict[str, Any]:
    """Runs one share of a load; returns ``{"result": BenchResult.to_dict(),
    "window_start_wall_ns", "host", "pid"}``.

    ``spec``: the RunSpec fields of this share. ``start_wall_ns``: when the warm-up starts,
    on this host's wall clock (the client's start plus this worker's clock offset).
    ``phase_ns``: the open-loop schedule's shift. ``run_id``: the name
    :func:`stop_share` stops it by. Raises ConfigError / TargetError like the local runs
    (the client reports which worker raised what).
    """
    s = RunSpec(**dict(spec)).validate()
    # One reading of both clocks turns the wall-clock start into a monotonic one, and the
    # monotonic start the C side reports back into wall-clock time.
    mono_minus_wall = time.monotonic_ns() - time.time_ns()
    result = run_c_spec(s, start_at_ns=max(0, start_wall_ns + mono_minus_wall),
                        phase_ns=phase_ns, stop=lambda: run_id in _STOPPED)
    if run_id in _STOPPED:
        mark(result, _STOPPED.pop(run_id))
    late_ns = result.extra.get("late_ns") or 0
    if late_ns:
        result.notes.append(f"started {late_ns / 1e6:.1f} ms after the common start "
                            "(opening the connections took longer than the lead time)")
    clock_start = result.extra["start_monotonic_ns"] - mono_minus_wall
    return {"result": result.to_dict(),
            "window_start_wall_ns": clock_start + round(s.warmup * 1e9),
            "host": socket.gethostname(), "pid": os.getpid()}

"""Reference arm: nghttp2's h2load sending raw gRPC frames.

``h2load -c<connections> -m<concurrency/connections>``, each request a POST of one gRPC
length-prefixed BenchmarkRequest (K of them back to back when ``stream_messages`` > 1, which
the echo servers answer with K messages) with ``content-type: application/grpc`` and
``te: trailers``. Its summary gives the request rate, the failure counts and the latency's
min/mean/sd/max. Percentiles and the one-second series need h2load's per-request log
(``--log-file``, measured requests only): the arm option ``latency_log`` (matrix:
``latency_log = true`` in an ``[arm.<name>]`` table; run(): ``options={"latency_log": True}``)
turns it on, but writing a line per request slows h2load down a lot (about a third at
128 B here), so it is off by default: h2load is the throughput reference.

Each request carries the headers the C load generator's calls carry (``grpc-timeout`` for
the run's per-call timeout, encoded as a call encodes it, ``grpc-accept-encoding: gzip`` and
the ``user-agent``), so both arms ask the server for the same work: grpc-go, for one, arms a
timer for each ``grpc-timeout`` and copies headers it does not know into the call's
metadata, about 2.5 µs of server CPU per call together, which is enough to move a
server-bound ratio by 7 %. The arm option ``minimal_headers`` (matrix: ``minimal_headers =
true``; run(): ``options={"minimal_headers": True}``) sends only ``content-type`` and ``te``.

Caveats: h2load checks the HTTP status only, so a gRPC failure (HTTP 200 with a non-zero
``grpc-status``) counts as a success (the status distribution says ``HTTP_2xx``), and it
does not decode the responses. ``--rps`` is per connection and not corrected for
coordinated omission.
"""
from __future__ import annotations

import base64
import math
import re
import resource
import shutil
import signal
import subprocess
import tempfile
import time
from typing import Dict, List, Optional, Tuple

from ..._parent_death import tied_to_parent
from ..._target import parse_target
from ..._triple import USER_AGENT, grpc_timeout
from ..errors import BenchError, ConfigError
from ..interrupts import Interrupted, mark, signal_of
from ..record.result import (BenchResult, Latency, histogram_from_samples,
                             series_from_completions)
from ..spec.run_spec import RunSpec
from ..workload.messages import grpc_frame
from .recorders import SLICE, STOP_GRACE

__all__ = ["h2load", "h2load_command", "request_headers", "parse_h2load_output",
           "parse_h2load_log", "h2load_ms", "H2loadSummary"]

_FINISHED = re.compile(r"finished in ([\d.]+)(us|ms|s), ([\d.]+) req/s")
_REQUESTS = re.compile(r"requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, "
                       r"(\d+) failed, (\d+) errored, (\d+) timeout")
_STATUS = re.compile(r"status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx")
_TIME = re.compile(r"time for request:\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)")
_UNITS_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3}


def h2load_ms(text: str) -> float:
    """An h2load duration (``736us``, ``5.31ms``, ``1.2s``) in milliseconds."""
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        raise ValueError(f"bad h2load duration {text!r}")
    return float(match.group(1)) * _UNITS_MS[match.group(2)]


class H2loadSummary(dict):
    """The figures of h2load's text summary (a dict: req_per_s, done, failed, ...)."""


def parse_h2load_output(out: str) -> Optional[H2loadSummary]:
    """h2load's summary, or None when the output has none (h2load failed)."""
    finished, requests, timing = _FINISHED.search(out), _REQUESTS.search(out), _TIME.search(out)
    if not (finished and requests and timing):
        return None
    s = H2loadSummary()
    s["finished_ms"] = float(finished.group(1)) * _UNITS_MS[finished.group(2)]
    s["req_per_s"] = float(finished.group(3))
    for key, value in zip(("total", "started", "done", "succeeded", "failed", "errored",
                           "timeout"), requests.groups()):
        s[key] = int(value)
    status = _STATUS.search(out)
    if status:
        for key, value in zip(("2xx", "3xx", "4xx", "5xx"), status.groups()):
            s["http_" + key] = int(value)
    for key, value in zip(("min_ms", "max_ms", "mean_ms", "sd_ms"), timing.groups()):
        s[key] = h2load_ms(value)
    return s


def parse_h2load_log(text: str) -> List[Tuple[int, int, int]]:
    """(start_us since the epoch, HTTP status, duration_us) rows of ``--log-file``."""
    rows = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and all(p.strip().lstrip("-").isdigit() for p in parts[:3]):
            rows.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return rows


def h2load_command(spec: RunSpec, body_path: str, log_path: str) -> List[str]:
    """The h2load command line for ``spec``."""
    per_connection = spec.concurrency // spec.connections
    command = ["h2load", f"-c{spec.connections}", f"-m{per_connection}", "-t1"]
    if spec.count:
        command.append(f"-n{spec.count}")
    else:
        if spec.warmup > 0:
            command.append(f"--warm-up-time={spec.warmup * 1000:.0f}ms")
        command.append(f"-D{spec.duration * 1000:.0f}ms")
    if spec.rate:
        command.append(f"--rps={max(1.0, spec.rate / spec.connections):g}")
    command += ["-d", body_path]
    for header in request_headers(spec):
        command += ["-H", header]
    if spec.options.get("latency_log"):
        command += ["--log-file", log_path]
    scheme = "https" if spec.connection.get("tls") else "http"
    try:
        host, port = parse_target(spec.target)
    except ValueError:
        raise ConfigError(f"h2load takes one host:port target, not {spec.target!r}") from None
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    command.append(f"{scheme}://{where}{spec.resolved_method()}")
    return command


def request_headers(spec: RunSpec) -> List[str]:
    """The non-pseudo request headers h2load sends for ``spec`` (see the module's doc)."""
    headers = ["content-type: application/grpc", "te: trailers"]
    if not spec.options.get("minimal_headers"):
        headers += ["grpc-accept-encoding: gzip",
                    f"grpc-timeout: {grpc_timeout(round(spec.timeout * 1e9))}",
                    f"user-agent: {USER_AGENT}"]
    if spec.requests:  # the first ring entry's metadata ("-bin" values base64, as on the wire)

        for key, value in spec.requests[0][1]:
            text = base64.b64encode(value).decode().rstrip("=") if key.endswith(b"-bin") \
                else value.decode()
            headers.append(f"{key.decode()}: {text}")
    return headers


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def h2load(spec: RunSpec) -> BenchResult:
    """Runs h2load for ``spec``; BenchError when h2load is missing or its output unreadable."""
    if shutil.which("h2load") is None:
        raise BenchError("h2load is not installed (Debian: apt-get install nghttp2-client)")
    body = grpc_frame(spec.request_bytes()) * (spec.stream_messages if spec.streaming else 1)
    with tempfile.NamedTemporaryFile(suffix=".grpc") as body_file, \
            tempfile.NamedTemporaryFile(suffix=".log") as log_file:
        body_file.write(body)
        body_file.flush()
        command = h2load_command(spec, body_file.name, log_file.name)
        cpu_before = _children_cpu()
        limit = spec.warmup + (spec.duration or 0) + 60 + (spec.count / 1000 if spec.count else 0)
        started = time.monotonic()
        # The child gets SIGKILL if this process dies, and is stopped with the run.
        proc = subprocess.Popen(tied_to_parent(command), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            out, err = _communicate(proc, limit)
        except subprocess.TimeoutExpired:
            _end(proc)
            raise BenchError(f"h2load did not finish within {limit:.0f} s") from None
        except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: h2load prints nothing when stopped
            window = max(0.0, time.monotonic() - started - spec.warmup)
            _end(proc)
            rows = parse_h2load_log(_read(log_file.name))
            if not rows:  # only its per-request log (latency_log) keeps figures
                raise Interrupted(signal_of(exc), why="h2load prints no figures when "
                                  "stopped (the arm option latency_log keeps them)") from None
            cpu = _children_cpu() - cpu_before
            return mark(_result(spec, _summary_of_rows(rows, window), rows, cpu, command,
                                elapsed=window), signal_of(exc))
        except BaseException:
            _end(proc)
            raise
        cpu = _children_cpu() - cpu_before
        log_text = _read(log_file.name)
    summary = parse_h2load_output(out)
    if summary is None:
        tail = (out + err).strip().splitlines()[-3:]
        raise BenchError("h2load failed (exit %d): %s" % (proc.returncode, " | ".join(tail)))
    rows = parse_h2load_log(log_text)
    return _result(spec, summary, rows, cpu, command)


def _communicate(proc: "subprocess.Popen[str]", limit: float) -> Tuple[str, str]:
    """h2load's stdout and stderr once it exits; TimeoutExpired after ``limit`` seconds.
    It waits in slices of :data:`~.recorders.SLICE` so that a signal taken by another
    thread still reaches the main thread's handler within one."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return proc.communicate(timeout=max(0.0, min(SLICE, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise


def _read(path: str) -> str:
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def _end(proc: "subprocess.Popen[str]") -> None:
    """Stops h2load (SIGINT, SIGKILL after :data:`STOP_GRACE`) and reaps it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=STOP_GRACE)
            return
        except subprocess.TimeoutExpired:
            proc.kill()
    proc.communicate()


def _summary_of_rows(rows: List[Tuple[int, int, int]], window: float) -> H2loadSummary:
    """An h2load summary made from its per-request log (a run stopped before it printed
    one): ``window`` is the seconds measured."""
    s = H2loadSummary()
    ok_ms = [d / 1000.0 for _, status, d in rows if 200 <= status < 300]
    done = len(rows)
    s.update(finished_ms=window * 1000, req_per_s=done / window if window > 0 else 0.0,
             total=done, started=done, done=done, succeeded=len(ok_ms),
             failed=done - len(ok_ms), errored=0, timeout=0,
             http_2xx=len(ok_ms), min_ms=min(ok_ms, default=0.0),
             max_ms=max(ok_ms, default=0.0),
             mean_ms=sum(ok_ms) / len(ok_ms) if ok_ms else 0.0, sd_ms=0.0)
    return s


def _result(spec: RunSpec, s: H2loadSummary, rows: List[Tuple[int, int, int]], cpu: float,
            command: List[str], elapsed: Optional[float] = None) -> BenchResult:
    result = BenchResult(**spec.result_fields())
    if elapsed is None:
        elapsed = spec.duration if not spec.count else s["finished_ms"] / 1000.0
    result.elapsed_s = elapsed
    result.calls = s["done"]
    result.errors = s["failed"] + s["errored"] + s["timeout"]
    result.qps = s["req_per_s"]
    codes: Dict[str, int] = {}
    for key in ("2xx", "3xx", "4xx", "5xx"):
        if s.get("http_" + key):
            codes["HTTP_" + key] = s["http_" + key]
    for key in ("errored", "timeout"):
        if s[key]:
            codes[key.upper()] = s[key]
    result.status_codes = codes
    ok_ns = [d * 1000 for _, status, d in rows if 200 <= status < 300]
    if ok_ns:
        result.latency = result.latency_corrected = Latency.from_samples(ok_ns)
        result.histogram = result.histogram_corrected = histogram_from_samples(ok_ns)
    else:  # no log: h2load's own mean/sd/min/max
        result.latency = result.latency_corrected = Latency(
            count=s["succeeded"], min=s["min_ms"] * 1e6, mean=s["mean_ms"] * 1e6,
            stdev=s["sd_ms"] * 1e6, max=s["max_ms"] * 1e6)

    if rows:
        start = min(r[0] for r in rows) / 1e6
        result.series = series_from_completions(
            (((st + d) / 1e6, d * 1000, 200 <= status < 300) for st, status, d in rows),
            start, max(1, math.ceil(elapsed - 1e-6)))
    # h2load's CPU time covers its warm-up too, whose calls it does not report: per call,
    # the warm-up is taken to have run at the measured rate.
    run_calls = result.calls_including_warmup()
    result.cpu = {"h2load_s": cpu, "h2load_cores": cpu / elapsed if elapsed > 0 else 0.0,
                  "h2load_us_per_call": cpu * 1e6 / run_calls if run_calls else 0.0}
    if spec.streaming:
        result.streams = result.calls
        result.messages_sent = result.calls * spec.stream_messages
        result.messages_per_s = result.qps * spec.stream_messages
    result.extra = {"h2load": dict(s), "command": command, "log_rows": len(rows)}
    result.notes.append("HTTP status only")
    if result.errors:
        result.notes.append(f"{result.errors} failed requests")
    return result

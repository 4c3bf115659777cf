"""Soak test (issue 9): 1,000 unary calls in flight on one triple_py channel for a minute,
against the embedded echo server behind triple_py_testing.faults.FaultProxy, with a fault
injected periodically (by default every 5 s a 0.5 s window of reset, stall, truncate, close_after in
turn).  Reports calls, errors by status code (inside and outside fault windows), calls per
second, and RSS, file descriptors and threads of this process at the start and the end.

Exit status: 0 when RSS grew by at most --rss-bound (5 %) between the start and the end
measurement and the run completed; 1 when RSS grew more; 2 when the run itself failed (calls
stuck past their deadline, no successful call after the last fault, the fault host died).

How it works:
* Load: calls are futures (``UnaryUnaryMultiCallable.future``) whose done-callbacks (on the
  channel's completion thread) count the outcome and ask the main thread for a replacement;
  the main thread starts replacements in batches, keeping --in-flight calls pending.  This
  costs less Python per call than one asyncio task per slot and cannot recurse when calls
  fail synchronously.
* The echo server and the proxy run in a child process (``--host``) by default, so what is
  measured (RSS, fds, threads) is the client's alone and the proxy's Python thread does not
  compete for this process's GIL.  ``--same-process`` runs them here instead.
* Failed connection attempts back off as in grpcio (1 s, then x1.6): calls made meanwhile
  fail at once with UNAVAILABLE and are replaced at once, so a reset window is followed by
  up to a second of quick UNAVAILABLE calls (counted; they make calls/s jump).
* Start and end are measured at quiet points: the load is stopped, every call has ended,
  garbage is collected and the completion thread has exited.  Besides RSS the report gives
  malloc's bytes in use and the free bytes it keeps per arena (malloc_info), Python's
  allocated blocks, and RSS once malloc_trim(0) returned the kept pages (after the gated
  figure, which is the plain RSS).  The warm-up (--warmup seconds, 25 by default)
  runs the load with each fault kind injected once at the measured cadence, so the start
  figures include what the first fault of each kind allocates for good (pools, arenas).

* Misuse (issue 20, tools/soak_misuse.py), during the measured run: a fork every
  --fork-every seconds (the child calls on the inherited channel, then on its own, and
  exits), a done-callback that raises on every --raise-every-th future, and a channel
  dropped without close() every --drop-every seconds; children that fail or hang, raising
  callbacks that are not logged, and threads or fds piling up are problems (exit 2).

Usage: .venv/bin/python tools/soak.py [--seconds 60] [--in-flight 1000] [--deadline 0.4]
       [--fault-every 5] [--fault-window 0.5] [--faults reset,stall,truncate,close_after]
       [--fork-every 3] [--drop-every 0.5] [--raise-every 1000]
Writes results/soak-<timestamp>.json (or --out).
"""
from __future__ import annotations

import argparse
import collections
import ctypes
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Dict, List, Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import triple_py  # noqa: E402
from triple_py.testing import EchoServer  # noqa: E402
from triple_py_testing.faults import FaultProxy  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak_misuse import Misuse  # noqa: E402

UNARY_METHOD = "/benchmark.BenchmarkService/UnaryCall"
# Parameters of each fault kind the soak injects (see triple_py_testing.faults.Fault).
FAULT_PARAMS: Dict[str, Dict[str, Any]] = {
    "reset": {},
    "stall": {},
    "truncate": {"nbytes": 4096},
    "close_after": {"nbytes": 4096, "direction": "request"},
    "delay": {"seconds": 0.05},
    "dribble": {"seconds": 0.0},
}
DRAIN_GRACE = 10.0  # seconds past the deadline that calls may take to end when stopping


# --- process state ------------------------------------------------------------------------

def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise KeyError("VmRSS")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def _libc() -> ctypes.CDLL:
    """The C library as this process links it: symbols looked up in the global namespace,
    so free() is the malloc that allocated (a preloaded sanitizer's under ASan), not
    libc.so.6's own, which would abort on a pointer it did not hand out."""
    return ctypes.CDLL(None)


def heap_in_use() -> Optional[int]:
    """Bytes malloc has handed out and not got back (glibc mallinfo2: every arena); None
    where that is not available.  Unlike RSS it does not count freed memory malloc keeps."""
    try:
        libc = _libc()
        libc.mallinfo2.restype = _MallInfo2
        info = libc.mallinfo2()
    except (OSError, AttributeError):
        return None
    return info.uordblks + info.hblkhd


def malloc_arenas() -> Optional[List[Dict[str, int]]]:
    """Per glibc malloc arena (malloc_info): bytes taken from the system and bytes free in
    it (kept by malloc, not in use).  The main arena serves the main thread; threads get
    arenas of their own (each connection's I/O thread is a new thread).  None where
    malloc_info is not available."""
    try:
        import xml.etree.ElementTree as ET
        libc = _libc()
        libc.open_memstream.restype = ctypes.c_void_p
        buf, size = ctypes.c_char_p(), ctypes.c_size_t()
        stream = libc.open_memstream(ctypes.byref(buf), ctypes.byref(size))
        libc.malloc_info(0, ctypes.c_void_p(stream))
        libc.fclose(ctypes.c_void_p(stream))
        text = ctypes.string_at(buf, size.value).decode()
        libc.free(buf)
        arenas = []
        for heap in ET.fromstring(text).findall("heap"):
            free = sum(int(t.get("size")) for t in heap.findall("total")
                       if t.get("type") in ("fast", "rest"))
            system = next(int(s.get("size")) for s in heap.findall("system")
                          if s.get("type") == "current")
            arenas.append({"system": system, "free": free})
        return arenas
    except (OSError, AttributeError, ValueError, StopIteration, ImportError):
        return None


def rss_after_malloc_trim() -> Optional[int]:
    """RSS once malloc has given the free memory it keeps back to the kernel
    (malloc_trim(0)): what is left is memory in use.  None where there is no malloc_trim."""
    try:
        _libc().malloc_trim(0)
    except (OSError, AttributeError):
        return None
    return rss_bytes()


def process_state() -> Dict[str, Any]:
    return {"rss": rss_bytes(), "heap_in_use": heap_in_use(), "malloc_arenas": malloc_arenas(),
            "python_blocks": sys.getallocatedblocks(),
            "fds": len(os.listdir("/proc/self/fd")),
            "threads": len(os.listdir("/proc/self/task"))}


# --- the fault host: echo server + proxy, here or in a child process ----------------------------

class LocalHost:
    """EchoServer and FaultProxy in this process."""

    def __init__(self, server_threads: int) -> None:
        self.server = EchoServer(threads=server_threads).start()
        self.proxy = FaultProxy(self.server.address).start()
        self.address = self.proxy.address

    def set_fault(self, kind: str) -> None:
        self.proxy.set_fault(kind, **FAULT_PARAMS.get(kind, {}))

    def stats(self) -> Dict[str, Any]:
        return {"proxy": self.proxy.stats(), "server": self.server.stats()}

    def close(self) -> None:
        self.proxy.stop()
        self.server.stop()


class ChildHost:
    """EchoServer and FaultProxy in a child process (this script with --host), driven by
    JSON lines on its stdin; it answers each with one JSON line."""

    def __init__(self, server_threads: int) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--host",
             "--server-threads", str(server_threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = self._read()
        self.address = ready["address"]

    def _read(self) -> Dict[str, Any]:
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the fault host exited ({self.process.wait()})")
        return json.loads(line)

    def _ask(self, **request: Any) -> Dict[str, Any]:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(f"the fault host failed: {answer['error']}")
        return answer

    def set_fault(self, kind: str) -> None:
        self._ask(op="fault", kind=kind)

    def stats(self) -> Dict[str, Any]:
        return self._ask(op="stats")

    def close(self) -> None:
        try:
            self.process.stdin.close()  # EOF: the host stops and exits
            self.process.wait(10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def serve_host(server_threads: int) -> int:
    """The child side of ChildHost."""
    host = LocalHost(server_threads)
    print(json.dumps({"address": host.address}), flush=True)
    try:
        for line in sys.stdin:
            request = json.loads(line)
            try:
                if request["op"] == "fault":
                    host.set_fault(request["kind"])
                    answer: Dict[str, Any] = {"ok": True}
                elif request["op"] == "stats":
                    answer = host.stats()
                else:
                    answer = {"error": f"unknown op {request['op']!r}"}
            except Exception as exc:  # reported to the parent, which stops
                answer = {"error": repr(exc)}
            print(json.dumps(answer), flush=True)
    finally:
        host.close()
    return 0


# --- the load ---------------------------------------------------------------------------------

class Load:
    """Keeps `in_flight` unary calls pending on one channel; counts outcomes per second."""

    def __init__(self, channel: triple_py.Channel, in_flight: int, deadline: float,
                 payload: bytes) -> None:
        self.call = channel.unary_unary(UNARY_METHOD)
        self.in_flight = in_flight
        self.deadline = deadline
        self.payload = payload
        self.cond = threading.Condition()
        self.pending = 0  # calls started and not yet ended
        self.refill = 0  # ended calls not yet replaced
        self.running = False
        self.started_at = time.monotonic()
        self.codes: collections.Counter = collections.Counter()
        self.seconds: Dict[int, collections.Counter] = collections.defaultdict(
            collections.Counter)  # whole second since start -> code -> calls ended
        self.wrong_responses = 0
        self.on_future = None  # called with each future before its callback is added

    def _done(self, future: "triple_py.UnaryFuture") -> None:
        code = future.code().name
        if code == "OK" and future.result() != self.payload:
            self.wrong_responses += 1
        second = int(time.monotonic() - self.started_at)
        with self.cond:
            self.codes[code] += 1
            self.seconds[second][code] += 1
            self.pending -= 1
            if self.running:
                self.refill += 1
            self.cond.notify()

    def _start(self, n: int) -> None:
        with self.cond:
            self.pending += n
        for _ in range(n):
            future = self.call.future(self.payload, timeout=self.deadline)
            if self.on_future is not None:
                self.on_future(future)
            future.add_done_callback(self._done)

    def run_for(self, seconds: float, on_tick=None) -> None:
        """Runs the load for `seconds`; calls on_tick(elapsed) about every 10 ms."""
        with self.cond:
            self.running = True
            missing = self.in_flight - self.pending
        self._start(missing)
        begin = time.monotonic()
        while True:
            elapsed = time.monotonic() - begin
            if elapsed >= seconds:
                break
            if on_tick is not None:
                on_tick(elapsed)
            with self.cond:
                self.cond.wait_for(lambda: self.refill > 0, timeout=0.01)
                n, self.refill = self.refill, 0
            if n:
                self._start(n)
        with self.cond:
            self.running = False
            self.refill = 0

    def drain(self, timeout: float) -> bool:
        """Waits until every call has ended (the load must be stopped)."""
        with self.cond:
            return self.cond.wait_for(lambda: self.pending == 0, timeout=timeout)


class FaultSchedule:
    """Every `every` seconds, a `window`-second fault, the kinds in turn."""

    def __init__(self, host, kinds: List[str], every: float, window: float,
                 clock_zero: float) -> None:
        self.host = host
        self.kinds = kinds
        self.every = every
        self.window = window
        self.clock_zero = clock_zero
        self.index = 0
        self.active: Optional[dict] = None
        self.windows: List[dict] = []

    def tick(self, elapsed: float) -> None:
        now = time.monotonic() - self.clock_zero
        if self.active is not None and elapsed >= self.active["phase_start"] + self.window:
            self.host.set_fault("pass")
            self.active["end"] = round(now, 3)
            self.active = None
        if self.active is None and elapsed >= (self.index + 1) * self.every:
            kind = self.kinds[self.index % len(self.kinds)]
            self.host.set_fault(kind)
            self.active = {"kind": kind, "start": round(now, 3), "phase_start": elapsed}
            self.windows.append(self.active)
            self.index += 1

    def finish(self) -> None:
        if self.active is not None:
            self.host.set_fault("pass")
            self.active["end"] = round(time.monotonic() - self.clock_zero, 3)
            self.active = None


def quiet_point(load: Load, deadline: float) -> Dict[str, int]:
    """Stops nothing itself: waits for every call to end, collects garbage, lets the
    completion thread exit, then measures the process."""
    if not load.drain(deadline + DRAIN_GRACE):
        raise RuntimeError(f"{load.pending} calls still pending {deadline + DRAIN_GRACE:.0f} s "
                           f"after the load stopped")
    gc.collect()
    time.sleep(1.0)  # the completion thread exits after an idle 0.5 s wait
    return process_state()


# --- report -----------------------------------------------------------------------------------

def attribute_errors(load: Load, windows: List[dict], zero_offset: float,
                     grace: float) -> Dict[str, Dict[str, int]]:
    """Errors by code per fault kind (ended during a window or up to `grace` seconds after
    it), and "outside faults" for the rest.  Per-second buckets make this approximate to
    the second."""
    spans = [(w["kind"], w["start"] - zero_offset, w.get("end", w["start"]) - zero_offset + grace)
             for w in windows]
    out: Dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for second, codes in load.seconds.items():
        for code, n in codes.items():
            if code == "OK":
                continue
            where = "outside faults"
            for kind, start, end in spans:
                if second + 1 > start and second < end:
                    where = kind
                    break
            out[where][code] += n
    return {k: dict(v) for k, v in out.items()}


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def _kept(state: Dict[str, Any]) -> int:
    """Free bytes malloc keeps in all its arenas."""
    return sum(a["free"] for a in state.get("malloc_arenas") or ())


def print_summary(result: Dict[str, Any]) -> None:
    s, e = result["start"], result["end"]
    print()
    print(f"soak: {result['seconds']:g} s, {result['in_flight']} calls in flight on one channel, "
          f"deadline {result['deadline']:g} s, a {result['fault_window']:g} s fault every "
          f"{result['fault_every']:g} s ({', '.join(result['faults'])})")
    print()
    print(f"{'':24}{'start':>14}{'end':>14}{'change':>14}")
    rows = [("RSS", mib(s["rss"]), mib(e["rss"]),
             f"{100 * (e['rss'] - s['rss']) / s['rss']:+.2f} %"),
            ("heap in use (malloc)", mib(s["heap_in_use"] or 0), mib(e["heap_in_use"] or 0),
             mib((e["heap_in_use"] or 0) - (s["heap_in_use"] or 0))),
            ("malloc free (kept)", mib(_kept(s)), mib(_kept(e)), mib(_kept(e) - _kept(s))),
            ("malloc arenas", len(s["malloc_arenas"] or ()), len(e["malloc_arenas"] or ()),
             f"{len(e['malloc_arenas'] or ()) - len(s['malloc_arenas'] or ()):+d}"),
            ("Python blocks", f"{s['python_blocks']:,}", f"{e['python_blocks']:,}",
             f"{e['python_blocks'] - s['python_blocks']:+,}"),
            ("RSS after malloc_trim", "", mib(e.get("rss_after_malloc_trim") or 0),
             f"{100 * ((e.get('rss_after_malloc_trim') or 0) - s['rss']) / s['rss']:+.2f} %"),
            ("file descriptors", s["fds"], e["fds"], f"{e['fds'] - s['fds']:+d}"),
            ("threads", s["threads"], e["threads"], f"{e['threads'] - s['threads']:+d}")]
    for name, a, b, c in rows:
        print(f"{name:24}{a!s:>14}{b!s:>14}{c!s:>14}")
    print()
    calls = result["calls"]
    print(f"calls                   {calls:,}  ({result['calls_per_second']:,.0f}/s; "
          f"per second min {result['per_second']['min']:,}, median "
          f"{result['per_second']['median']:,}, max {result['per_second']['max']:,})")
    print(f"{'status':24}{'calls':>14}{'share':>10}")
    for code, n in sorted(result["codes"].items(), key=lambda kv: -kv[1]):
        print(f"{code:24}{n:>14,}{100 * n / max(calls, 1):>9.2f}%")
    print()
    print("errors by fault window (ended in it or within deadline + 1 s after it)")
    for where, codes in sorted(result["errors_by_fault"].items()):
        text = ", ".join(f"{c} {n:,}" for c, n in sorted(codes.items()))
        print(f"{where:24}    {text}")
    print()
    print(f"fault windows           {len(result['windows'])}; proxy: "
          + ", ".join(f"{k} {v:,}" for k, v in result["host_stats"]["proxy"].items()))
    ch0, ch1 = result["channel_start"], result["channel_end"]
    print(f"channel                 connects {ch1['connects'] - ch0['connects']:,} "
          f"(failed attempts {ch1.get('connect_failures', 0) - ch0.get('connect_failures', 0):,}, "
          f"write stalls {ch1.get('write_stalls', 0) - ch0.get('write_stalls', 0):,}), "
          f"calls {ch1['calls'] - ch0['calls']:,}")
    print(f"wrong responses         {result['wrong_responses']}")
    m = result["misuse"]
    print(f"misuse                  {m['forks']} forks ({m['fork_failures']} failed, "
          f"{m['hung_children']} hung); {m['raising_callbacks']} raising callbacks, "
          f"{m['callback_exceptions_logged']} logged; {m['dropped_channels']} channels "
          f"dropped, threads {m['base_threads']} -> peak {m['peak_threads']}, "
          f"fds {m['base_fds']} -> peak {m['peak_fds']}")
    print(f"RSS growth              {result['rss_growth_pct']:+.2f} % "
          f"(bound {100 * result['rss_bound']:.0f} %): "
          f"{'PASS' if result['rss_ok'] else 'FAIL'}")
    if result["problems"]:
        print("problems:                " + "; ".join(result["problems"]))
    print(f"result                  {result['outcome']}  ->  {result['out']}")


# --- main -------------------------------------------------------------------------------------

def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="measured run length")
    parser.add_argument("--warmup", type=float, default=25.0,
                        help="unmeasured load first, with each fault once, at the measured "
                             "cadence when it fits (25 s: 4 faults, 5 s apart)")
    parser.add_argument("--in-flight", type=int, default=1000)
    parser.add_argument("--deadline", type=float, default=0.4,
                        help="per-call deadline (below --fault-window so stalls show)")
    parser.add_argument("--payload", type=int, default=128, help="request bytes")
    parser.add_argument("--fault-every", type=float, default=5.0)
    parser.add_argument("--fault-window", type=float, default=0.5)
    parser.add_argument("--faults", default="reset,stall,truncate,close_after",
                        help=f"comma-separated, from {','.join(FAULT_PARAMS)}")
    parser.add_argument("--rss-bound", type=float, default=0.05,
                        help="largest RSS growth accepted, as a fraction of the start")
    parser.add_argument("--fork-every", type=float, default=3.0,
                        help="seconds between forks (0: none)")
    parser.add_argument("--drop-every", type=float, default=0.5,
                        help="seconds between channels dropped without close() (0: none)")
    parser.add_argument("--raise-every", type=int, default=1000,
                        help="every n-th future gets a raising done-callback (0: none)")
    parser.add_argument("--server-threads", type=int, default=1)
    parser.add_argument("--same-process", action="store_true",
                        help="run the echo server and the proxy in this process")
    parser.add_argument("--out", type=Path, help="JSON file (default results/soak-<ts>.json)")
    parser.add_argument("--host", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    kinds = [k for k in args.faults.split(",") if k]
    unknown = [k for k in kinds if k not in FAULT_PARAMS]
    if unknown:
        parser.error(f"unknown faults {unknown}; choose from {list(FAULT_PARAMS)}")
    args.kinds = kinds
    return args


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(argv)
    if args.host:
        return serve_host(args.server_threads)
    sys.stdout.reconfigure(line_buffering=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = args.out or ROOT / "results" / f"soak-{stamp}.json"
    try:
        from triple_py.bench.environment import environment
        env = environment()
    except Exception as exc:  # the report is still worth having
        env = {"error": repr(exc)}
    host = LocalHost(args.server_threads) if args.same_process else ChildHost(args.server_threads)
    problems: List[str] = []
    try:
        channel = triple_py.insecure_channel(host.address)
        load = Load(channel, args.in_flight, args.deadline, b"s" * args.payload)
        print(f"soak: warm-up {args.warmup:g} s (each fault once), then {args.seconds:g} s "
              f"with a {args.fault_window:g} s fault every {args.fault_every:g} s")
        # The measured cadence when the warm-up has room for it, so that the caches
        # (buffer and call pools, spare arenas) reach the high-water mark the measured
        # minute will see before the start is taken; compressed otherwise.
        warm_every = min(args.fault_every, args.warmup / (len(args.kinds) + 1))
        warm = FaultSchedule(host, args.kinds, warm_every,
                             min(args.fault_window, warm_every / 2), load.started_at)
        load.run_for(args.warmup, warm.tick)
        warm.finish()
        load.run_for(1.0)  # a fault-free second so the start is not right after a fault
        start = quiet_point(load, args.deadline)
        channel_start = channel.stats()
        warm_calls = sum(load.codes.values())
        load.codes.clear()
        load.seconds.clear()
        load.started_at = time.monotonic()
        print(f"start: RSS {mib(start['rss'])}, {start['fds']} fds, {start['threads']} threads "
              f"(warm-up: {warm_calls:,} calls)")
        schedule = FaultSchedule(host, args.kinds, args.fault_every, args.fault_window,
                                 load.started_at)
        misuse = Misuse(channel, host.address, args.fork_every, args.drop_every,
                        args.raise_every)
        misuse.begin()
        load.on_future = misuse.on_future
        began = time.monotonic()

        last_report = [0.0]

        def tick(elapsed: float) -> None:
            schedule.tick(elapsed)
            misuse.tick(elapsed)
            if elapsed - last_report[0] >= 10:
                last_report[0] = elapsed
                with load.cond:
                    done = sum(load.codes.values())
                    errors = done - load.codes.get("OK", 0)
                print(f"  {elapsed:5.0f} s  {done:>10,} calls  {errors:>8,} errors  "
                      f"RSS {mib(rss_bytes())}")

        load.run_for(args.seconds, tick)
        load.on_future = None
        schedule.finish()
        misuse.finish()
        problems.extend(misuse.problems())
        wall = time.monotonic() - began
        end = quiet_point(load, args.deadline)
        end["rss_after_malloc_trim"] = rss_after_malloc_trim()  # after the gated figure
        channel_end = channel.stats()
        # the last second before the stop must have seen successful calls (recovery)
        last_seconds = sorted(load.seconds)[-3:]
        if not any(load.seconds[s].get("OK") for s in last_seconds):
            problems.append("no successful call in the last seconds (no recovery)")
        if load.wrong_responses:
            problems.append(f"{load.wrong_responses} responses differ from their requests")
        channel.close()
        host_stats = host.stats()
    except Exception as exc:
        problems.append(f"run failed: {exc!r}")
        host.close()
        print(f"soak: {problems[-1]}", file=sys.stderr)
        return 2
    host.close()

    calls = sum(load.codes.values())
    per_second = sorted(sum(c.values()) for s, c in load.seconds.items()
                        if s < int(args.seconds))
    growth = (end["rss"] - start["rss"]) / start["rss"]
    rss_ok = growth <= args.rss_bound
    outcome = "PASS" if rss_ok and not problems else ("FAIL (RSS)" if not rss_ok else "FAIL")
    result: Dict[str, Any] = {
        "benchmark": "soak", "started": stamp, "out": str(out),
        "seconds": args.seconds, "wall_seconds": round(wall, 3), "warmup": args.warmup,
        "in_flight": args.in_flight, "deadline": args.deadline, "payload": args.payload,
        "fault_every": args.fault_every, "fault_window": args.fault_window,
        "faults": args.kinds, "fault_params": {k: FAULT_PARAMS[k] for k in args.kinds},
        "same_process": args.same_process,
        "calls": calls, "calls_per_second": calls / wall,
        "per_second": {"min": per_second[0] if per_second else 0,
                       "median": per_second[len(per_second) // 2] if per_second else 0,
                       "max": per_second[-1] if per_second else 0},
        "codes": dict(load.codes),
        "errors_by_fault": attribute_errors(load, schedule.windows, 0.0, args.deadline + 1.0),
        "timeline": {str(s): dict(c) for s, c in sorted(load.seconds.items())},
        "windows": schedule.windows,
        "start": start, "end": end,
        "rss_growth_pct": 100 * growth, "rss_bound": args.rss_bound, "rss_ok": rss_ok,
        "channel_start": channel_start, "channel_end": channel_end,
        "host_stats": host_stats, "wrong_responses": load.wrong_responses,
        "misuse": misuse.report(),
        "problems": problems, "outcome": outcome, "environment": env,
    }
    for window in result["windows"]:
        window.pop("phase_start", None)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print_summary(result)
    if problems:
        return 2
    return 0 if rss_ok else 1


if __name__ == "__main__":
    sys.exit(main())

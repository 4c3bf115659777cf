"""The cluster side of a distributed run (see :mod:`triple_py.bench.distributed`): connect,
split the load into shares, measure clock offsets, start every share at one moment, merge."""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import time
import uuid
from concurrent.futures import CancelledError
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ..arms.loadgen import C_MODES
from ..arms.runners import with_knobs
from ..errors import ConfigError, RunFailed
from ..interrupts import Interrupted, mark, signal_of
from ..record.result import BenchResult
from ..running.rounds import run_matrix as run_locally
from ..running.runner import spec_of, spec_target, target_or_embedded
from ..spec.run_spec import RunSpec
from .dask_tasks import build_identity, wall_clock_ns, run_share, stop_share
from .merge import Part, merge_parts

__all__ = ["connect", "run", "run_spec", "run_parts", "run_matrix", "runner", "split", "Share", "WorkersFailed",
           "WorkerFailure", "check_builds", "clock_offset", "worker_addresses",
           "DEFAULT_LEAD"]

#: Seconds between the start command and the common start: time for every worker to
#: receive its task and open its connections.
DEFAULT_LEAD = 1.5
#: Round trips per worker for its clock offset.
CLOCK_SAMPLES = 7
#: How often the client looks for workers that left the cluster (s).
POLL_S = 0.2
#: Seconds an interrupted run waits for the workers' figures after telling them to stop.
STOP_WAIT = 1.0

Workers = Union[None, int, Sequence[str]]


@dataclasses.dataclass
class WorkerFailure:
    """A worker whose share produced no result: which worker, and why."""

    worker: str
    error: str


class WorkersFailed(RunFailed):
    """Workers failed during a distributed run; nothing was merged.

    ``failures``: each failed worker and its error; ``parts``: the results of the workers
    that finished (see :mod:`.merge`).
    """

    def __init__(self, failures: Sequence[WorkerFailure], parts: Sequence[Part],
                 total: int) -> None:
        self.failures = list(failures)
        self.parts = list(parts)
        what = "; ".join(f"{f.worker}: {f.error}" for f in self.failures)
        super().__init__(f"{len(self.failures)} of {total} workers failed, no merged "
                         f"result: {what}")


@dataclasses.dataclass
class Share:
    """One worker's share of a load."""

    concurrency: int
    connections: int
    rate: Optional[float]
    count: int
    phase_ns: int


def _even(total: int, n: int, i: int) -> int:
    """Share i of ``total`` split into n as evenly as possible (the first get the rest)."""
    return total // n + (1 if i < total % n else 0)


def split(spec: RunSpec, n: int) -> List[Share]:
    """Splits a load over ``n`` workers.

    Connections are split evenly and every connection keeps the spec's calls in flight
    per connection; when there are fewer connections than workers, every worker gets one
    connection and an even share of the calls in flight (so the total of connections
    grows to n). ``rate`` is split evenly, worker i's schedule shifted by i/rate, so the
    union of the schedules is one of spacing 1/rate. ``count`` is split evenly.
    """
    if n < 1:
        raise ConfigError("a distributed run needs at least one worker")
    if spec.concurrency < n:
        raise ConfigError(f"concurrency {spec.concurrency} is less than the {n} workers: "
                          "every worker needs at least one call in flight")
    if spec.count and spec.count < n:
        raise ConfigError(f"total {spec.count} is less than the {n} workers")
    per_connection = spec.concurrency // spec.connections
    shares = []
    for i in range(n):
        if spec.connections >= n:
            connections = _even(spec.connections, n, i)
            concurrency = connections * per_connection
        else:
            connections, concurrency = 1, _even(spec.concurrency, n, i)
        shares.append(Share(
            concurrency=concurrency, connections=connections,
            rate=spec.rate / n if spec.rate else None,
            count=_even(spec.count, n, i) if spec.count else 0,
            phase_ns=round(i * 1e9 / spec.rate) if spec.rate else 0))
    return shares


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """A ``distributed.Client`` for ``address``: a scheduler (``tcp://host:8786``) or
    ``local:N``, a LocalCluster of N single-threaded worker processes made for the block
    (closed after it)."""
    from distributed import Client, LocalCluster

    if address.startswith("local:"):
        try:
            n = int(address[len("local:"):])
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"bad --dask {address!r}: expected local:N with N >= 1")
        with LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                          dashboard_address=":0") as cluster, Client(cluster) as client:
            client.wait_for_workers(n, timeout=60)
            yield client
        return
    try:
        client = Client(address, timeout=30)
    except (OSError, TimeoutError) as exc:
        raise ConfigError(f"cannot reach the Dask scheduler {address}: {exc}") from None
    with client:
        yield client


def worker_addresses(client: Any, workers: Workers = None) -> List[str]:
    """The addresses of the workers to use: ``workers`` as given, the first ``workers`` of
    the sorted addresses, or all of them. ConfigError when there are none or too few, or
    when an address given is not in the cluster."""
    known = sorted(client.scheduler_info()["workers"])
    if isinstance(workers, int):
        if not 1 <= workers <= len(known):
            raise ConfigError(f"workers={workers}: the cluster has {len(known)} workers")
        return known[:workers]
    if workers is not None:
        chosen = list(workers)
        unknown = [w for w in chosen if w not in known]
        if unknown:
            raise ConfigError(f"not workers of this cluster: {', '.join(unknown)}")
        return chosen
    if not known:
        raise ConfigError("the Dask cluster has no workers")
    return known


def check_builds(client: Any, addresses: Sequence[str]) -> None:
    """ConfigError (one line) when a worker's triple_py build is not the client's."""
    mine = build_identity()
    theirs = client.run(build_identity, workers=list(addresses))
    for address in addresses:
        other = theirs.get(address)
        if other != mine:
            def show(ident: Optional[Dict[str, str]]) -> str:
                if not ident:
                    return "no triple_py"
                return (f"triple_py {ident['version']} core {ident['core']} build "
                        f"{ident['build']} on Python {ident['python']}")
            raise ConfigError(f"worker {address} runs {show(other)}, this client "
                              f"{show(mine)}: install the same build on every worker")


def clock_offset(client: Any, address: str, samples: int = CLOCK_SAMPLES
                 ) -> Tuple[int, int]:
    """(offset_ns, rtt_ns): the worker's wall clock minus the client's, from the round
    trip with the shortest time (its midpoint), and that round trip's time."""
    best: Optional[Tuple[int, int]] = None
    for _ in range(samples):
        sent = time.time_ns()
        theirs = client.run(wall_clock_ns, workers=[address])[address]
        back = time.time_ns()
        rtt = back - sent
        if best is None or rtt < best[1]:
            best = (theirs - (sent + back) // 2, rtt)
    assert best is not None
    return best


LOOPBACK = ("127.", "localhost", "[::1]", "::1")


def _host(address: str) -> str:
    return address.split("://", 1)[-1].rsplit(":", 1)[0]


def _check_reachable(target: str, addresses: Sequence[str]) -> None:
    """ConfigError for a loopback target (e.g. the embedded server) with workers that are
    not on loopback, which would load their own host instead."""
    if not _host(target).startswith(LOOPBACK):
        return
    remote = [a for a in addresses if not _host(a).startswith(LOOPBACK)]
    if remote:
        raise ConfigError(f"target {target} is a loopback address, which the workers "
                          f"{', '.join(remote)} cannot reach: give a --target they can reach")


def _share_fields(spec: RunSpec, share: Share) -> Dict[str, Any]:
    fields = dataclasses.asdict(spec)
    fields.update(concurrency=share.concurrency, connections=share.connections,
                  rate=share.rate, count=share.count)
    return fields


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def run_spec(client: Any, spec: RunSpec, *, workers: Workers = None,
             start_lead: float = DEFAULT_LEAD) -> BenchResult:
    """Runs ``spec`` (its target must be reachable from every worker) spread over the
    workers; returns the merged result. Raises WorkersFailed, ConfigError."""
    try:
        parts, start_ns = run_parts(client, spec, workers=workers, start_lead=start_lead)
    except Interrupted as exc:  # the workers' figures until the stop, merged
        parts = getattr(exc, "parts", [])
        if not parts:
            raise
        merged = mark(merge_parts(parts, arm=spec.arm, target=spec.target), exc.signum)
        merged.notes.insert(0, f"distributed over {len(parts)} Dask workers, merged")
        raise Interrupted(exc.signum, merged) from None
    merged = with_knobs(merge_parts(parts, arm=spec.arm, target=spec.target), spec)
    merged.extra["distributed"] = {"workers": len(parts), "start_lead_s": start_lead,
                                   "start_wall_ns": start_ns}
    merged.notes.insert(0, f"distributed over {len(parts)} Dask workers, merged")
    return merged


def run_parts(client: Any, spec: RunSpec, *, workers: Workers = None,
              start_lead: float = DEFAULT_LEAD) -> Tuple[List[Part], int]:
    """The unmerged run: every worker's :class:`~.merge.Part`, and the common start (ns,
    client clock). Raises WorkersFailed, ConfigError."""
    from distributed import wait

    spec.validate()
    if spec.mode not in C_MODES:
        raise ConfigError(f"a distributed run needs a C load generator arm "
                          f"({', '.join(C_MODES)}), not {spec.mode}")
    addresses = worker_addresses(client, workers)
    _check_reachable(spec.target, addresses)
    check_builds(client, addresses)
    shares = split(spec, len(addresses))
    clocks = {a: clock_offset(client, a) for a in addresses}
    start_ns = time.time_ns() + round(start_lead * 1e9)
    run_id = uuid.uuid4().hex[:8]
    futures = {}
    for i, (address, share) in enumerate(zip(addresses, shares)):
        futures[address] = client.submit(
            run_share, _share_fields(spec, share), start_ns + clocks[address][0],
            share.phase_ns, run_id, key=f"triple-bench-{run_id}-{i}", workers=[address],
            allow_other_workers=False, pure=False, retries=0)
    budget = (start_lead + spec.warmup + spec.duration + 2 * spec.timeout + 30
              if spec.duration else None)
    try:
        failures = _await(client, futures, budget, wait)
    except KeyboardInterrupt as exc:  # SIGINT/SIGTERM: every share stops and reports
        signum = signal_of(exc)
        stopped = Interrupted(signum)
        stopped.parts = _stop_shares(client, futures, clocks, run_id, signum, wait)
        raise stopped from None
    parts: List[Part] = []
    for address, future in futures.items():
        if address in failures:
            continue
        if future.status == "error":
            failures[address] = _describe(future.exception())
            continue
        parts.append(_part(address, future.result(), clocks[address]))
    if failures:
        raise WorkersFailed([WorkerFailure(a, failures[a]) for a in addresses
                             if a in failures], parts, len(addresses))
    return parts, start_ns


def _part(address: str, got: Dict[str, Any], clock: Tuple[int, int]) -> Part:
    offset, rtt = clock
    return Part(address, BenchResult.from_dict(got["result"]),
                got["window_start_wall_ns"] - offset, offset, rtt, got["host"], got["pid"])


def _stop_shares(client: Any, futures: Dict[str, Any], clocks: Dict[str, Tuple[int, int]],
                 run_id: str, signum: int, wait: Callable[..., Any]) -> List[Part]:
    """Tells every worker to stop its share of ``run_id`` now; returns the parts of those
    that report within :data:`STOP_WAIT` seconds (the others' futures are cancelled)."""
    with contextlib.suppress(Exception):  # a worker that is gone cannot be told
        client.run(stop_share, run_id, signum, workers=list(futures))
    failures = _await(client, futures, STOP_WAIT, wait)
    return [_part(a, f.result(), clocks[a]) for a, f in futures.items()
            if a not in failures and f.status == "finished"]


def _await(client: Any, futures: Dict[str, Any], budget: Optional[float],
           wait: Callable[..., Any]) -> Dict[str, str]:
    """Waits for every future; returns {worker: error} for the workers that left the
    cluster or did not finish within ``budget`` seconds (their futures are cancelled)."""
    failures: Dict[str, str] = {}
    deadline = time.monotonic() + budget if budget is not None else None
    while True:
        pending = {a: f for a, f in futures.items() if not f.done() and a not in failures}
        if not pending:
            return failures
        present = set(client.scheduler_info()["workers"])
        for address, future in pending.items():
            if address not in present:
                failures[address] = "the worker died or left the cluster during the run"
                future.cancel()
        if deadline is not None and time.monotonic() > deadline:
            for address, future in pending.items():
                if address not in failures:
                    failures[address] = "no result within the run's time budget"
                    future.cancel()
            return failures
        try:
            wait(list(pending.values()), timeout=POLL_S, return_when="FIRST_COMPLETED")
        except (TimeoutError, CancelledError):  # a future cancelled elsewhere: seen next turn
            pass


def run(client: Any, *args: Any, workers: Workers = None,
        start_lead: float = DEFAULT_LEAD, **kwargs: Any) -> BenchResult:
    """:func:`triple_py.bench.run` spread over the workers of ``client`` (a
    ``distributed.Client``); returns the merged :class:`~triple_py.bench.record.result.BenchResult`.

    ``workers``: addresses, a number (the first n) or None (all). ``start_lead``: seconds
    from now to the common start. Without a target the embedded echo server is started in
    this process on 127.0.0.1, which only workers on this host can reach (``local:N``).
    Raises WorkersFailed (a worker died, left, or its load failed: which, and why),
    ConfigError (bad parameters, a worker with another build).
    """
    spec = spec_of(*args, **kwargs)
    with target_or_embedded(spec_target(args, kwargs)) as address:
        spec.target = address
        return run_spec(client, spec, workers=workers, start_lead=start_lead)


_SPEC_PARAMETERS = list(inspect.signature(spec_of).parameters.values())  # **knobs last
run.__signature__ = inspect.signature(run).replace(  # type: ignore[attr-defined]
    parameters=[inspect.Parameter("client", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    + _SPEC_PARAMETERS[:-1]
    + [inspect.Parameter("workers", inspect.Parameter.KEYWORD_ONLY, default=None),
       inspect.Parameter("start_lead", inspect.Parameter.KEYWORD_ONLY, default=DEFAULT_LEAD),
       _SPEC_PARAMETERS[-1]],
    return_annotation=BenchResult)


def run_matrix(client: Any, matrix: Any, *, workers: Workers = None,
               start_lead: float = DEFAULT_LEAD, **kwargs: Any) -> Any:
    """:func:`~triple_py.bench.running.rounds.run_matrix` with every arm run spread over
    the workers of
    ``client``; ``kwargs`` go to it (target, check, progress...). Returns its MatrixRun,
    which :func:`~triple_py.bench.report.files.write_results` writes like a local one."""
    return run_locally(matrix, runner=runner(client, workers, start_lead), **kwargs)


def runner(client: Any, workers: Workers = None, start_lead: float = DEFAULT_LEAD
           ) -> Callable[[RunSpec], BenchResult]:
    """A runner for :func:`~triple_py.bench.running.rounds.run_matrix` that spreads each
    arm run over the
    workers (the matrix's arms must be C load generator kinds)."""
    def run_one(spec: RunSpec) -> BenchResult:
        return run_spec(client, spec, workers=workers, start_lead=start_lead)
    return run_one

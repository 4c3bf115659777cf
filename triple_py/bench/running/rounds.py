"""Running a matrix: servers, rounds, interleaved arms, failures kept as data.

For each scenario, ``rounds`` rounds; in each round every arm runs once, in the order of
:func:`~triple_py.bench.spec.matrix.round_order` (as listed, reversed every other round),
all against the same
server. With ``restart_server`` every round gets a new server from the server factory
(the embedded EchoServer by default; a fixed ``--target`` cannot be restarted). An arm that
raises is recorded as failed and the matrix goes on; an unreachable target or a method the
server does not implement stops it before the first arm (the preflight). When the
factory yields a :class:`~.server_cpu.ServerProcess`, each arm run also books the server's
CPU time (see :mod:`.server_cpu`).
"""
from __future__ import annotations

import contextlib
import os
import time
from typing import Callable, ContextManager, Iterator, Optional

from ..arms.recorders import describe
from ..arms.runners import Runner, run_spec
from ..errors import BenchError, ConfigError
from ..interrupts import signal_of
from ..results.environment import environment
from ..results.model import ArmRun, MatrixRun
from ..spec.matrix import Matrix, Scenario, round_order
from .capacity import run_capacity
from .live import auto_progress
from .progress import Progress
from .runner import preflight
from .server_cpu import book_server_cpu, process_cpu_seconds, unpack_served
from .servers import ServerFactory, fixed_target

__all__ = ["run_matrix", "Runner"]


def run_matrix(matrix: Matrix, *, target: Optional[str] = None,
               server_factory: Optional[ServerFactory] = None,
               runner: Runner = run_spec, check: bool = True,
               progress: Optional[Progress] = None,
               on_scenario: Optional[Callable[[MatrixRun, Scenario], None]] = None,
               capture_environment: bool = True) -> MatrixRun:
    """Runs every scenario, round and arm of ``matrix``; returns all results.

    ``target`` (host:port) or ``server_factory`` (a callable returning a context manager
    that yields an address, or a ServerProcess whose CPU time is then booked per arm run,
    e.g. one that starts a peer process) choose the server;
    neither: the embedded echo server. ``check`` makes one test call per method first
    (TargetError / RunFailed). ``on_scenario`` is called after each scenario (to print its
    table). ``progress`` defaults to :func:`~.live.auto_progress`: a live display in a
    Jupyter notebook, the terminal line elsewhere. Ctrl-C (or interrupting the notebook
    cell, or SIGTERM under the CLI) stops the run: the arm runs finished so far are kept
    (``interrupted`` and ``interrupt_signal`` are set).
    Raises ConfigError when ``restart_server`` is asked of a fixed target.
    """
    if target is not None and server_factory is not None:
        raise ConfigError("give target or server_factory, not both")
    if matrix.restart_server and target is not None:
        raise ConfigError("--restart-server needs a server the harness starts (the embedded "
                          "one, or a server factory), not a fixed --target")
    factory = server_factory or fixed_target(target)
    progress = progress or auto_progress(title=f"matrix {matrix.name}")
    progress.total = len(matrix.scenarios) * matrix.rounds * len(matrix.arms)
    out = MatrixRun(matrix, [], environment() if capture_environment else {}, time.time(),
                    target=target)
    generation = 0
    server_pid: Optional[int] = None
    checked: set = set()

    @contextlib.contextmanager
    def server() -> Iterator[str]:
        nonlocal generation, server_pid
        generation += 1
        with factory() as served:
            address, server_pid = unpack_served(served)
            if check:
                for arm in matrix.arms:
                    spec = matrix.spec(matrix.scenarios[0], arm, address)
                    setup = matrix.call_setup(arm)
                    extra = setup.apply(spec, address) if setup is not None else {}
                    key = (spec.resolved_method(), spec.streaming, spec.wire)
                    if setup is not None or key not in checked:
                        preflight(address, *key, timeout=min(matrix.timeout, 10.0), **extra)
                        checked.add(key)
            yield address

    def one_round(scenario: Scenario, index: int, address: str) -> None:
        order = round_order([a.name for a in matrix.arms], index)
        for position, name in enumerate(order):
            arm = matrix.arm(name)
            spec = matrix.spec(scenario, arm, address)
            setup = matrix.call_setup(arm)
            if setup is not None:  # schema, ring and channel keywords, before the run
                setup.apply(spec, address)
            run = ArmRun(scenario, matrix.label(scenario), arm, index + 1, position, address,
                         generation, time.time())
            progress.start(f"{run.label} round {index + 1}/{matrix.rounds} {name}",
                           matrix.warmup + matrix.duration)
            cpu_before = process_cpu_seconds(server_pid) if server_pid is not None else None
            try:
                run.result = runner(spec)
                if cpu_before is not None:
                    book_server_cpu(run.result, cpu_before, process_cpu_seconds(server_pid))
            except ConfigError:
                raise  # a configuration the matrix check let through: stop
            except BenchError as exc:
                run.failed = str(exc)
            except Exception as exc:  # the arm failed; the matrix goes on
                run.failed = describe(exc)
            progress.finish(run.result, name, run.failed)
            out.runs.append(run)

    def capacity_searches(scenario: Scenario, address: str) -> None:
        if matrix.capacity is None:
            return
        for name in matrix.capacity.arms:
            arm = matrix.arm(name)
            spec = matrix.spec(scenario, arm, address)
            setup = matrix.call_setup(arm)
            if setup is not None:
                setup.apply(spec, address)
            label = matrix.label(scenario)
            progress.start(f"{label} capacity search {name} ({matrix.capacity.slo})", 0)
            out.capacities.append(run_capacity(matrix.capacity, label, name, spec, runner))

    try:
        _run_all(matrix, server, one_round, out, on_scenario, capacity_searches)
    except KeyboardInterrupt as exc:
        out.interrupted, out.interrupt_signal = True, signal_of(exc)
    finally:
        progress.close()
        out.finished = time.time()
        out.load_after = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return out


def _run_all(matrix: Matrix, server: Callable[[], ContextManager[str]],
             one_round: Callable[[Scenario, int, str], None], out: MatrixRun,
             on_scenario: Optional[Callable[[MatrixRun, Scenario], None]],
             searches: Callable[[Scenario, str], None]) -> None:
    """Scenarios x rounds, on one server or a new one per round; after each scenario's
    rounds, its capacity searches (on a server of their own when servers restart)."""
    if matrix.restart_server:
        for scenario in matrix.scenarios:
            for index in range(matrix.rounds):
                with server() as address:
                    one_round(scenario, index, address)
            if matrix.capacity is not None:
                with server() as address:
                    searches(scenario, address)
            if on_scenario:
                on_scenario(out, scenario)
        return
    with server() as address:
        for scenario in matrix.scenarios:
            for index in range(matrix.rounds):
                one_round(scenario, index, address)
            searches(scenario, address)
            if on_scenario:
                on_scenario(out, scenario)


"""The result model of a matrix run: one :class:`ArmRun` per arm, round and scenario (its
record or why it failed) inside a :class:`MatrixRun` (the matrix, the environment, the
capacity searches); a single ``run()`` as a one-arm, one-round matrix run."""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, List, Optional

from ... import __version__
from ..record.result import BenchResult
from ..spec.matrix import ArmSpec, Matrix, Scenario
from .capacity import CapacityRun
from .environment import cpu_count, environment, goarch, goos

__all__ = ["ArmRun", "MatrixRun", "single_run"]


@dataclasses.dataclass
class ArmRun:
    """One arm in one round of one scenario."""

    scenario: Scenario
    label: str
    arm: ArmSpec
    round: int  # 1-based
    position: int  # 0-based place in its round's order
    target: str
    server_generation: int  # which server (changes on restart)
    started: float
    result: Optional[BenchResult] = None
    failed: Optional[str] = None

    @property
    def ok(self) -> bool:
        """A result and no failed call."""
        return self.result is not None and self.result.errors == 0


@dataclasses.dataclass
class MatrixRun:
    """Everything a matrix run produced."""

    matrix: Matrix
    runs: List[ArmRun]
    environment: Dict[str, object]
    started: float
    finished: float = 0.0
    target: Optional[str] = None
    load_after: Optional[List[float]] = None
    interrupted: bool = False  # Ctrl-C or SIGTERM: the runs so far are kept
    interrupt_signal: int = 0  # the signal that stopped it (2 SIGINT, 15 SIGTERM)
    capacities: List[CapacityRun] = dataclasses.field(default_factory=list)  # [capacity]
    # Who recorded it, for the headers of the reports: the triple_py version ("": unknown)
    # and the machine as Go names it (this one for a live run; the document's when read).
    version: str = __version__
    goos: str = dataclasses.field(default_factory=goos)
    goarch: str = dataclasses.field(default_factory=goarch)
    cpus: int = dataclasses.field(default_factory=cpu_count)

    def runs_of(self, scenario: Scenario, arm: str) -> List[ArmRun]:
        """The rounds of one arm in one scenario, in round order."""
        return [r for r in self.runs if r.scenario == scenario and r.arm.name == arm]

    def scenario_runs(self, scenario: Scenario) -> List[ArmRun]:
        """Every run of one scenario, in execution order."""
        return [r for r in self.runs if r.scenario == scenario]

    def knobs_of(self, r: ArmRun) -> Dict[str, Any]:
        """The knobs one run was given (channel options as ``channel.NAME``, load
        keywords by name): its arm's and scenario's in the matrix, and those its result
        recorded (``extra["knobs"]``: a single ``run()``'s)."""
        recorded = r.result.extra.get("knobs") if r.result is not None else None
        return {**self.matrix.knobs(r.scenario, r.arm), **dict(recorded or {})}


def single_run(result: BenchResult, target: Optional[str] = None,
               started: Optional[float] = None, capture_environment: bool = True,
               duration: Optional[float] = None, warmup: Optional[float] = None
               ) -> MatrixRun:
    """One ``run()`` result as a one-arm, one-round matrix run (named ``run``), so that
    the matrix's reports, files and figures take it too. ``target`` is the fixed target
    it ran against (None: the embedded server); ``duration`` and ``warmup`` are the asked
    ones (default: the result's)."""
    matrix = Matrix(name="run", arms=[ArmSpec(result.arm, result.mode)], benchmark="Run",
                    scenarios=[Scenario(result.payload_size, result.concurrency,
                                        result.connections, result.stream_messages,
                                        result.rate or 0.0)],
                    baseline=result.arm, rounds=1,
                    duration=result.duration_s if duration is None else duration,
                    warmup=result.warmup_s if warmup is None else warmup)
    started = time.time() if started is None else started
    arm_run = ArmRun(matrix.scenarios[0], matrix.label(matrix.scenarios[0]), matrix.arms[0],
                     1, 0, result.target, 1, started, result)
    return MatrixRun(matrix, [arm_run], environment() if capture_environment else {},
                     started, time.time(), target=target)

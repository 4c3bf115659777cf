"""How one arm runs one spec: the C load generator (:mod:`.loadgen`), h2load
(:mod:`.h2load`), grpcio (:mod:`.grpcio`), triple_py's Python API (:mod:`.python_api`),
their shared recorders (:mod:`.recorders`) and the table from kind name to runner
(:mod:`.runners`). The kinds themselves, by capability, are
:mod:`triple_py.bench.spec.kinds`.

This package also keeps the names of the former module ``triple_py.bench.arms``."""
from ..spec.kinds import ALIASES, KINDS, ArmKind, canonical_mode, kind_of
from .runners import RUNNERS, Runner, run_spec, runner_of

__all__ = ["ArmKind", "KINDS", "ALIASES", "kind_of", "canonical_mode", "run_spec", "RUNNERS",
           "Runner", "runner_of"]

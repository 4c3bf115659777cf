"""What to run: :class:`RunSpec` (one arm, one run; :mod:`.run_spec`), the arm kinds by
capability (:mod:`.kinds`), matrices (:mod:`.matrix`: the TOML schema, its loader and the
built-in matrices), the ``[capacity]`` table and SLOs (:mod:`.capacity`, :mod:`.slo`),
targets (:mod:`.target`) and load schedules (:mod:`.schedules`).

This package also keeps the names of the former module ``triple_py.bench.spec``."""
from ..limits import load_limit, option_range
from .run_spec import WIRES, WRITE_BUFFER_DELAY_US, WRITE_BUFFER_SIZE, RunSpec

__all__ = ["RunSpec", "WIRES", "WRITE_BUFFER_SIZE", "WRITE_BUFFER_DELAY_US", "load_limit",
           "option_range"]

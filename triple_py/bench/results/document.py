"""The results document (``results.json``): benchstat's load-harness schema (``config`` and
one entry per arm, scenario and round) plus everything a matrix run recorded, under a
format name and version (:data:`FORMAT`, :data:`VERSION`); :mod:`.reader` reads it back
into the result model.

Version 2 (this one) adds to version 1 (the unversioned documents): ``format`` and
``version``, each entry's ``started`` (the wall-clock start of the arm run), the run's fixed
``target``, ``interrupted`` and ``interrupt_signal``, and always ``triple_py``,
``capacities`` and ``matrix``."""
from __future__ import annotations

import math
from typing import Any, Dict

from .benchmark_units import go_name, unit_values
from .capacity import capacity_docs
from .model import MatrixRun
from .summary import summarize

__all__ = ["results_doc", "FORMAT", "VERSION"]

#: The ``format`` of every results document.
FORMAT = "triple_py.bench/results"
#: The version :func:`results_doc` writes.
VERSION = 2


def results_doc(run: MatrixRun, histograms: bool = True) -> Dict[str, Any]:
    """The results JSON document (benchstat's harness schema plus everything else)."""
    env = run.environment
    config = {"goos": run.goos, "goarch": run.goarch,
              "pkg": "triple_py/bench", "cpu": env.get("cpu_model") or "unknown",
              "matrix": run.matrix.name}
    if env.get("commit"):
        config["commit"] = env["commit"][:12] + ("-dirty" if env.get("dirty") else "")
    results, failed = [], []
    for r in run.runs:
        entry = {"name": go_name(run, r, with_arm=False).rsplit("-", 1)[0]
                 .removeprefix("Benchmark"),
                 "arm": r.arm.name, "round": r.round, "position": r.position,
                 "scenario": dict(r.scenario.to_dict(), label=r.label), "kind": r.arm.mode,
                 "server": r.server_generation, "target": r.target, "started": r.started}
        knobs = run.knobs_of(r)  # channel options and load keywords, when any were given
        if knobs:
            entry["knobs"] = knobs
        if r.result is None:
            failed.append(dict(entry, failed=r.failed))
            continue
        entry["iters"] = max(1, r.result.calls)
        entry["unit_values"] = {k: v for k, v in unit_values(r.result, r.arm.ours).items()
                                if math.isfinite(v)}
        entry["result"] = r.result.to_dict(histograms=histograms)
        results.append(entry)
    summary = [{"scenario": label, "arms": arms} for label, arms in summarize(run)]
    return {"format": FORMAT, "version": VERSION, "config": config, "results": results,
            "failed": failed, "triple_py": run.version,
            "matrix": run.matrix.to_dict(), "environment": env,
            "load_average_after": run.load_after, "started": run.started,
            "finished": run.finished, "target": run.target,
            "interrupted": run.interrupted, "interrupt_signal": run.interrupt_signal,
            "summary": summary,
            "capacities": capacity_docs(run.capacities)}

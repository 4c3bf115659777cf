"""Reads a results document (``results.json``, see :mod:`.document`) back into the result
model: a :class:`~.model.MatrixRun` of :class:`~.model.ArmRun` records holding the
:class:`~triple_py.bench.record.result.BenchResult` each arm run produced, the matrix
rebuilt by the matrix parser. Reports, frames, plots and benchstat then read a saved run
exactly as they read a live one.

Known versions: :data:`KNOWN_VERSIONS`. Version 1 (the documents written before the format
had a version: no ``format`` or ``version`` key) is converted on reading: the producing
triple_py version comes from ``environment`` when the top level lacks it, the capacity
searches default to none, entries without ``started`` take the run's start, and a document
without a ``matrix`` section (the first single-run documents) gets one from its entries.
A newer version, or another format, is refused with an error naming the file, the version
found, the versions known and the triple_py release to read it with.
"""
from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Union

from ... import __version__
from ..errors import ConfigError
from ..record.result import BenchResult
from ..spec.matrix import AXES, ArmSpec, Matrix, Scenario, matrix_from_dict
from ..spec.slo import Slo
from .capacity import CapacityResult, CapacityRun, Probe
from .document import FORMAT, VERSION
from .environment import cpu_count, goarch, goos
from .model import ArmRun, MatrixRun

__all__ = ["read_results", "run_from_document", "upgrade_document", "find_document",
           "ResultsFormatError", "KNOWN_VERSIONS"]

#: The document versions this release reads (the last one is the one it writes).
KNOWN_VERSIONS = (1, 2)


class ResultsFormatError(ValueError):
    """A document that is not a results document of a version this release knows."""


def find_document(path: Union[str, Path]) -> Path:
    """``path`` itself, or for a results directory its ``results.json`` (or
    ``results.json.gz``); FileNotFoundError naming what is missing."""
    path = Path(path)
    if path.is_dir():
        for name in ("results.json", "results.json.gz"):
            if (path / name).is_file():
                return path / name
        raise FileNotFoundError(f"{path}: no results.json in this directory (give a results "
                                f"directory written by python -m triple_py.bench matrix, or "
                                f"its results.json)")
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or directory")
    return path


def read_results(path: Union[str, Path]) -> MatrixRun:
    """The run saved in a results directory or document (``.json`` or ``.json.gz``), in
    its current model whatever version wrote it. FileNotFoundError; ResultsFormatError
    (a ValueError) for a file that is not a results document or of an unknown version."""
    json_path = find_document(path)
    try:
        raw = json_path.read_bytes()
        text = gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw
        doc = json.loads(text.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise ResultsFormatError(f"{json_path}: not JSON: {exc}") from None
    return run_from_document(doc, str(json_path))


def _version(doc: Mapping[str, Any], source: str) -> int:
    if "format" not in doc and "version" not in doc:
        return 1
    version = doc.get("version")
    if doc.get("format") != FORMAT or isinstance(version, bool) or not isinstance(version, int):
        raise ResultsFormatError(
            f"{source}: not a triple_py.bench results document (format "
            f"{doc.get('format')!r}, version {version!r}; expected format {FORMAT!r})")
    if version not in KNOWN_VERSIONS:
        newer = version > max(KNOWN_VERSIONS)
        raise ResultsFormatError(
            f"{source}: results format version {version}, but triple_py {__version__} reads "
            f"versions {', '.join(map(str, KNOWN_VERSIONS))}; "
            + ("read it with the triple_py release that wrote it (triple_py "
               f"{doc.get('triple_py') or 'newer than ' + __version__}) or a newer one"
               if newer else "no release wrote such a version"))
    return version


def _v1_matrix(doc: Mapping[str, Any]) -> Dict[str, Any]:
    """A matrix section for a version 1 document without one: the arms and scenarios in
    order of appearance, the benchmark name from the entries' names."""
    entries = list(doc.get("results") or []) + list(doc.get("failed") or [])
    arms: Dict[str, Dict[str, Any]] = {}
    scenarios: Dict[str, Dict[str, Any]] = {}
    benchmark, rounds, duration, warmup = "Bench", 1, None, None
    for e in entries:
        res = e.get("result") or {}
        arm = e.get("arm") or res.get("arm")
        arms.setdefault(arm, {"name": arm, "mode": e.get("kind") or res.get("mode")})
        sc = dict(e.get("scenario") or {})
        sc.setdefault("payload", res.get("payload_size", 128))
        sc.setdefault("concurrency", res.get("concurrency", 1))
        label = sc.get("label") or str(e.get("name", "")).split("/", 1)[-1]
        scenarios.setdefault(label, dict(sc, label=label))
        if "/" in str(e.get("name", "")):
            benchmark = str(e["name"]).split("/", 1)[0]
        rounds = max(rounds, int(e.get("round") or 1))
        duration = res.get("duration_s") or duration
        warmup = res.get("warmup_s") if res.get("warmup_s") is not None else warmup
    config = doc.get("config") or {}
    return {"name": config.get("matrix") or "run", "benchmark": benchmark,
            "baseline": next(iter(arms), None), "rounds": rounds, "duration": duration,
            "warmup": warmup, "arms": list(arms.values()), "scenarios": list(scenarios.values())}


#: Each known version's conversion to the next one.
_UPGRADES: Dict[int, Callable[[Dict[str, Any]], Dict[str, Any]]] = {}


def _v1_to_v2(doc: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(doc, format=FORMAT, version=2)
    env = dict(doc.get("environment") or {})
    out["environment"] = env
    out.setdefault("triple_py", env.get("triple_py") or "")
    out["failed"] = list(doc.get("failed") or [])
    out["capacities"] = list(doc.get("capacities") or [])
    out["matrix"] = dict(doc.get("matrix") or _v1_matrix(doc))
    out["matrix"].setdefault("capacity", None)
    started = doc.get("started") or 0.0
    out["started"], out["finished"] = started, doc.get("finished") or started
    out["results"] = [dict(e, started=e.get("started", started)) for e in doc["results"]]
    out["failed"] = [dict(e, started=e.get("started", started)) for e in out["failed"]]
    for key, default in (("target", None), ("interrupted", False), ("interrupt_signal", 0),
                         ("load_average_after", None)):
        out.setdefault(key, default)
    return out


_UPGRADES[1] = _v1_to_v2


def upgrade_document(doc: Any, source: str = "<results>") -> Dict[str, Any]:
    """The document in the current version (:data:`~.document.VERSION`), converting older
    ones step by step; ResultsFormatError for a document that is not one or of a version
    not known."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ResultsFormatError(f"{source}: not a triple_py.bench results document (no "
                                 f"\"results\" list)")
    version = _version(doc, source)
    while version < VERSION:
        doc = _UPGRADES[version](doc)
        version += 1
    return doc


def _capacity_run(d: Mapping[str, Any]) -> CapacityRun:
    result = d.get("result")
    if result is not None:
        slo = result["slo"]
        result = CapacityResult(
            slo=Slo(**slo) if isinstance(slo, Mapping) else slo,
            probes=[Probe(**p) for p in result.get("probes") or []],
            capacity=result.get("capacity"), seconds=result.get("seconds", 0.0),
            ceiling_reached=result.get("ceiling_reached", False),
            interrupted=result.get("interrupted", ""))
    return CapacityRun(d["scenario"], d["arm"], result, d.get("failed"))


def _arm_run(e: Mapping[str, Any], matrix: Matrix, by_label: Mapping[str, Scenario],
             failed: bool) -> ArmRun:
    sc = dict(e.get("scenario") or {})
    label = sc.pop("label", None) or matrix.label(matrix.scenarios[0])
    scenario = by_label.get(label) or Scenario(**{k: sc[k] for k in AXES
                                                  if sc.get(k) is not None})
    try:
        arm = matrix.arm(e["arm"])
    except KeyError:
        arm = ArmSpec(e["arm"], e.get("kind") or "fastpath")
    result = None if failed else BenchResult.from_dict(e["result"])
    return ArmRun(scenario=scenario, label=label, arm=arm, round=int(e.get("round") or 1),
                  position=int(e.get("position") or 0), target=e.get("target"),
                  server_generation=int(e.get("server") or 1),
                  started=float(e.get("started") or 0.0), result=result,
                  failed=e.get("failed") if failed else None)


def run_from_document(doc: Any, source: str = "<results>") -> MatrixRun:
    """The run a results document (any known version) recorded, as the result model.
    ``source`` names the document in errors."""
    doc = upgrade_document(doc, source)
    try:
        matrix = matrix_from_dict(doc["matrix"], f"{source}: matrix")
    except ConfigError as exc:
        raise ResultsFormatError(str(exc)) from None
    by_label = {matrix.label(s): s for s in matrix.scenarios}
    try:
        runs: List[ArmRun] = [_arm_run(e, matrix, by_label, False) for e in doc["results"]]
        runs += [_arm_run(e, matrix, by_label, True) for e in doc["failed"]]
        capacities = [_capacity_run(c) for c in doc["capacities"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ResultsFormatError(f"{source}: a malformed entry: {type(exc).__name__}: "
                                 f"{exc}") from None
    runs.sort(key=lambda r: r.started)  # execution order (stable: entries already are)
    env = dict(doc.get("environment") or {})
    config: Mapping[str, Any] = doc.get("config") or {}
    return MatrixRun(
        matrix=matrix, runs=runs, environment=env, started=float(doc.get("started") or 0.0),
        finished=float(doc.get("finished") or 0.0), target=doc.get("target"),
        load_after=doc.get("load_average_after"), interrupted=bool(doc.get("interrupted")),
        interrupt_signal=int(doc.get("interrupt_signal") or 0), capacities=capacities,
        version=str(doc.get("triple_py") or ""), goos=str(config.get("goos") or goos()),
        goarch=str(config.get("goarch") or goarch()),
        cpus=int(env.get("cpu_count") or cpu_count()))

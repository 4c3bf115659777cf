"""Run the interop grid: every selected peer x its wires x every selected case.

Peers are prepared (built, cached under ``.build/interop/``) in parallel while the first
ready peer runs its cases; each peer is started once, its cells run one at a time (one fresh
channel set per cell), and it is stopped at the end. A cell is:

* ``pass``        the case's assertions held;
* ``fail``        an assertion, an RpcError or anything else went wrong (with the detail),
                  or the case overran its time;
* ``n/a``         the case does not apply to this wire or peer (with the reason);
* ``unavailable`` the peer could not be built or started on this machine (with the reason).

The report prints as a grid (``Report.grid``) and writes JUnit XML and JSON.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import triple_py

from . import protos
from .cases import CASES, Case, CaseFailed, Context
from .peers import PEERS, PeerSpec, RunningPeer, Starter, Unavailable, default_root

PASS, FAIL, NA, UNAVAILABLE = "pass", "fail", "n/a", "unavailable"
HOST = "127.0.0.1"


@dataclass
class Cell:
    """One peer x wire x case result."""

    peer: str
    wire: str
    case: str
    status: str
    detail: str = ""
    seconds: float = 0.0


@dataclass
class PeerResult:
    """What became of one peer: available (built and started) or not, and why."""

    name: str
    stack: str
    source: str
    wires: Tuple[str, ...]
    available: bool = False
    reason: Optional[str] = None
    prepare_seconds: float = 0.0
    address: Optional[str] = None


@dataclass
class Report:
    """The whole run."""

    peers: List[PeerResult]
    cases: List[str]
    cells: List[Cell] = field(default_factory=list)
    started_at: float = 0.0  # time.time()
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for cell in self.cells if cell.status == status)

    def failures(self) -> List[Cell]:
        return [cell for cell in self.cells if cell.status == FAIL]

    def unavailable(self) -> List[PeerResult]:
        return [peer for peer in self.peers if not peer.available]

    def ok(self, require_all_peers: bool = False) -> bool:
        """No applicable cell failed (and, if required, every peer was available)."""
        return not self.failures() and not (require_all_peers and self.unavailable())

    def cell(self, peer: str, wire: str, case: str) -> Optional[Cell]:
        for c in self.cells:
            if (c.peer, c.wire, c.case) == (peer, wire, case):
                return c
        return None

    # -- output ---------------------------------------------------------------------------
    def columns(self) -> List[Tuple[str, str]]:
        return [(p.name, w) for p in self.peers for w in p.wires]

    def grid(self) -> str:
        """The grid as text: one row per case, one column per peer/wire, then the n/a
        reasons, the unavailable peers, the failures and a summary."""
        columns = self.columns()
        notes: Dict[str, str] = {}  # reason -> footnote mark

        def mark(reason: str) -> str:
            if reason not in notes:
                notes[reason] = _footnote_mark(len(notes))
            return notes[reason]

        def text(cell: Optional[Cell]) -> str:
            if cell is None:
                return "-"
            if cell.status == NA:
                return f"n/a[{mark(cell.detail)}]"
            return {PASS: "pass", FAIL: "FAIL", UNAVAILABLE: "unavail"}.get(cell.status,
                                                                          cell.status)

        rows = [[case] + [text(self.cell(p, w, case)) for p, w in columns]
                for case in self.cases]
        head1 = ["case"] + [p for p, _ in columns]
        head2 = [""] + [w for _, w in columns]
        widths = [max(len(r[i]) for r in rows + [head1, head2]) for i in range(len(head1))]
        out = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip()
               for line in (head1, head2)]
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        if notes:
            out += ["", "n/a reasons:"]
            out += [f"  [{m}] {reason}" for reason, m in notes.items()]
        out += ["", "peers:"]
        for peer in self.peers:
            state = (f"available at {peer.address} (prepared in {peer.prepare_seconds:.1f} s)"
                     if peer.available else f"UNAVAILABLE: {peer.reason}")
            out.append(f"  {peer.name:9} {peer.stack}; {peer.source}")
            out.append(f"  {'':9} {state}")
        failures = self.failures()
        if failures:
            out += ["", "failures:"]
            for cell in failures:
                detail = cell.detail.replace("\n", "\n      ")
                out.append(f"  {cell.peer}/{cell.wire}/{cell.case}: {detail}")
        out += ["", f"{self.count(PASS)} pass, {self.count(FAIL)} fail, {self.count(NA)} n/a, "
                    f"{self.count(UNAVAILABLE)} unavailable "
                    f"({len(self.unavailable())} of {len(self.peers)} peers unavailable) "
                    f"in {self.seconds:.1f} s"]
        return "\n".join(out)

    def to_json(self) -> dict:
        return {
            "started_at": self.started_at,
            "seconds": round(self.seconds, 3),
            "peers": [asdict(p) for p in self.peers],
            "cases": {name: {"summary": CASES[name].summary, "wires": list(CASES[name].wires),
                             "needs": list(CASES[name].needs)} for name in self.cases},
            "cells": [asdict(c) for c in self.cells],
            "summary": {s: self.count(s) for s in (PASS, FAIL, NA, UNAVAILABLE)},
            "ok": self.ok(),
        }

    def write_json(self, path: Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n")

    def to_junit(self) -> ET.ElementTree:
        """JUnit XML: one testsuite per peer/wire, one testcase per case; n/a and unavailable
        cells are <skipped>, failed ones <failure>."""
        suites = ET.Element("testsuites", name="triple_py interop",
                            tests=str(len(self.cells)), failures=str(self.count(FAIL)),
                            skipped=str(self.count(NA) + self.count(UNAVAILABLE)),
                            time=f"{self.seconds:.3f}")
        for peer, wire in self.columns():
            cells = [c for c in self.cells if (c.peer, c.wire) == (peer, wire)]
            suite = ET.SubElement(
                suites, "testsuite", name=f"{peer}/{wire}", tests=str(len(cells)),
                failures=str(sum(c.status == FAIL for c in cells)), errors="0",
                skipped=str(sum(c.status in (NA, UNAVAILABLE) for c in cells)),
                time=f"{sum(c.seconds for c in cells):.3f}")
            for c in cells:
                case = ET.SubElement(suite, "testcase", classname=f"interop.{peer}.{wire}",
                                     name=c.case, time=f"{c.seconds:.3f}")
                if c.status == FAIL:
                    failure = ET.SubElement(case, "failure",
                                            message=c.detail.splitlines()[0] if c.detail else "")
                    failure.text = c.detail
                elif c.status in (NA, UNAVAILABLE):
                    ET.SubElement(case, "skipped", message=f"{c.status}: {c.detail}")
                elif c.detail:
                    ET.SubElement(case, "system-out").text = c.detail
        tree = ET.ElementTree(suites)
        ET.indent(tree)
        return tree

    def write_junit(self, path: Path) -> None:
        self.to_junit().write(str(path), encoding="utf-8", xml_declaration=True)


def _footnote_mark(index: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return letters[index] if index < 26 else f"{letters[index // 26 - 1]}{letters[index % 26]}"


# --- running -----------------------------------------------------------------------------------

def not_applicable(case: Case, spec: PeerSpec, wire: str) -> Optional[str]:
    """Why ``case`` does not apply to ``spec`` on ``wire`` (None when it does)."""
    if wire not in case.wires:
        return case.wire_reason
    for need in case.needs:
        if need in spec.lacks:
            return spec.lacks[need]
    return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, CaseFailed):
        return str(exc)
    if isinstance(exc, triple_py.RpcError):
        code = getattr(exc, "code", None)
        details = getattr(exc, "details", None)
        name = code().name if callable(code) else "?"
        return f"RpcError {name}: {details() if callable(details) else exc}"
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" (at {Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


CLOSE_GRACE = 15.0  # seconds a case may take to wind down after its time ran out


def run_cell(case: Case, ctx: Context, timeout: float,
             log_dir: Optional[Path] = None) -> Tuple[str, str, float]:
    """Run one case in a thread, bounded by ``timeout``; (status, detail, seconds).

    The thread runs the case and then closes its channels. When the case overruns, its
    channels are closed from here (which ends the calls in flight) and the thread gets
    CLOSE_GRACE more seconds; a thread still stuck after that (a hang inside the library)
    is abandoned, with the Python stacks (and, with gdb, the native ones, in ``log_dir``)
    in the cell's detail, so one hang cannot stall the grid.
    """
    outcome: Dict[str, object] = {}

    def target() -> None:
        try:
            outcome["note"] = case.fn(ctx)
            if ctx.interception and ctx.interception.problem():
                raise CaseFailed(ctx.interception.problem())
        except BaseException as exc:  # noqa: BLE001 - any exception fails the cell
            outcome["error"] = exc
        finally:
            outcome["ran"] = time.monotonic()
            ctx.close()  # the channels the case opened, and whatever is left in flight

    started = time.monotonic()
    worker = threading.Thread(target=target, name=f"interop-{case.name}", daemon=True)
    worker.start()
    worker.join(timeout)
    overran = worker.is_alive()
    if overran:
        threading.Thread(target=ctx.close, name=f"interop-close-{case.name}",
                         daemon=True).start()
        worker.join(CLOSE_GRACE)
    seconds = time.monotonic() - started
    if worker.is_alive():
        where = "closing its channels" if "ran" in outcome else "running"
        return FAIL, (f"hung {where}: no return {seconds:.0f} s after the start "
                      f"(limit {timeout:.0f} s + {CLOSE_GRACE:.0f} s to wind down); "
                      f"{_stacks(worker, log_dir, case.name)}"), seconds
    if overran:
        return FAIL, f"did not finish within {timeout:.0f} s", seconds
    if "error" in outcome:
        return FAIL, _describe(outcome["error"]), seconds  # type: ignore[arg-type]
    note = outcome.get("note")
    return PASS, str(note) if note else "", seconds


def _stacks(worker: threading.Thread, log_dir: Optional[Path], name: str) -> str:
    """The stuck thread's Python stack, and every native stack via gdb when possible."""
    frame = sys._current_frames().get(worker.ident or -1)
    text = "Python stack of the case thread:\n" + (
        "".join(traceback.format_stack(frame)) if frame is not None else "  (gone)\n")
    gdb = shutil.which("gdb")
    if gdb and log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        path = log_dir / f"hang-{os.getpid()}-{name}.txt"
        try:
            result = subprocess.run([gdb, "-p", str(os.getpid()), "-batch", "-ex",
                                     "thread apply all bt 30"], capture_output=True,
                                    text=True, timeout=60, stdin=subprocess.DEVNULL)
            path.write_text(text + "\nnative stacks (gdb):\n" + result.stdout + result.stderr)
            text += f"native stacks of every thread: {path}\n"
        except (OSError, subprocess.SubprocessError) as exc:
            text += f"(gdb failed: {exc})\n"
    return text


def _prepare(spec: PeerSpec, root: Path) -> Tuple[Optional[Starter], Optional[str], float]:
    started = time.monotonic()
    try:
        return spec.prepare(root), None, time.monotonic() - started
    except Unavailable as exc:
        return None, str(exc), time.monotonic() - started
    except Exception as exc:  # noqa: BLE001 - an unexpected build error: still reported
        return None, f"{type(exc).__name__}: {exc}", time.monotonic() - started


def run(peers: Optional[Sequence[str]] = None, cases: Optional[Sequence[str]] = None,
        wires: Optional[Sequence[str]] = None, root: Optional[Path] = None,
        deadline: Optional[float] = None,
        progress: Optional[Callable[[str], None]] = None,
        intercepted: bool = False) -> Report:
    """Run the grid and return its Report.

    ``peers``, ``cases`` and ``wires`` select (default: all); ``deadline`` (seconds) bounds
    the run: cells not started in time fail as "not run". ``progress`` gets one line per
    event (peer ready, cell done). ``intercepted`` runs every case's channels through two
    pass-through interceptors (triple_py_testing.interop.intercept).
    """
    root = Path(root) if root is not None else default_root()
    peer_names = list(peers) if peers else list(PEERS)
    case_names = list(cases) if cases else list(CASES)
    for name in peer_names:
        if name not in PEERS:
            raise ValueError(f"unknown peer {name!r}; peers: {', '.join(PEERS)}")
    for name in case_names:
        if name not in CASES:
            raise ValueError(f"unknown case {name!r}; cases: {', '.join(CASES)}")
    say = progress or (lambda line: None)
    started = time.monotonic()
    end = started + deadline if deadline else None
    pb = protos.load(root)  # the client cannot run without its messages: errors propagate

    results: Dict[str, PeerResult] = {}
    for name in peer_names:
        spec = PEERS[name]
        selected = tuple(w for w in spec.wires if not wires or w in wires)
        results[name] = PeerResult(spec.name, spec.stack, spec.source, selected)
    report = Report([results[n] for n in peer_names], case_names, started_at=time.time())
    cells: Dict[Tuple[str, str, str], Cell] = {}

    # Every peer is prepared (built) on a daemon thread of its own; peers run their cells as
    # they become ready. With a deadline, a build still going when it passes is given up
    # (the peer is reported unavailable; the build finishes in the background).
    ready: "queue.Queue[Tuple[str, Tuple[Optional[Starter], Optional[str], float]]]" = \
        queue.Queue()
    for name in peer_names:
        threading.Thread(target=lambda n=name: ready.put((n, _prepare(PEERS[n], root))),
                         name=f"interop-prepare-{name}", daemon=True).start()
    for _ in peer_names:
        try:
            wait = None if end is None else max(0.0, end - time.monotonic())
            name, (starter, reason, prepare_seconds) = ready.get(timeout=wait)
        except queue.Empty:
            break
        spec, result = PEERS[name], results[name]
        result.prepare_seconds = prepare_seconds
        running: Optional[RunningPeer] = None
        if starter is not None:
            try:
                running = starter(HOST)
            except Unavailable as exc:
                reason = str(exc)
        if running is None:
            _unavailable(result, reason or "?", case_names, cells, say)
            continue
        result.available, result.address = True, running.address
        say(f"{name}: ready at {running.address} "
            f"(prepared in {result.prepare_seconds:.1f} s)")
        try:
            running = _run_peer(spec, result, running, starter, case_names, pb, end,
                                cells, say, root / ".build" / "interop" / "logs", intercepted)
        finally:
            if running is not None:
                running.stop()
    for result in results.values():
        if not result.available and result.reason is None:  # still being built
            _unavailable(result, f"not built within the run's deadline ({deadline:.0f} s); "
                         "the build goes on in the background", case_names, cells, say)

    report.cells = [cells[(p.name, w, c)] for p in report.peers for w in p.wires
                    for c in case_names if (p.name, w, c) in cells]
    report.seconds = time.monotonic() - started
    return report


def _unavailable(result: PeerResult, reason: str, case_names: List[str],
                 cells: Dict[Tuple[str, str, str], Cell], say: Callable[[str], None]) -> None:
    result.reason = reason
    say(f"{result.name}: unavailable: {reason.splitlines()[0]}")
    for wire in result.wires:
        for case_name in case_names:
            cells[(result.name, wire, case_name)] = Cell(result.name, wire, case_name,
                                                         UNAVAILABLE, reason)


def _run_peer(spec: PeerSpec, result: PeerResult, running: Optional[RunningPeer],
              starter: Starter, case_names: List[str], pb: ModuleType, end: Optional[float],
              cells: Dict[Tuple[str, str, str], Cell],
              say: Callable[[str], None], log_dir: Path,
              intercepted: bool = False) -> Optional[RunningPeer]:
    """Run every cell of one peer; returns the peer process still to stop (or None)."""
    for wire in result.wires:
        for case_name in case_names:
            case = CASES[case_name]
            key = (spec.name, wire, case_name)
            reason = not_applicable(case, spec, wire)
            if reason is not None:
                cells[key] = Cell(*key, NA, reason)
                continue
            remaining = None if end is None else end - time.monotonic()
            if remaining is not None and remaining <= 1.0:
                cells[key] = Cell(*key, FAIL, "not run: the run's deadline passed")
                continue
            if running is None:
                try:
                    running = starter(HOST)
                except Unavailable as exc:
                    cells[key] = Cell(*key, FAIL, f"the peer could not be restarted: {exc}")
                    continue
            timeout = case.timeout if remaining is None else min(case.timeout, remaining)
            ctx = Context(running.address, wire, pb, spec.name, intercepted)
            status, detail, seconds = run_cell(case, ctx, timeout, log_dir)
            died = running.alive()
            if died is not None:  # the peer went down: say so, and restart it for the rest
                status = FAIL
                detail = f"{detail}; the peer died during the case: {died}".lstrip("; ")
                running.stop()
                running = None
            cells[key] = Cell(*key, status, detail, round(seconds, 3))
            say(f"{spec.name}/{wire}/{case_name}: {status}"
                + (f" ({detail.splitlines()[0]})" if status == FAIL and detail else "")
                + f" [{seconds:.2f} s]")
    return running

"""The interop matrix (issue 8): triple_py's client against real gRPC servers.

Runs the whole grid once per session, as ``python -m triple_py_testing.interop`` in a subprocess
(bounded: ``--deadline`` for the cells and a hard timeout for the process), then checks it:

* every peer of the issue's table is available on this machine (grpcio, gRPC C++,
  grpc-go, connect-node, triple_py's embedded server): an unavailable one fails, with
  the reason the runner gave;
* every applicable cell (peer x wire x case) passed; n/a cells are skipped with their
  reason; the cells of an unavailable peer are skipped (its availability test fails);
* the run wrote its JUnit XML and JSON, and exited non-zero exactly when a cell failed.

The peers are built into .build/interop/ on first use (g++ and go take a minute or so
then); later runs reuse the builds and take well under a minute.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from triple_py_testing.interop.cases import CASES
from triple_py_testing.interop.peers import PEERS

pytestmark = pytest.mark.checkout("the interop grid: proto/grpc/testing, its peers' builds")

ROOT = Path(__file__).resolve().parents[2]
REQUIRED_PEERS = ("grpcio", "cpp", "go", "connect", "dubbo-js", "embedded")  # issues 8, 21
DEADLINE = 150.0  # seconds for the cells (builds included)
HARD_TIMEOUT = 180.0  # seconds for the whole process


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """The finished run: its JSON report, exit status, output and wall time."""
    out = tmp_path_factory.mktemp("interop")
    command = [sys.executable, "-m", "triple_py_testing.interop", "--deadline", str(DEADLINE),
               "--json", str(out / "interop.json"), "--junit", str(out / "interop.xml")]
    started = time.monotonic()
    try:
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                                timeout=HARD_TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"the interop run took more than {HARD_TIMEOUT:.0f} s:\n"
                    f"{(exc.stdout or b'')[-4000:]!r}\n{(exc.stderr or b'')[-4000:]!r}")
    seconds = time.monotonic() - started
    report_path = out / "interop.json"
    if not report_path.is_file():
        pytest.fail(f"no JSON report (exit {result.returncode}):\n{result.stdout[-4000:]}\n"
                    f"{result.stderr[-4000:]}")
    report = json.loads(report_path.read_text())
    print(result.stdout)  # the grid, shown with -s or on failure
    return {"report": report, "returncode": result.returncode, "stdout": result.stdout,
            "stderr": result.stderr, "seconds": seconds, "junit": out / "interop.xml",
            "cells": {(c["peer"], c["wire"], c["case"]): c for c in report["cells"]},
            "peers": {p["name"]: p for p in report["peers"]}}


def test_run_bounded_and_reported(grid):
    """The run finished in time, wrote JUnit XML and JSON, and its exit status says
    whether a cell failed."""
    assert grid["seconds"] < HARD_TIMEOUT
    report = grid["report"]
    failed = report["summary"]["fail"]
    assert (grid["returncode"] != 0) == (failed > 0), (grid["returncode"], report["summary"])
    suites = ET.parse(grid["junit"]).getroot()
    assert suites.tag == "testsuites"
    assert int(suites.get("tests")) == len(report["cells"])
    assert int(suites.get("failures")) == failed
    assert "case" in grid["stdout"] and "pass" in grid["stdout"]


@pytest.mark.parametrize("peer", REQUIRED_PEERS)
def test_peer_available(grid, peer):
    """Every peer of the issue's table is available here."""
    result = grid["peers"].get(peer)
    assert result is not None, f"peer {peer} missing from the report"
    if not result["available"]:
        pytest.fail(f"interop peer {peer} ({result['stack']}) is unavailable: {result['reason']}")


CELLS = [(p.name, w, c) for p in PEERS.values() for w in p.wires for c in CASES]


@pytest.mark.parametrize("peer,wire,case", CELLS, ids=["/".join(cell) for cell in CELLS])
def test_cell(grid, peer, wire, case):
    """One peer x wire x case cell: pass (n/a and unavailable peers are skipped)."""
    cell = grid["cells"].get((peer, wire, case))
    assert cell is not None, f"cell {peer}/{wire}/{case} missing from the report"
    if cell["status"] == "n/a":
        pytest.skip(f"n/a: {cell['detail']}")
    if cell["status"] == "unavailable":
        pytest.skip(f"peer unavailable (see test_peer_available[{peer}])")
    if cell["status"] != "pass":
        pytest.fail(f"{peer}/{wire}/{case}: {cell['status']}: {cell['detail']}")

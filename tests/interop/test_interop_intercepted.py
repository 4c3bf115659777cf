"""The interop grid through an intercepted channel (issue 24): ``python -m triple_py_testing.interop
--intercepted`` against the grpcio and grpc-go peers, in a subprocess with a hard timeout.
Every case's channels go through two pass-through interceptors of all four kinds that
rebuild the call details; a case whose calls did not all go through both fails."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARD_TIMEOUT = 180.0

pytestmark = pytest.mark.checkout("the interop grid: proto/grpc/testing, its peers' builds")


def test_grid_through_interceptors(tmp_path):
    out = tmp_path / "interop.json"
    command = [sys.executable, "-m", "triple_py_testing.interop", "--intercepted", "--peers",
               "grpcio,go", "--deadline", "150", "--json", str(out), "-q"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                            timeout=HARD_TIMEOUT, stdin=subprocess.DEVNULL)
    report = json.loads(out.read_text())
    cells = report["cells"]
    failed = [c for c in cells if c["status"] not in ("pass", "n/a")]
    assert not failed, result.stdout[-3000:]
    assert result.returncode == 0
    passed = {(c["peer"], c["case"]) for c in cells if c["status"] == "pass"}
    for peer in ("grpcio", "go"):  # the grid really ran for both peers
        assert (peer, "ping_pong") in passed and (peer, "custom_metadata") in passed
    assert len(passed) >= 30

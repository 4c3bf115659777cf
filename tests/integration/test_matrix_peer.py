"""benchmarks/matrix_peer.py: a matrix against a peer in a process of its own, pinned.

--pin must put every thread of the peer on the last CPU and the harness (with the load
generator and h2load) on the others; a run with it must produce the usual results, plus the
peer's CPU time per call. --peer-flag must reach the peer's command line.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from peers.launch import start_peer

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "matrix_peer.py"
CPUS = sorted(os.sched_getaffinity(0))

pytestmark = [pytest.mark.skipif(len(CPUS) < 2, reason="pinning needs two CPUs"),
              pytest.mark.checkout("benchmarks/matrix_peer.py")]


def load_script():
    spec = importlib.util.spec_from_file_location("matrix_peer", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def allowed_cpus(pid: int) -> set:
    """The CPUs each thread of ``pid`` may run on, as a set of frozensets."""
    found = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        for line in open(f"/proc/{pid}/task/{tid}/status"):
            if line.startswith("Cpus_allowed_list:"):
                found.add(line.split(":", 1)[1].strip())
    return found


def test_pin_process_moves_every_thread_of_the_peer():
    with start_peer("embedded") as peer:
        load_script().pin_process(peer.process.pid, {CPUS[-1]})
        assert allowed_cpus(peer.process.pid) == {str(CPUS[-1])}


def test_pinned_matrix_against_the_embedded_peer(tmp_path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "concurrency-sweep", "--peer", "embedded", "--pin",
         "--rounds", "1", "--duration", "0.2", "--warmup", "0", "--arms", "fastpath,h2load",
         "--baseline", "h2load", "--out", str(out)],
        capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, "CI": "1"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    results = json.loads((out / "results.json").read_text())["results"]
    assert {r["arm"] for r in results} == {"fastpath", "h2load"}
    assert all(r["result"]["calls"] > 0 and r["result"]["errors"] == 0 for r in results)
    assert all(r["result"]["cpu"]["server_us_per_call"] > 0 for r in results)
    assert "against the embedded peer" in proc.stdout
    assert "srv µs/call" in proc.stdout


def run_script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), "concurrency-sweep", *args],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "CI": "1"})


def test_peer_flag_reaches_the_go_peer(tmp_path):
    common = ("--peer", "go", "-c", "10", "--rounds", "1", "--duration", "0.2", "--warmup", "0",
              "--arms", "fastpath", "--baseline", "fastpath")
    ok = run_script(*common, "--peer-flag", "stream_workers=2", "--out", str(tmp_path / "a"))
    assert ok.returncode == 0, ok.stdout[-2000:] + ok.stderr[-2000:]
    results = json.loads((tmp_path / "a" / "results.json").read_text())["results"]
    assert results and all(r["result"]["errors"] == 0 for r in results)
    # The same flag machinery with a flag the Go peer does not have: the peer refuses it.
    bad = run_script(*common, "--peer-flag", "no_such=1", "--out", str(tmp_path / "b"))
    assert bad.returncode != 0
    assert "flag provided but not defined: -no-such" in bad.stdout + bad.stderr


def test_peer_flag_needs_name_and_value():
    proc = run_script("--peer-flag", "stream_workers")
    assert proc.returncode == 2
    assert "--peer-flag needs NAME=VALUE" in proc.stderr


def test_pin_needs_two_cpus_message():
    proc = subprocess.run([sys.executable, "-c", (
        "import os, runpy, sys; os.sched_setaffinity(0, {%d}); "
        "sys.argv = ['matrix_peer.py', 'concurrency-sweep', '--pin']; "
        "runpy.run_path(%r, run_name='__main__')") % (CPUS[0], str(SCRIPT))],
        capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2
    assert "--pin needs two CPUs" in proc.stderr

"""benchmarks/python_wakeups.py --arm threads: the C program of blocking callers
(benchmarks/blocking_threads.c) builds from the checkout, makes every call it was asked for
against the embedded peer, and reports the figures the paired rounds compare."""
from __future__ import annotations

import json
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "python_wakeups.py"

pytestmark = pytest.mark.checkout("benchmarks/python_wakeups.py")


def test_blocking_threads_arm_makes_every_call():
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--arm", "threads", "--peer", "embedded",
         "--threads", "4", "--calls", "400", "--size", "100"],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["calls"] == 400 and result["failed_threads"] == 0, result
    for figure in ("cpu_us_per_call", "sys_us_per_call", "vcsw_per_call", "minflt_per_call",
                   "qps"):
        assert result[figure] >= 0, result
    assert result["qps"] > 0 and result["cpu_us_per_call"] > 0, result


def test_blocking_threads_arm_reports_failed_calls():
    """A peer that is not there: every call fails, and the run says so instead of
    reporting figures for calls that never happened."""
    binary = runpy.run_path(str(SCRIPT))["blocking_threads_binary"](ROOT)
    proc = subprocess.run([str(binary), "127.0.0.1", "1", "2", "4", "10"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    result = json.loads(proc.stdout.split("RESULT ", 1)[1])
    assert result["failed_threads"] == 2, result

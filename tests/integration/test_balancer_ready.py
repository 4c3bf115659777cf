"""round_robin picks READY backends only; calls queue while none is READY; fail fast
or wait_for_ready when every backend is down; ``waitForReady`` from the service config
(issue 25).  Each case (ready_cases.py) runs in a child process with a hard timeout,
since a wrong wait would hang."""
from __future__ import annotations

import os

import pytest

from _helpers import finished_child, start_child

HERE = os.path.dirname(os.path.abspath(__file__))
HARD_TIMEOUT_S = 90


def run_case(name: str) -> None:
    code = f"import sys; sys.path.insert(0, {HERE!r}); import ready_cases; ready_cases.{name}()"
    finished_child(start_child(code, start_new_session=True), HARD_TIMEOUT_S, name)


@pytest.mark.parametrize("name", [
    "black_holed_backend_gets_no_calls",
    "backend_added_under_load_gets_calls_once_ready",
    "queued_calls_succeed_when_a_backend_becomes_ready",
    "all_backends_down_fail_fast_or_wait",
    "service_config_wait_for_ready",
])
def test_ready(name: str) -> None:
    run_case(name)

"""Rounds interleave the arms and reverse their order every other round; restarts; failures."""
from __future__ import annotations

import pytest

from _bench_fakes import FakeRunner, FakeServers
from triple_py.bench.errors import ConfigError
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix, round_order

MATRIX = """
name = "t"
benchmark = "Unary"
baseline = "stream-path"
rounds = 4
duration = 0.1
warmup = 0
arms = ["stream-path", "fastpath", "grpcio-aio"]
[scenarios]
payload = [128, "1KiB"]
concurrency = [2]
"""


def test_round_order_reverses_every_other_round():
    arms = ["a", "b", "c"]
    assert [round_order(arms, i) for i in range(4)] == [
        ["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"], ["c", "b", "a"]]


def test_rounds_interleave_arms_in_alternating_order():
    runner = FakeRunner()
    out = run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=runner,
                     check=False, capture_environment=False)
    order = [(c.payload_size, c.arm) for c in runner.calls]
    forward, backward = ["stream-path", "fastpath", "grpcio-aio"], \
        ["grpcio-aio", "fastpath", "stream-path"]
    expected = [(p, a) for p in (128, 1024) for r in range(4)
                for a in (forward if r % 2 == 0 else backward)]
    assert order == expected
    assert [(r.round, r.position) for r in out.runs[:6]] == [
        (1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
    assert all(r.result is not None for r in out.runs)


def test_all_arms_of_a_run_share_one_server_without_restart():
    servers = FakeServers()
    runner = FakeRunner()
    run_matrix(parse_matrix(MATRIX), server_factory=servers, runner=runner, check=False,
               capture_environment=False)
    assert servers.started == ["127.0.0.1:1001"]
    assert {c.target for c in runner.calls} == {"127.0.0.1:1001"}


def test_restart_server_gives_every_round_a_new_server():
    servers = FakeServers()
    runner = FakeRunner()
    matrix = parse_matrix(MATRIX).with_overrides(restart_server=True)
    out = run_matrix(matrix, server_factory=servers, runner=runner, check=False,
                     capture_environment=False)
    assert len(servers.started) == 2 * 4  # scenarios x rounds
    assert servers.live == 0
    for r in out.runs:  # the arms of one round share its server
        same_round = [x for x in out.runs if x.scenario == r.scenario and x.round == r.round]
        assert {x.target for x in same_round} == {r.target}
    assert len({r.server_generation for r in out.runs}) == 8


def test_restart_server_with_a_fixed_target_is_refused():
    matrix = parse_matrix(MATRIX).with_overrides(restart_server=True)
    with pytest.raises(ConfigError, match="restart-server"):
        run_matrix(matrix, target="127.0.0.1:9", runner=FakeRunner(), check=False,
                   capture_environment=False)


def test_a_failing_arm_is_recorded_and_the_matrix_goes_on():
    runner = FakeRunner(fail="fastpath")
    out = run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=runner,
                     check=False, capture_environment=False)
    failed = [r for r in out.runs if r.failed]
    assert len(failed) == 2 * 4 and all(r.arm.name == "fastpath" for r in failed)
    assert all("boom" in r.failed for r in failed)
    assert len(out.runs) == 2 * 4 * 3


def test_on_scenario_is_called_after_each_scenario():
    seen = []
    run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=FakeRunner(),
               check=False, capture_environment=False,
               on_scenario=lambda run, s: seen.append((s.payload, len(run.runs))))
    assert seen == [(128, 12), (1024, 24)]

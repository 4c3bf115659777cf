"""ghz's load schedules in the C generator: the per-second series shows the ramp."""
from __future__ import annotations

import pytest

from triple_py.bench.cli import main
from triple_py.bench.spec.schedules import Schedule
from triple_py.testing import EchoServer


@pytest.fixture(scope="module")
def address():
    with EchoServer() as server:
        yield server.address


def _spec_run(address, **kw):
    from triple_py.bench.running.runner import spec_of
    from triple_py.bench.arms.loadgen import run_c_spec

    spec = spec_of(address, duration=3.0, warmup=0.2, concurrency=64)
    spec.rate_schedule = kw.get("rate_schedule")
    spec.concurrency_schedule = kw.get("concurrency_schedule")
    spec.requests = kw.get("requests")
    return run_c_spec(spec.validate())


def test_step_rate_schedule_is_the_series(address):
    schedule = Schedule("step", 1000, 1000, 2500, 1.0).check("load")
    r = _spec_run(address, rate_schedule=schedule)
    calls = r.series["calls"]
    # 1000, 2000, then 2500 (the end) calls in the three seconds; open loop, so exact up to
    # the calls of a second's edge.
    assert [round(c, -2) for c in calls[:3]] == [1000, 2000, 2500]
    assert r.extra["load_schedule"]["kind"] == "step"
    assert [schedule.at(t) for t in (0.5, 1.5, 2.5)] == [1000, 2000, 2500]


def test_line_rate_schedule_ramps(address):
    r = _spec_run(address, rate_schedule=Schedule("line", 500, 1000).check("load"))
    calls = r.series["calls"]  # 500 + 1000 t: about 1000, 2000, 3000 per second
    assert [round(c, -2) for c in calls[:3]] == [1000, 2000, 3000]


@pytest.mark.checkout("the grpc-go peer")
def test_concurrency_schedule_caps_calls_in_flight():
    """The grpc-go peer delays every call 20 ms (x-delay-ms metadata, sent from the ring), so
    calls/s = in flight / 20 ms: the step schedule 1 -> 4 in flight shows as a four times
    higher rate in the second second."""
    from peers.launch import start_peer

    from triple_py.bench.workload.messages import benchmark_request

    with start_peer("go") as peer:
        schedule = Schedule("step", 1, 3, 4, 1.0, 1.0).check("concurrency")
        r = _spec_run(peer.address, concurrency_schedule=schedule,
                      requests=[(benchmark_request(16), [(b"x-delay-ms", b"20")])])
        first, second = r.series["calls"][:2]
        assert 30 <= first <= 55 and 3.0 * first <= second <= 4.5 * first


def test_bad_schedule_flags_exit_2(capsys):
    for args, message in (
            (["--load-schedule", "step", "--load-start", "100", "--load-step", "10"],
             "step-duration"),
            (["--load-schedule", "line", "--load-step", "10"], "needs --load-start"),
            (["--load-schedule", "const", "--load-start", "100", "--rps", "10"],
             "not both"),
            (["--concurrency-schedule", "line", "--concurrency-start", "0",
              "--concurrency-step", "1"], "must be > 0")):
        assert main(["run", "-z", "0.2", *args]) == 2
        assert message in capsys.readouterr().err


def test_capacity_cli_writes_the_verdict_and_evidence(tmp_path, capsys):
    """A loose SLO that every rate meets: the search ramps to the ceiling and says so."""
    import json

    out = tmp_path / "cap"
    assert main(["capacity", "--slo", "p99=2s", "--start-rate", "200", "--max-rate", "800",
                 "-z", "0.3s", "--warmup", "0.1s", "-c", "16", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "capacity: 800 calls/s with p99 <= 2000 ms and no errors (the maximum rate" in text
    doc = json.loads((out / "capacity.json").read_text())
    assert [p["rate"] for p in doc["probes"]] == [200, 400, 800]
    assert (out / "capacity.png").stat().st_size > 1000
    assert main(["capacity", "--slo", "p99=soon"]) == 2


def test_matrix_file_with_capacity_searches_the_embedded_server(tmp_path, capsys):
    """A matrix file's [capacity] table: after the rounds, a search per open-loop arm against
    the same embedded server, printed and written next to the other results."""
    import json

    matrix = tmp_path / "cap.toml"
    matrix.write_text('name = "cap"\nrounds = 1\nduration = "0.2s"\nwarmup = "0.1s"\n'
                      'arms = ["fastpath", "grpcio-sync"]\n'
                      '[scenarios]\npayload = [128]\nconcurrency = [16]\n'
                      '[capacity]\nslo = "p99=2s"\nstart_rate = 200\nmax_rate = 400\n'
                      'duration = "0.3s"\n')
    out = tmp_path / "res"
    assert main(["matrix", str(matrix), "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "== capacity: 128B/c16 fastpath ==" in text
    assert "capacity: 128B/c16 grpcio-sync" not in text  # no open loop: no search
    assert (out / "capacity.txt").read_text().startswith("== capacity: 128B/c16 fastpath ==")
    doc = json.loads((out / "capacity" / "128B_c16-fastpath.json").read_text())
    assert doc["probes"][0]["rate"] == 200 and doc["slo"]["limit_s"] == 2.0
    assert all(p["qps"] > 0 for p in doc["probes"])  # each probe loaded the server
    assert (out / "capacity" / "128B_c16-fastpath.png").stat().st_size > 1000

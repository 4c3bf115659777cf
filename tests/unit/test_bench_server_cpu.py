"""The server's CPU time per call: read from /proc around each arm run when the server
factory says which process the server is, and shown in the table, CSV, JSON and bench.txt."""
from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
import time
from typing import Iterator

import pytest

from _bench_fakes import FakeRunner, FakeServers, two_arm_matrix
from triple_py.bench.running.rounds import run_matrix
from triple_py.bench.spec.matrix import parse_matrix
from triple_py.bench.report.text import format_summary
from triple_py.bench.report.gobench import go_bench_text
from triple_py.bench.report.files import write_results
from triple_py.bench.record.result import BenchResult
from triple_py.bench.results.frames import load_results
from triple_py.bench.running.server_cpu import (ServerProcess, book_server_cpu,
    process_cpu_seconds)

MATRIX = two_arm_matrix(rounds=2)


def _burn(seconds: float) -> None:
    """Spends about ``seconds`` of CPU time in this thread."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_process_cpu_seconds_counts_the_process_cpu_time():
    before = process_cpu_seconds(os.getpid())
    _burn(0.2)
    after = process_cpu_seconds(os.getpid())
    assert before is not None and after is not None
    assert after - before >= 0.1  # clock ticks are 10 ms


def test_process_cpu_seconds_reads_a_child_process_not_only_this_one():
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nend = time.process_time() + 0.3\n"
                              "while time.process_time() < end: pass\ninput()"],
                             stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while (process_cpu_seconds(child.pid) or 0.0) < 0.25 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process_cpu_seconds(child.pid) >= 0.25
    finally:
        child.communicate(b"\n", timeout=10)


def test_process_cpu_seconds_of_a_process_that_is_gone_is_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_cpu_seconds(child.pid) is None


def _result(**fields) -> BenchResult:
    return BenchResult(arm="a", mode="fastpath", target="127.0.0.1:1", method="/m",
                       payload_size=128, concurrency=1, **fields)


def test_calls_including_warmup_uses_the_reported_warmup_count():
    result = _result(calls=900, elapsed_s=3.0, warmup_s=0.5, warmup={"calls": 100})
    assert result.calls_including_warmup() == 1000


def test_calls_including_warmup_assumes_the_measured_rate_when_not_reported():
    result = _result(calls=3000, elapsed_s=3.0, warmup_s=0.5)  # h2load reports no warm-up
    assert result.calls_including_warmup() == pytest.approx(3500)


def test_calls_including_warmup_of_a_counted_run_is_its_calls():
    result = _result(calls=500, count=500, elapsed_s=2.0, warmup_s=0.5)
    assert result.calls_including_warmup() == 500


def test_book_server_cpu_divides_by_every_call_of_the_run():
    result = _result(calls=900, elapsed_s=3.0, warmup={"calls": 100})
    book_server_cpu(result, 10.0, 10.02)
    assert result.cpu["server_s"] == pytest.approx(0.02)
    assert result.server_cpu_us_per_call == pytest.approx(20.0)


def test_book_server_cpu_without_both_readings_books_nothing():
    result = _result(calls=900, elapsed_s=3.0)
    book_server_cpu(result, None, 1.0)
    book_server_cpu(result, 1.0, None)
    assert "server_s" not in result.cpu and result.server_cpu_us_per_call is None


class ThisProcessServes(FakeServers):
    """Fake servers that say they are this process: the fake runner's CPU is the server's."""

    @contextlib.contextmanager
    def __call__(self) -> Iterator[ServerProcess]:
        with super().__call__() as address:
            yield ServerProcess(address, os.getpid())


class BusyRunner(FakeRunner):
    """A fake runner that spends 100 ms of CPU per arm run."""

    def __call__(self, spec):
        _burn(0.1)
        return super().__call__(spec)


@pytest.fixture(scope="module")
def served_run():
    return run_matrix(parse_matrix(MATRIX), server_factory=ThisProcessServes(),
                      runner=BusyRunner(), check=False, capture_environment=False)


def test_harness_books_the_server_cpu_of_every_arm_run(served_run):
    assert len(served_run.runs) == 4
    for run in served_run.runs:
        assert run.target.startswith("127.0.0.1:")
        assert run.result.cpu["server_s"] >= 0.05  # 100 ms burnt, read in 10 ms ticks
        assert run.result.server_cpu_us_per_call == pytest.approx(
            run.result.cpu["server_s"] * 1e6 / run.result.calls)


def test_server_cpu_is_in_the_table_csv_json_and_go_format(served_run, tmp_path):
    table = format_summary(served_run)
    assert "srv µs/call" in table and "cli µs/call" in table
    assert "server-cpu-ns/op" in go_bench_text(served_run)
    paths = write_results(served_run, tmp_path)
    with open(paths["csv"], encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert all(float(row["server_cpu_us_per_call"]) > 0 for row in rows)
    doc = json.loads(paths["json"].read_text())
    assert all(e["result"]["cpu"]["server_us_per_call"] > 0 for e in doc["results"])
    frame = load_results(tmp_path).runs
    assert (frame["server_cpu_us_per_call"] > 0).all()


def test_an_address_only_factory_books_no_server_cpu_and_keeps_the_table():
    run = run_matrix(parse_matrix(MATRIX), server_factory=FakeServers(), runner=FakeRunner(),
                     check=False, capture_environment=False)
    assert all("server_s" not in r.result.cpu for r in run.runs)
    table = format_summary(run)
    assert "srv µs/call" not in table
    assert "server-cpu-ns/op" not in go_bench_text(run)

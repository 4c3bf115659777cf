"""python -m triple_py.bench stopped early, and its bounds and figures.

Every interrupt case runs the CLI in a child process (its own session, killed if it
hangs) against the embedded echo server, sends SIGINT or SIGTERM once the run is
measuring, and checks: it exits within a hard timeout with 128 + the signal, prints and
writes the report of what was measured, its RSS does not grow after the signal, and no
child process is left loading the target. The other cases: every bound refused with one
line and exit status 2 before any work, an unwritable output path refused before the run,
the figures of an open loop at a low rate, the BenchmarkService's methods with TLS or
metadata flags and no reflection, a certificate/key mismatch as bad input, and a Dask
worker dying mid-run.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from triple_py.bench.workload.call_setup import CallSetup, TlsOptions
from triple_py.bench.cli import main
from triple_py.bench.workload.messages import STREAM_METHOD, UNARY_METHOD

#: Seconds a stopped run may take to exit (the promise is one second).
EXIT_WITHIN = 5.0
#: RSS growth allowed after the signal (a report being formatted, not a run going on).
RSS_SLACK_KB = 64 * 1024


def _start(*args: str, **env: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "triple_py.bench", *args],
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env=dict(os.environ, **env))


def _rss_kb(pid: int) -> Optional[int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _children(pid: int) -> List[Tuple[int, str]]:
    """(pid, command line) of the live processes whose parent is ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        state, ppid = fields[0], int(fields[1])
        if ppid == pid and state != "Z":
            found.append((int(entry), cmdline))
    return found


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (a dead child nobody reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _stop(child: subprocess.Popen, signum: int) -> Tuple[int, str, str, float, List[int]]:
    """Sends ``signum``; returns (exit status, stdout, stderr, seconds to exit, RSS samples
    in KiB from the signal on). Kills the child's session and fails if it does not exit
    within EXIT_WITHIN seconds."""
    rss = [_rss_kb(child.pid) or 0]
    child.send_signal(signum)
    sent = time.monotonic()
    while child.poll() is None and time.monotonic() - sent < EXIT_WITHIN:
        sample = _rss_kb(child.pid)
        if sample:
            rss.append(sample)
        time.sleep(0.05)
    if child.poll() is None:
        samples = list(rss)
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"still running {EXIT_WITHIN} s after {signal.Signals(signum).name}; "
                    f"RSS KiB {samples[0]} -> {samples[-1]}\nstdout:\n{out[-2000:]}\n"
                    f"stderr:\n{err[-2000:]}")
    took = time.monotonic() - sent
    out, err = child.communicate()
    return child.returncode, out, err, took, rss


def _wait_measuring(child: subprocess.Popen, seconds: float) -> None:
    """Lets the run get into its measured window (the child must still be running)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if child.poll() is not None:
            out, err = child.communicate()
            pytest.fail(f"exited {child.returncode} before the signal\n{out}\n{err}")
        time.sleep(0.05)


# -- every arm stops promptly and reports ----------------------------------------------------

@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
@pytest.mark.parametrize("mode", ["fastpath", "triple-py-aio", "grpcio-aio-bidi",
                                  "triple-py-sync", "triple-py-bidi"])
def test_interrupted_run_reports_what_it_measured(tmp_path, mode, signum):
    report, doc = tmp_path / "report.txt", tmp_path / "run.json"
    child = _start("run", "--mode", mode, "-z", "60s", "--warmup", "0.3s", "-c", "4",
                   "-o", str(report), "--json", str(doc))
    _wait_measuring(child, 2.5)
    status, out, err, took, rss = _stop(child, signum)
    assert status == 128 + signum, (status, err)
    assert took < EXIT_WITHIN
    assert max(rss) - rss[0] < RSS_SLACK_KB, f"RSS grew after the stop: {rss[0]} -> {max(rss)}"
    text = report.read_text()
    assert "Summary" in text and "Count:" in text, text
    assert f"interrupted ({signal.Signals(signum).name})" in err, err
    result = json.loads(doc.read_text())["results"][0]["result"]
    assert result["calls"] > 0, result["calls"]
    assert result["extra"]["interrupted"] == signal.Signals(signum).name
    assert 0.5 < result["elapsed_s"] < 10, result["elapsed_s"]  # the window until the stop


@pytest.mark.checkout("h2load (nghttp2-client, which tools/bootstrap.sh installs)")
def test_h2load_child_is_stopped_with_the_run_and_dies_with_its_parent(tmp_path):
    assert Path("/usr/bin/h2load").exists(), "h2load is missing: tools/bootstrap.sh installs it"
    for signum in (signal.SIGTERM, signal.SIGKILL):
        child = _start("run", "--mode", "h2load", "-z", "60s", "--warmup", "0.2s", "-c", "4")
        _wait_measuring(child, 2.0)
        h2load = [pid for pid, cmd in _children(child.pid) if "h2load" in cmd]
        assert len(h2load) == 1, _children(child.pid)
        if signum == signal.SIGKILL:  # the parent dies without a word: the kernel kills it
            child.kill()
            child.communicate()
        else:
            status, out, err, took, _ = _stop(child, signum)
            assert status == 143 and "interrupted (SIGTERM" in err, (status, err)
            assert "h2load prints no figures when stopped" in err
        end = time.monotonic() + 3
        while _alive(h2load[0]) and time.monotonic() < end:
            time.sleep(0.05)
        assert not _alive(h2load[0]), f"h2load still loading after {signal.Signals(signum).name}"


def test_matrix_sigterm_writes_its_finished_runs(tmp_path):
    out_dir = tmp_path / "results"
    child = _start("matrix", "seed-unary", "--arms", "fastpath,stream-path", "--payload", "128",
                   "-c", "4", "--rounds", "5", "-z", "0.5s", "--warmup", "0.1s",
                   "--out", str(out_dir))
    _wait_measuring(child, 4.0)
    status, out, err, took, _ = _stop(child, signal.SIGTERM)
    assert status == 143, (status, err)
    assert "interrupted after" in out, out
    doc = json.loads((out_dir / "results.json").read_text())
    assert 1 <= len(doc["results"]) < 10, len(doc["results"])


def test_capacity_sigterm_keeps_its_probes(tmp_path):
    child = _start("capacity", "--slo", "p99=100ms", "-z", "0.5s", "--warmup", "0.1s",
                   "--start-rate", "200", "--max-probes", "50", "--out", str(tmp_path))
    _wait_measuring(child, 2.5)
    status, out, err, took, _ = _stop(child, signal.SIGTERM)
    assert status == 143, (status, err)
    assert "search interrupted by SIGTERM" in out, out
    saved = json.loads((tmp_path / "capacity.json").read_text())
    assert saved["interrupted"] == "SIGTERM" and saved["probes"], saved


def _dask_children(pid: int) -> List[int]:
    return [p for p, cmd in _children(pid) if "spawn_main" in cmd]


def test_dask_run_interrupted_merges_the_workers_figures(tmp_path):
    pytest.importorskip("distributed")
    report = tmp_path / "report.txt"
    child = _start("run", "--dask", "local:2", "-z", "120s", "--warmup", "0.2s", "-c", "4",
                   "-o", str(report))
    end = time.monotonic() + 60  # the cluster starts, then the workers load for a while
    while len(_dask_children(child.pid)) < 2 and time.monotonic() < end:
        time.sleep(0.2)
    _wait_measuring(child, 8.0)
    status, out, err, took, _ = _stop(child, signal.SIGINT)
    assert status == 130, (status, err)
    assert "Count:" in report.read_text()
    assert "merged" in out and out.count("tcp://") == 2, out


def test_dask_worker_death_keeps_the_other_workers_figures():
    pytest.importorskip("distributed")
    child = _start("run", "--dask", "local:2", "-z", "12s", "--warmup", "0.2s", "-c", "4")
    end = time.monotonic() + 60
    while len(_dask_children(child.pid)) < 2 and time.monotonic() < end:
        time.sleep(0.2)
    _wait_measuring(child, 6.0)
    os.kill(_dask_children(child.pid)[0], signal.SIGKILL)
    try:
        out, err = child.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"hung after a worker died\n{out}\n{err}")
    assert child.returncode == 1, (child.returncode, err)
    assert "died or left the cluster" in err, err
    assert "the workers that finished (1; not merged)" in out, out
    assert "FAILED: the worker died" in out, out
    survivor = [line for line in out.splitlines() if line.startswith("tcp://")
                and "FAILED" not in line]
    assert len(survivor) == 1 and int(survivor[0].split()[3]) > 0, out


# -- bounds, checked before any work ---------------------------------------------------------

def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("args, message", [
    (["run", "--ring-size", "1000000000", "-m", '{"n": "{{.RequestNumber}}"}'],
     "--ring-size: must be at most 16777216"),
    (["run", "--ring-size", "16000000", "-m", '{"n": "{{.RequestNumber}}"}'],
     "the request ring would exceed 256 MiB"),
    (["run", "-c", "200000"], "concurrency must be 1..100000"),
    (["run", "--mode", "grpcio-sync", "-c", "100001"], "concurrency must be 1..100000"),
    (["run", "--connections", "300"], "connections must be 1..256"),
    (["run", "--rps", "2e9"], "rate (calls/s) must be > 0 and <= 1000000000"),
    (["run", "-n", "100000000000000000000"], "total (-n) must be 0..1000000000000000000"),
    (["run", "-z", "200000000s"], "duration (seconds) must be 0..10000000"),
    (["run", "--mode", "bidi", "--stream-messages", "20000000"], "stream messages must be"),
    (["run", "--write-buffer-delay", "9999999999"], "write buffer delay (µs) must be 0.."),
    (["capacity", "--slo", "p99=5ms", "--max-rate", "1e12"], "rate (calls/s) must be"),
    (["capacity", "--slo", "p99=5ms", "--precision", "2"], "--precision must be in (0, 1)"),
    (["capacity", "--slo", "p99=5ms", "--max-probes", "1000000"], "--max-probes must be"),
])
def test_bounds_are_refused_in_one_line_before_work(capsys, args, message):
    started = time.monotonic()
    status = main(args)
    out, err = capsys.readouterr()
    assert status == 2, (status, err)
    assert message in _one_line(err), err
    assert "Summary" not in out
    assert time.monotonic() - started < 5


def test_ring_bounds_come_from_the_load_generator_table():
    from triple_py import _triple
    from triple_py.bench.limits import load_limit

    assert load_limit("requests") == _triple.LOAD_LIMITS["requests"]
    with pytest.raises(ValueError, match="1..16777216"):  # the table is what run_load enforces
        _triple.run_load("127.0.0.1", 1, path=None, mode="unary", payload_size=1,
                         concurrency=1, connections=1, duration=1.0, warmup=0.0,
                         requests=[(b"", [])] * (int(load_limit("requests")[1]) + 1))


@pytest.mark.parametrize("flag", ["-o", "--json", "--csv", "--gobench"])
def test_unwritable_output_is_refused_before_the_run(capsys, tmp_path, flag):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    started = time.monotonic()
    status = main(["run", "-z", "3s", flag, str(blocker / "out.txt")])
    out, err = capsys.readouterr()
    assert status == 2, (status, err)
    assert f"{flag} {blocker / 'out.txt'}: {blocker} is not a directory" in _one_line(err)
    assert "Summary" not in out and time.monotonic() - started < 2.5


def test_matrix_out_that_is_a_file_is_refused_before_the_run(capsys, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    status = main(["matrix", "seed-unary", "--out", str(blocker)])
    out, err = capsys.readouterr()
    assert status == 2 and "not a directory" in _one_line(err), err
    assert "matrix seed-unary" not in out


# -- figures at a low rate -------------------------------------------------------------------

@pytest.mark.parametrize("rate, seconds", [(1, 1), (2, 2)])
def test_open_loop_at_a_low_rate_reports_the_window_rate(capsys, rate, seconds):
    status = main(["run", "--rps", str(rate), "-z", f"{seconds}s", "--warmup", "0.2s",
                   "-O", "json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    result = json.loads(out)["results"][0]["result"]
    assert rate * seconds - 1 <= result["calls"] <= rate * seconds + 1, result["calls"]
    assert 0.5 * rate <= result["qps"] <= 1.5 * rate, result["qps"]
    assert 0.95 * seconds <= result["elapsed_s"] <= seconds + 0.5, result["elapsed_s"]
    assert result["cpu"]["process_cores"] < 1.0, result["cpu"]


# -- TLS and metadata flags with the default method ------------------------------------------

@pytest.mark.parametrize("setup", [
    CallSetup(metadata='{"a": "b"}'),
    CallSetup(tls=TlsOptions(tls=True)),
    CallSetup(tls=TlsOptions(skip_verify=True)),
], ids=["metadata", "tls", "skipTLS"])
@pytest.mark.parametrize("method", [UNARY_METHOD, STREAM_METHOD])
def test_benchmark_methods_need_no_reflection(setup, method):
    from _helpers import closed_port

    # Nobody listens there: asking it for reflection would fail.
    schema = setup.method(method, f"127.0.0.1:{closed_port()}", timeout=1.0)
    assert schema.path == method
    assert schema.shape == ("bidi" if method == STREAM_METHOD else "unary")
    assert schema.request_class()(payload=b"x").SerializeToString() == b"\n\x01x"


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def test_certificate_key_mismatch_is_bad_input(capsys, tmp_path):
    cert, key, other = tmp_path / "c.pem", tmp_path / "k.pem", tmp_path / "other.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
             "-out", str(cert), "-days", "1", "-subj", "/CN=localhost")
    _openssl("genrsa", "-out", str(other), "2048")
    status = main(["run", "-z", "1s", "--cacert", str(cert), "--cert", str(cert),
                   "--key", str(other)])
    out, err = capsys.readouterr()
    assert status == 2, (status, err)
    line = _one_line(err)
    assert "do not match" in line and "internal error" not in line, line
    assert "Summary" not in out

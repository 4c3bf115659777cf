"""python -m triple_py.bench: outputs, and bad input as one line with exit status 1 or 2."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from triple_py import benchstat
from triple_py.bench.cli import main

ROOT = Path(__file__).resolve().parents[2]


def cli(capsys, *args):
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("args, status, message", [
    (["run", "-c", "0"], 2, "-c/--concurrency: must be >= 1"),
    (["run", "--payload", "huge"], 2, "bad payload size 'huge'"),
    (["run", "-z", "soon"], 2, "bad duration 'soon'"),
    (["run", "--wire", "triple", "--mode", "h2load"], 2, "speaks only the grpc wire"),
    (["run", "--wire", "triple", "--dialect", "java"], 2, "invalid choice: 'java'"),
    (["run", "--mode", "warp"], 2, "unknown mode 'warp'"),
    (["run", "--target", "nohost"], 2, "no port"),
    (["run", "--call", "a b"], 2, "bad method"),
    (["run", "--mode", "grpcio-sync", "--rps", "10"], 2, "has no open loop"),
    (["run", "--target", "127.0.0.1:1", "-z", "0.2"], 1, "cannot reach 127.0.0.1:1"),
    (["run", "--call", "no.Such/Method", "-z", "0.2"], 1, "does not implement /no.Such/Method"),
    (["run", "--call", "no.Such/Method", "-z", "0.2", "--warmup", "0", "--no-check"], 1,
     "every call failed"),
    (["matrix", "no-such-matrix"], 2, "no such matrix file"),
    (["matrix", "seed-unary", "--arms", "fastpath,nope"], 2, "no arm 'nope'"),
    (["matrix", "seed-unary", "--rounds", "x"], 2, "--rounds: invalid integer"),
    (["matrix", "seed-unary", "--target", "127.0.0.1:1", "--arms", "fastpath",
      "--payload", "128", "-c", "1", "--rounds", "1", "-z", "0.1"], 1, "cannot reach"),
    (["matrix", "seed-unary", "--target", "127.0.0.1:1", "--restart-server"], 2,
     "--restart-server needs"),
])
def test_errors_are_one_line(capsys, args, status, message):
    got, out, err = cli(capsys, *args)
    assert got == status
    assert message in one_line_error(err)


def test_malformed_matrix_file(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("arms = [\n")
    got, _, err = cli(capsys, "matrix", str(bad))
    assert got == 2 and "bad.toml: bad TOML" in one_line_error(err)
    bad.write_text('arms = ["fastpath"]\n[scenarios]\npayload = [1]\n')
    got, _, err = cli(capsys, "matrix", str(bad))
    assert got == 2 and "needs payload and concurrency" in one_line_error(err)


def test_subprocess_error_has_no_traceback_and_no_progress_in_ci():
    env = dict(os.environ, CI="1")
    proc = subprocess.run([sys.executable, "-m", "triple_py.bench", "run", "--call",
                           "x.Y/Z", "-z", "0.2"], capture_output=True, text=True, env=env,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "UNIMPLEMENTED" in proc.stderr


def test_run_writes_json_csv_gobench(capsys, tmp_path):
    got, out, err = cli(capsys, "run", "-z", "0.3", "--warmup", "0.1", "-c", "4",
                        "--payload", "1KiB", "--json", str(tmp_path / "r.json"),
                        "--csv", str(tmp_path / "r.csv"), "--gobench", str(tmp_path / "r.txt"))
    assert got == 0 and err == ""
    assert "Summary:" in out and "Requests/sec:" in out and "[OK]" in out and "p99.9" in out
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["results"][0]["result"]["payload_size"] == 1024
    rows = list(csv.DictReader(open(tmp_path / "r.csv")))
    assert len(rows) == 1 and rows[0]["arm"] == "fastpath"
    frame = benchstat.compare([str(tmp_path / "r.txt")])
    assert "Run/1KiB/c4/fastpath-" in frame.row.iloc[0]


def test_matrix_end_to_end(capsys, tmp_path):
    got, out, err = cli(capsys, "matrix", "seed-unary", "--arms", "stream-path,fastpath",
                        "--payload", "128", "-c", "4", "--rounds", "2", "-z", "0.2",
                        "--warmup", "0.05", "--out", str(tmp_path / "res"))
    assert got == 0, err
    assert err == ""  # stderr is not a terminal: no progress line
    assert "== Unary 128B/c4: median of 2 rounds" in out
    assert "benchstat: stream-path (base) vs fastpath" in out
    assert "note: with fewer than 4 rounds" in out
    res = tmp_path / "res"
    for name in ("results.json", "results.csv", "bench.txt", "summary.txt", "comparison.txt",
                 "benchstat/fastpath.txt"):
        assert (res / name).exists(), name
    env = json.loads((res / "results.json").read_text())["environment"]
    assert env["cpu_count"] and env["python"] and "load_average" in env and "grpcio" in env
    lines = [l for l in (res / "bench.txt").read_text().splitlines()
             if l.startswith("Benchmark")]
    assert len(lines) == 4 and lines[0].startswith("BenchmarkUnary/128B/c4/stream-path-")


def test_list_and_show(capsys):
    got, out, _ = cli(capsys, "list")
    assert got == 0 and "grpcio-aio-bidi" in out and "seed-stream" in out
    got, out, _ = cli(capsys, "matrix", "seed-stream", "--show")
    assert got == 0 and "[arm.writer-off]" in out and "Stream/128B/m512/c128" in out

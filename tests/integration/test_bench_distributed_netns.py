"""The multi-host test of triple_py.bench.distributed: the Dask scheduler, two Dask
workers and the embedded server each run in a network namespace of its own (made by the
test, joined by a bridge in a fifth one, deleted afterwards), so the kernel sees four
hosts and the load crosses real (veth) interfaces. The client runs in the scheduler's
namespace. Needs root and iproute2; skipped otherwise.

TRIPLE_PY_NETNS_REPORT=PATH also writes the merged and per-worker figures there (the
figures of docs/distributed.md).
"""
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _netns import NetnsLab, netns_available
from test_bench_distributed import HARD_TIMEOUT, check_exact_merge

ROOT = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).with_name("_distributed_child.py")
PY = sys.executable

pytestmark = pytest.mark.skipif(bool(netns_available()), reason=netns_available() or "ok")


def listening_port(proc, timeout=30.0):
    """The port of a `LISTENING <port>` line from ``proc``'s stdout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if ready:
            line = proc.stdout.readline()
            if line.startswith("LISTENING "):
                return int(line.split()[1])
            if not line and proc.poll() is not None:
                break
    raise AssertionError("the server did not print LISTENING")


def test_scheduler_workers_and_server_in_four_namespaces(tmp_path):
    with NetnsLab(["sched", "w1", "w2", "srv"]) as lab:
        server = lab.popen("srv", [PY, "-m", "triple_py.server", "--host", lab.address("srv"),
                                   "--exit-on-stdin-eof"], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, cwd=ROOT)
        target = f"{lab.address('srv')}:{listening_port(server)}"
        scheduler = f"tcp://{lab.address('sched')}:8786"
        log = open(tmp_path / "dask.log", "w")
        lab.popen("sched", [PY, "-m", "distributed.cli.dask_scheduler", "--host",
                            lab.address("sched"), "--port", "8786", "--no-dashboard"],
                  stdout=log, stderr=log, cwd=tmp_path)
        for host in ("w1", "w2"):
            lab.popen(host, [PY, "-m", "distributed.cli.dask_worker", scheduler,
                             "--host", lab.address(host), "--nthreads", "1",
                             "--no-nanny", "--no-dashboard"],
                      stdout=log, stderr=log, cwd=tmp_path)
        proc = lab.run("sched", [PY, str(CHILD), "remote", scheduler, target],
                       timeout=HARD_TIMEOUT, capture_output=True, text=True, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr[-3000:] + (tmp_path / "dask.log").read_text()[-3000:]
        line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")][-1]
        run = json.loads(line[len("RESULT "):])["closed"]
        # no address of the lab exists outside it
        root_addresses = subprocess.run(["ip", "-o", "addr"], capture_output=True,
                                        text=True).stdout
        assert lab.subnet + "." not in root_addresses
    check_exact_merge(run)
    workers = sorted(w["worker"] for w in run["merged"]["extra"]["workers"])
    assert [w.split("://")[1].rsplit(":", 1)[0] for w in workers] == \
        sorted([lab.address("w1"), lab.address("w2")])
    assert run["merged"]["target"] == target
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert lab.tag + "-" not in names  # torn down
    report = os.environ.get("TRIPLE_PY_NETNS_REPORT")
    if report:
        merged = run["merged"]
        Path(report).write_text(json.dumps({
            "target": target, "workers": merged["extra"]["workers"],
            "merged": {k: merged[k] for k in ("calls", "qps", "elapsed_s", "concurrency",
                                              "connections", "latency_corrected_ns",
                                              "series", "cpu")},
            "imbalance": merged["extra"]["imbalance"]}, indent=1) + "\n")

"""notebooks/distributed-matrix.ipynb, executed headless on a LocalCluster of two worker
processes with short runs: every cell runs and the per-worker and merged figures are
written. Runs in a child process with a hard timeout."""
import subprocess
import sys
from pathlib import Path

import pytest

for _module in ("nbclient", "nbformat", "ipykernel", "matplotlib", "pandas", "distributed"):
    pytest.importorskip(_module)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.checkout("notebooks/distributed-matrix.ipynb")
def test_distributed_notebook_runs_and_draws(tmp_path):
    out = tmp_path / "results"
    proc = subprocess.run(
        [sys.executable, "-m", "triple_py.bench.notebook",
         str(ROOT / "notebooks" / "distributed-matrix.ipynb"), "-p", "rounds", "2",
         "-p", "duration", "0.2s", "-p", "warmup", "0.05s", "-p", "concurrency", "4",
         "-p", "out_dir", str(out), "-o", str(tmp_path / "executed.ipynb")],
        capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    for name in ("workers-128B_c4.png", "merged-timeseries.png", "results.json"):
        assert (out / name).stat().st_size > 0, name
    from triple_py.bench import load_results
    from triple_py.bench.distributed.workers_view import workers_frame

    frame = workers_frame(load_results(out))
    assert len(frame) == 2 * 2 * 3  # 2 arms x 2 rounds x (2 workers + merged)
    merged = frame[frame["worker"] == "merged"].reset_index(drop=True)
    per_worker = frame[frame["worker"] != "merged"].groupby(["arm", "round"], sort=False)
    assert list(merged["calls"]) == list(per_worker["calls"].sum())

"""triple_py.bench: load runs and benchmark matrices (``python -m triple_py.bench``).

One scenario, from Python::

    from triple_py.bench import run
    r = run(payload_size=1024, mode="fastpath", concurrency=50, duration=3)
    print(r.qps, r.p99, r.write_syscalls_per_call, r.status_codes)
    r.to_dict()                    # every figure, raw histograms included

or from the shell, with ghz-like flags::

    python -m triple_py.bench run --payload 1KiB -c 50 -z 3s --mode fastpath
    python -m triple_py.bench run --target 127.0.0.1:50051 --call benchmark.BenchmarkService/UnaryCall

A matrix (scenarios x arms x rounds, interleaved, compared with benchstat)::

    python -m triple_py.bench matrix seed-unary --rounds 3 --duration 3
    python -m triple_py.bench matrix my_matrix.toml --out results/mine

Load from many machines on Dask, merged exactly (:mod:`triple_py.bench.distributed`)::

    python -m triple_py.bench run --dask local:2 -c 64        # or --dask tcp://host:8786
    from triple_py.bench import distributed
    with distributed.connect("local:2") as client:
        r = distributed.run(client, concurrency=64, duration=3)  # r.extra["workers"]

The matrix file format is documented in :mod:`triple_py.bench.matrix`; the arm kinds in
:mod:`triple_py.bench.arms`; the outputs in :mod:`triple_py.bench.report`. Without
``--target`` the load goes to the embedded C echo server (triple_py.testing.EchoServer).

Analysis (pandas; the notebooks in ``notebooks/`` use it)::

    from triple_py.bench import load_results, plots
    res = load_results("results/seed-unary-20261130-120000")  # the directory or its JSON
    res.runs, res.histograms, res.timeseries, res.environment   # tidy DataFrames, a dict
    res.benchstat()                                             # the comparison, a DataFrame

See :mod:`triple_py.bench.results`, :mod:`triple_py.bench.plots` and
:mod:`triple_py.bench.notebook` (running the notebooks with parameters).
"""
from .arms import KINDS, ArmKind, kind_of
from .errors import BenchError, ConfigError, RunFailed, TargetError
from .result import BenchResult, Latency
from .runner import check_result, preflight, run
from .spec import RunSpec

__all__ = ["run", "BenchResult", "Latency", "RunSpec", "KINDS", "ArmKind", "kind_of",
           "preflight", "check_result", "BenchError", "ConfigError", "RunFailed",
           "TargetError", "run_matrix", "load_matrix", "Matrix", "load_results", "Results",
           "plots"]


def __getattr__(name: str):
    """run_matrix, load_matrix, Matrix, load_results, Results and plots, imported on first
    use (pandas and matplotlib only when asked for)."""
    if name in ("run_matrix",):
        from .harness import run_matrix
        return run_matrix
    if name in ("load_matrix", "Matrix"):
        from . import matrix
        return getattr(matrix, name)
    if name in ("load_results", "Results"):
        from .results import Results, load_results
        return {"load_results": load_results, "Results": Results}[name]
    if name == "plots":
        import importlib
        return importlib.import_module(".plots", __name__)
    raise AttributeError(name)

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

The matrix file format is documented in :mod:`triple_py.bench.spec.matrix`; the arm kinds
in :mod:`triple_py.bench.spec.kinds`; the outputs in :mod:`triple_py.bench.report`. Without
``--target`` the load goes to the embedded C echo server (triple_py.testing.EchoServer).

Analysis (pandas; the notebooks in ``notebooks/`` use it)::

    from triple_py.bench import load_results, plots
    res = load_results("results/seed-unary-20261130-120000")  # the directory or its JSON
    res.runs, res.histograms, res.timeseries, res.environment   # tidy DataFrames, a dict
    res.benchstat()                                             # the comparison, a DataFrame

See :mod:`triple_py.bench.results`, :mod:`triple_py.bench.report.plots` and
:mod:`triple_py.bench.jupyter.notebook` (running the notebooks with parameters).

The package is built in floors, lowest first; a module imports only its own floor and the
ones below it, never a higher one, with no import circles and no imports inside functions
(``tests/unit/test_bench_layers.py`` checks it)::

    base         errors, units, interrupts, limits, ipython    what every floor may use
    workload/    messages, schema, reflection, descriptor_repair, request_data, template,
                 metadata, call_setup                          what is sent
    spec/        run_spec (RunSpec), kinds (by capability), matrix, capacity, slo,
                 target, schedules                             what to run
    record/      result (BenchResult, Latency), load_figures, html_tables
                                                               what one arm run produces
    results/     model (MatrixRun, ArmRun), capacity, environment, document
                 (results.json), reader (it, read back), frames (pandas Results),
                 summary, benchmark_units, paired, statistics, views
                                                               the one result model
    arms/        loadgen (C), h2load, grpcio, python_api, recorders, runners (kind ->
                 runner)                                       how one arm runs one spec
    running/     rounds (run_matrix), runner (run, preflight), servers, server_cpu,
                 capacity (the search), progress, live         rounds and servers
    distributed/ cluster, dask_tasks, merge, workers_view      load from a Dask cluster
    report/      text, tidy_csv, gobench, html, files, capacity, metrics_formats,
                 charts, plots                                 outputs (reads results only)
    jupyter/     notebook, notebook_server                     notebooks

Above them: this facade, which imports the pandas- and matplotlib-heavy names on first use,
and the command line (:mod:`.cli`, ``__main__``), which nothing imports. The former flat
modules (``triple_py.bench.matrix``, ``.harness``, ``.result``, ...) remain for one release
as shims that re-export the names from their new places.
"""
from .errors import BenchError, ConfigError, RunFailed, TargetError
from .record.result import BenchResult, Latency
from .running.runner import check_result, preflight, run
from .spec.kinds import KINDS, ArmKind, kind_of
from .spec.run_spec import RunSpec

__all__ = ["run", "BenchResult", "Latency", "RunSpec", "KINDS", "ArmKind", "kind_of",
           "preflight", "check_result", "BenchError", "ConfigError", "RunFailed",
           "TargetError", "run_matrix", "load_matrix", "Matrix", "load_results", "Results",
           "plots"]


def __getattr__(name: str):
    """run_matrix, load_matrix, Matrix, load_results, Results and plots, imported on first
    use (pandas and matplotlib only when asked for)."""
    if name in ("run_matrix",):
        from .running.rounds import run_matrix
        return run_matrix
    if name in ("load_matrix", "Matrix"):
        from .spec import matrix
        return getattr(matrix, name)
    if name in ("load_results", "Results"):
        from .results.frames import Results, load_results
        return {"load_results": load_results, "Results": Results}[name]
    if name == "plots":
        from .report import plots
        return plots
    raise AttributeError(name)

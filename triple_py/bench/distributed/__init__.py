"""Load from many machines on Dask distributed, with exactly merged results.

::

    from triple_py.bench import distributed
    with distributed.connect("local:2") as client:        # or "tcp://scheduler:8786"
        r = distributed.run(client, target="10.0.0.5:50051", concurrency=64, duration=3)
    r.qps, r.p99                     # the merged figures (a BenchResult like a local run's)
    r.extra["workers"]               # per worker: qps, p99, CPU per call, clock offset...

:func:`run` takes the arguments of :func:`triple_py.bench.run` plus ``workers`` (which
Dask workers: addresses, a number, or None for all). Every worker runs the C load
generator (``fastpath``, ``stream-path``, ``bidi``) in its own process on its share of
the load: in-flight calls and connections are split over the workers (a worker with no
whole connection of its own gets one), an open loop's rate is split evenly and every
worker's schedule shifted by i/rate so that the merged arrivals are evenly spaced, and a
count cap is split too. Each worker's clock offset from the client is measured first
(the midpoint of the shortest of several round trips, NTP's way); all workers then start
their warm-up at one absolute moment, ``start_lead`` seconds ahead, on their own clock.
The results are merged exactly (:mod:`.merge`; the cluster side is :mod:`.cluster`, the
worker side :mod:`.dask_tasks`, the workers' table :mod:`.workers_view`).

Faults are never merged away: a worker that dies or leaves the cluster during the run, or
whose load fails (e.g. it cannot reach the target), makes :func:`run` raise
:class:`WorkersFailed`, naming each worker and its error, with the other workers' results
attached. A worker whose triple_py build differs from the client's is refused before
anything runs (:class:`~triple_py.bench.errors.ConfigError`, one line).

The matrices run the same way: :func:`runner` gives ``run_matrix`` a runner that spreads
each arm run over the cluster (``python -m triple_py.bench matrix NAME --dask ADDRESS``).
"""
from .cluster import (DEFAULT_LEAD, Share, WorkerFailure, WorkersFailed, check_builds,
                      clock_offset, connect, run, run_matrix, run_parts, run_spec, runner,
                      split, worker_addresses)

__all__ = ["connect", "run", "run_spec", "run_parts", "run_matrix", "runner", "split",
           "Share", "WorkersFailed", "WorkerFailure", "check_builds", "clock_offset",
           "worker_addresses", "DEFAULT_LEAD"]

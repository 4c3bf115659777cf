"""Child process of test_bench_distributed.py: a LocalCluster of two single-threaded
worker processes loads a peer (the embedded server or grpc-go, each in a process of its
own) through triple_py.bench.distributed, then prints one JSON document of what happened.
The test runs it with a hard timeout, so a hang fails the test instead of stalling it.

    python _distributed_child.py embedded|go [--faults]
    python _distributed_child.py remote SCHEDULER TARGET   # an existing cluster, 2 workers

--faults adds: a worker whose build identity differs (refused), an unreachable target,
and a worker killed (SIGKILL) in the middle of a run.
"""
import json
import os
import signal
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # makes `peers` importable

from peers.launch import start_peer  # noqa: E402

from triple_py.bench import distributed  # noqa: E402
from triple_py.bench.errors import ConfigError  # noqa: E402
from triple_py.bench.distributed.merge import merge_parts  # noqa: E402
from triple_py.bench.running.runner import spec_of  # noqa: E402

RUN = dict(concurrency=8, duration=1.0, warmup=0.2)


def parts_and_merged(client, target, **kw):
    parts, _ = distributed.run_parts(client, spec_of(target, **dict(RUN, **kw)))
    return {"parts": [p.result.to_dict() for p in parts],
            "merged": merge_parts(parts).to_dict()}


def faults(client, target):
    out = {}
    victim, other = sorted(client.scheduler_info()["workers"])

    def forge():  # runs on the victim: another build
        from triple_py.bench.distributed import dask_tasks
        dask_tasks.build_identity()
        dask_tasks._IDENTITY["build"] = "000000000000"

    client.run(forge, workers=[victim])
    try:
        distributed.run(client, target, **RUN)
        out["mismatch"] = None
    except ConfigError as exc:
        out["mismatch"] = str(exc)
    client.run(lambda: __import__("triple_py.bench.distributed.dask_tasks").bench.distributed.dask_tasks
               ._IDENTITY.clear(), workers=[victim])

    try:
        distributed.run(client, "127.0.0.1:1", **RUN)
        out["unreachable"] = None
    except distributed.WorkersFailed as exc:
        out["unreachable"] = {"message": str(exc),
                              "failures": [[f.worker, f.error] for f in exc.failures]}

    pid = client.run(os.getpid, workers=[victim])[victim]
    timer = threading.Timer(distributed.DEFAULT_LEAD + 0.6, os.kill, (pid, signal.SIGKILL))
    timer.start()
    try:
        distributed.run(client, target, **dict(RUN, duration=2.0))
        out["killed"] = None
    except distributed.WorkersFailed as exc:
        out["killed"] = {"victim": victim, "other": other, "message": str(exc),
                         "failures": [[f.worker, f.error] for f in exc.failures],
                         "finished": [p.worker for p in exc.parts]}
    finally:
        timer.cancel()
    return out


def remote(scheduler: str, target: str) -> None:
    """Two workers of the cluster at ``scheduler`` load ``target``."""
    from distributed import Client

    with Client(scheduler, timeout=60) as client:
        client.wait_for_workers(2, timeout=60)
        doc = {"closed": parts_and_merged(client, target, duration=2.0)}
    print("RESULT " + json.dumps(doc), flush=True)


def main() -> None:
    if sys.argv[1] == "remote":
        remote(sys.argv[2], sys.argv[3])
        return
    peer_name = sys.argv[1]
    with start_peer(peer_name) as peer, distributed.connect("local:2") as client:
        doc = {"closed": parts_and_merged(client, peer.address),
               "open": parts_and_merged(client, peer.address, rate=3000.0),
               "run": distributed.run(client, peer.address, **RUN).to_dict(histograms=False)}
        if "--faults" in sys.argv:
            doc.update(faults(client, peer.address))
    print("RESULT " + json.dumps(doc), flush=True)


if __name__ == "__main__":
    main()

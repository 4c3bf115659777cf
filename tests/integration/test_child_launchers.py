"""Launchers of long-lived helper processes (ZooKeeper, Jupyter) tie the child to its
parent without a plain fork.

``Popen(preexec_fn=...)`` forks with every ``pthread_atfork`` handler, and grpcio's aborts
the whole process while its threads are busy: a pytest run with grpcio servers in it died
("Fatal Python error: Aborted") when it next started ZooKeeper.  The launchers now start
the child through ``setpriv --pdeathsig`` on Popen's vfork path, where no fork handler
runs; the child still dies with its parent.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from _helpers import TIMEOUT
from triple_py._parent_death import tied_to_parent

# In a child interpreter: a Python fork handler counts the forks that run handlers (the
# preexec_fn path runs them, vfork does not), then a ZooKeeper is started and its pid shown.
_ZOOKEEPER_CHILD = textwrap.dedent("""
    import os, sys, time
    from triple_py.registry.zookeeper_server import LocalZookeeper
    forks = []
    os.register_at_fork(before=lambda: forks.append(1))
    server = LocalZookeeper(start_timeout=60.0).start()
    print(len(forks), server._process.pid, flush=True)
    time.sleep(120)  # until the test kills this process
""")


def test_tied_to_parent_prefixes_setpriv():
    argv = tied_to_parent(["java", "-version"], "TERM")
    assert argv[-2:] == ["java", "-version"]
    assert argv[1:3] == ["--pdeathsig", "TERM"] and argv[0].endswith("setpriv")


def test_zookeeper_starts_without_fork_handlers_and_dies_with_its_parent():
    child = subprocess.Popen([sys.executable, "-c", _ZOOKEEPER_CHILD],
                             stdout=subprocess.PIPE, text=True)
    try:
        line = child.stdout.readline()
        forks, java = (int(x) for x in line.split())
        assert forks == 0, "the launcher forked with the fork handlers"
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=TIMEOUT)
        deadline = time.monotonic() + TIMEOUT
        while _alive(java) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(java), "ZooKeeper outlived the process that started it"
    finally:
        child.kill()
        child.wait(timeout=TIMEOUT)


def _alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False

"""Child processes that end with the process that started them.

Linux's ``PR_SET_PDEATHSIG`` makes the kernel signal a child when its parent dies, so a
killed test run or notebook leaves no ZooKeeper or Jupyter server behind.  Setting it
from ``subprocess.Popen(preexec_fn=...)`` would force a plain ``fork()`` that runs every
``pthread_atfork`` handler in the parent, and grpcio's handler aborts the whole process
when gRPC threads are busy (seen with grpcio servers in the same pytest run).  Instead the
child is started through util-linux's ``setpriv --pdeathsig``, which sets the flag and
then execs the real program (same pid), and ``Popen`` keeps its ``vfork`` path.
"""
from __future__ import annotations

import shutil
import sys
from typing import List, Sequence

__all__ = ["tied_to_parent"]


def tied_to_parent(argv: Sequence[str], signal_name: str = "KILL") -> List[str]:
    """``argv`` prefixed so that the child gets ``SIG<signal_name>`` when its parent
    dies; ``argv`` unchanged where that is not available (not Linux, no ``setpriv``)."""
    setpriv = shutil.which("setpriv")
    if sys.platform != "linux" or setpriv is None:
        return list(argv)
    return [setpriv, "--pdeathsig", signal_name, *argv]

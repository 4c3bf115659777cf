"""Where this Python runs: inside a Jupyter kernel or not (for the live view and the
figures, which display inline in a notebook)."""
from __future__ import annotations

import sys

__all__ = ["in_notebook"]


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), False in a terminal IPython or
    plain Python. Does not import IPython when it is not loaded already."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and hasattr(shell, "kernel")

"""``python -m triple_py.bench`` (the ``triple-bench`` command): see :mod:`triple_py.bench.cli`."""
import sys

from .._cli import bench_main
from .cli import PROG

if __name__ == "__main__":
    sys.exit(bench_main(prog=PROG))

"""``python -m triple_py.benchstat`` (the ``triple-benchstat`` command): see
:mod:`triple_py.benchstat.cli`."""

import sys

from .._cli import benchstat_main

if __name__ == "__main__":
    sys.exit(benchstat_main(prog="python -m triple_py.benchstat"))

"""The harness's user-facing errors: one line each, mapped to an exit status by the CLI."""
from __future__ import annotations

__all__ = ["BenchError", "ConfigError", "TargetError", "RunFailed"]


class BenchError(Exception):
    """A problem to report as one line (``str(err)``) and exit with ``exit_code``."""

    exit_code = 1


class ConfigError(BenchError, ValueError):
    """Bad input: a flag value, a run parameter, a matrix file (exit status 2)."""

    exit_code = 2


class TargetError(BenchError, ConnectionError):
    """The target cannot be reached (exit status 1)."""


class RunFailed(BenchError):
    """The run itself went wrong: every call failed, e.g. an unknown method (exit status 1)."""

"""Moved: the code of ``triple_py.bench.environment`` now lives in
:mod:`triple_py.bench.results.environment`.

This module keeps the old import path for one release: it re-exports the public names."""
from .results.environment import (environment, cpu_model, git_commit, nghttp2_version,
                                  openssl_version)

__all__ = ["environment", "cpu_model", "git_commit", "nghttp2_version", "openssl_version"]

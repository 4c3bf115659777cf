"""Moved: the code of ``triple_py.bench.paired`` now lives in
:mod:`triple_py.bench.results.paired` and :mod:`triple_py.bench.results.statistics`.

This module keeps the old import path for one release: it re-exports the public names."""
from .results.paired import (PairedRatio, compare_pairs, compare_rounds, paired_ratios,
    headline_ratios, format_paired, format_verdicts, PAIRED_COLUMNS)
from .results.statistics import signed_rank_p, walsh_interval, rounds_needed

__all__ = ["PairedRatio", "signed_rank_p", "walsh_interval", "rounds_needed",
           "compare_pairs", "compare_rounds", "paired_ratios", "headline_ratios",
           "format_paired", "format_verdicts", "PAIRED_COLUMNS"]

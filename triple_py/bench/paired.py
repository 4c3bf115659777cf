"""Moved: the code of ``triple_py.bench.paired`` now lives in
:mod:`triple_py.bench.results.paired` (the ratios), :mod:`triple_py.bench.results.statistics`
(the tests and intervals) and :mod:`triple_py.bench.report.paired` (the table and verdicts as
text).

This module keeps the old import path for one release: it re-exports the public names."""
from .report.paired import format_paired, format_verdicts, verdict_block
from .results.paired import (PAIRED_COLUMNS, VALUES, PairedRatio, compare_pairs, compare_rounds,
                             headline_ratios, paired_ratios)
from .results.statistics import (ALPHA, MARGIN, MAX_ROUNDS, MIN_PAIRS, rounds_needed,
                                 signed_rank_p, walsh_interval)

__all__ = ["PairedRatio", "signed_rank_p", "walsh_interval", "rounds_needed",
           "compare_pairs", "compare_rounds", "paired_ratios", "headline_ratios",
           "format_paired", "format_verdicts", "PAIRED_COLUMNS", "verdict_block", "VALUES",
           "ALPHA", "MARGIN", "MAX_ROUNDS", "MIN_PAIRS"]

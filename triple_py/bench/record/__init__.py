"""The record one arm run produces: :class:`~.result.BenchResult` with its
:class:`~.result.Latency` figures, histograms and time series (:mod:`.result`), and its HTML
tables (:mod:`.html_tables`, shared with the notebooks' views). The floor every arm writes
and every reader reads; it imports nothing of the harness."""

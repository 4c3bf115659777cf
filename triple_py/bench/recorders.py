"""Moved: the code of ``triple_py.bench.recorders`` now lives in
:mod:`triple_py.bench.arms.recorders`.

This module keeps the old import path for one release: it re-exports the public names."""
from .arms.recorders import (WARMUP, MEASURE, STOP, Recorder, StreamRecorder, describe,
                             status_of, percentile, process_cpu, thread_window, sleep_in_slices,
                             STOP_GRACE, SLICE)

__all__ = ["WARMUP", "MEASURE", "STOP", "Recorder", "StreamRecorder", "describe",
           "status_of", "percentile", "process_cpu", "thread_window", "sleep_in_slices",
           "STOP_GRACE", "SLICE"]

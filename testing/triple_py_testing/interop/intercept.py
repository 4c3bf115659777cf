"""The interceptors of ``python -m triple_py_testing.interop --intercepted``: the grid run through
``intercept_channel``, to show that interception changes nothing a peer can see.

Each of the two interceptors implements all four kinds, hands the continuation a copy of
the call details it built itself (so every field must survive the round trip) and counts
the calls it saw; a case that opened channels but whose calls never went through both
interceptors fails.
"""
from __future__ import annotations

import threading
from typing import Any, Callable

import triple_py
from triple_py._interceptors import CallDetails


class Counting(triple_py.UnaryUnaryClientInterceptor, triple_py.UnaryStreamClientInterceptor,
               triple_py.StreamUnaryClientInterceptor, triple_py.StreamStreamClientInterceptor):
    """Passes every call on with copied details, counting them."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def _pass(self, continuation: Callable[[Any, Any], Any], details: Any,
              request: Any) -> Any:
        with self._lock:
            self.calls += 1
        copy = CallDetails(details.method, details.timeout, details.metadata,
                           details.credentials, details.wait_for_ready, details.compression)
        return continuation(copy, request)

    intercept_unary_unary = _pass
    intercept_unary_stream = _pass
    intercept_stream_unary = _pass
    intercept_stream_stream = _pass


class Interception:
    """The interceptors of one case, and the check that they saw its calls."""

    def __init__(self) -> None:
        self.interceptors = (Counting(), Counting())
        self.channels = 0

    def wrap(self, channel: triple_py.Channel) -> Any:
        """``channel`` behind both interceptors."""
        self.channels += 1
        return triple_py.intercept_channel(channel, *self.interceptors)

    def problem(self) -> str:
        """Why the case's calls did not all go through the interceptors ('' if they did)."""
        counts = [i.calls for i in self.interceptors]
        if self.channels and (counts[0] == 0 or counts[0] != counts[1]):
            return f"interceptors saw {counts[0]} and {counts[1]} calls"
        return ""

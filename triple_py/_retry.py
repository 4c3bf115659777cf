"""Retries of calls: the service config's ``retryPolicy`` and gRPC's transparent
retry (proposal A6).  Unary calls and server streams start the same request again;
calls whose requests stream replay the ones they sent (``_replay``, and the asyncio
calls in ``aio/_calls.py``); futures without a policy get the transparent retry only
(``_future.UnaryFuture._settle``).

A finished attempt that failed is looked at once (``Retries.delay``):
- a live connection did not process it (``call.unprocessed() == REFUSED``: the
  server refused the stream, the stream was above a GOAWAY's last-stream-id, or the
  connection was closing):
  started again at once, without counting as an attempt, at most
  ``TRANSPARENT_LIMIT`` times per call (A6 retries these without limit only with
  wait_for_ready; a bound keeps a channel that cannot connect from spinning);
- its status is in ``retryableStatusCodes``, the server did not begin a response (response
  headers that were not trailers-only commit the call, as A6 says) and attempts are left:
  started again after
  the policy's backoff (or the server's ``grpc-retry-pushback-ms``; a negative or
  malformed pushback stops retrying), if the retry throttle has tokens and the delay
  ends before the call's deadline.
The whole call keeps its original deadline: each attempt gets what is left of it.

The sync multi-callables wait with ``time.sleep``, the asyncio ones with
``asyncio.sleep``; both ask ``Retries`` what to do.
"""
from __future__ import annotations

import time
from typing import Any, Optional

from ._service_config import RetryPolicy, RetryThrottle

TRANSPARENT_LIMIT = 4
PUSHBACK_KEY = "grpc-retry-pushback-ms"
# call.unprocessed(): csrc/tri_call.h TRI_UNPROCESSED_*.  Only REFUSED is retried here;
# NO_CONNECTION (the backend cannot connect) moves to another backend in _balancer and
# fails at once otherwise, as grpc fails calls without wait_for_ready.
REFUSED, NO_CONNECTION = 1, 2


class Retries:
    """The retry bookkeeping of one call."""

    __slots__ = ("policy", "throttle", "deadline", "attempts", "transparent")

    def __init__(self, policy: Optional[RetryPolicy], throttle: Optional[RetryThrottle],
                 deadline: Optional[float]) -> None:
        self.policy = policy
        self.throttle = throttle
        self.deadline = deadline  # time.monotonic() instant, None for none
        self.attempts = 1
        self.transparent = 0

    def delay(self, call: Any) -> Optional[float]:
        """Seconds to wait before the next attempt, or None to end with ``call``
        (a finished, failed attempt)."""
        if call.unprocessed() == REFUSED and self.transparent < TRANSPARENT_LIMIT:
            self.transparent += 1
            return 0.0 if self._time_left(0.0) else None
        policy = self.policy
        if policy is None or call.code() not in policy.codes:
            return None
        if call.response_started():  # committed (A6): the server began its response
            return None
        if self.throttle is not None and not self.throttle.on_failure():
            return None
        if self.attempts >= policy.max_attempts:
            return None
        pushback = _pushback_s(call)
        if pushback is not None and pushback < 0:
            return None
        wait = policy.backoff(self.attempts) if pushback is None else pushback
        if not self._time_left(wait):
            return None
        self.attempts += 1
        return wait

    def succeeded(self) -> None:
        """The call ended OK (feeds the throttle)."""
        if self.throttle is not None:
            self.throttle.on_success()

    def _time_left(self, wait: float) -> bool:
        return self.deadline is None or time.monotonic() + wait < self.deadline

    def timeout_left(self) -> Optional[float]:
        """The next attempt's timeout: what is left of the call's deadline."""
        if self.deadline is None:
            return None
        return max(self.deadline - time.monotonic(), 0.0)


def deadline_of(call: Any) -> Optional[float]:
    """The ``time.monotonic()`` instant of a started call's deadline, None without one
    (the C core keeps it, so the call path spends nothing on it until a retry)."""
    left = call.time_left() if hasattr(call, "time_left") else None
    return None if left is None else time.monotonic() + left


def _pushback_s(call: Any) -> Optional[float]:
    """The server's ``grpc-retry-pushback-ms`` in seconds: None when absent, -1 when
    it says not to retry (negative or not a number)."""
    try:
        trailing = call.metadata()[1]
    except Exception:  # an EndedCall or a call without metadata
        return None
    for key, value in trailing or ():
        if key == PUSHBACK_KEY:
            text = value.decode() if isinstance(value, bytes) else str(value)
            return int(text) / 1000.0 if text.isdigit() else -1.0
    return None

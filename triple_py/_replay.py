"""Retries of calls whose requests stream (client streaming and bidi), as gRPC's retry
design (proposal A6) describes them.

The request messages a call has sent are kept, as the serialized bytes that went out,
and sent again, in order, on the next attempt; whether there is a next attempt is
``_retry.Retries``'s decision, as for unary calls (policy, throttle, pushback,
transparent retry, the one deadline of the whole call).  A call **commits** (no more
attempts, the kept messages are dropped) when its response began (``Retries`` reads
``response_started()``), when a response message is read, or when the kept bytes
would pass ``grpc.per_rpc_retry_buffer_size`` for the call or
``grpc.retry_buffer_size`` over the channel's calls (``BufferBudget``).

``ReplayingCall`` stands in for a core call where the sync layer writes requests
(``write``, ``done_writing``, ``cancel``): the request pump and ``StreamingCall`` use
it unchanged.  Whichever thread first sees the current attempt fail (the writer whose
write was refused, the reader at the end of the responses, the waiter of a client
stream) makes the decision, under the call's lock; the others find the new attempt.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Optional

from ._retry import Retries, deadline_of


class BufferBudget:
    """The request bytes kept for retries over the calls of one channel."""

    __slots__ = ("limit", "used", "_lock")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Counts ``n`` more bytes kept; False (nothing counted) past the limit."""
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            return True

    def give_back(self, n: int) -> None:
        """``n`` bytes are no longer kept."""
        with self._lock:
            self.used -= n


class KeptRequests:
    """The requests one call has sent, kept for its next attempt within the per-call
    limit and the channel's ``BufferBudget`` (used by ``ReplayingCall`` and by the
    asyncio request streams)."""

    __slots__ = ("_limit", "_budget", "messages", "size")

    def __init__(self, per_call_limit: int, budget: BufferBudget) -> None:
        self._limit = per_call_limit
        self._budget = budget
        self.messages: list[bytes] = []
        self.size = 0

    def add(self, payload: Any) -> bool:
        """Keeps ``payload``; False (nothing kept) when it would pass either limit: the
        call must then commit."""
        n = len(payload)
        if self.size + n > self._limit or not self._budget.take(n):
            return False
        self.size += n
        self.messages.append(bytes(payload))
        return True

    def release(self) -> None:
        """Drops the kept requests and gives their bytes back to the budget."""
        self._budget.give_back(self.size)
        self.messages, self.size = [], 0

    def __del__(self) -> None:
        if self.size:  # abandoned before its call ended: free its share
            self._budget.give_back(self.size)


class ReplayingCall:
    """One streaming call over its attempts: ``core`` is the current attempt."""

    def __init__(self, start: Callable[[Optional[float]], Any], first: Any,
                 retries: Retries, per_rpc_limit: int, budget: BufferBudget) -> None:
        self._start = start  # timeout left -> a new attempt's core call
        self.core = first
        self._retries = retries
        self._kept: Optional[KeptRequests] = KeptRequests(per_rpc_limit, budget)  # None
        # once committed
        self._half_closed = False
        self._final = False  # no further attempt (committed to an end, or cancelled)
        self._lock = threading.Lock()

    @classmethod
    def begin(cls, start: Callable[[Optional[float]], Any], timeout: Optional[float],
              retries_of: Callable[[Any], Retries], options: Any,
              budget: BufferBudget) -> "ReplayingCall":
        """Starts the first attempt: ``start(timeout)``."""
        first = start(timeout)
        return cls(start, first, retries_of(first), options.per_rpc_retry_buffer_size, budget)

    # -- the request side (what the pump and StreamingCall.write use) -------------
    def write(self, payload: Any) -> bool:
        """Sends one serialized request on the current attempt and keeps it for the
        next; False once the call has ended for good."""
        if self._kept is None:  # committed: this attempt is the last (set under the lock)
            return self.core.write(payload)
        with self._lock:
            core = self.core
            if self._kept is not None:
                self._keep(payload)
        if core.write(payload):
            return True
        following = self.failed(core)
        return following is not None

    def _keep(self, payload: Any) -> None:
        if not self._kept.add(payload):  # type: ignore[union-attr]
            self._commit()

    def _commit(self) -> None:
        """No more attempts may replay the requests: drop them (the lock is held or
        the call is past its retries)."""
        kept, self._kept = self._kept, None
        if kept is not None:
            kept.release()

    def flush(self) -> None:
        """Sends queued requests of the current attempt now."""
        self.core.flush()

    def done_writing(self) -> None:
        """Half-closes the request stream (of every later attempt too)."""
        with self._lock:
            self._half_closed = True
            core = self.core
        core.done_writing()

    def cancel(self, *code: int) -> bool:
        """Cancels the current attempt; no further attempt starts."""
        self._final = True
        return self.core.cancel(*code)

    # -- attempts ----------------------------------------------------------------
    def response_began(self) -> None:
        """A response message arrived: the call is committed."""
        if self._kept is not None:
            with self._lock:
                self._commit()

    def failed(self, core: Any) -> Optional[Any]:
        """``core`` (an attempt of this call) ended or refused a write: the attempt
        that follows it (already started, its requests sent again), or None when the
        call ends with ``core``'s outcome."""
        core.wait()
        with self._lock:
            if core is not self.core:
                return self.core
            if core.code() == 0 and not self._final:
                self._retries.succeeded()
            if self._final or core.code() == 0 or self._kept is None:
                return self._end()
            delay = self._retries.delay(core)
            if delay is None:
                return self._end()
            if delay:
                time.sleep(delay)
            if self._final:  # cancelled while waiting
                return self._end()
            following = self._start(self._retries.timeout_left())
            self.core = following
            for payload in self._kept.messages:
                if not following.write(payload):
                    break
            else:
                if self._half_closed:
                    following.done_writing()
            if self._final:
                following.cancel()
            return following

    def _end(self) -> None:
        """The call ends with its current attempt (the lock is held)."""
        self._final = True
        self._commit()
        return None

    def ended_ok(self) -> None:
        """The call ended OK (feeds the retry throttle once)."""
        self.failed(self.core)

    def finish(self) -> Any:
        """Waits for the call's end over its attempts (the requests were all written):
        the last attempt's core call."""
        core = self.core
        while True:
            following = self.failed(core)  # None after an OK end too
            if following is None:
                return core
            core = following


def retries_for(policy: Any, throttle: Any) -> Callable[[Any], Retries]:
    """``Retries`` of a call given its first attempt, for ``ReplayingCall.begin``."""
    return lambda first: Retries(policy, throttle, deadline_of(first))

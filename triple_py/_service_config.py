"""grpc's service config (``grpc.service_config`` channel option, JSON): the
load-balancing policy, per-method timeouts and retry policies, retry throttling.

Follows grpc/grpc ``doc/service_config.md`` and the retry design (proposal A6):
``methodConfig[].name`` matches ``{service, method}`` first, then ``{service}``, then
the empty name; ``retryPolicy`` needs ``maxAttempts`` >= 2 (capped at 5),
``initialBackoff`` and ``maxBackoff`` > 0 ("0.1s" strings), ``backoffMultiplier`` > 0 and
a non-empty ``retryableStatusCodes`` (names or numbers); ``retryThrottling`` needs
``maxTokens`` in (0, 1000] and ``tokenRatio`` > 0.  A malformed config is a ValueError
when the channel is made, as grpcio rejects it.
"""
from __future__ import annotations

import json
import random
import re
import threading
from dataclasses import dataclass
from typing import Any, Dict, FrozenSet, Optional, Tuple

from ._status import StatusCode

MAX_ATTEMPTS_CAP = 5  # grpc's limit on maxAttempts
_DURATION = re.compile(r"^(\d+)(\.\d{1,9})?s$")
_BY_NAME = {c.name: c.value[0] for c in StatusCode}


def duration_s(value: Any, what: str) -> float:
    """A protobuf JSON duration ("1.5s") in seconds."""
    if not isinstance(value, str) or not _DURATION.match(value):
        raise ValueError(f"service config: {what} must be a duration like \"0.1s\", "
                         f"not {value!r}")
    return float(value[:-1])


@dataclass(frozen=True)
class RetryPolicy:
    """One method's ``retryPolicy``."""

    max_attempts: int
    initial_backoff: float
    max_backoff: float
    multiplier: float
    codes: FrozenSet[int]

    def backoff(self, retry: int) -> float:
        """The delay before retry number ``retry`` (1 for the first): uniformly random
        in [0, min(initial * multiplier**(retry-1), max)], as A6 specifies."""
        cap = min(self.initial_backoff * self.multiplier ** (retry - 1), self.max_backoff)
        return random.uniform(0, cap)

    @classmethod
    def parse(cls, raw: Any) -> "RetryPolicy":
        if not isinstance(raw, dict):
            raise ValueError("service config: retryPolicy must be an object")
        attempts = raw.get("maxAttempts")
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 2:
            raise ValueError("service config: retryPolicy.maxAttempts must be an int >= 2, "
                             f"not {attempts!r}")
        initial = duration_s(raw.get("initialBackoff"), "retryPolicy.initialBackoff")
        maximum = duration_s(raw.get("maxBackoff"), "retryPolicy.maxBackoff")
        mult = raw.get("backoffMultiplier")
        if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
            raise ValueError("service config: retryPolicy.backoffMultiplier must be > 0, "
                             f"not {mult!r}")
        if initial <= 0 or maximum <= 0:
            raise ValueError("service config: retryPolicy backoffs must be > 0")
        codes = raw.get("retryableStatusCodes")
        if not isinstance(codes, list) or not codes:
            raise ValueError("service config: retryPolicy.retryableStatusCodes must be a "
                             "non-empty list")
        return cls(min(attempts, MAX_ATTEMPTS_CAP), initial, maximum, float(mult),
                   frozenset(_code(c) for c in codes))


def _code(value: Any) -> int:
    if isinstance(value, str) and value.upper() in _BY_NAME:
        return _BY_NAME[value.upper()]
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 16:
        return value
    raise ValueError(f"service config: unknown status code {value!r}")


@dataclass(frozen=True)
class MethodConfig:
    """What the service config says about one method."""

    timeout: Optional[float] = None
    retry: Optional[RetryPolicy] = None
    wait_for_ready: Optional[bool] = None  # None: not set (a call's own value wins anyway)


NO_CONFIG = MethodConfig()


class RetryThrottle:
    """grpc's retry throttling: a token bucket per channel.  Every failed attempt
    (a retryable status) takes one token, every success gives ``token_ratio`` back;
    retries are allowed only while more than half of ``max_tokens`` are left."""

    def __init__(self, max_tokens: float, token_ratio: float) -> None:
        self.max_tokens = max_tokens
        self.token_ratio = token_ratio
        self._tokens = max_tokens
        self._lock = threading.Lock()

    def on_failure(self) -> bool:
        """Records a failed attempt; True if a retry is still allowed."""
        with self._lock:
            self._tokens = max(0.0, self._tokens - 1)
            return self._tokens > self.max_tokens / 2

    def on_success(self) -> None:
        with self._lock:
            self._tokens = min(self.max_tokens, self._tokens + self.token_ratio)

    @property
    def tokens(self) -> float:
        return self._tokens


class ServiceConfig:
    """A parsed ``grpc.service_config``."""

    def __init__(self, lb_policy: Optional[str] = None,
                 methods: Optional[Dict[Tuple[str, str], MethodConfig]] = None,
                 throttle: Optional[RetryThrottle] = None) -> None:
        self.lb_policy = lb_policy
        self._methods = methods or {}
        self.throttle = throttle
        self._cache: Dict[str, MethodConfig] = {}

    @property
    def has_methods(self) -> bool:
        return bool(self._methods)

    def method(self, path: str) -> MethodConfig:
        """The config of ``/pkg.Service/Method`` (NO_CONFIG when none applies)."""
        if not self._methods or not isinstance(path, str):
            return NO_CONFIG  # a bad path fails when the call starts, with its own error
        found = self._cache.get(path)
        if found is None:
            service, _, name = path.lstrip("/").rpartition("/")
            found = (self._methods.get((service, name)) or self._methods.get((service, ""))
                     or self._methods.get(("", "")) or NO_CONFIG)
            self._cache[path] = found
        return found

    @classmethod
    def parse(cls, text: Optional[str]) -> "ServiceConfig":
        if text is None:
            return cls()
        try:
            raw = json.loads(text) if isinstance(text, (str, bytes)) else text
        except ValueError as exc:
            raise ValueError(f"grpc.service_config is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise ValueError("grpc.service_config must be a JSON object")
        return cls(_lb_policy(raw), _methods(raw.get("methodConfig", [])),
                   _throttle(raw.get("retryThrottling")))


def _lb_policy(raw: Dict[str, Any]) -> Optional[str]:
    """The first policy of ``loadBalancingConfig`` we know (grpc picks the first it
    supports), else the deprecated ``loadBalancingPolicy``."""
    configs = raw.get("loadBalancingConfig")
    if configs is not None:
        if not isinstance(configs, list):
            raise ValueError("service config: loadBalancingConfig must be a list")
        for entry in configs:
            if not isinstance(entry, dict) or len(entry) != 1:
                raise ValueError("service config: each loadBalancingConfig entry has one key")
            name = next(iter(entry))
            if name in ("pick_first", "round_robin"):
                return name
        raise ValueError("service config: no supported policy in loadBalancingConfig "
                         "(pick_first, round_robin)")
    legacy = raw.get("loadBalancingPolicy")
    if legacy is None:
        return None
    if not isinstance(legacy, str) or legacy.lower() not in ("pick_first", "round_robin"):
        raise ValueError(f"service config: unsupported loadBalancingPolicy {legacy!r}")
    return legacy.lower()


def _methods(entries: Any) -> Dict[Tuple[str, str], MethodConfig]:
    if not isinstance(entries, list):
        raise ValueError("service config: methodConfig must be a list")
    out: Dict[Tuple[str, str], MethodConfig] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError("service config: a methodConfig entry must be an object")
        timeout = (duration_s(entry["timeout"], "methodConfig.timeout")
                   if "timeout" in entry else None)
        retry = RetryPolicy.parse(entry["retryPolicy"]) if "retryPolicy" in entry else None
        wait_for_ready = entry.get("waitForReady")
        if wait_for_ready is not None and not isinstance(wait_for_ready, bool):
            raise ValueError("service config: methodConfig.waitForReady must be true or "
                             f"false, not {wait_for_ready!r}")
        config = MethodConfig(timeout, retry, wait_for_ready)
        for name in entry.get("name", [{}]):
            if not isinstance(name, dict):
                raise ValueError("service config: a methodConfig name must be an object")
            service, method = name.get("service", ""), name.get("method", "")
            if method and not service:
                raise ValueError("service config: a name with a method needs a service")
            key = (service, method)
            if key in out:
                raise ValueError(f"service config: duplicate methodConfig name {name}")
            out[key] = config
    return out


def _throttle(raw: Any) -> Optional[RetryThrottle]:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("service config: retryThrottling must be an object")
    tokens, ratio = raw.get("maxTokens"), raw.get("tokenRatio")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens <= 1000:
        raise ValueError("service config: retryThrottling.maxTokens must be in (0, 1000]")
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or ratio <= 0:
        raise ValueError("service config: retryThrottling.tokenRatio must be > 0")
    return RetryThrottle(float(tokens), round(float(ratio), 3))

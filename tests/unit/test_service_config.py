"""grpc.service_config parsing (grpc doc/service_config.md, retry design A6)."""
from __future__ import annotations

import json

import pytest

from triple_py import StatusCode
from triple_py._service_config import RetryPolicy, RetryThrottle, ServiceConfig

RETRY = {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s",
         "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", 4]}


def config(**raw) -> ServiceConfig:
    return ServiceConfig.parse(json.dumps(raw))


def test_method_lookup_order():
    sc = config(methodConfig=[
        {"name": [{"service": "s.S", "method": "M"}], "timeout": "1s"},
        {"name": [{"service": "s.S"}], "timeout": "2s"},
        {"name": [{}], "timeout": "3.5s", "retryPolicy": RETRY},
    ])
    assert sc.method("/s.S/M").timeout == 1.0
    assert sc.method("/s.S/Other").timeout == 2.0
    other = sc.method("/t.T/X")
    assert other.timeout == 3.5
    assert other.retry.codes == {StatusCode.UNAVAILABLE.value[0], 4}
    assert other.retry.max_attempts == 3


def test_max_attempts_is_capped_at_5():
    assert RetryPolicy.parse({**RETRY, "maxAttempts": 9}).max_attempts == 5


@pytest.mark.parametrize("change, message", [
    ({"maxAttempts": 1}, "maxAttempts"),
    ({"initialBackoff": "100ms"}, "duration"),
    ({"maxBackoff": "0s"}, "backoffs must be > 0"),
    ({"backoffMultiplier": 0}, "backoffMultiplier"),
    ({"retryableStatusCodes": []}, "non-empty"),
    ({"retryableStatusCodes": ["NOPE"]}, "unknown status code"),
])
def test_bad_retry_policy(change, message):
    with pytest.raises(ValueError, match=message):
        config(methodConfig=[{"name": [{}], "retryPolicy": {**RETRY, **change}}])


def test_backoff_stays_within_the_exponential_cap():
    policy = RetryPolicy.parse(RETRY)
    for retry, cap in ((1, 0.1), (2, 0.2), (3, 0.4), (6, 1.0)):
        assert all(0 <= policy.backoff(retry) <= cap for _ in range(200))


def test_load_balancing_config():
    assert config(loadBalancingConfig=[{"weird": {}}, {"round_robin": {}}]).lb_policy == \
        "round_robin"
    assert config(loadBalancingPolicy="ROUND_ROBIN").lb_policy == "round_robin"
    assert config().lb_policy is None
    with pytest.raises(ValueError, match="no supported policy"):
        config(loadBalancingConfig=[{"grpclb": {}}])


def test_not_json_is_an_error():
    with pytest.raises(ValueError, match="not JSON"):
        ServiceConfig.parse("{")


def test_throttle_follows_grpc_token_bucket():
    sc = config(retryThrottling={"maxTokens": 4, "tokenRatio": 0.5})
    throttle = sc.throttle
    assert throttle.on_failure()        # 3 > 2
    assert not throttle.on_failure()    # 2: not above half
    throttle.on_success()               # 2.5
    assert throttle.tokens == 2.5
    with pytest.raises(ValueError, match="maxTokens"):
        config(retryThrottling={"maxTokens": 0, "tokenRatio": 1})
    assert isinstance(throttle, RetryThrottle)


def test_wait_for_ready_per_method():
    sc = config(methodConfig=[
        {"name": [{"service": "s.S", "method": "M"}], "waitForReady": True},
        {"name": [{"service": "s.S"}], "waitForReady": False},
    ])
    assert sc.method("/s.S/M").wait_for_ready is True
    assert sc.method("/s.S/Other").wait_for_ready is False
    assert sc.method("/t.T/X").wait_for_ready is None  # not set: the call's own value


def test_wait_for_ready_must_be_a_boolean():
    with pytest.raises(ValueError, match="waitForReady must be true or false"):
        config(methodConfig=[{"name": [{}], "waitForReady": "yes"}])

"""What every arm checks of a response, with and without the run's ``verify``.

Without it an arm counts a call OK on its OK status, as h2load and ghz do (the C
generator does not even keep the response's bytes): no arm does work another skips, so
their CPU per call compares like with like. With it every arm (C and Python, grpcio too)
compares each response with its request, and a server whose echo is wrong in one byte
(the rogue peer's AlteredEcho: every length right) fails every call.
"""
from __future__ import annotations

import pytest

from triple_py.bench import run
from triple_py.bench.errors import ConfigError
from triple_py.bench.spec.matrix import matrix_from_dict, parse_matrix

ALTERED = "/rogue.Rogue/AlteredEcho"
C_COUNT = dict(count=20, duration=0, warmup=0, concurrency=4)
PY_WINDOW = dict(duration=0.3, warmup=0.05, concurrency=4)
UNARY_ARMS = ["fastpath", "stream-path", "triple-py-sync", "triple-py-aio", "grpcio-sync",
              "grpcio-aio"]
STREAM_ARMS = ["bidi", "triple-py-bidi", "grpcio-aio-bidi"]


def window(mode: str) -> dict:
    return C_COUNT if mode in ("fastpath", "stream-path", "bidi") else PY_WINDOW


@pytest.mark.parametrize("mode", UNARY_ARMS)
def test_a_wrong_echo_is_a_mismatch_only_when_verified(rogue_server, mode):
    plain = run(rogue_server.address, mode=mode, method=ALTERED, payload_size=32,
                **window(mode))
    assert plain.calls > 0 and plain.errors == 0 and plain.status_codes == {"OK": plain.calls}
    checked = run(rogue_server.address, mode=mode, method=ALTERED, payload_size=32,
                  verify=True, **window(mode))
    assert checked.calls > 0 and checked.errors == checked.calls
    assert checked.status_codes == {"MISMATCH": checked.calls}


@pytest.mark.parametrize("mode", STREAM_ARMS)
def test_a_wrong_stream_echo_fails_the_stream_only_when_verified(rogue_server, mode):
    kw = dict(method=ALTERED, payload_size=32, stream_messages=3, **window(mode))
    plain = run(rogue_server.address, mode=mode, **kw)
    assert plain.calls > 0 and plain.errors == 0
    checked = run(rogue_server.address, mode=mode, verify=True, **kw)
    assert checked.calls > 0 and checked.errors == checked.calls


@pytest.mark.parametrize("wire", ["grpc", "triple"])
@pytest.mark.parametrize("mode", ["fastpath", "stream-path"])
@pytest.mark.parametrize("size", [32, 100_000])  # 100 kB: a message reassembled over frames
def test_a_right_echo_passes_verification(mode, wire, size):
    r = run(None, mode=mode, wire=wire, payload_size=size, verify=True, **C_COUNT)
    assert r.calls >= 20 and r.errors == 0 and r.status_codes == {"OK": r.calls}
    assert r.extra["mismatches"] == 0


def test_the_matrix_verify_key_reaches_every_arm_and_an_arm_may_turn_it_off():
    m = parse_matrix('''
name = "v"
verify = true
arms = ["fastpath", "grpcio-sync", "quick"]
[arm.quick]
mode = "triple-py-aio"
verify = false
[scenarios]
payload = [64]
concurrency = [4]
''')
    scenario = m.scenarios[0]
    by_arm = {a.name: m.spec(scenario, a, "127.0.0.1:1").verify for a in m.arms}
    assert by_arm == {"fastpath": True, "grpcio-sync": True, "quick": False}
    stored = m.to_dict() | {"scenarios": [{"payload": 64, "concurrency": 4}]}
    assert matrix_from_dict(stored).verify is True
    axes = '\n[scenarios]\npayload = [64]\nconcurrency = [4]\n'
    assert parse_matrix('arms = ["fastpath"]' + axes).verify is False
    with pytest.raises(ConfigError, match="verify"):
        parse_matrix('verify = "yes"\narms = ["fastpath"]' + axes)
    with pytest.raises(ConfigError, match="verify"):
        parse_matrix('arms = ["q"]' + axes + '[arm.q]\nmode = "bidi"\nverify = 1\n')

"""How the C load generator judges a unary answer, in both unary modes.

The fast path takes its answer through the unary response path; the stream-path arm (the
baseline, a full-duplex call like the seeds' duplexHTTPCall) reads it as a stream. Both must
count the same calls as OK and the same as failed, or the two arms would not measure the
same work: an answer of two messages is INTERNAL in either.
"""
from __future__ import annotations

import pytest

from triple_py.bench import run

COUNT = dict(count=20, duration=0, warmup=0, concurrency=4, payload_size=32)


@pytest.mark.parametrize("mode", ["fastpath", "stream-path"])
def test_one_message_answer_is_ok(rogue_server, mode):
    r = run(rogue_server.address, mode=mode, method="/rogue.Rogue/Echo", **COUNT)
    assert r.status_codes == {"OK": r.calls} and r.calls >= 20
    assert r.per_call["bytes_read"] > 32


@pytest.mark.parametrize("mode", ["fastpath", "stream-path"])
def test_two_message_answer_is_internal(rogue_server, mode):
    r = run(rogue_server.address, mode=mode, method="/rogue.Rogue/TwoMessages", **COUNT)
    assert r.status_codes == {"INTERNAL": r.calls} and r.errors == r.calls >= 20

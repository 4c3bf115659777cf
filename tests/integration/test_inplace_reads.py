"""In-place reads (csrc/tri_inplace.h): the DATA payload of large responses is read
straight into the message it belongs to, betting on the order of the server's frames
(back to back, or in turn across streams as grpc-go sends them).  Whatever the bets,
every response must arrive whole and right; the counter shows the path was taken."""
from __future__ import annotations

import asyncio
import os
import threading

import triple_py
import triple_py.aio
from triple_py.bench.workload.messages import UNARY_METHOD
from triple_py.testing import EchoServer

MiB = 1 << 20


def _payloads(n: int, size: int) -> list[bytes]:
    """Distinct random payloads: a byte misplaced from one into another shows."""
    return [os.urandom(size - i * 37) for i in range(n)]


def _concurrent_echo(address: str, threads: int, calls: int, size: int,
                     options: tuple = ()) -> dict:
    """`threads` threads each echo `calls` distinct payloads; returns the stats delta."""
    with triple_py.insecure_channel(address, options=list(options)) as ch:
        call = ch.unary_unary(UNARY_METHOD)
        before = ch.stats()
        errors: list[str] = []

        def work(k: int) -> None:
            for i, p in enumerate(_payloads(calls, size)):
                got = call(p, timeout=60)
                if got != p:
                    errors.append(f"thread {k} call {i}: {len(got)} bytes, not its echo")

        ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert not errors, errors[:3]
        after = ch.stats()
        return {k: after[k] - before[k] for k in after}


def test_back_to_back_frames_land_in_place_and_whole():
    with EchoServer() as srv:
        d = _concurrent_echo(srv.address, 4, 6, MiB)
    assert d["bytes_read_in_place"] > d["bytes_read"] // 2, d


def test_frames_in_turn_across_streams_from_grpc_go(go_server):
    """grpc-go sends one 16 KiB frame per stream in turn: the bets follow its order."""
    d = _concurrent_echo(go_server.address, 16, 4, MiB)
    assert d["bytes_read_in_place"] > d["bytes_read"] // 2, d


def test_the_option_off_reads_nothing_in_place_and_every_byte_stays_right(go_server):
    """triple.in_place_reads False (the A/B of this feature): every byte goes through
    the read buffer, and the echoes are still whole."""
    d = _concurrent_echo(go_server.address, 8, 6, 1 << 20,
                         options=(("triple.in_place_reads", False),))
    assert d["bytes_read"] > 8 * 6 << 20 and d["bytes_read_in_place"] == 0, d


def test_small_and_odd_sizes_stay_right(go_server):
    """Messages that end mid-frame, sizes around the frame size and the 4 KiB floor."""
    with triple_py.insecure_channel(go_server.address) as ch:
        call = ch.unary_unary(UNARY_METHOD)
        for size in (4095, 4096, 16379, 16384, 16389, 40000, 65536 * 3 + 7):
            for p in _payloads(3, size):
                assert call(p, timeout=30) == p, size


def test_aio_responses_in_place(go_server):
    async def main() -> dict:
        async with triple_py.aio.insecure_channel(go_server.address) as ch:
            call = ch.unary_unary(UNARY_METHOD)
            before = ch.stats()
            ps = _payloads(24, MiB // 2)
            got = await asyncio.gather(*(call(p, timeout=60) for p in ps))
            assert [g == p for g, p in zip(got, ps)] == [True] * len(ps)
            after = ch.stats()
            return {k: after[k] - before[k] for k in after}
    d = asyncio.run(main())
    assert d["bytes_read_in_place"] > 0, d

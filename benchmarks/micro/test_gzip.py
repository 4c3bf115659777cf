"""gzip of a message body: the core's pooled zlib streams (impl=c, via ctypes) vs Python's
zlib module (impl=py), compress and decompress."""
from __future__ import annotations

import ctypes
import zlib

import pytest


def _body(n: int) -> bytes:
    line = b'{"user": 12345, "name": "triple", "tags": ["a", "b", "c"], "ok": true}\n'
    return (line * (n // len(line) + 1))[:n]


@pytest.mark.parametrize("size", [1024, 65536])
@pytest.mark.parametrize("impl", ["c", "py"])
def test_gzip_compress(benchmark, core, pool, impl, size):
    body = _body(size)
    if impl == "c":
        src = ctypes.create_string_buffer(body, len(body))
        out = core.BUF_P()
        comp, put = core.lib.tri_gzip_compress, core.lib.tri_pool_put
        zp, p, o = pool.zptr, pool.ptr, ctypes.byref(out)

        def run():
            rc = comp(zp, p, src, size, 5, o)
            put(p, out)
            return rc

        assert benchmark(run) == 0
    else:
        def run():
            c = zlib.compressobj(6, zlib.DEFLATED, 31)
            return c.compress(body) + c.flush()

        assert zlib.decompress(benchmark(run), 31) == body


@pytest.mark.parametrize("size", [1024, 65536])
@pytest.mark.parametrize("impl", ["c", "py"])
def test_gzip_decompress(benchmark, core, pool, impl, size):
    body = _body(size)
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    gz = c.compress(body) + c.flush()
    if impl == "c":
        src = ctypes.create_string_buffer(gz, len(gz))
        out = core.BUF_P()
        dec, put = core.lib.tri_gzip_decompress, core.lib.tri_pool_put
        zp, p, o = pool.zptr, pool.ptr, ctypes.byref(out)
        assert dec(zp, p, src, len(gz), 1 << 24, o) == 0
        assert core.buf_bytes(out) == body
        put(p, out)

        def run():
            rc = dec(zp, p, src, len(gz), 1 << 24, o)
            put(p, out)
            return rc

        assert benchmark(run) == 0
    else:
        assert benchmark(zlib.decompress, gz, 31) == body

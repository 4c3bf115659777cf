"""tri_pool: take a buffer and give it back (steady state: a free-list pop and push)."""
from __future__ import annotations

import pytest


@pytest.mark.parametrize("size", [128, 16384, 1 << 20])
def test_pool_get_put(benchmark, core, pool, size):
    get, put = core.lib.tri_pool_get, core.lib.tri_pool_put
    p = pool.ptr

    def run():
        put(p, get(p, size, 5))

    run()  # the first get allocates; the measured ones hit the free list
    benchmark(run)

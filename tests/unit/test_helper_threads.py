"""triple_py._helper_threads: daemon threads that stuck tasks cannot starve, that a burst of
quick tasks does not multiply, and that end when idle."""
from __future__ import annotations

import asyncio
import threading
import time

from triple_py._helper_threads import HelperThreads, off_loop


def wait_until(predicate, timeout: float = 5.0) -> bool:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


def test_stuck_tasks_hold_up_no_later_task():
    pool = HelperThreads("test-stuck", core=2, grace_s=0.02, idle_s=1.0)
    release = threading.Event()
    for _ in range(20):
        pool.submit(release.wait)
    done = threading.Event()
    started = time.monotonic()
    pool.submit(done.set)
    try:
        assert done.wait(2.0), "a quick task waited behind stuck ones"
        assert time.monotonic() - started < 1.0
        assert pool.threads >= 21
    finally:
        release.set()


def test_a_burst_of_quick_tasks_uses_few_threads():
    pool = HelperThreads("test-burst", core=4, grace_s=0.05, idle_s=1.0)
    count = 0
    lock = threading.Lock()
    all_done = threading.Event()

    def task():
        nonlocal count
        with lock:
            count += 1
            if count == 3000:
                all_done.set()
    for _ in range(3000):
        pool.submit(task)
    assert all_done.wait(20)
    assert pool.threads <= 16, f"{pool.threads} threads for quick tasks"


def test_threads_are_daemons_and_end_when_idle():
    pool = HelperThreads("test-idle", core=2, idle_s=0.1)
    seen = []
    pool.submit(lambda: seen.append(threading.current_thread().daemon))
    assert wait_until(lambda: seen == [True])
    assert wait_until(lambda: pool.threads == 0, 3.0)


def test_off_loop_returns_the_value_and_a_cancel_returns_at_once():
    release = threading.Event()

    async def main():
        assert await off_loop(lambda: 42) == 42
        task = asyncio.ensure_future(off_loop(release.wait))
        await asyncio.sleep(0.05)
        task.cancel()
        started = time.monotonic()
        try:
            await task
        except asyncio.CancelledError:
            pass
        return time.monotonic() - started
    try:
        assert asyncio.run(main()) < 0.5
    finally:
        release.set()

"""A request iterator streaming N small messages while the caller's loop reads the echoes:
write syscalls per message (the coalescing writer's figure) and the wall time."""
import sys, time, triple_py
from triple_py.testing import EchoServer
STREAM = "/benchmark.BenchmarkService/StreamCall"
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
server = EchoServer().start()
for opts, name in (([], "writer-on"), ([("triple.write_buffer_size", 0)], "writer-off")):
    with triple_py.insecure_channel(f"127.0.0.1:{server.port}", options=opts) as ch:
        ch.unary_unary("/benchmark.BenchmarkService/UnaryCall")(b"", timeout=5)
        before = ch.stats()["write_syscalls"]
        t = time.perf_counter()
        n = sum(1 for _ in ch.stream_stream(STREAM)((b"x" * 100 for _ in range(N)), timeout=60))
        dt = time.perf_counter() - t
        w = ch.stats()["write_syscalls"] - before
        print(f"{name:10} {n} echoes in {dt:.3f} s, {w / N:.4f} write syscalls per message")
server.stop()

import queue, time, triple_py
from triple_py.testing import EchoServer
STREAM = "/benchmark.BenchmarkService/StreamCall"
server = EchoServer().start()
for d in (200, 1000, 0):
    echoes = queue.Queue()
    rounds = 1000
    def requests():
        for i in range(rounds):
            yield b"%d" % i
            echoes.get(timeout=5)
    with triple_py.insecure_channel(f"127.0.0.1:{server.port}", options=[("triple.write_buffer_delay_us", d)]) as ch:
        t = time.perf_counter()
        try:
            for r in ch.stream_stream(STREAM)(requests(), timeout=10):
                echoes.put(r)
            print("delay", d, "us/round", round((time.perf_counter()-t)/rounds*1e6,1))
        except Exception as e:
            print("delay", d, "FAILED", type(e).__name__, str(e)[:100])
server.stop()

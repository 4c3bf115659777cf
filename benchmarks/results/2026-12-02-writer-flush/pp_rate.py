import asyncio, sys, time
from triple_py import aio
from triple_py.testing import EchoServer
STREAM = "/benchmark.BenchmarkService/StreamCall"
async def once(address, delay_us, rounds):
    echoes = asyncio.Queue()
    async def requests():
        message = b"0"
        for i in range(1, rounds + 1):
            yield message
            await echoes.get()
            message = str(i).encode()
    async with aio.insecure_channel(address, options=[("triple.write_buffer_delay_us", delay_us)]) as ch:
        t = time.perf_counter()
        async for r in ch.stream_stream(STREAM)(requests(), timeout=30):
            echoes.put_nowait(r)
        return (time.perf_counter() - t) / rounds * 1e6
    
server = EchoServer().start()
for d in (200, 0, 1000, 200):
    print("delay_us", d, "us/round", round(asyncio.run(once(f"127.0.0.1:{server.port}", d, 2000)), 1))
server.stop()

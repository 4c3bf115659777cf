import subprocess, statistics, sys, random
from triple_py import _triple
p = subprocess.Popen(["/tmp/g22/es"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
port = int(p.stdout.readline().split()[1])
body = b"\x0a\x80\x01" + bytes(128)
rnd = random.Random(1)
arms = {
 "ring1": [(body, [])],
 "ring1024same": [(body, [])] * 1024,
 "ring1024diff": [(b"\x0a\x80\x01" + rnd.randbytes(128), []) for _ in range(1024)],
 "noring": None,
}
res = {a: [] for a in arms}
for i in range(int(sys.argv[1])):
    for a in (list(arms) if i % 2 == 0 else list(arms)[::-1]):
        kw = {"requests": arms[a]} if arms[a] else {"shared_request": True}
        r = _triple.run_load("127.0.0.1", port, None, "unary", 128, 32, 1, 1.5, 0.3, **kw)
        res[a].append(r["qps"])
for a, q in res.items():
    print(a, round(statistics.median(q)), round(statistics.median(x / y for x, y in zip(q, res["ring1"])), 3))
p.terminate()

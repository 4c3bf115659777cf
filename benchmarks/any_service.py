"""Loading a real service (issue 22): templated requests vs a fixed body vs h2load.

Against the grpc-go peer serving tests/peers/proto/shop_order.proto with reflection, over ONE
connection, three arms make shop.v1.OrderService/Place calls with the same concurrency:

  templated  the C generator (fastpath) cycling through a ring of 1024 distinct requests:
             data and metadata templated ({{.RequestNumber}}, {{.UUID}}, random*)
  data-only  templated data, fixed metadata (separates the cost of varied bodies from that
             of varied header values, which HPACK cannot index)
  fixed      the C generator sending one request (the ring's first entry, its metadata)
  h2load     h2load sending that same pre-encoded body with the same headers (plain text
             and server-only TLS; h2load has no client certificate, so no mTLS arm)

Transports: plain (h2c) and mTLS (the peer requires a client certificate signed by a CA the
script makes with openssl). A second scenario uses a 128 B BenchmarkRequest (proto/
benchmark.proto, --proto) whose payload is templated, for the issue's "at most 5 % of the
fixed-payload QPS at 128 B": its arms send a fixed x-request-id, except templated-md,
whose x-request-id is new on every call. Rounds interleave the arms, reversing their order
every other round; the table shows medians over rounds and the median of per-round (paired)
ratios, and the verdicts each arm's paired ratios to the fixed arm give.
CPU per call is the client process's CPU (C arms: getrusage of this process over the
measured window; h2load: its CPU over its run, warm-up prorated).

Usage: .venv/bin/python benchmarks/any_service.py [--rounds 5] [--duration 3] [--warmup 1]
       [--concurrency 32] [--scenarios order,bench128] [--transports plain,mTLS]
       [--out results/any_service-<ts>.json]
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List

ROOT = Path(__file__).resolve().parents[1]
from triple_py_testing.peers.pki import make_pki  # noqa: E402
from triple_py_testing.peers.shop_schema import PLACE, SHOP_PROTO, write_shop_protoset  # noqa: E402
from triple_py_testing.peers import start_peer  # noqa: E402
from triple_py.bench import run  # noqa: E402
from triple_py.bench.paired import compare_pairs, verdict_block  # noqa: E402

ORDER = ('{"id": "ord-{{.RequestNumber}}", "customer": "cust-{{randomString 16}}", '
         '"lines": [{"sku": "sku-{{randomInt 1000 9999}}", "quantity": {{randomInt 1 9}}, '
         '"unit_price": {"currency": "EUR", "units": {{randomInt 1 500}}, "nanos": 500000000}},'
         ' {"sku": "sku-{{randomInt 1000 9999}}", "quantity": 1, "unit_price": '
         '{"currency": "EUR", "units": 7, "nanos": 0}}], '
         '"labels": {"tenant": "acme", "trace": "{{.UUID}}", "region": "eu-west-1"}, '
         '"priority": "PRIORITY_HIGH", "ship_to": {"lines": ["{{randomInt 1 999}} Main Street",'
         ' "Apartment {{randomInt 1 99}}"], "city": "Springfield", "country": "US"}, '
         '"created_unix": {{.TimestampUnix}}}')
METADATA = '{"authorization": "Bearer {{.UUID}}", "x-request-id": "{{.RequestNumber}}"}'
BENCH_128 = '{"payload": "{{randomString 168}}"}'  # 168 base64 chars: 126 bytes + 2 B tag
UNARY = "benchmark.BenchmarkService/UnaryCall"
ID_TEMPLATED = '{"x-request-id": "{{.RequestNumber}}"}'  # a header value new on every call
ID_FIXED = '{"x-request-id": "0"}'



def one(target: str, arm: str, call: dict, method: str, args) -> dict:
    mode = "h2load" if arm == "h2load" else "fastpath"
    extra = {"options": {"latency_log": True}} if mode == "h2load" else {}
    r = run(target, method=method, mode=mode, concurrency=args.concurrency,
            duration=args.duration, warmup=args.warmup, call=call, arm=arm, **extra)
    cpu = r.cpu.get("process_us_per_call", r.cpu.get("h2load_us_per_call"))
    return {"qps": r.qps, "p99_ms": (r.latency.p99 or 0) / 1e6, "cpu_us_per_call": cpu,
            "errors": r.errors, "calls": r.calls, "bytes": r.payload_size}


def rounds(target: str, calls: Dict[str, dict], method: str, args) -> Dict[str, List[dict]]:
    out: Dict[str, List[dict]] = {a: [] for a in calls}
    order = list(calls)
    for i in range(args.rounds):
        for arm in (order if i % 2 == 0 else order[::-1]):
            out[arm].append(one(target, arm, calls[arm], method, args))
    return out


def table(title: str, res: Dict[str, List[dict]]) -> str:
    lines = [f"\n{title}", f"{'arm':<10} {'QPS':>10} {'p99 ms':>8} {'cpu us/call':>12} "
             f"{'B':>5} {'QPS vs fixed (paired)':>22}"]
    for arm, rows in res.items():
        med = {k: statistics.median(r[k] for r in rows) for k in ("qps", "p99_ms",
                                                                  "cpu_us_per_call", "bytes")}
        ratio = statistics.median(r["qps"] / f["qps"] for r, f in zip(rows, res["fixed"]))
        errs = sum(r["errors"] for r in rows)
        lines.append(f"{arm:<10} {med['qps']:>10,.0f} {med['p99_ms']:>8.3f} "
                     f"{med['cpu_us_per_call']:>12.2f} {med['bytes']:>5.0f} {ratio:>22.3f}"
                     + (f"  ({errs} errors)" if errs else ""))
    return "\n".join(lines)


def verdicts(raw: Dict[str, Dict[str, List[dict]]]) -> str:
    """Each arm against the fixed arm of its scenario, paired by round: QPS, then client
    CPU per call, with the exact Hodges-Lehmann interval or the rounds still needed."""
    blocks = []
    for key, what in (("qps", "QPS"), ("cpu_us_per_call", "CPU/call")):
        values = {(scenario, arm, i): row[key] for scenario, res in raw.items()
                  for arm, rows in res.items() for i, row in enumerate(rows) if row[key]}
        arms = dict.fromkeys(a for res in raw.values() for a in res if a != "fixed")
        blocks.append(verdict_block(compare_pairs(values, [(a, "fixed") for a in arms],
                                                  list(raw)), what))
    return "\n\n".join(blocks)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--duration", type=float, default=3.0)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--concurrency", type=int, default=32)
    p.add_argument("--out", type=Path)
    p.add_argument("--scenarios", default="order,bench128",
                   help="which of order (the 226 B Order), bench128 to run")
    p.add_argument("--transports", default="plain,mTLS")
    args = p.parse_args()
    scenarios = args.scenarios.split(",")
    report, raw = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        pki = make_pki(d)
        protoset = str(write_shop_protoset(d))
        bench_proto = str(ROOT / "proto" / "benchmark.proto")
        templated = {"data": ORDER, "metadata": METADATA}
        # The fixed arms send one rendering of the same templates (ring of one entry).
        first_body = ORDER.replace("{{.RequestNumber}}", "0").replace(
            "{{randomString 16}}", "abcdefghijklmnop").replace("{{.UUID}}",
            "0b7e9c1e-2f4a-4c55-9d1e-6a7b8c9d0e1f").replace("{{.TimestampUnix}}", "1764617000")
        for fn in ("{{randomInt 1000 9999}}", "{{randomInt 1 9}}", "{{randomInt 1 500}}",
                   "{{randomInt 1 999}}", "{{randomInt 1 99}}"):
            first_body = first_body.replace(fn, "4242")
        fixed_md = '{"authorization": "Bearer 0b7e9c1e-2f4a-4c55-9d1e-6a7b8c9d0e1f", ' \
                   '"x-request-id": "0"}'
        for transport in args.transports.split(","):
            tls = {} if transport == "plain" else {
                "cacert": str(pki.ca.cert), "cert": str(pki.client.cert),
                "key": str(pki.client.key)}
            peer_tls = {} if transport == "plain" else dict(
                tls_client_ca=str(pki.ca.cert), **pki.server.peer_options())
            with start_peer("go", schema=protoset, **peer_tls) as peer:
                calls = {"templated": {**templated, **tls},
                         "data-only": {"data": ORDER, "metadata": fixed_md, **tls},
                         "fixed": {"data": first_body, "metadata": fixed_md, **tls}}
                if transport == "plain":
                    calls["h2load"] = dict(calls["fixed"])
                if "order" not in scenarios:
                    calls = {}
                t0 = time.monotonic()
                if calls:
                    res = rounds(peer.address, calls, PLACE, args)
                    raw[f"order/{transport}"] = res
                    report.append(table(f"shop.v1.OrderService/Place, {transport}, "
                                        f"1 connection, c{args.concurrency} "
                                        f"({time.monotonic() - t0:.0f} s)", res))
                    print(report[-1], flush=True)
                if "bench128" not in scenarios:
                    continue
                fixed_128 = BENCH_128.replace("{{randomString 168}}", "A" * 168)
                bench = {"templated": {"proto": bench_proto, "data": BENCH_128,
                                       "metadata": ID_FIXED, **tls},
                         "templated-md": {"proto": bench_proto, "data": BENCH_128,
                                          "metadata": ID_TEMPLATED, **tls},
                         "fixed": {"proto": bench_proto, "data": fixed_128,
                                   "metadata": ID_FIXED, **tls}}
                res = rounds(peer.address, bench, UNARY, args)
                raw[f"bench128/{transport}"] = res
                report.append(table(f"BenchmarkService/UnaryCall 128 B, {transport}", res))
                print(report[-1], flush=True)
    report.append(verdicts(raw))
    print(report[-1], flush=True)
    out = args.out or ROOT / "results" / f"any_service-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args) | {"out": str(out)}, "results": raw,
                               "report": report}, indent=1, default=str) + "\n")
    print(f"\nraw: {out}")


if __name__ == "__main__":
    main()

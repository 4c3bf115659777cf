"""Loading any service: data, templates, metadata, TLS through the C generator's request
ring, against the grpc-go peer serving the shop schema with reflection."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from _schema_helpers import PLACE, SHOP_PROTO, shop_peer, write_shop_protoset
from _tls_helpers import make_pki
from triple_py import _triple
from triple_py.bench import run
from triple_py.bench.errors import ConfigError
from triple_py.bench.workload.request_data import build_ring, request_data
from triple_py.bench.workload.metadata import parse_metadata
from triple_py.bench.workload.schema import compile_proto, find_method, pool_of

CHILD_TIMEOUT = 120
ORDER = ('{"id": "{{.RequestNumber}}", "customer": "{{randomString 12}}", '
         '"lines": [{"sku": "sku-{{randomInt 1 1000}}", "quantity": {{randomInt 1 9}}, '
         '"unit_price": {"currency": "EUR", "units": 12, "nanos": 500000000}}], '
         '"labels": {"tenant": "acme", "trace": "{{.UUID}}"}, "priority": "PRIORITY_HIGH", '
         '"ship_to": {"lines": ["1 Main St"], "city": "Springfield", "country": "US"}}')


@pytest.fixture(scope="module")
def place():
    return find_method(pool_of(compile_proto(str(SHOP_PROTO)).file), PLACE)


@pytest.fixture(scope="module")
def peer(tmp_path_factory):
    with shop_peer(tmp_path_factory.mktemp("shop")) as p:
        yield p


def _load(peer, path, ring, count, mode="unary", **kw):
    host, port = peer.address.rsplit(":", 1)
    return _triple.run_load(host, int(port), path=path, mode=mode, payload_size=0,
                            concurrency=1, connections=1, duration=0.0, warmup=0.0,
                            count=count, requests=ring, **kw)


def test_ring_entries_are_distinct_and_match_the_message(place):
    ring = build_ring(place, request_data(ORDER), parse_metadata('{"authorization": '
                      '"Bearer {{.UUID}}", "n": "{{.RequestNumber}}"}'), ring_size=50,
                      concurrency=4, seed=1)
    assert len(ring) == 50 and len({body for body, _ in ring}) == 50
    order = place.request_class().FromString(ring[7][0])
    assert order.id == "7" and order.lines[0].unit_price.units == 12
    assert order.labels["tenant"] == "acme" and order.priority == 2
    assert dict(ring[7][1])[b"n"] == b"7"


def test_constant_data_is_one_entry_and_an_array_is_round_robin(place):
    assert len(build_ring(place, request_data('{"id": "a"}'))) == 1
    ring = build_ring(place, request_data('[{"id": "a"}, {"id": "b"}, {"id": "c"}]'))
    assert [place.request_class().FromString(b).id for b, _ in ring] == ["a", "b", "c"]
    # Templated with 3 messages: the ring is a multiple of 3, so round-robin survives wraps.
    ring = build_ring(place, request_data('[{"id": "a{{.RequestNumber}}"}, {"id": "b"}, '
                                          '{"id": "c"}]'), ring_size=10)
    assert len(ring) == 12
    assert place.request_class().FromString(ring[9][0]).id == "a9"


def test_json_lines_file_and_binary_file(place, tmp_path):
    (tmp_path / "d.jsonl").write_text('{"id": "x"}\n{"id": "y"}\n')
    ring = build_ring(place, request_data(data_file=str(tmp_path / "d.jsonl")))
    assert [place.request_class().FromString(b).id for b, _ in ring] == ["x", "y"]
    one = place.request_class()(id="bin1").SerializeToString()
    two = place.request_class()(id="bin22").SerializeToString()
    (tmp_path / "d.bin").write_bytes(bytes([len(one)]) + one + bytes([len(two)]) + two)
    ring = build_ring(place, request_data(binary_file=str(tmp_path / "d.bin")))
    assert [b for b, _ in ring] == [one, two]


@pytest.mark.parametrize("data, match", [
    ('{"lines": [{"quantity": "many"}]}', r"message 0 does not match shop.v1.Order: .*quantity"),
    ('{"nope": 1}', r"does not match shop.v1.Order: .*nope"),
    ('{"id": "{{.Nope}}"}', r"template \{\{.Nope\}\}: unknown field"),
    ('{"id": "{{randomInt 9 1}}"}', "MAX must be above MIN"),
    ('[1, 2]', "expected a JSON object"),
])
def test_bad_data_is_one_line(place, data, match):
    with pytest.raises(ConfigError, match=match):
        build_ring(place, request_data(data))


def test_bad_metadata_is_one_line():
    with pytest.raises(ConfigError, match="not base64"):
        parse_metadata('{"t-bin": "***"}')[0].render(None)
    with pytest.raises(ConfigError, match="cannot be sent"):
        parse_metadata('{"content-type": "x"}')
    with pytest.raises(ConfigError, match="JSON object of strings"):
        parse_metadata('{"a": 1}')


def test_every_ring_entry_is_sent_in_turn(peer, place):
    """Call i sends entry i mod R: with count = k*R calls, each entry goes k times, so the
    status codes (x-status metadata, templated) come in exactly the ring's proportions and
    the echoed bytes are k times the ring's."""
    data = request_data('[{"id": "a"}, {"id": "bbbbbbbbbb"}, {"customer": "ccccc"}]')
    ring = build_ring(place, data, parse_metadata('{"x-status": "{{randomInt 1 4}}"}'),
                      ring_size=30, seed=7)
    k = 4
    r = _load(peer, "/" + PLACE, ring, count=k * len(ring))
    codes = [int(dict(md)[b"x-status"]) for _, md in ring]
    assert len(set(codes)) == 3
    for code in (1, 2, 3):
        assert r["status_codes"][code] == k * codes.count(code)
    plain = build_ring(place, data)
    r = _load(peer, "/" + PLACE, plain, count=k * len(plain))
    assert r["errors"] == 0
    assert r["response_bytes"] == k * sum(len(b) for b, _ in plain) == k * 22


@pytest.mark.parametrize("method", ["Watch", "Upload", "Chat"])
def test_streaming_shapes_take_the_ring(peer, place, method):
    ring = build_ring(place, request_data('{"id": "{{.RequestNumber}}"}'), ring_size=8)
    r = _load(peer, f"/shop.v1.OrderService/{method}", ring, count=16, mode="bidi",
              stream_messages=2)
    assert r["calls"] == 16 and r["errors"] == 0
    assert r["messages_received"] == 16 * (1 if method == "Upload" else 2)


def test_run_api_with_reflection(peer):
    r = run(peer.address, method=PLACE, duration=0.3, warmup=0.1, concurrency=4,
            call={"data": ORDER, "metadata": '{"authorization": "Bearer {{.UUID}}"}'})
    assert r.calls > 0 and r.errors == 0 and r.mode == "fastpath"
    assert 100 < r.payload_size < 300 and r.extra["ring_size"] == 1024


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triple_py.bench", "run", *args],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT)


def test_cli_any_shape_and_bad_input(peer, tmp_path):
    ok = _cli("--target", peer.address, "--call", "shop.v1.OrderService.Chat", "-d", ORDER,
              "-m", '{"trace-bin": "AAEC"}', "-z", "0.3s", "--warmup", "0", "-c", "2",
              "--json", str(tmp_path / "r.json"))
    assert ok.returncode == 0, ok.stderr
    doc = json.loads((tmp_path / "r.json").read_text())
    assert "/shop.v1.OrderService/Chat" in json.dumps(doc) and "bidi" in ok.stdout
    protoset = write_shop_protoset(tmp_path)
    bad = {
        ("--call", "shop.v1.OrderService/Nope", "-d", "{}"): "has no method Nope",
        ("--call", PLACE, "-d", '{"priority": "URGENT"}'): "does not match shop.v1.Order",
        ("--call", PLACE, "-d", "{{ .UUID"): "unclosed",
        ("--call", PLACE, "--cacert", str(tmp_path / "none.pem")): "--cacert .*none.pem",
        ("--call", PLACE, "--protoset", str(protoset), "--proto", str(SHOP_PROTO)):
            "give the schema one way",
        ("--call", PLACE, "--cert", str(protoset)): "--cert and --key go together",
    }
    for args, match in bad.items():
        done = _cli("--target", peer.address, "-z", "0.3s", *args)
        assert done.returncode == 2, (args, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and pytest.importorskip("re").search(match, lines[0]), lines
        assert "Summary" not in done.stdout  # nothing half-run


def test_mtls_plain_and_bad_certificate(tmp_path):
    pki = make_pki(tmp_path)
    with shop_peer(tmp_path, tls_client_ca=str(pki.ca.cert), **pki.server.peer_options()) as p:
        r = run(p.address, method=PLACE, duration=0.3, warmup=0.1, concurrency=2,
                call={"data": ORDER, "cacert": str(pki.ca.cert), "cert": str(pki.client.cert),
                      "key": str(pki.client.key), "compression": True})
        assert r.calls > 0 and r.errors == 0
        no_client = _cli("--target", p.address, "--call", PLACE, "-d", "{}", "-z", "0.3s",
                         "--cacert", str(pki.ca.cert))
        assert no_client.returncode == 1
        wrong_ca = _cli("--target", p.address, "--call", PLACE, "--proto", str(SHOP_PROTO),
                        "-z", "0.3s", "--cacert", str(pki.other_ca.cert),
                        "--cert", str(pki.client.cert), "--key", str(pki.client.key))
        assert wrong_ca.returncode == 1 and "certificate" in wrong_ca.stderr.lower()


def test_matrix_file_with_call_tables(peer, tmp_path):
    from triple_py.bench.cli import main

    (tmp_path / "m.toml").write_text(f'''
name = "shop"
rounds = 1
duration = "0.3s"
warmup = "0.1s"
method = "{PLACE}"
arms = ["templated", "fixed"]
[call]
proto = "{SHOP_PROTO}"
data = '{{"id": "{{{{.RequestNumber}}}}"}}'
metadata = '{{"authorization": "Bearer {{{{.UUID}}}}"}}'
[arm.templated]
mode = "fastpath"
[arm.fixed]
mode = "fastpath"
call = {{data = '{{"id": "fixed", "customer": "c"}}', metadata = '{{"authorization": "t"}}'}}
[scenarios]
payload = [0]
concurrency = [2]
''')
    out = tmp_path / "out"
    assert main(["matrix", str(tmp_path / "m.toml"), "--target", peer.address,
                 "--out", str(out)]) == 0
    doc = json.loads(next(out.glob("*.json")).read_text())
    text = json.dumps(doc)
    assert "/shop.v1.OrderService/Place" in text and '"ring_size": 1024' in text
    assert '"ring_size": 1,' in text or '"ring_size": 1}' in text
    (tmp_path / "bad.toml").write_text((tmp_path / "m.toml").read_text().replace(
        "Bearer", "{{.Bad}}"))
    assert main(["matrix", str(tmp_path / "bad.toml"), "--target", peer.address]) == 2


@pytest.mark.parametrize("fmt, pattern", [
    ("prometheus", r'^triple_py_run_count\{.*call="/shop.v1.OrderService/Place".*\} \d+$'),
    ("influx-summary", r"^triple_py_run,arm=fastpath,.*count=\d+i,errors=0i,.* \d+$"),
    ("influx-details", r"^triple_py_second,.*second=0 calls=\d+i,errors=0i"),
    ("csv", r"^arm,|,fastpath,"),
    ("json", r'"/shop.v1.OrderService/Place"'),
])
def test_cli_output_formats(peer, tmp_path, fmt, pattern):
    import re

    out = tmp_path / "out.txt"
    done = _cli("--target", peer.address, "--call", PLACE, "-d", '{"id": "{{.UUID}}"}',
                "-z", "1s", "--warmup", "0", "-c", "2", "-O", fmt, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "Summary" not in done.stdout  # the output went to the file
    assert re.search(pattern, out.read_text(), re.M), out.read_text()[:400]


def test_skip_tls_accepts_any_certificate_and_only_when_asked(tmp_path):
    pki = make_pki(tmp_path)
    with shop_peer(tmp_path, **pki.other_server.peer_options()) as p:  # an unknown CA
        args = ("--target", p.address, "--call", PLACE, "-d", '{"id": "{{.UUID}}"}',
                "-z", "0.3s", "--warmup", "0", "-c", "2")
        refused = _cli(*args, "--cacert", str(pki.ca.cert))
        assert refused.returncode == 1 and "certificate" in refused.stderr.lower()
        skipped = _cli(*args, "--skipTLS")  # reflection, preflight and the C load
        assert skipped.returncode == 0, skipped.stderr
        assert "Requests/sec" in skipped.stdout
    assert _cli(*args, "--skipTLS", "--insecure").returncode == 2

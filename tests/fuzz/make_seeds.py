"""Writes the committed seed corpora for the libFuzzer targets (run once by hand;
the output is committed under tests/fuzz/corpus/).  Uses python3-h2's HPACK encoder
for valid header blocks."""
import gzip
import hashlib
import pathlib
import struct

import hpack

ROOT = pathlib.Path(__file__).parent / "corpus"


def save(target: str, data: bytes) -> None:
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def frame(ftype: int, flags: int, sid: int, payload: bytes) -> bytes:
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", sid) + payload


def envelope(msg: bytes, flags: int = 0) -> bytes:
    return bytes([flags]) + struct.pack(">I", len(msg)) + msg


def session_seeds() -> None:
    enc = hpack.Encoder()
    ok = enc.encode([(":status", "200"), ("content-type", "application/grpc"), ("x-a", "b")])
    for sid in (1, 3, 5):
        trailers = enc.encode([("grpc-status", "0"), ("x-t-bin", "AAE")])
        save("session", frame(1, 4, sid, ok) + frame(0, 0, sid, envelope(b"\x0a\x03abc"))
             + frame(1, 5, sid, trailers))
    save("session", frame(1, 5, 1, enc.encode([(":status", "200"), ("grpc-status", "13"),
                                               ("grpc-message", "bad%20thing%zz")])))
    save("session", frame(3, 0, 3, struct.pack(">I", 7)) + frame(7, 0, 0, struct.pack(">II", 1, 0)))
    save("session", frame(1, 4, 5, ok) + frame(0, 0, 5, envelope(b"x" * 100)[:50])
         + frame(0, 1, 5, envelope(b"x" * 100)[50:]) + frame(8, 0, 5, struct.pack(">I", 1000)))


def session_rule_seeds() -> None:
    """Responses at the edges of the HTTP/2 message rules (tri_resp_check.h)."""
    enc = hpack.Encoder()
    ok = [(":status", "200"), ("content-type", "application/grpc")]
    msg = envelope(b"\x0a\x03abc")
    t0 = enc.encode([("grpc-status", "0")])
    save("session", frame(1, 4, 1, enc.encode(ok + [("content-length", str(len(msg)))]))
         + frame(0, 0, 1, msg) + frame(1, 5, 1, t0))
    save("session", frame(1, 4, 1, enc.encode(ok + [("content-length", "3")]))
         + frame(0, 1, 1, msg))
    save("session", frame(1, 4, 1, enc.encode([(":status", "103"), ("link", "</x>")]))
         + frame(1, 4, 1, enc.encode(ok + [("te", "trailers")])) + frame(0, 0, 1, msg)
         + frame(1, 5, 1, t0))
    save("session", frame(1, 4, 1, enc.encode([("content-type", "application/grpc"),
                                                (":status", "200")]))
         + frame(1, 4, 3, enc.encode(ok + [("connection", "close")]))
         + frame(1, 4, 5, enc.encode(ok)) + frame(1, 4, 5, enc.encode([("x-t", "1")]))
         + frame(0, 1, 5, msg))
    # Triple unary: a raw body, then an encoding in the trailers (ignored there).
    triple = enc.encode([(":status", "200"), ("content-type", "application/proto")])
    save("session", frame(1, 4, 1, triple) + frame(0, 0, 1, b"\x0a\x03abc")
         + frame(1, 5, 1, enc.encode([("content-encoding", "br"), ("trailer-x", "1")])))


def other_seeds() -> None:
    save("frame", b"\x03" + envelope(b"hello") + envelope(b"") + envelope(b"zz", 1))
    save("gzip", gzip.compress(b"hello " * 100))
    save("gzip", gzip.compress(bytes(1 << 20)))
    save("tjson", b'{"code":"not_found","message":"caf\\u00e9","details":[{"type":"a.B","value":"CgNmb28"}]}')
    save("tjson", b'{"code":"code_17"}')
    save("tjson", b'{"debug":[1,{"a":null}],"code":"internal","message":"\\ud83d\\ude00"}')
    save("tjson", b'{"status":5,"message":"m","details":[{"type":"a.B","value":"CgNmb28"}]}')  # dubbo-js
    save("tjson", b'{"status":"404","message":"Invoker not found"}')  # Dubbo Java


def inplace_seeds() -> None:
    """fuzz_inplace: four 2-byte read sizes and a 2-byte message size (all in units
    of 4 bytes), then a server's frames: DATA in turn across streams, odd ones too."""
    def head(reads: tuple, want: int) -> bytes:
        return b"".join(struct.pack(">H", r // 4) for r in reads) + struct.pack(">H", want // 4)
    turn = b"".join(frame(0, 0, sid, bytes([sid]) * 6000) for _ in range(3) for sid in (1, 3, 5))
    save("inplace", head((20000, 9000, 60000, 4096), 16000) + turn)
    save("inplace", head((30000, 30000, 30000, 30000), 30000)
         + b"".join(frame(0, 0, 1, b"a" * 6000) for _ in range(5)))
    odd = (frame(0, 0, 1, b"a" * 6000) + frame(0, 8, 3, b"\x04" + b"p" * 100 + b"\0" * 4)
           + frame(0, 1, 5, b"c" * 6000) + frame(1, 4, 7, b"\x88")
           + frame(0, 0, 1, b"a" * 5000) + frame(0, 0, 9, b"z" * 6000))
    save("inplace", head((12000, 20000, 6009, 9), 20000) + odd * 2)


def server_seeds() -> None:
    """fuzz_server: byte 0 picks a decoder (0-3) or the request path (4: HTTP/2 frames
    that follow the client preface and an empty SETTINGS)."""
    # SimpleRequest{response_type 1, response_size 5, payload{body "ab"},
    # response_compressed{true}, response_status{code 3, message "m"}, expect_compressed{}}
    simple = b"\x08\x01\x10\x05\x1a\x04\x12\x02ab\x32\x02\x08\x01\x3a\x05\x08\x03\x12\x01m\x42\x00"
    save("server", b"\x00" + simple)
    # StreamingOutputCallRequest{response_parameters{size 3, interval 10, compressed{}} x2}
    params = b"\x12\x06\x08\x03\x10\x0a\x1a\x00"
    save("server", b"\x01\x08\x00" + params + params + b"\x1a\x02\x12\x00")
    save("server", b"\x02\x0a\x04\x12\x02ab\x12\x02\x08\x01")
    save("server", b'\x03{"responseSize":3,"payload":{"body":"AAA="},"responseStatus":'
                   b'{"code":"5","message":"caf\\u00e9"},"expect_compressed":null,"x":[1,{}]}')

    def request(sid: int, path: str, headers: list, body: bytes, end: bool = True) -> bytes:
        enc = hpack.Encoder()
        block = enc.encode([(":method", "POST"), (":scheme", "http"), (":path", path),
                            (":authority", "f")] + headers)
        out = frame(1, 4, sid, block)
        return out + frame(0, 1 if end else 0, sid, body) if body or end else out

    grpc = [("content-type", "application/grpc"), ("te", "trailers")]
    bench = "/benchmark.BenchmarkService/"
    ts = "/grpc.testing.TestService/"
    save("server", b"\x04" + request(1, bench + "UnaryCall", grpc + [("grpc-timeout", "1S")],
                                      envelope(b"\x0a\x03abc")))
    save("server", b"\x04" + request(1, bench + "StreamCall", grpc + [("x-response-size", "7")],
                                      envelope(b"\x0a\x01a") + envelope(b"\x0a\x01b")))
    save("server", b"\x04" + request(1, bench + "unaryCall",
                                      [("content-type", "application/proto"),
                                       ("triple-protocol-version", "0.1.0"),
                                       ("x-echo-a", "1"), ("x-status", "0")], b"\x0a\x01z"))
    save("server", b"\x04" + request(1, bench + "UnaryCall",
                                      [("content-type", "application/json"),
                                       ("x-response-size", "4")], b'{"payload":"YQ=="}'))
    save("server", b"\x04" + request(1, ts + "UnaryCall",
                                      grpc + [("grpc-encoding", "gzip"),
                                              ("grpc-accept-encoding", "gzip")],
                                      envelope(gzip.compress(simple), 1)))
    save("server", b"\x04" + request(1, ts + "UnaryCall", [("content-type", "application/json")],
                                      b'{"responseSize":2,"responseCompressed":true}'))
    save("server", b"\x04" + request(1, ts + "FullDuplexCall", grpc,
                                      envelope(b"\x12\x02\x08\x02" + b"\x12\x02\x08\x01")))
    save("server", b"\x04" + request(1, ts + "StreamingInputCall", grpc,
                                      envelope(b"\x0a\x04\x12\x02ab") + envelope(b"")))
    save("server", b"\x04" + request(1, ts + "StreamingOutputCall", grpc,
                                      envelope(b"\x12\x02\x08\x05\x3a\x05\x08\x02\x12\x01e")))
    for mode in ("rst-mid-response", "goaway", "bad-hpack", "bad-grpc-status",
                 "wrong-content-type", "tiny-window", "never-answer"):
        save("server", b"\x04" + request(3, bench + "UnaryCall", grpc + [("x-misbehave", mode)],
                                          envelope(b"\x0a\x01q")))
    save("server", b"\x04" + request(1, bench + "UnaryCall",
                                      grpc + [("x-message-bin", "bW9v"), ("x-status", "9"),
                                              ("x-delay-ms", "0")], envelope(b"")))


if __name__ == "__main__":
    inplace_seeds()
    session_seeds()
    session_rule_seeds()
    other_seeds()
    server_seeds()

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


def other_seeds() -> None:
    save("frame", b"\x03" + envelope(b"hello") + envelope(b"") + envelope(b"zz", 1))
    save("gzip", gzip.compress(b"hello " * 100))
    save("gzip", gzip.compress(bytes(1 << 20)))
    save("tjson", b'{"code":"not_found","message":"caf\\u00e9","details":[{"type":"a.B","value":"CgNmb28"}]}')
    save("tjson", b'{"code":"code_17"}')
    save("tjson", b'{"debug":[1,{"a":null}],"code":"internal","message":"\\ud83d\\ude00"}')
    save("tjson", b'{"status":5,"message":"m","details":[{"type":"a.B","value":"CgNmb28"}]}')  # dubbo-js
    save("tjson", b'{"status":"404","message":"Invoker not found"}')  # Dubbo Java


if __name__ == "__main__":
    session_seeds()
    other_seeds()
